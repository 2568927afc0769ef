"""The OpenAI Chat Completions backend, for any compatible server (OpenAI, OpenRouter, Ollama,
vLLM, llama.cpp): request translation and stream assembly.

Wire format: https://platform.openai.com/docs/api-reference/chat/create and
https://platform.openai.com/docs/api-reference/chat-streaming (``chat.completion.chunk``
objects, ``data: [DONE]``), plus what compatible servers do differently (noted inline).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any, AsyncIterator
from urllib.parse import urlsplit

from scout_tui.backends.base import (Accumulator, Backend, Completed, Request, StreamEvent, TextDelta, ThinkingDelta,
                                     ToolCallDelta, ToolCallStarted, Usage)
from scout_tui.backends.failures import StreamError, event_payload, stream_error, unparsed_input
from scout_tui.core.errors import ModelError
from scout_tui.core.messages import blocks, message_text, result_text, tool_results, tool_uses

_STOP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


class OpenAIBackend(Backend):
    """Chat Completions through ``POST {base_url}/chat/completions`` with ``stream: true``."""

    name = "openai"
    label = "OpenAI-compatible API"
    default_base_url = "https://api.openai.com/v1"
    default_model = "gpt-4.1"

    send_cache_key: str = "auto"
    """``prompt_cache_key``: "on" sends it, "off" never, "auto" only to api.openai.com. Servers
    that validate strictly answer 400 or 422 to the unknown field (NVIDIA NIM, Azure AI
    Foundry, Groq, Cerebras, LiteLLM proxies with extra="forbid"); Ollama, llama.cpp, vLLM
    and OpenRouter ignore it. A request refused for it is sent again without it, once, and
    the field is not sent again by this backend."""
    _cache_key_refused = False

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def sends_cache_key(self) -> bool:
        """Whether requests carry ``prompt_cache_key`` (see ``send_cache_key``)."""
        if self._cache_key_refused or self.send_cache_key == "off":
            return False
        if self.send_cache_key == "on":
            return True
        host = (urlsplit(self.base_url).hostname or "").lower()
        return host == "api.openai.com" or host.endswith(".api.openai.com")

    def headers(self) -> dict[str, str]:
        """Request headers; ``Authorization: Bearer`` only when there is a key (Ollama needs none)."""
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return headers

    def body(self, request: Request) -> dict[str, Any]:
        """The JSON body for ``request``.

        ``max_tokens`` rather than ``max_completion_tokens``: every compatible server reads it.
        """
        body: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": to_wire(request.messages, request.system),
            "max_tokens": request.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.cache_key and self.sends_cache_key():
            body["prompt_cache_key"] = request.cache_key
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t["name"],
                        "description": t.get("description", ""),
                        "parameters": t.get("input_schema") or {"type": "object", "properties": {}},
                    },
                }
                for t in request.tools
            ]
        return body

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        """Stream one Chat Completions call; see ``Backend.stream``. A server that refuses
        ``prompt_cache_key`` (HTTP 400/422 naming it) gets the request again without it."""
        body = self.body(request)
        try:
            async for event in self._run(self.url, self.headers(), body, ChunkAssembler()):
                yield event
        except ModelError as e:
            refused = e.status in (400, 422) and "prompt_cache_key" in str(e) and "prompt_cache_key" in body
            if not refused:
                raise
            self._cache_key_refused = True
            body.pop("prompt_cache_key")
            async for event in self._run(self.url, self.headers(), body, ChunkAssembler()):
                yield event


# --- our messages → Chat Completions messages -------------------------------------------------


def to_wire(messages: list[dict], system: str = "") -> list[dict]:
    """Anthropic-shaped messages as Chat Completions messages.

    - the system prompt becomes the first ``{"role": "system"}`` message;
    - an assistant message's text joins into ``content`` (None when there is none) and its
      ``tool_use`` blocks become ``tool_calls`` (arguments as a JSON string); thinking is not
      sent (it has no meaning to another server);
    - a user message's ``tool_result`` blocks become ``role: tool`` messages right after the
      assistant message, in the order it made the calls; the same message's other blocks
      follow as one user message. An error result starts with "Error: " so the model sees it.
    """
    out: list[dict] = [{"role": "system", "content": system}] if system else []
    calls: list[str] = []  # tool_use ids of the last assistant message, in call order
    for message in messages:
        if message.get("role") == "assistant":
            text = message_text(message)
            uses = tool_uses(message)
            calls = [u["id"] for u in uses]
            if not text.strip() and not uses:
                continue  # thinking only: nothing another server can use
            wire: dict[str, Any] = {"role": "assistant", "content": text if text.strip() else None}
            if uses:
                wire["tool_calls"] = [
                    {"id": u["id"], "type": "function",
                     "function": {"name": u["name"], "arguments": json.dumps(u.get("input") or {}, ensure_ascii=False)}}
                    for u in uses
                ]
            out.append(wire)
            continue
        results = tool_results(message)
        order = {tid: i for i, tid in enumerate(calls)}
        results.sort(key=lambda b: order.get(b.get("tool_use_id") or "", len(order)))  # stable: strays last
        for result in results:
            out.append({"role": "tool", "tool_call_id": result.get("tool_use_id"), "content": _result_text(result)})
        rest = _user_content([b for b in blocks(message) if b.get("type") != "tool_result"])
        if rest is not None:
            out.append({"role": message.get("role", "user"), "content": rest})
        calls = []
    return out


def _result_text(block: dict) -> str:
    """A ``tool_result`` block as a ``role: tool`` message's content: ``messages.result_text``,
    after "Error: " when it is an error result that does not say so itself (Chat Completions has
    no is_error flag, so the model would otherwise read a failure as an answer)."""
    text = result_text(block.get("content"))
    if block.get("is_error") and not text.lower().startswith("error"):
        text = f"Error: {text}"
    return text


def _user_content(others: list[dict]) -> str | list[dict] | None:
    """A user message's non-result blocks: a string when all text, else content parts."""
    parts: list[dict] = []
    for b in others:
        if b.get("type") == "text" and str(b.get("text", "")).strip():
            parts.append({"type": "text", "text": b["text"]})
        elif b.get("type") == "image" and isinstance(b.get("source"), dict):
            src = b["source"]
            url = src.get("url") or f"data:{src.get('media_type', 'image/png')};base64,{src.get('data', '')}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
    if not parts:
        return None
    if all(p["type"] == "text" for p in parts):
        return "\n\n".join(p["text"] for p in parts)  # plain strings suit every server
    return parts


