"""open_store picks the backend from the config and falls back to files with one line when Oracle is down."""

from __future__ import annotations

import socket

from picoora.config import Config
from picoora.store import open_store


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_files_by_default(tmp_path):
    config = Config.model_validate({"agents": {"defaults": {"workspace": str(tmp_path / "ws")}},
                                    "memory": {"embedder": "none"}})
    notices: list[str] = []
    store = open_store(config, on_fallback=notices.append)
    try:
        assert store.backend == "files"
        assert notices == []
    finally:
        store.close()


def test_unreachable_oracle_falls_back_to_files_with_one_line(tmp_path):
    config = Config.model_validate({
        "agents": {"defaults": {"workspace": str(tmp_path / "ws")}},
        "memory": {"embedder": "none"},
        "oracle": {"enabled": True, "host": "127.0.0.1", "port": _closed_port(), "password": "pw",
                   "connect_timeout_seconds": 2},
    })
    notices: list[str] = []
    store = open_store(config, on_fallback=notices.append)
    try:
        assert store.backend == "files"
        assert len(notices) == 1
        assert notices[0].startswith("Oracle storage unavailable, using file storage instead:")
        assert "pw" not in notices[0].replace("picoora", "")
        store.memories.add("still remembered on files")
        assert [m.content for m in store.memories.list()] == ["still remembered on files"]
    finally:
        store.close()


def test_an_oracle_host_that_does_not_resolve_falls_back_to_files_with_one_line(tmp_path):
    # Go's docker-compose names the database host "oracle-db"; ".invalid" never resolves (RFC 2606).
    config = Config.model_validate({
        "agents": {"defaults": {"workspace": str(tmp_path / "ws")}},
        "memory": {"embedder": "none"},
        "oracle": {"enabled": True, "host": "oracle-db.invalid", "port": 1521, "password": "pw",
                   "connect_timeout_seconds": 2},
    })
    notices: list[str] = []
    store = open_store(config, on_fallback=notices.append)
    try:
        assert store.backend == "files"
        [notice] = notices
        assert notice.startswith("Oracle storage unavailable, using file storage instead: Cannot reach Oracle at "
                                 "oracle-db.invalid:1521/FREEPDB1")
    finally:
        store.close()
