"""A person's view of the store: their memories, daily notes, sessions, transcripts, traces and state are
theirs alone; the assistant's prompts, config and meta are shared (read from the owner's store).

Scoping is by storage, not by filtering results: on Oracle a person's rows carry their own ``agent_id``
(``<agent_id>.<person>``), so every query's WHERE clause selects only them before any vector ranking; on
files a person has their own store root under the workspace's private directory. A query for one person
cannot see another's rows, whatever the ranking or the tool asks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from picoora.config import Config
    from picoora.store.base import Store

SHARED = frozenset({"list_prompts", "get_prompt", "set_prompt", "get_config", "set_config", "all_config",
                    "get_meta", "set_meta", "all_meta", "details", "display_name", "backend"})


class PersonStore:
    def __init__(self, own: Store, shared: Store, person: str):
        self._own, self._shared, self.person = own, shared, person

    def __getattr__(self, name: str) -> Any:
        return getattr(self._shared if name in SHARED else self._own, name)

    def native_async(self) -> Any:
        native = getattr(self._own, "native_async", None)
        return native() if callable(native) else None

    def close(self) -> None:
        self._own.close()  # the shared store belongs to its opener


def open_person_store(config: Config, owner_store: Store, person: str) -> Store:
    """``person``'s store beside ``owner_store``, on the same backend the owner's store really uses (after a
    fallback to files, a person's data goes to files too)."""
    from picoora.store import open_file_store

    if owner_store.backend == "oracle":
        from picoora.store.oracle import open_oracle_store

        scoped = config.model_copy(update={"oracle": config.oracle.model_copy(
            update={"agent_id": f"{config.oracle.agent_id}.{person}"[:64]})})
        own: Store = open_oracle_store(scoped)
    else:
        from picoora.store.layout import FileLayout

        root = FileLayout(owner_store.workspace).person(person)  # type: ignore[attr-defined]
        own = open_file_store(config, workspace=root)
    return PersonStore(own, owner_store, person)  # type: ignore[return-value]
