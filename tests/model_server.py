"""A scripted model server for tests: real HTTP on 127.0.0.1, real wire formats.

It speaks OpenAI Chat Completions (``.../chat/completions``, plain and streamed as SSE chunks,
tool calls streamed in pieces, ``response_format`` structured output), the OpenAI Responses API
(``.../responses``, plain and streamed as typed events; the OpenAI Agents SDK's default) and
Anthropic Messages (``.../messages``, plain and streamed with ``input_json_delta``), answering
each request with the next scripted :class:`Turn` and recording every request it got::

    with ScriptedModel([
        Turn(tool_calls=[Call("tool_search", {"query": "weather"})]),
        Turn(text="It is sunny."),
    ]) as model:
        client = openai.AsyncOpenAI(base_url=model.url, api_key="k")
        anthropic.AsyncAnthropic(base_url=model.url, api_key="k")  # same URL works
        ...
        assert model.requests[1].messages[-1]["role"] == "tool"
        assert model.problems == []

Or use the ``model_server`` fixture (tests/conftest.py) and ``model_server.add(Turn(...))``.
A request with no turn left, or one a turn's ``match`` rejects, is answered HTTP 400 (which no
SDK retries) and listed in :attr:`ScriptedModel.problems`.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Api = Literal["openai", "responses", "anthropic"]


@dataclass(frozen=True)
class Call:
    """A tool call the model makes. ``arguments`` as a string is sent verbatim (broken JSON,
    double-encoded JSON: whatever a test needs); ``id`` defaults to ``call_<n>``/``toolu_<n>``."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Request:
    """One request the server received (``headers`` keys are lower-case)."""

    api: Api
    path: str
    headers: Mapping[str, str]
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        """Chat/Messages ``messages``, or the Responses ``input`` items (a string input as
        one user message)."""
        if self.api == "responses":
            given = self.body.get("input") or []
            return [{"role": "user", "content": given}] if isinstance(given, str) else list(given)
        return list(self.body.get("messages") or [])

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.body.get("tools") or [])

    @property
    def tool_names(self) -> list[str]:
        return [t.get("name") or t.get("function", {}).get("name") for t in self.tools]

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def structured(self) -> bool:
        """A structured-output request: a JSON-schema response format (Chat, Responses) or
        one forced tool (Anthropic). ``Turn(structured=..., match=lambda r: r.structured)``."""
        body = self.body
        response_format = (body.get("response_format") or {}).get("type")
        text_format = ((body.get("text") or {}).get("format") or {}).get("type")
        forced = (body.get("tool_choice") or {}) if self.api == "anthropic" else {}
        return "json_schema" in (response_format, text_format) or forced.get("type") == "tool"


@dataclass(frozen=True)
class Turn:
    """One scripted answer.

    ``text`` and/or ``tool_calls``; or ``structured``, a JSON value for a structured-output
    request (OpenAI: the message content; Anthropic: the input of the forced tool); or an
    error: ``status`` (e.g. 429, 503) with ``headers`` such as ``{"Retry-After": "0.01"}``.
    ``match`` (a predicate on the :class:`Request`) makes the turn refuse other requests.
    ``hang`` never answers (until the server closes): for client timeouts. ``cut`` streams
    only the first half of the events, then closes the connection: ``"broken"`` after
    promising the whole body (a transport error), ``"clean"`` as if the stream had ended.
    """

    text: str = ""
    tool_calls: Sequence[Call] = ()
    structured: Any = None
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    error: str = "scripted error"
    match: Callable[[Request], bool] | None = None
    usage: tuple[int, int] = (12, 7)
    hang: bool = False
    cut: Literal["broken", "clean"] | None = None


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
                self._json(400, _error_body(api, 400, f"scripted model: {turn}"))
            elif turn.status != 200:
                self._json(turn.status, _error_body(api, turn.status, turn.error), turn.headers)
            elif api == "openai":
                events = _openai_events(model, turn, request)
                self._answer(request, turn, events, _openai(model, turn))
            elif api == "responses":
                answer = _responses(model, turn)
                self._answer(request, turn, _responses_events(answer), answer)
            else:
                answer = _anthropic(model, turn, request)
                self._answer(request, turn, _anthropic_events(answer), answer)

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


def _error_body(api: Api, status: int, message: str) -> dict[str, Any]:
    kind = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error"}
    error_type = kind.get(status, "api_error")
    if api == "anthropic":
        return {"type": "error", "error": {"type": error_type, "message": message}}
    return {"error": {"message": message, "type": error_type, "param": None, "code": None}}


def _arguments(call: Call) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def _pieces(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _words(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text)


# --- OpenAI Chat Completions ------------------------------------------------------------


def _openai(model: ScriptedModel, turn: Turn) -> dict[str, Any]:
    content = json.dumps(turn.structured) if turn.structured is not None else turn.text or None
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.id or model._id("call"),
                "type": "function",
                "function": {"name": c.name, "arguments": _arguments(c)},
            }
            for c in turn.tool_calls
        ]
    return {
        "id": model._id("chatcmpl"),
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if turn.tool_calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": _openai_usage(turn),
    }


