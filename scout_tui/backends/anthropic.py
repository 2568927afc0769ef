"""The Anthropic Messages API backend: request translation and stream assembly.

Wire format: https://docs.anthropic.com/en/api/messages and
https://docs.anthropic.com/en/docs/build-with-claude/streaming (events ``message_start``,
``content_block_start/delta/stop``, ``message_delta``, ``message_stop``, ``ping``, ``error``).
"""

from __future__ import annotations

import json
from typing import Any, AsyncIterator

from scout_tui.backends.anthropic_cache import min_cacheable_tokens, place_breakpoints
from scout_tui.backends.base import (Accumulator, Backend, Completed, Request, StreamEvent, TextDelta, ThinkingDelta,
                                     ToolCallDelta, ToolCallStarted, Usage)
from scout_tui.backends.failures import StreamError, event_payload, stream_error, unparsed_input

API_VERSION = "2023-06-01"
EXTENDED_TTL_BETA = "extended-cache-ttl-2025-04-11"  # sent with "1h" breakpoints (harmless once GA)

# Anthropic's stop reasons are ours; the rest map to the nearest one.
_STOP = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
    "model_context_window_exceeded": "max_tokens",
    "pause_turn": "end_turn",
}


class AnthropicBackend(Backend):
    """Claude through ``POST {base_url}/v1/messages`` with ``stream: true``."""

    name = "anthropic"
    label = "Anthropic"
    default_base_url = "https://api.anthropic.com"
    default_model = "claude-sonnet-4-5"

    @property
    def url(self) -> str:
        return f"{self.base_url}/v1/messages"

    caching = True
    """Whether requests carry cache breakpoints (``prompt_caching = false`` turns them off)."""

    def headers(self, request: Request | None = None) -> dict[str, str]:
        """Request headers; the key travels in ``x-api-key`` only."""
        headers = {
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
            "accept": "text/event-stream",
        }
        if self.api_key:
            headers["x-api-key"] = self.api_key
        if request is not None and self.caching and request.cache_ttl == "1h":
            headers["anthropic-beta"] = EXTENDED_TTL_BETA
        return headers

    def body(self, request: Request) -> dict[str, Any]:
        """The JSON body for ``request``: {model, max_tokens, system?, messages, tools?, stream},
        with cache breakpoints placed by ``anthropic_cache.place_breakpoints``."""
        model = request.model or self.model
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": request.max_tokens,
            "messages": to_wire(request.messages),
            "stream": True,
        }
        if request.system:
            body["system"] = request.system
        if request.tools:
            body["tools"] = [
                {"name": t["name"], "description": t.get("description", ""), "input_schema": t.get("input_schema") or {"type": "object"}}
                for t in request.tools
            ]
        if self.caching:
            stable = len(to_wire(request.messages[: request.stable])) if request.stable else 0
            place_breakpoints(body, stable=stable, ttl=request.cache_ttl, min_tokens=min_cacheable_tokens(model))
        return body

    def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        """Stream one Messages call; see ``Backend.stream``."""
        return self._run(self.url, self.headers(request), self.body(request), MessageAssembler())


def to_wire(messages: list[dict]) -> list[dict]:
    """Our messages as Anthropic wants them.

    Already in Anthropic's block shape; only removes what the API rejects: thinking blocks
    without a signature (from OpenAI-compatible reasoning, or cut off mid-stream), blank text
    blocks, and messages left empty by that (neighbours of one role are then merged).
    """
    out: list[dict] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            kept: Any = content if content.strip() else []
        else:
            kept = [b for b in content or [] if _sendable(b)]
        if not kept:
            continue
        if out and out[-1]["role"] == message["role"]:
            out[-1]["content"] = _as_blocks(out[-1]["content"]) + _as_blocks(kept)
        else:
            out.append({"role": message["role"], "content": kept})
    return out


def _sendable(block: dict) -> bool:
    kind = block.get("type")
    if kind == "thinking":
        return bool(block.get("signature"))
    if kind == "text":
        return bool(str(block.get("text", "")).strip())
    return True


def _as_blocks(content: str | list[dict]) -> list[dict]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


