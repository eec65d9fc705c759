"""picoora: a small, local-first AI assistant daemon that remembers by meaning."""

__version__ = "0.1.0"
