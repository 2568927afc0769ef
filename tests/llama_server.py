"""A loopback stand-in for llama.cpp's ``llama-server -c N`` with a small model: both routes it
serves (OpenAI ``/v1/chat/completions`` and Anthropic ``/v1/messages``), ``GET /props``, its own
token count of each prompt (about 30 % above scout-tui's characters / 4 estimate, as a real
tokenizer was), and its refusal of a prompt that does not fit.

Shapes, from llama.cpp's server (tools/server, README "GET /props" and
``server_task_result_error::to_json``): ``/props`` gives ``default_generation_settings.n_ctx``;
a prompt of ``n_ctx`` tokens or more is answered on either route with HTTP 400 and
``{"error": {"code": 400, "message": "the request exceeds the available context size, try
increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": N, "n_ctx": C}}``.
Streams are the documented OpenAI and Anthropic ones (``loopback``), their usage the server's count.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from loopback import LoopbackServer, Recorded, Reply, anthropic_stream, openai_stream, sse
from scripted_model import is_summary_request

OVERFLOW = "the request exceeds the available context size, try increasing it"
SUMMARY = "## Current task\nAnswer the person's questions about the project.\n\n## Next steps\nGo on."


def server_tokens(body: dict) -> int:
    """The stand-in tokenizer: the compact JSON of the system prompt, the messages and the tools,
    3 characters to a token (scout-tui estimates about 4), and 6 tokens of chat template per
    message."""
    parts = [body.get(key) for key in ("system", "messages", "tools")]
    return len(json.dumps(parts, separators=(",", ":"))) // 3 + 6 * len(body.get("messages") or [])


@dataclass
class Seen:
    """One request as the server counted it: its route, tokens, and whether it was refused."""

    route: str
    tokens: int
    refused: bool
    summary: bool


@dataclass
class LlamaServer:
    """``llama-server -c n_ctx``: answers each request with ``answer`` (its text, streamed), a
    summary request with ``summary``; ``thinking`` makes it a thinking model whose whole answer is
    its reasoning (``reasoning_content`` / a ``thinking`` block) followed by no text, as a small
    thinking model on a small window does. ``seen`` lists every request."""

    n_ctx: int = 8192
    answer: str = "All right. " * 60
    summary: str = SUMMARY
    thinking: bool = False
    seen: list[Seen] = field(default_factory=list)

    def serve(self) -> LoopbackServer:
        return LoopbackServer(handler=self.handle, props={"default_generation_settings": {"n_ctx": self.n_ctx},
                                                          "total_slots": 1})

    def handle(self, recorded: Recorded) -> Reply:
        body = recorded.json()
        route = "anthropic" if recorded.path.endswith("/messages") else "openai"
        tokens = server_tokens(body)
        summary = is_summary_request(body)
        self.seen.append(Seen(route, tokens, tokens >= self.n_ctx, summary))
        if tokens >= self.n_ctx:
            error = {"error": {"code": 400, "message": OVERFLOW, "type": "exceed_context_size_error",
                               "n_prompt_tokens": tokens, "n_ctx": self.n_ctx}}
            return Reply(json.dumps(error).encode(), 400, {"content-type": "application/json"})
        text = self.summary if summary else self.answer
        if self.thinking and not summary:
            return Reply(self._thinking(route, text, tokens))
        if route == "anthropic":
            return Reply(anthropic_stream([text], input_tokens=tokens))
        return Reply(openai_stream([text], prompt_tokens=tokens))

    @staticmethod
    def _thinking(route: str, text: str, tokens: int) -> bytes:
        if route == "anthropic":
            return sse([
                ("message_start", {"type": "message_start", "message": {
                    "id": "msg_llama", "type": "message", "role": "assistant", "model": "small", "content": [],
                    "stop_reason": None, "usage": {"input_tokens": tokens, "output_tokens": 1}}}),
                ("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "thinking", "thinking": ""}}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "thinking_delta", "thinking": text}}),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                   "usage": {"output_tokens": 40}}),
                ("message_stop", {"type": "message_stop"}),
            ])
        base = {"id": "chatcmpl-llama", "object": "chat.completion.chunk", "created": 1761834250, "model": "small"}
        return sse([
            (None, {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": None}}]}),
            (None, {**base, "choices": [{"index": 0, "delta": {"reasoning_content": text}}]}),
            (None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": tokens, "completion_tokens": 40, "total_tokens": tokens + 40}}),
            (None, "[DONE]"),
        ])
