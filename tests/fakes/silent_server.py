"""A server that accepts connections and never answers: a stuck model server, or a wrong port where
something else listens and waits."""

from __future__ import annotations

import socket
import threading


class SilentServer:
    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self.accepted = 0
        self._open: list[socket.socket] = []
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="SilentServer", daemon=True)

    def _serve(self) -> None:
        self._sock.settimeout(0.05)
        while not self._stopped.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            self.accepted += 1
            self._open.append(conn)  # kept open, never written to

    def __enter__(self) -> SilentServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopped.set()
        self._thread.join()
        for conn in self._open:
            conn.close()
        self._sock.close()
