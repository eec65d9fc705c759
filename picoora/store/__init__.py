"""Storage: the Store protocol (``base``), its backends, and ``open_store`` to pick one from the config.

Importing this package stays cheap (``picoora --help`` imports nothing heavy): backends and embedders
are imported inside ``open_store``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from picoora.config import Config
    from picoora.store.protocol import Store


def open_store(config: Config, *, on_fallback: Callable[[str], None] | None = None,
               inspect_only: bool = False) -> Store:
    """The store the config asks for. Opening is cheap: the embedding model loads on first use.

    With ``oracle.enabled`` the Oracle backend is tried under its connect deadline; when it cannot be used
    (unreachable, bad credentials, no schema, no ONNX model) the file backend takes over and
    ``on_fallback`` receives one line saying why and what to run, unless ``oracle.required`` (a fleet's
    node): then the store retries the database and fails every call until it answers (``oracle/awaited.py``).
    ``inspect_only`` (the inspector: it looks at what is stored) opens without the embedding model and
    raises ``StoreError`` instead of falling back, so it never shows the wrong store.
    """
    if config.oracle.enabled:
        from picoora.store.oracle import OracleUnavailable, open_oracle_store

        try:
            return open_oracle_store(config, require_model=not inspect_only)
        except OracleUnavailable as exc:
            if inspect_only:
                from picoora.store.base import StoreError

                raise StoreError(str(exc)) from None
            if config.oracle.required:
                from picoora.config import secret_values
                from picoora.store.oracle.awaited import AwaitedOracleStore
                from picoora.store.oracle.families import FamilySettings

                settings = FamilySettings(tuple(secret_values(config)), config.agents.defaults.timezone,
                                          config.memory.min_similarity, config.memory.dedup_similarity, config.docs)
                return AwaitedOracleStore(lambda: open_oracle_store(config), exc, agent_id=config.oracle.agent_id,
                                          settings=settings)
            if on_fallback is not None:
                on_fallback(f"Oracle storage unavailable, using file storage instead: {exc}")
    return open_file_store(config)


def open_file_store(config: Config, workspace: Path | None = None) -> Store:
    """The embedded default: files in the workspace (or ``workspace``), recall by the configured local embedder
    (the process's one for these settings: a person's store and the owner's share it)."""
    from picoora.config import picoora_home, secret_values, workspace_path
    from picoora.store.embedder import shared_embedder
    from picoora.store.files import FileStore

    memory = config.memory
    return FileStore(
        workspace or workspace_path(config),
        embedder=shared_embedder(memory, config.providers.ollama.api_base, cache_dir=picoora_home() / "cache"),
        min_similarity=memory.min_similarity,
        dedup_similarity=memory.dedup_similarity,
        secrets=secret_values(config),
        docs=config.docs,
    )
