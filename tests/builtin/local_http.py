"""A scripted HTTP server on 127.0.0.1 for the web tools' tests (raw bytes, real sockets)."""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    drip: float | None = None  # seconds between body bytes (a slow-drip server)
    hang: bool = False  # send nothing until the server stops


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Route = Reply | Callable[[Seen], Reply]


class LocalServer:
    """``route(path, reply)`` scripts an answer; ``seen`` records every request."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.routes: dict[str, Route] = {}
        self.seen: list[Seen] = []
        self.stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        if tls is not None:
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def route(self, path: str, reply: Route) -> None:
        self.routes[path] = reply

    def start(self) -> LocalServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()


def _handler(server: LocalServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            seen = Seen(
                self.command,
                self.path,
                {k.lower(): v for k, v in self.headers.items()},
                self.rfile.read(length),
            )
            server.seen.append(seen)
            route = server.routes.get(self.path.split("?")[0])
            reply = Reply(404, body=b"no route") if route is None else route
            if callable(reply):
                reply = reply(seen)
            if reply.hang:
                server.stopping.wait(30)
                return
            chunked = reply.headers.get("transfer-encoding") == "chunked"
            if chunked:  # chunked framing needs an HTTP/1.1 status line
                self.protocol_version = "HTTP/1.1"
                self.close_connection = True
            self.send_response(reply.status)
            length = {} if chunked else {"content-length": str(len(reply.body))}
            headers = {**length, **reply.headers, "connection": "close"}
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            try:
                if chunked:
                    for start in range(0, len(reply.body), 65536):
                        piece = reply.body[start : start + 65536]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.write(b"0\r\n\r\n")
                elif reply.drip is None:
                    self.wfile.write(reply.body)
                    return
                for byte in reply.body:
                    if server.stopping.is_set():
                        return
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(reply.drip)  # the server's pace, not a wait in the test
            except (BrokenPipeError, ConnectionResetError):
                return

        do_GET = _serve
        do_POST = _serve

    return Handler
