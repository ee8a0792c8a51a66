"""The lifecycle every loopback fake shares: a threaded HTTP server on 127.0.0.1, a free port."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago, for a server started in a subprocess.

    (A server in this process binds port 0 instead, which cannot race; see ``LoopbackServer``.)
    """
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LoopbackServer:
    """``with Fake(...) as fake:`` serves ``handler_class`` (which sees the fake as ``self.fake``)."""

    handler_class: type[BaseHTTPRequestHandler]
    _httpd: ThreadingHTTPServer | None = None

    def __enter__(self):
        handler = type("Handler", (self.handler_class,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    @property
    def origin(self) -> str:
        assert self._httpd is not None, f"use {type(self).__name__} as a context manager"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"
