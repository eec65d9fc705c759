"""The store's families: one small typed Protocol each (what a backend implements), and beside it the family's
async form (what the event loop awaits), built from the blocking family by a ``calls.Caller``.

``Store`` (``store/base.py``) composes them as attributes: ``store.state.get(key)``,
``await astore.prompts.list()``. A backend implements a family in one module of its own
(``store/files/<family>.py``, ``store/oracle/<family>.py``).
"""
