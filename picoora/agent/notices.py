"""Notices about a session's model ("this model cannot call tools"), each told to a session once.

Once per model, also across processes (each ``agent -m`` is a new one): what a session was shown on its
current model is kept in the process (``shown``, cleared when the session changes model) and in the store's
state under ``NOTICES_STATE`` + the session key, as digests, with the model they were shown on.
"""

from __future__ import annotations

import hashlib
import json
import logging

from picoora.store.aio import AsyncStore
from picoora.store.base import StoreError

log = logging.getLogger(__name__)

NOTICES_STATE = "notices_shown:"  # state key prefix: the notices a session saw on its model, across processes


async def first_showing(store: AsyncStore, session_key: str, model_label: str, text: str, shown: set[str]) -> bool:
    """Whether ``text`` is new to the session on ``model_label``; it counts as shown from now on."""
    if text in shown:
        return False
    shown.add(text)
    key = NOTICES_STATE + session_key
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    try:
        stored = json.loads(await store.state.get(key) or "{}")
        seen = stored.get("shown", []) if isinstance(stored, dict) and stored.get("model") == model_label else []
        if digest in seen:
            return False
        await store.state.set(key, json.dumps({"model": model_label, "shown": [*seen, digest]}))
    except (StoreError, ValueError) as exc:  # better said twice than never
        log.warning("could not keep track of the notices of %s: %s", session_key, exc)
    return True
