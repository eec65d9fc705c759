"""Storage: the Store protocol (``base``), its backends, and ``open_store`` to pick one from the config.

Importing this package stays cheap (``picoora --help`` imports nothing heavy): backends and embedders
are imported inside ``open_store``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from picoora.config import Config
    from picoora.store.base import Store


def open_store(config: Config) -> Store:
    """The store the config asks for. Opening is cheap: the embedding model loads on first use."""
    from picoora.config import workspace_path
    from picoora.store.embedder import create_embedder
    from picoora.store.files import FileStore

    memory = config.memory
    return FileStore(
        workspace_path(config),
        embedder=create_embedder(memory, config.providers.ollama.api_base),
        min_similarity=memory.min_similarity,
        dedup_similarity=memory.dedup_similarity,
    )