class MessageAssembler:
    """Assembles one streamed Messages response (see the module docstring for the events).

    Blocks are kept by their ``index``; tool input JSON is concatenated per block and parsed
    once at ``content_block_stop`` ("" means {}); ``signature_delta`` sets the signature;
    ``message_delta`` usage replaces (its counts are cumulative).
    """

    def __init__(self) -> None:
        self.done = False
        self.blocks: dict[int, dict] = {}
        self._json: dict[int, list[str]] = {}
        self._tool_ordinal: dict[int, int] = {}
        self._invalid: dict[int, str] = {}  # tool blocks whose input did not parse: raw text
        self._text: dict[int, Accumulator] = {}  # text and thinking of blocks, as they grow
        self.usage = Usage()
        self.stop_raw: str | None = None

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        if not data.strip():
            return []
        payload = event_payload(data)
        if payload is None:
            return []
        kind = payload.get("type") or event
        if kind == "error":
            raise stream_error(payload)
        if kind == "message_start":
            self._usage((payload.get("message") or {}).get("usage"))
        elif kind == "content_block_start":
            return self._start(payload.get("index", len(self.blocks)), payload.get("content_block") or {})
        elif kind == "content_block_delta":
            return self._delta(payload.get("index", 0), payload.get("delta") or {})
        elif kind == "content_block_stop":
            self._stop(payload.get("index", 0))
        elif kind == "message_delta":
            reason = (payload.get("delta") or {}).get("stop_reason")
            if reason:
                self.stop_raw = reason
            self._usage(payload.get("usage"))
        elif kind == "message_stop":
            self.done = True
        return []  # ping and unknown events

    def _start(self, index: int, block: dict) -> list[StreamEvent]:
        kind = block.get("type")
        if kind == "text":
            self.blocks[index] = {"type": "text", "text": ""}
            self._text[index] = Accumulator(TextDelta, self._separator(TextDelta))
            return self._text[index].add(block.get("text") or "")
        if kind == "thinking":
            self.blocks[index] = {"type": "thinking", "thinking": "", "signature": block.get("signature") or ""}
            self._text[index] = Accumulator(ThinkingDelta, self._separator(ThinkingDelta))
            return self._text[index].add(block.get("thinking") or "")
        if kind == "tool_use":
            ordinal = len(self._tool_ordinal)
            self._tool_ordinal[index] = ordinal
            self.blocks[index] = {"type": "tool_use", "id": block.get("id", ""), "name": block.get("name", ""),
                                  "input": block.get("input") or {}}
            self._json[index] = []
            return [ToolCallStarted(ordinal, block.get("id", ""), block.get("name", ""))]
        # redacted_thinking and blocks we do not know: kept verbatim, sent back unchanged.
        self.blocks[index] = dict(block)
        return []

    def _separator(self, event: type[TextDelta] | type[ThinkingDelta]) -> str:
        """A newline when an earlier block of this kind already streamed text (blocks join as
        ``messages.message_text`` joins them), else ""."""
        return "\n" if any(t.event is event and t.visible for t in self._text.values()) else ""

    def _delta(self, index: int, delta: dict) -> list[StreamEvent]:
        kind = delta.get("type")
        if kind in ("text_delta", "thinking_delta"):
            if index not in self._text:  # a delta without its block start: tolerate it
                self._start(index, {"type": kind.removesuffix("_delta")})
            return self._text[index].add(delta.get(kind.removesuffix("_delta")) or "")
        if kind == "signature_delta" and index in self.blocks:
            self.blocks[index]["signature"] = delta.get("signature") or ""  # set, never append
        elif kind == "input_json_delta" and index in self._json:
            fragment = delta.get("partial_json") or ""
            if fragment:
                self._json[index].append(fragment)
                return [ToolCallDelta(self._tool_ordinal[index], fragment)]
        return []

    def _block(self, index: int) -> dict:
        """Block ``index`` with its text or thinking filled in from the accumulator."""
        block = self.blocks[index]
        if index in self._text:
            block = {**block, block["type"]: self._text[index].value()}
        return block

    def _stop(self, index: int) -> None:
        if index not in self._json:
            return
        raw = "".join(self._json.pop(index)).strip()
        if not raw:
            return  # no input deltas: "" means {} (or the input given whole at the start)
        try:
            value = json.loads(raw)
        except ValueError:
            value = None
        if isinstance(value, dict):
            self.blocks[index]["input"] = value  # replaces the start's {}, never merged
        else:
            self._invalid[index] = raw

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        for ours, theirs in (
            ("input_tokens", "input_tokens"),
            ("output_tokens", "output_tokens"),
            ("cache_read_tokens", "cache_read_input_tokens"),
            ("cache_write_tokens", "cache_creation_input_tokens"),
        ):
            if isinstance(usage.get(theirs), int):
                setattr(self.usage, ours, usage[theirs])
        creation = usage.get("cache_creation")
        if isinstance(creation, dict) and isinstance(creation.get("ephemeral_1h_input_tokens"), int):
            self.usage.cache_write_1h_tokens = creation["ephemeral_1h_input_tokens"]

    def finish(self) -> list[StreamEvent]:
        if not self.done:
            raise StreamError("incomplete_stream", "the stream ended before message_stop", retryable=True)
        for index in list(self._json):  # a tool block that never got its content_block_stop
            self._stop(index)
        content = []
        for index in sorted(self.blocks):
            block = self._block(index)
            if index in self._invalid:
                # Cut by max_tokens: the agent answers it as cut; else as not an object.
                cut = self.stop_raw == "max_tokens"
                block = {**block, "input": {} if cut else unparsed_input(self._invalid[index])}
            if _kept(block):
                content.append(block)
        stop = _STOP.get(self.stop_raw or "", "end_turn")
        message = {"role": "assistant", "content": content}
        return [Completed(message, self.usage, stop, self.stop_raw)]

    def partial(self) -> dict | None:
        blocks = (self._block(i) for i in sorted(self.blocks))
        content = [b for b in blocks if b.get("type") != "tool_use" and _kept(b)]
        return {"role": "assistant", "content": content} if content else None

    def from_json(self, payload: dict) -> list[StreamEvent]:
        """A whole Message object (a server that ignored ``stream: true``) replayed as events."""
        if payload.get("type") != "message" or not isinstance(payload.get("content"), list):
            return []
        events: list[StreamEvent] = []
        self._usage(payload.get("usage"))
        for index, block in enumerate(payload["content"]):
            if block.get("type") == "tool_use":
                events += self._start(index, {**block, "input": {}})
                events += self._delta(index, {"type": "input_json_delta", "partial_json": json.dumps(block.get("input") or {})})
                self._stop(index)
            else:
                events += self._start(index, block)
        self.stop_raw = payload.get("stop_reason")
        self.done = True
        return events + self.finish()


def _kept(block: dict) -> bool:
    """Whether a finished block belongs in the message (no blank text, no empty thinking)."""
    kind = block.get("type")
    if kind == "text":
        return bool(block["text"].strip())
    if kind == "thinking":
        return bool(block["thinking"].strip() or block.get("signature"))
    return True
