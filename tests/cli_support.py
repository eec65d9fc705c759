"""Helpers for the CLI tests: run ``python -m picoora`` as a real subprocess against a test home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def run_cli(
    *args: str, home: Path, stdin: str = "", timeout: float = 60, extra_env: dict[str, str] | None = None,
    preexec_fn: Any = None,
) -> subprocess.CompletedProcess[str]:
    """``picoora ARGS`` in a fresh interpreter. stdin is a pipe (never the terminal), so ``agent``
    without ``-m`` reads its message from ``stdin``; stdout is a pipe, so output is not streamed.
    ``preexec_fn`` runs in the child before it starts (resource limits)."""
    env = {**os.environ, "PICOORA_HOME": str(home), "NO_COLOR": "1", **(extra_env or {})}
    return subprocess.run(
        [sys.executable, "-m", "picoora", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=timeout,
        preexec_fn=preexec_fn,
    )


def write_config(home: Path, *, ollama_url: str, embedder: str = "none", **defaults: Any) -> Path:
    """A config.json in ``home`` that talks to ``ollama_url``; ``defaults`` go to agents.defaults."""
    path = home / "config.json"
    data = {
        "agents": {"defaults": {"model": "qwen3:latest", **defaults}},
        "providers": {"ollama": {"api_base": ollama_url, "max_retries": 0}},
        "memory": {"embedder": embedder},
    }
    path.write_text(json.dumps(data, indent=2))
    return path


def closed_port_url_config(home: Path, **defaults: Any) -> Path:
    """A config whose model server is nowhere (commands that never reach a model)."""
    from tests.fakes._http import closed_port_url

    return write_config(home, ollama_url=closed_port_url(), **defaults)


def messages_text(request: dict) -> str:
    """Everything the model was shown in one chat request."""
    return "\n".join(str(m.get("content") or "") for m in request.get("messages", []))