# --- chat.completion.chunk stream → events and one message -----------------------------------


@dataclass(slots=True)
class _Call:
    ordinal: int
    index: int | None
    id: str
    id_given: bool
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    started: bool = False  # ToolCallStarted was sent (it waits for the name)


class ChunkAssembler:
    """Assembles a streamed Chat Completions response.

    Rules for the servers that stretch the format: role, id, name and type are set (servers
    repeat them on every delta), only content and arguments are appended; tool calls are keyed
    by ``index``, but an index reused with a new id is a new call, a call without an index is a
    new call unless its id is known, and a missing id is generated; ``reasoning_content`` and
    ``reasoning`` are thinking; ``finish_reason: ""`` is null; usage may ride on any chunk.
    """

    def __init__(self) -> None:
        self.done = False
        self.text = Accumulator(TextDelta)
        self.reasoning = Accumulator(ThinkingDelta)
        self.calls: list[_Call] = []
        self._by_index: dict[int, _Call] = {}
        self.finish_raw: str | None = None
        self.usage: dict | None = None

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        data = data.strip()
        if not data:
            return []
        if data == "[DONE]":
            self.done = True
            return []
        payload = event_payload(data)
        if payload is None:
            return []
        if payload.get("error"):
            raise stream_error(payload)
        if isinstance(payload.get("usage"), dict):
            self.usage = payload["usage"]
        events: list[StreamEvent] = []
        for choice in payload.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) not in (0, None):
                continue  # n > 1 is never asked for; keep the first choice only
            delta = choice.get("delta") or {}
            events += self._delta(delta)
            reason = choice.get("finish_reason")
            if reason == "error":  # OpenRouter: the upstream failed mid-answer
                raise StreamError("server_error", "the server ended the answer with finish_reason \"error\"", retryable=True)
            if reason:  # "" (older Ollama) means null
                self.finish_raw = reason
        return events

    def _delta(self, delta: dict) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str):
            events += self.reasoning.add(reasoning)
        content = delta.get("content")
        if isinstance(content, str):
            events += self.text.add(content)
        elif isinstance(content, list):  # content parts (Mistral and some proxies)
            for part in content:
                if isinstance(part, dict) and part.get("type") == "text":
                    events += self.text.add(str(part.get("text", "")))
                elif isinstance(part, dict) and part.get("type") == "thinking":
                    for sub in part.get("thinking") or []:
                        if isinstance(sub, dict):
                            events += self.reasoning.add(str(sub.get("text", "")))
        if isinstance(delta.get("refusal"), str):
            events += self.text.add(delta["refusal"])
        for raw in delta.get("tool_calls") or []:
            if isinstance(raw, dict):
                events += self._tool_delta(raw)
        return events

    def _tool_delta(self, raw: dict) -> list[StreamEvent]:
        index = raw.get("index") if isinstance(raw.get("index"), int) else None
        given = raw.get("id") if isinstance(raw.get("id"), str) and raw.get("id") else None
        fn = raw.get("function") or {}
        name = given_name if isinstance(given_name := fn.get("name"), str) else ""
        args = fn.get("arguments")
        if isinstance(args, (dict, list)):  # some servers send the object itself, not a string
            args = json.dumps(args, ensure_ascii=False)
        fragment = args if isinstance(args, str) else ""

        call = self._find(index, given, name, fragment)
        if call is None:
            call = _Call(len(self.calls), index, given or f"call_{len(self.calls)}_{secrets.token_hex(4)}", given is not None)
            self.calls.append(call)
        elif given and not call.id_given:
            call.id, call.id_given = given, True
        if index is not None:
            self._by_index[index] = call
        if name:
            call.name = name  # set, never appended: servers repeat it
        if fragment:
            call.arguments.append(fragment)
        if call.started:
            return [ToolCallDelta(call.ordinal, fragment)] if fragment else []
        return self._start(call) if call.name else []  # fragments wait for the name

    @staticmethod
    def _start(call: _Call) -> list[StreamEvent]:
        call.started = True
        events: list[StreamEvent] = [ToolCallStarted(call.ordinal, call.id, call.name)]
        held = "".join(call.arguments)
        if held:
            events.append(ToolCallDelta(call.ordinal, held))
        return events

    def _find(self, index: int | None, given: str | None, name: str, fragment: str) -> _Call | None:
        """The call a tool-call delta continues, or None when it starts a new one."""
        if given:
            for call in self.calls:
                if call.id_given and call.id == given:
                    return call
        if index is not None:
            indexed = self._by_index.get(index)
            if indexed is None:
                return None
            if given and indexed.id_given:
                return None  # the index is reused by a call with a new id
            if name and indexed.name and fragment.lstrip().startswith("{") and _complete_json(indexed):
                return None  # the same index, a whole new call (servers without ids)
            return indexed
        # No index: a new call, unless it is a bare continuation of the last one.
        if not given and not name and self.calls:
            return self.calls[-1]
        return None

    def finish(self) -> list[StreamEvent]:
        if not self.done and self.finish_raw is None:
            raise StreamError("incomplete_stream", "the stream ended without [DONE] or a finish_reason", retryable=True)
        events: list[StreamEvent] = []
        content = self._thinking_and_text()
        for call in self.calls:
            if not call.started:
                events += self._start(call)
            raw = "".join(call.arguments).strip()
            try:
                value = json.loads(raw) if raw else {}
            except ValueError:
                value = None
            if value is None and raw in ("null", ""):
                value = {}
            if not isinstance(value, dict):
                # Cut by max_tokens: the agent answers it as cut; else as not an object.
                value = {} if self.finish_raw == "length" else unparsed_input(raw)
            content.append({"type": "tool_use", "id": call.id, "name": call.name, "input": value})
        stop = _STOP.get(self.finish_raw or "", "end_turn")
        if self.calls and stop == "end_turn":
            stop = "tool_use"  # some proxies say "stop" even when the model called tools
        events.append(Completed({"role": "assistant", "content": content}, self._usage(), stop, self.finish_raw))
        return events

    def _thinking_and_text(self) -> list[dict]:
        content: list[dict] = []
        thinking, text = self.reasoning.value(), self.text.value()
        if thinking.strip():
            content.append({"type": "thinking", "thinking": thinking})
        if text.strip():
            content.append({"type": "text", "text": text})
        return content

    def partial(self) -> dict | None:
        content = self._thinking_and_text()
        return {"role": "assistant", "content": content} if content else None

    def _usage(self) -> Usage:
        """Our Usage from OpenAI's: ``prompt_tokens`` includes cached tokens, ours excludes them."""
        u = self.usage or {}
        prompt = _int(u.get("prompt_tokens"))
        details = u.get("prompt_tokens_details") or {}
        cached = _int(details.get("cached_tokens")) or _int(u.get("prompt_cache_hit_tokens"))  # DeepSeek
        reasoning = (u.get("completion_tokens_details") or {}).get("reasoning_tokens")
        return Usage(
            input_tokens=max(prompt - cached, 0),
            output_tokens=_int(u.get("completion_tokens")),
            cache_read_tokens=cached,
            cache_write_tokens=0,
            reasoning_tokens=reasoning if isinstance(reasoning, int) else None,
        )

    def from_json(self, payload: dict) -> list[StreamEvent]:
        """A whole ``chat.completion`` (a server that ignored ``stream: true``) replayed as a chunk."""
        choices = payload.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return []
        chunk = {
            "choices": [{"index": 0, "delta": choices[0].get("message") or {}, "finish_reason": choices[0].get("finish_reason")}],
            "usage": payload.get("usage"),
        }
        events = self.feed("", json.dumps(chunk))
        self.done = True
        return events + self.finish()


def _complete_json(call: _Call) -> bool:
    try:
        json.loads("".join(call.arguments))
    except ValueError:
        return False
    return True


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0
