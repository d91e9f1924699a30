"""The control API transport: JSON lines over a Unix stream socket.

One request object per line, one response object per line, in order, on any number of
concurrent connections (one thread each).  Requests are answered by a handler such as
``ControlPlane.handle(request, received)``.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("controller.api")
MAX_LINE = 64 << 20  # an open_job carries the whole DAG (0.7 MB for mixtral-8x7b)

Handler = Callable[[object, float], dict]


class ApiServer:
    """Listens on ``path`` (bound in the constructor, so it is ready on return)."""

    def __init__(self, path: Path, handler: Handler, spawn: Callable | None = None) -> None:
        """Bind and listen on the Unix socket ``path`` (a stale file is replaced)."""
        self.path, self.handler = Path(path), handler
        self.spawn = spawn or (
            lambda fn, *a: threading.Thread(target=fn, args=a, daemon=True).start()
        )
        if self.path.is_socket():
            self.path.unlink()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(self.path))
        os.chmod(self.path, 0o600)
        self.sock.listen(16)
        self.closed = False

    def serve_forever(self) -> None:
        """Accept connections until closed."""
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                if self.closed:
                    return
                raise
            self.spawn(self._serve_conn, conn)

    def _serve_conn(self, conn: socket.socket) -> None:
        """Answer each line of one connection until the peer closes it."""
        with conn, conn.makefile("rb") as rfile:
            try:
                for raw in rfile:
                    reply = self._answer(raw, time.monotonic())
                    conn.sendall(json.dumps(reply).encode() + b"\n")
            except (BrokenPipeError, ConnectionResetError) as e:
                # the client gave up (its own timeout); its reply has nobody to go to
                log.info("API client went away before its reply: %s", e)

    def _answer(self, raw: bytes, received: float) -> dict:
        """Decode one line and hand it to the handler."""
        if len(raw) > MAX_LINE:
            return {"ok": False, "error": f"request longer than {MAX_LINE} bytes"}
        try:
            request = json.loads(raw)
        except ValueError as e:
            return {"ok": False, "error": f"request is not JSON: {e}"}
        return self.handler(request, received)

    def close(self) -> None:
        """Stop accepting and remove the socket file."""
        self.closed = True
        self.sock.close()
        if self.path.is_socket():
            self.path.unlink()