def _openai_usage(turn: Turn) -> dict[str, int]:
    prompt, completion = turn.usage
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _openai_events(model: ScriptedModel, turn: Turn, request: Request) -> Iterator[str]:
    whole = _openai(model, turn)
    base = {k: whole[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return f"data: {json.dumps(base | {'choices': [choice]})}\n\n"

    message = whole["choices"][0]["message"]
    yield chunk({"role": "assistant", "content": ""})
    for word in _words(message["content"] or ""):
        yield chunk({"content": word})
    for index, call in enumerate(message.get("tool_calls", [])):
        function = call["function"]
        head = {"index": index, "id": call["id"], "type": "function"}
        yield chunk(
            {"tool_calls": [head | {"function": {"name": function["name"], "arguments": ""}}]}
        )
        for piece in _pieces(function["arguments"]):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, whole["choices"][0]["finish_reason"])
    if (request.body.get("stream_options") or {}).get("include_usage"):
        yield f"data: {json.dumps(base | {'choices': [], 'usage': whole['usage']})}\n\n"
    yield "data: [DONE]\n\n"


# --- OpenAI Responses ------------------------------------------------------------------


def _responses(model: ScriptedModel, turn: Turn) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    text = json.dumps(turn.structured) if turn.structured is not None else turn.text
    if text:
        part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
        output.append(
            {
                "type": "message",
                "id": model._id("msg"),
                "role": "assistant",
                "status": "completed",
                "content": [part],
            }
        )
    for call in turn.tool_calls:
        output.append(
            {
                "type": "function_call",
                "id": model._id("fc"),
                "call_id": call.id or model._id("call"),
                "name": call.name,
                "arguments": _arguments(call),
                "status": "completed",
            }
        )
    prompt, completion = turn.usage
    return {
        "id": model._id("resp"),
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "completed",
        "model": model.model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        },
    }


def _responses_events(whole: dict[str, Any]) -> Iterator[str]:
    sequence = itertools.count()

    def event(kind: str, **data: Any) -> str:
        payload = {"type": kind, "sequence_number": next(sequence), **data}
        return f"event: {kind}\ndata: {json.dumps(payload)}\n\n"

    yield event("response.created", response=whole | {"status": "in_progress", "output": []})
    for index, item in enumerate(whole["output"]):
        where = {"output_index": index, "item_id": item["id"]}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            empty = {**item, "status": "in_progress", "content": []}
            yield event("response.output_item.added", output_index=index, item=empty)
            part = {"type": "output_text", "text": "", "annotations": []}
            yield event("response.content_part.added", **where, content_index=0, part=part)
            for word in _words(text):
                yield event(
                    "response.output_text.delta", **where, content_index=0, delta=word, logprobs=[]
                )
            yield event(
                "response.output_text.done", **where, content_index=0, text=text, logprobs=[]
            )
            yield event(
                "response.content_part.done", **where, content_index=0, part=item["content"][0]
            )
        else:
            started = {**item, "status": "in_progress", "arguments": ""}
            yield event("response.output_item.added", output_index=index, item=started)
            for piece in _pieces(item["arguments"]):
                yield event("response.function_call_arguments.delta", **where, delta=piece)
            yield event(
                "response.function_call_arguments.done", **where, arguments=item["arguments"]
            )
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=whole)


# --- Anthropic Messages -----------------------------------------------------------------


def _anthropic(model: ScriptedModel, turn: Turn, request: Request) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    calls = list(turn.tool_calls)
    if turn.structured is not None:
        forced = (request.body.get("tool_choice") or {}).get("name") or "answer"
        calls.append(Call(forced, turn.structured))
    for call in calls:
        arguments: Any = call.arguments if isinstance(call.arguments, str) else dict(call.arguments)
        content.append(
            {
                "type": "tool_use",
                "id": call.id or model._id("toolu"),
                "name": call.name,
                "input": arguments,
            }
        )
    prompt, completion = turn.usage
    return {
        "id": model._id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model.model,
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }


def _anthropic_events(whole: dict[str, Any]) -> Iterator[str]:
    def event(data: dict[str, Any]) -> str:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"

    start = whole | {"content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": whole["usage"]["input_tokens"], "output_tokens": 0}
    yield event({"type": "message_start", "message": start})
    for index, block in enumerate(whole["content"]):
        if block["type"] == "text":
            yield event(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                }
            )
            for word in _words(block["text"]):
                delta = {"type": "text_delta", "text": word}
                yield event({"type": "content_block_delta", "index": index, "delta": delta})
        else:
            head = {k: block[k] for k in ("type", "id", "name")} | {"input": {}}
            yield event({"type": "content_block_start", "index": index, "content_block": head})
            raw = block["input"] if isinstance(block["input"], str) else json.dumps(block["input"])
            for piece in _pieces(raw):
                delta = {"type": "input_json_delta", "partial_json": piece}
                yield event({"type": "content_block_delta", "index": index, "delta": delta})
        yield event({"type": "content_block_stop", "index": index})
    yield event(
        {
            "type": "message_delta",
            "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": whole["usage"]["output_tokens"]},
        }
    )
    yield event({"type": "message_stop"})
