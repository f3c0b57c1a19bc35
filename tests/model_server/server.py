"""The HTTP server: one scripted turn per request, every request recorded."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.model_server import anthropic_wire, openai_wire
from tests.model_server.script import Api, Request, Turn, error_body


class ScriptedModel:
    """The server; a context manager (``start``/``close`` also work)."""

    model = "scripted-model"

    def __init__(self, turns: Sequence[Turn] = ()) -> None:
        self.turns: list[Turn] = list(turns)
        self.requests: list[Request] = []
        self.problems: list[str] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._ids = itertools.count(1)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL for both SDKs (``OpenAI(base_url=...)`` and ``Anthropic(base_url=...)``)."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def remaining(self) -> int:
        return len(self.turns)

    def add(self, *turns: Turn) -> None:
        with self._lock:
            self.turns.extend(turns)

    def start(self) -> ScriptedModel:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=10)
        self._server.server_close()

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next(self, request: Request) -> Turn | str:
        with self._lock:
            self.requests.append(request)
            if not self.turns:
                problem = f"request {len(self.requests)} ({request.api}): no scripted turn left"
            elif self.turns[0].match is not None and not self.turns[0].match(request):
                problem = (
                    f"request {len(self.requests)} ({request.api}): the next turn's match "
                    "refused it"
                )
            else:
                return self.turns.pop(0)
            self.problems.append(problem)
            return problem

    def _id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids)}"


def _handler(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._json(
                    200, {"object": "list", "data": [{"id": model.model, "object": "model"}]}
                )
            else:
                self._json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.split("?")[0].rstrip("/")
            api: Api
            if path.endswith("/chat/completions"):
                api = "openai"
            elif path.endswith("/responses"):
                api = "responses"
            elif path.endswith("/messages"):
                api = "anthropic"
            else:
                self._json(404, {"error": {"message": f"no route {self.path}"}})
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            request = Request(api, path, headers, body)
            turn = model._next(request)
            if not isinstance(turn, str) and turn.hang:
                model._closing.wait(timeout=60)
            elif isinstance(turn, str):
                self._json(400, error_body(api, 400, f"scripted model: {turn}"))
            elif turn.status != 200:
                self._json(turn.status, error_body(api, turn.status, turn.error), turn.headers)
            elif api == "openai":
                events = openai_wire.chat_events(model, turn, request)
                self._answer(request, turn, events, openai_wire.chat(model, turn))
            elif api == "responses":
                answer = openai_wire.responses(model, turn)
                self._answer(request, turn, openai_wire.responses_events(answer), answer)
            else:
                answer = anthropic_wire.messages(model, turn, request)
                self._answer(request, turn, anthropic_wire.messages_events(answer), answer)

        def _answer(
            self, request: Request, turn: Turn, events: Iterator[str], whole: dict[str, Any]
        ) -> None:
            if not request.stream:
                self._json(200, whole)
                return
            sent = [event.encode() for event in events]
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            if turn.cut == "broken":  # promise the whole body: closing early breaks it
                self.send_header("content-length", str(sum(map(len, sent))))
            if turn.cut is not None:
                sent = sent[: len(sent) // 2]
            self.end_headers()  # HTTP/1.0: otherwise the stream ends when the connection closes
            for event in sent:
                self.wfile.write(event)
                self.wfile.flush()

        def _json(self, status: int, data: Any, headers: Mapping[str, str] = {}) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(raw)

    return Handler
