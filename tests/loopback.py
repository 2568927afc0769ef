"""A real HTTP server on 127.0.0.1 that plays scripted model replies and records requests.

Replies are served with chunked transfer encoding, piece by piece, so clients see a real
stream arriving over a socket. Used by backend, agent, app and CLI tests alike.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Sequence


@dataclass
class Reply:
    """One scripted response: status, headers, and the body as pieces sent with ``delay`` s between."""

    body: bytes | list[bytes] = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    delay: float = 0.0

    def pieces(self) -> list[bytes]:
        return [self.body] if isinstance(self.body, bytes) else list(self.body)


@dataclass
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body)


def sse(events: list[tuple[str | None, dict | str]]) -> bytes:
    """Encode ``(event_name_or_None, data)`` pairs as a text/event-stream body."""
    out = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {payload}\n\n")
    return "".join(out).encode()


def split(body: bytes, size: int) -> list[bytes]:
    """``body`` cut into pieces of ``size`` bytes (cutting through UTF-8 sequences on purpose)."""
    return [body[i : i + size] for i in range(0, len(body), size)] or [b""]


def send_json(handler: BaseHTTPRequestHandler, status: int, body: object) -> None:
    """Answer ``handler``'s request with ``status`` and ``body``: bytes as they are, anything
    else as JSON, with its length."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class LoopbackServer:
    """Serve ``replies`` in order (or from ``handler(recorded) -> Reply``) on a free port.

    Use as a context manager; ``url`` is ``http://127.0.0.1:PORT``; ``requests`` lists what
    arrived. When the scripted replies run out, the server answers 500 with a JSON error.
    """

    def __init__(self, replies: list[Reply] | None = None, handler: Callable[[Recorded], Reply] | None = None,
                 models: list[str] | None = None, props: dict | None = None):
        self.replies = list(replies or [])
        self.models = models  # GET .../models answers these ids in OpenAI's list shape (None: 404)
        self.props = props  # GET /props answers this (llama.cpp's server properties; None: 404)
        self.gets: list[Recorded] = []
        self.handler = handler
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                # https://platform.openai.com/docs/api-reference/models/list
                with outer._lock:  # apart from ``requests``: the model requests
                    outer.gets.append(Recorded("GET", self.path, {k.lower(): v for k, v in self.headers.items()}, b""))
                if outer.props is not None and self.path.rstrip("/") == "/props":
                    send_json(self, 200, outer.props)
                    return
                found = outer.models is not None and self.path.rstrip("/").endswith("/models")
                send_json(self, 200 if found else 404,
                          {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "test"}
                                                      for m in outer.models or []]} if found
                          else {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                rec = Recorded("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length))
                with outer._lock:
                    outer.requests.append(rec)
                    if outer.handler is not None:
                        reply = outer.handler(rec)
                    elif outer.replies:
                        reply = outer.replies.pop(0)
                    else:
                        reply = Reply(b'{"error": {"message": "no scripted reply left"}}', 500, {"content-type": "application/json"})
                self.send_response(reply.status)
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.send_header("transfer-encoding", "chunked")
                self.send_header("connection", "close")
                self.end_headers()
                try:
                    for piece in reply.pieces():
                        if outer._stop.is_set():
                            return
                        if piece:
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                            self.wfile.flush()
                        if reply.delay:
                            time.sleep(reply.delay)
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client hung up (an interrupt): that is allowed

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        # A short poll interval: shutdown() waits for it, and every test using a server pays it.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self) -> "LoopbackServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()


# -- documented stream shapes, built from parts ---------------------------------------------
# Anthropic Messages streaming: https://docs.anthropic.com/en/api/messages-streaming
# OpenAI Chat Completions streaming: https://platform.openai.com/docs/api-reference/chat-streaming


def anthropic_stream(
    texts: list[str] = (),
    tool: tuple[str, str, list[str]] | None = None,
    *,
    tools: Sequence[tuple[str, str, list[str]]] = (),
    stop_reason: str | None = None,
    input_tokens: int = 100,
    output_tokens: int = 20,
) -> bytes:
    """An Anthropic SSE body: one text block streamed as ``texts``, then optionally a
    ``tool_use`` block ``(id, name, partial_json_fragments)`` for ``tool`` and each of ``tools``
    (several calls in one answer), then message_delta/stop."""
    events: list[tuple[str | None, dict | str]] = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_loopback", "type": "message", "role": "assistant", "model": "claude-test",
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 1}}}),
        ("ping", {"type": "ping"}),
    ]
    index = 0
    if texts:
        events.append(("content_block_start", {"type": "content_block_start", "index": 0,
                                               "content_block": {"type": "text", "text": ""}}))
        for t in texts:
            events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                   "delta": {"type": "text_delta", "text": t}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        index = 1
    calls = [*([tool] if tool else []), *tools]
    for tid, name, fragments in calls:
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "tool_use", "id": tid, "name": name, "input": {}}}))
        for f in ["", *fragments]:
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "input_json_delta", "partial_json": f}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    reason = stop_reason or ("tool_use" if calls else "end_turn")
    events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None},
                                     "usage": {"output_tokens": output_tokens}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return sse(events)


def openai_stream(
    texts: list[str] = (),
    tool: tuple[str, str, list[str]] | None = None,
    *,
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
) -> bytes:
    """An OpenAI chat.completion.chunk SSE body: ``texts`` as content deltas, optionally one
    tool call ``(id, name, argument_fragments)``, a finish chunk, a usage chunk, ``[DONE]``."""
    base = {"id": "chatcmpl-loopback", "object": "chat.completion.chunk", "created": 1761834250, "model": "gpt-test"}

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}], "usage": None}

    events: list[tuple[str | None, dict | str]] = [(None, chunk({"role": "assistant", "content": ""}))]
    for t in texts:
        events.append((None, chunk({"content": t})))
    if tool:
        tid, name, fragments = tool
        events.append((None, chunk({"tool_calls": [{"index": 0, "id": tid, "type": "function",
                                                    "function": {"name": name, "arguments": ""}}]})))
        for f in fragments:
            events.append((None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": f}}]})))
    events.append((None, chunk({}, "tool_calls" if tool else "stop")))
    events.append((None, {**base, "choices": [], "usage": {
        "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens}}))
    events.append((None, "[DONE]"))
    return sse(events)
