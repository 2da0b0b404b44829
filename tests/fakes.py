"""Fakes of the Anthropic Messages API and of the OpenAI APIs on 127.0.0.1, speaking their real shapes.

Each records every request (method, path, headers, raw body bytes) and answers
from a script: a streamed (SSE) or JSON answer, an HTTP error, an SSE
`error` event, a stream that drops mid-way, or a slow stream.
"""

from __future__ import annotations

import hashlib
import json
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Recorded:
    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def json(self) -> dict:
        return json.loads(self.body)


def sse(events: list[dict]) -> list[bytes]:
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]


def message_events(text: str = "Hello from the fake.", tool: dict | None = None, model: str = "claude-test") -> list[dict]:
    ev = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_fake01",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 12, "output_tokens": 1},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "private reasoning"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
    ]
    half = len(text) // 2
    ev += [
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": text[:half]}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": text[half:]}},
        {"type": "content_block_stop", "index": 1},
    ]
    stop = "end_turn"
    if tool:
        args = json.dumps(tool["input"])
        ev += [
            {
                "type": "content_block_start",
                "index": 2,
                "content_block": {"type": "tool_use", "id": tool.get("id", "toolu_fake01"), "name": tool["name"], "input": {}},
            },
            {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": args[:5]}},
            {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": args[5:]}},
            {"type": "content_block_stop", "index": 2},
        ]
        stop = "tool_use"
    ev += [
        {
            "type": "message_delta",
            "delta": {"type": "message_delta", "stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]
    return ev


def message_json(text: str = "Hello from the fake.") -> dict:
    return {
        "id": "msg_fake02",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 5},
    }


@dataclass
class Reply:
    status: int = 200
    kind: str = "auto"  # auto | sse | json | error-event | drop | raw | sse-raw
    text: str = "Hello from the fake."
    tool: dict | None = None
    body: bytes = b""
    delay: float = 0.0  # seconds between SSE events
    hold: threading.Event | None = None  # after event number `hold_after`, wait for this before the rest
    hold_after: int = 0
    headers: list[tuple[str, str]] = field(default_factory=list)
    chunk: int = 16384  # sse-raw: `body` is sent as SSE in pieces of this size
    tools: list[dict] = field(default_factory=list)  # FakeOpenAI: more tool calls after `tool` (parallel calls)
    reasoning: str = "private reasoning"  # FakeOpenAI: the reasoning the answer carries (never captured)


class QuietHandler(BaseHTTPRequestHandler):
    """HTTP/1.1, no request log, Nagle off: headers and body go out in separate
    writes, and with Nagle on the second waits for the client's delayed ACK
    (~40 ms), which would be measured as the proxy's overhead."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *a):
        pass

    def body(self) -> bytes:
        n = int(self.headers.get("content-length") or 0)
        return self.rfile.read(n) if n else b""


class FakeAnthropic:
    def __init__(self):
        self.requests: list[Recorded] = []
        # bead's own health probes (GET /bead/health): a model API never gets one, but the tests share the loopback
        # ports, and another test's bead may probe a port its proxy had before this server took it.
        self.probes: list[Recorded] = []
        self.replies: list[Reply] = []
        self.default = Reply()
        self.disconnects = 0
        fake = self

        class Handler(QuietHandler):
            def _handle(self):
                body = self.body()
                if self.path.startswith("/bead/"):
                    fake.probes.append(Recorded(self.command, self.path, list(self.headers.items()), body))
                    self.send_response(404)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                fake.requests.append(Recorded(self.command, self.path, list(self.headers.items()), body))
                reply = fake.replies.pop(0) if fake.replies else fake.default
                fake._answer(self, reply, body)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _handle

            def do_HEAD(self):
                fake.requests.append(Recorded("HEAD", self.path, list(self.headers.items()), b""))
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

        self.server, self.url = serve(Handler)

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def _answer(self, h: BaseHTTPRequestHandler, reply: Reply, body: bytes) -> None:
        kind = reply.kind
        if kind == "auto":
            try:
                stream = json.loads(body).get("stream", False)
            except (ValueError, AttributeError):  # not JSON, or a number int() refuses
                stream = False
            kind = "sse" if stream else "json"
        if reply.status >= 400 or kind in ("json", "raw"):
            if kind == "raw":
                data = reply.body
            elif reply.status >= 400:
                data = json.dumps(
                    {
                        "type": "error",
                        "error": {
                            "type": "overloaded_error" if reply.status == 529 else "invalid_request_error",
                            "message": "fake upstream error",
                        },
                    }
                ).encode()
            else:
                data = json.dumps(message_json(reply.text)).encode()
            h.send_response(reply.status)
            h.send_header("content-type", "application/json")
            h.send_header("request-id", "req_fake123")
            for k, v in reply.headers:
                h.send_header(k, v)
            h.send_header("content-length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            return
        h.send_response(200)
        h.send_header("content-type", "text/event-stream; charset=utf-8")
        h.send_header("cache-control", "no-cache")
        h.send_header("request-id", "req_fake123")
        for k, v in reply.headers:
            h.send_header(k, v)
        h.send_header("transfer-encoding", "chunked")
        h.end_headers()
        events = sse(message_events(reply.text, reply.tool))
        if kind == "sse-raw":
            events = [reply.body[i : i + reply.chunk] for i in range(0, len(reply.body), reply.chunk)]
        if kind == "error-event":
            events = events[:7] + sse([{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}])
        if kind == "drop":
            events = events[:7]  # through the first half of the text
        self._stream(h, events, reply, drop=kind == "drop")

    def _stream(self, h: BaseHTTPRequestHandler, events: list[bytes], reply: Reply, drop: bool) -> None:
        """Send ``events`` as chunks (holding, pausing as the reply says); ``drop`` cuts the connection at the end."""
        try:
            for n, chunk in enumerate(events):
                h.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                h.wfile.flush()
                if n == reply.hold_after and reply.hold is not None and not self._hold(h, reply.hold):
                    self.disconnects += 1
                    return
                if reply.delay:
                    time.sleep(reply.delay)
            if drop:
                h.wfile.flush()
                h.connection.shutdown(socket.SHUT_RDWR)
                h.close_connection = True
                return
            h.wfile.write(b"0\r\n\r\n")
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.disconnects += 1

    @staticmethod
    def _hold(h: BaseHTTPRequestHandler, gate: threading.Event, timeout: float = 30.0) -> bool:
        """Wait for ``gate``; False as soon as the client (the proxy) closes the connection instead."""
        end = time.monotonic() + timeout
        while not gate.wait(0.01) and time.monotonic() < end:
            readable, _, _ = select.select([h.connection], [], [], 0)
            if readable:
                try:
                    if h.connection.recv(1, socket.MSG_PEEK) == b"":
                        h.close_connection = True
                        return False
                except ConnectionResetError:
                    h.close_connection = True
                    return False
        return True


# ----- the OpenAI APIs: Chat Completions and Responses ---------------------------------------------


def openai_sse(events: list[dict], named: bool) -> list[bytes]:
    """SSE as OpenAI writes it: Responses events carry an ``event:`` line, chat chunks only ``data:``."""
    out = []
    for e in events:
        head = f"event: {e['type']}\n" if named else ""
        out.append(f"{head}data: {json.dumps(e)}\n\n".encode())
    return out


def _calls(reply: Reply) -> list[dict]:
    """The reply's tool calls: ``tool`` then ``tools``, each {"name", "input" (dict or str), "id"}."""
    calls = ([reply.tool] if reply.tool else []) + list(reply.tools)
    return [
        {
            "name": c["name"],
            "id": c.get("id", f"call_fake{i:02d}"),
            "arguments": c["input"] if isinstance(c["input"], str) else json.dumps(c["input"]),
        }
        for i, c in enumerate(calls)
    ]


def chat_json(reply: Reply, model: str = "gpt-test", n: int = 1) -> dict:
    choices = []
    for i in range(n):
        calls = _calls(reply)
        msg: dict = {"role": "assistant", "content": reply.text + (f" ({i})" if i else ""), "refusal": None}
        if reply.reasoning:
            msg["reasoning_content"] = reply.reasoning  # what DeepSeek, vLLM and others add
        if calls:
            msg["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls
            ]
        choices.append({"index": i, "message": msg, "logprobs": None, "finish_reason": "tool_calls" if calls else "stop"})
    return {
        "id": "chatcmpl-fake02",
        "object": "chat.completion",
        "created": 1764460800,
        "model": model,
        "choices": choices,
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
        "system_fingerprint": "fp_fake",
    }


def chat_events(reply: Reply, model: str = "gpt-test", n: int = 1, usage: bool = False) -> list[dict]:
    """Chat completion chunks as OpenAI streams them: role first, text in two deltas, each tool call's
    arguments in two pieces, a finish chunk per choice, then (``stream_options.include_usage``) usage."""
    base = {
        "id": "chatcmpl-fake01",
        "object": "chat.completion.chunk",
        "created": 1764460800,
        "model": model,
        "system_fingerprint": "fp_fake",
    }

    def chunk(i: int, delta: dict, finish: str | None = None) -> dict:
        return {**base, "choices": [{"index": i, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    ev = []
    for i in range(n):
        text = reply.text + (f" ({i})" if i else "")
        ev.append(chunk(i, {"role": "assistant", "content": "", "refusal": None}))
        if reply.reasoning:
            ev.append(chunk(i, {"reasoning_content": reply.reasoning}))
        half = len(text) // 2
        ev += [chunk(i, {"content": text[:half]}), chunk(i, {"content": text[half:]})]
        calls = _calls(reply)
        for k, c in enumerate(calls):
            ev.append(
                chunk(
                    i,
                    {
                        "tool_calls": [
                            {"index": k, "id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": ""}}
                        ]
                    },
                )
            )
            a = c["arguments"]
            ev += [
                chunk(i, {"tool_calls": [{"index": k, "function": {"arguments": a[:5]}}]}),
                chunk(i, {"tool_calls": [{"index": k, "function": {"arguments": a[5:]}}]}),
            ]
        ev.append(chunk(i, {}, "tool_calls" if calls else "stop"))
    if usage:
        ev.append({**base, "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}})
    return ev


def _response(model: str, status: str, output: list[dict], request: dict) -> dict:
    # One id per request (the same for the stream's events of one answer): a chain's steps differ, as upstream.
    rid = "resp_" + hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:16]
    return {
        "id": rid,
        "object": "response",
        "created_at": 1764460800,
        "status": status,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "previous_response_id": request.get("previous_response_id"),
        "store": request.get("store", True),
        "temperature": 1.0,
        "top_p": 1.0,
        "text": {"format": {"type": "text"}},
        "truncation": "disabled",
        "usage": None
        if status != "completed"
        else {
            "input_tokens": 12,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 2},
            "total_tokens": 17,
        },
    }


def response_items(reply: Reply) -> list[dict]:
    """The output items of a Responses answer: reasoning, the message, then each function call."""
    items: list[dict] = []
    if reply.reasoning:
        items.append(
            {
                "type": "reasoning",
                "id": "rs_fake01",
                "summary": [{"type": "summary_text", "text": reply.reasoning}],
                "encrypted_content": "gAAAAA-fake",
            }
        )
    if reply.text:
        items.append(
            {
                "type": "message",
                "id": "msg_fake01",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}],
            }
        )
    for k, c in enumerate(_calls(reply)):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_fake{k:02d}",
                "call_id": c["id"],
                "name": c["name"],
                "arguments": c["arguments"],
                "status": "completed",
            }
        )
    return items


def responses_json(reply: Reply, request: dict, model: str = "gpt-test") -> dict:
    return _response(model, "completed", response_items(reply), request)


def responses_events(reply: Reply, request: dict, model: str = "gpt-test") -> list[dict]:
    """The Responses API's typed events for one answer, as OpenAI streams them."""
    items = response_items(reply)
    ev: list[dict] = [
        {"type": "response.created", "response": _response(model, "in_progress", [], request)},
        {"type": "response.in_progress", "response": _response(model, "in_progress", [], request)},
    ]
    for i, item in enumerate(items):
        if item["type"] == "reasoning":
            ev += [
                {"type": "response.output_item.added", "output_index": i, "item": {**item, "summary": []}},
                {
                    "type": "response.reasoning_summary_text.delta",
                    "item_id": item["id"],
                    "output_index": i,
                    "summary_index": 0,
                    "delta": reply.reasoning,
                },
                {"type": "response.output_item.done", "output_index": i, "item": item},
            ]
        elif item["type"] == "message":
            text = item["content"][0]["text"]
            half = len(text) // 2
            ref = {"item_id": item["id"], "output_index": i, "content_index": 0}
            ev += [
                {
                    "type": "response.output_item.added",
                    "output_index": i,
                    "item": {**item, "status": "in_progress", "content": []},
                },
                {"type": "response.content_part.added", **ref, "part": {"type": "output_text", "text": "", "annotations": []}},
                {"type": "response.output_text.delta", **ref, "delta": text[:half], "logprobs": []},
                {"type": "response.output_text.delta", **ref, "delta": text[half:], "logprobs": []},
                {"type": "response.output_text.done", **ref, "text": text, "logprobs": []},
                {"type": "response.content_part.done", **ref, "part": item["content"][0]},
                {"type": "response.output_item.done", "output_index": i, "item": item},
            ]
        else:
            a = item["arguments"]
            ref = {"item_id": item["id"], "output_index": i}
            ev += [
                {
                    "type": "response.output_item.added",
                    "output_index": i,
                    "item": {**item, "arguments": "", "status": "in_progress"},
                },
                {"type": "response.function_call_arguments.delta", **ref, "delta": a[:5]},
                {"type": "response.function_call_arguments.delta", **ref, "delta": a[5:]},
                {"type": "response.function_call_arguments.done", **ref, "arguments": a},
                {"type": "response.output_item.done", "output_index": i, "item": item},
            ]
    ev.append({"type": "response.completed", "response": _response(model, "completed", items, request)})
    for n, e in enumerate(ev):
        e["sequence_number"] = n
    return ev


def openai_error(status: int) -> dict:
    kind = {
        400: "invalid_request_error",
        401: "invalid_request_error",
        404: "invalid_request_error",
        429: "rate_limit_exceeded",
    }.get(status, "server_error")
    return {
        "error": {
            "message": "fake upstream error",
            "type": kind,
            "param": None,
            "code": "invalid_api_key" if status == 401 else None,
        }
    }


class FakeOpenAI(FakeAnthropic):
    """The OpenAI APIs on 127.0.0.1, in their real shapes: ``POST /v1/chat/completions`` (JSON, or chat
    completion chunks with ``stream``, ``n`` choices), ``POST /v1/responses`` (JSON, or the typed
    events), ``GET /v1/models``; any other path is a 404 in OpenAI's error shape.

    Replies are scripted as for FakeAnthropic (``Reply``: status, kind, text, tool calls, drop, hold,
    an ``error-event``); ``record`` (a callable) sees each request as it arrives: the Codex recorder
    writes them to disk. ``answer`` (a callable) may choose the reply from the request instead of the queue.
    """

    def __init__(self, record=None, answer=None):
        self.record = record
        self.answer = answer
        super().__init__()

    def _answer(self, h: BaseHTTPRequestHandler, reply: Reply, body: bytes) -> None:
        path = h.path.split("?", 1)[0]
        if self.record is not None:
            self.record(self.requests[-1])
        try:
            request = json.loads(body) if body else {}
            request = request if isinstance(request, dict) else {}
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            request = {}
        if self.answer is not None and path.endswith(("/chat/completions", "/responses")):
            reply = self.answer(request, reply)
        kind = reply.kind
        if kind == "auto":
            kind = "sse" if request.get("stream") else "json"
        model = str(request.get("model") or "gpt-test")
        if h.command == "GET" and path.endswith("/models"):
            data = json.dumps(
                {"object": "list", "data": [{"id": "gpt-test", "object": "model", "created": 1764460800, "owned_by": "fake"}]}
            ).encode()
            return self._send(h, 200, data, reply)
        chat, responses = path.endswith("/chat/completions"), path.endswith("/responses")
        if not (chat or responses):
            return self._send(h, 404, json.dumps(openai_error(404)).encode(), reply)
        if kind == "raw" or reply.status >= 400:
            return self._send(
                h, reply.status, reply.body if kind == "raw" else json.dumps(openai_error(reply.status)).encode(), reply
            )
        n = request.get("n") if isinstance(request.get("n"), int) and chat else 1
        if kind == "json":
            data = chat_json(reply, model, n) if chat else responses_json(reply, request, model)
            return self._send(h, 200, json.dumps(data).encode(), reply)
        h.send_response(200)
        h.send_header("content-type", "text/event-stream; charset=utf-8")
        h.send_header("cache-control", "no-cache")
        h.send_header("x-request-id", "req_fake123")
        for k, v in reply.headers:
            h.send_header(k, v)
        h.send_header("transfer-encoding", "chunked")
        h.end_headers()
        if chat:
            opts = request.get("stream_options")
            events = openai_sse(
                chat_events(reply, model, n, usage=isinstance(opts, dict) and bool(opts.get("include_usage"))), named=False
            )
            done = [b"data: [DONE]\n\n"]
        else:
            events, done = openai_sse(responses_events(reply, request, model), named=True), []
        half = len(events) // 2
        if kind == "sse-raw":
            events, done = [reply.body[i : i + reply.chunk] for i in range(0, len(reply.body), reply.chunk)], []
        elif kind == "error-event":
            # Chat: an error object in the stream; Responses: its `error` event. Then the stream ends.
            err = {"error": {"message": "Overloaded", "type": "server_error", "param": None, "code": None}}
            events, done = (
                events[:half]
                + (
                    openai_sse([err], named=False)
                    if chat
                    else openai_sse(
                        [
                            {
                                "type": "error",
                                "code": "server_error",
                                "message": "Overloaded",
                                "param": None,
                                "sequence_number": half,
                            }
                        ],
                        named=True,
                    )
                ),
                [],
            )
        elif kind == "drop":
            events, done = events[:half], []
        self._stream(h, events + done, reply, drop=kind == "drop")

    def _send(self, h: BaseHTTPRequestHandler, status: int, data: bytes, reply: Reply) -> None:
        h.send_response(status)
        h.send_header("content-type", "application/json")
        h.send_header("x-request-id", "req_fake123")
        for k, v in reply.headers:
            h.send_header(k, v)
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)


def serve(handler) -> tuple[ThreadingHTTPServer, str]:
    """Serve ``handler`` on a free loopback port in a daemon thread."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    # A short poll interval: shutdown() waits for the loop to notice (0.5 s by default), and every
    # test that uses a fake waits that out at its end; a 5 ms wake-up costs next to no CPU.
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.005}, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def system_prompt(body: dict) -> str:
    """The system prompt of a chat request in any of the three APIs."""
    if isinstance(body.get("system"), str):
        return body["system"]
    return "".join(str(m.get("content", "")) for m in body.get("messages") or [] if m.get("role") == "system")


class FakeModel:
    """A chat model on 127.0.0.1 that speaks Ollama's, Anthropic's and OpenAI's chat APIs.

    ``answers`` is a queue of reply texts (a callable gets the request JSON);
    ``by_system`` answers, before the queue, every request whose system prompt
    contains one of its keys (a text or a callable), so a second kind of call
    does not take the next answer from the queue; ``delay`` holds each answer
    back; ``status`` makes it fail; ``envelope`` (the API's JSON bytes -> the
    bytes sent) rewrites what the API answers around the text (a hostile
    server); ``trickle`` sends it a byte at a time, that many seconds apart.
    """

    def __init__(self):
        self.requests: list[tuple[str, dict, dict]] = []
        self.answers: list = []
        self.by_system: dict[str, object] = {}
        self.default = '{"helpful": []}'
        self.delay = 0.0
        self.status = 200
        self.envelope = None
        self.trickle = 0.0
        fake = self

        class Handler(QuietHandler):
            def do_POST(self):
                body = json.loads(self.body() or b"{}")
                fake.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                system = system_prompt(body)
                routed = [a for k, a in fake.by_system.items() if k in system]
                answer = routed[0] if routed else fake.answers.pop(0) if fake.answers else fake.default
                if callable(answer):
                    answer = answer(body)
                if fake.delay:
                    time.sleep(fake.delay)
                if fake.status != 200:
                    data = json.dumps({"error": {"message": "fake model error"}}).encode()
                elif self.path == "/api/chat":
                    data = json.dumps(
                        {
                            "model": body.get("model"),
                            "created_at": "2026-11-30T00:00:00Z",
                            "message": {"role": "assistant", "content": answer},
                            "done": True,
                            "prompt_eval_count": 120,
                            "eval_count": 30,
                        }
                    ).encode()
                elif self.path == "/v1/messages":
                    data = json.dumps(
                        {
                            "id": "msg_m1",
                            "type": "message",
                            "role": "assistant",
                            "model": body.get("model"),
                            "content": [{"type": "text", "text": answer}],
                            "stop_reason": "end_turn",
                            "usage": {"input_tokens": 120, "output_tokens": 30},
                        }
                    ).encode()
                elif self.path.endswith("/chat/completions"):
                    data = json.dumps(
                        {
                            "id": "chatcmpl-1",
                            "object": "chat.completion",
                            "model": body.get("model"),
                            "choices": [
                                {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}
                            ],
                            "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
                        }
                    ).encode()
                else:
                    self.send_response(404)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                if fake.envelope is not None:
                    data = fake.envelope(data)
                try:
                    self.send_response(fake.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    if fake.trickle:
                        for i in range(len(data)):
                            self.wfile.write(data[i : i + 1])
                            self.wfile.flush()
                            time.sleep(fake.trickle)
                    else:
                        self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server, self.url = serve(Handler)

    def close(self):
        self.server.shutdown()
        self.server.server_close()
