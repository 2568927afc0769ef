"""Helpers for backend tests: serve wire fixtures, collect a stream, compare with ``expected``."""

from __future__ import annotations

import json
from typing import Any

import httpx

from conftest import WIRE, expected
from scout_tui.backends import make_backend
from scout_tui.backends.base import (
    Backend,
    Completed,
    Request,
    Retrying,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallStarted,
)
from scout_tui.core.errors import ModelError

SPLITS = (1, 7, 64)
SECRET = "sk-SECRET-123"
SSE_HEADERS = {"content-type": "text/event-stream"}


def fixtures(prefix: tuple[str, ...]) -> list[str]:
    """Names of the wire fixtures (``*.sse`` and error ``*.json``) whose names start with ``prefix``."""
    return sorted(
        p.name for p in WIRE.iterdir()
        if p.name.startswith(prefix) and (p.suffix == ".sse" or (p.suffix == ".json" and not p.name.endswith(".expected.json")))
    )


def provider_of(name: str) -> str:
    return "anthropic" if name.startswith("anthropic") else "openai"


def serve_of(name: str) -> tuple[int, dict[str, str]]:
    """Status and headers a fixture is served with."""
    serve = expected(name).get("serve") or {}
    return serve.get("status", 200), dict(serve.get("headers") or SSE_HEADERS)


def mock_transport(body: bytes, size: int, status: int = 200, headers: dict[str, str] | None = None,
                   seen: list[httpx.Request] | None = None) -> httpx.MockTransport:
    """A transport answering every request with ``body`` streamed in ``size``-byte pieces."""

    async def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)

        async def pieces():
            for i in range(0, len(body), size):
                yield body[i : i + size]

        return httpx.Response(status, headers=headers or SSE_HEADERS, content=pieces())

    return httpx.MockTransport(handler)


def backend(provider: str, **kwargs: Any) -> Backend:
    """A backend with a test key, no retries and tiny backoff unless told otherwise."""
    kwargs.setdefault("api_key", SECRET)
    kwargs.setdefault("max_retries", 0)
    b = make_backend(provider, **kwargs)
    b.retry_base = b.retry_cap = 0.001
    return b


def request(**kwargs: Any) -> Request:
    kwargs.setdefault("model", "test-model")
    kwargs.setdefault("messages", [{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    return Request(**kwargs)


async def collect(b: Backend, req: Request | None = None) -> list[StreamEvent]:
    """Every event of one stream (raises what the stream raises)."""
    try:
        return [event async for event in b.stream(req or request())]
    finally:
        await b.aclose()


async def collect_until_error(b: Backend, req: Request | None = None) -> tuple[list[StreamEvent], ModelError]:
    events: list[StreamEvent] = []
    try:
        async for event in b.stream(req or request()):
            events.append(event)
    except ModelError as e:
        return events, e
    finally:
        await b.aclose()
    raise AssertionError(f"no ModelError; events: {events!r}")


# --- comparing with the neutral ``expected`` form ------------------------------------------


def _blocks(message: dict, kind: str) -> list[dict]:
    return [b for b in message["content"] if b["type"] == kind]


def check_complete(events: list[StreamEvent], name: str) -> None:
    """The stream matches the fixture's ``expected`` and its events add up to its message."""
    exp = expected(name)["expected"]
    assert exp["outcome"] == "complete"
    completed = events[-1]
    assert isinstance(completed, Completed)
    assert sum(isinstance(e, Completed) for e in events) == 1
    message = completed.message
    assert message["role"] == "assistant"

    text = "".join(b["text"] for b in _blocks(message, "text"))
    want_text = exp.get("text") or ""
    if want_text.strip():
        assert text == want_text
    else:
        assert _blocks(message, "text") == []  # whitespace-only text makes no block

    thinking = _blocks(message, "thinking")
    if exp.get("reasoning"):
        assert [b["thinking"] for b in thinking] == [exp["reasoning"]]
    else:
        assert thinking == []
    if exp.get("reasoning_signature"):
        assert thinking[0]["signature"] == exp["reasoning_signature"]
    if exp.get("opaque_blocks"):
        assert _blocks(message, "redacted_thinking") == exp["opaque_blocks"]

    uses = _blocks(message, "tool_use")
    assert [(u["id"], u["name"], u["input"]) for u in uses] == [
        (c["id"], c["name"], c["arguments"]) for c in exp["tool_calls"]
    ]
    assert completed.stop_reason == exp["stop_reason"]
    assert completed.stop_reason_raw == exp["stop_reason_raw"]
    assert completed.usage.as_dict() == normalized_usage(exp.get("usage"))
    check_events_add_up(events, message)


def normalized_usage(usage: dict | None) -> dict:
    """The fixture's usage in our convention: input excludes cache reads; absent counts are 0."""
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0, "reasoning_tokens": None,
                "cache_write_1h_tokens": 0}
    cache_read = usage.get("cache_read_tokens") or 0
    return {
        "input_tokens": usage["input_tokens"] - (cache_read if usage.get("input_includes_cache") else 0),
        "output_tokens": usage.get("output_tokens") or 0,
        "cache_read_tokens": cache_read,
        "cache_write_tokens": usage.get("cache_write_tokens") or 0,
        "reasoning_tokens": usage.get("reasoning_tokens"),
        "cache_write_1h_tokens": usage.get("cache_write_1h_tokens") or 0,
    }


def check_events_add_up(events: list[StreamEvent], message: dict) -> None:
    """Text and thinking deltas concatenate to the message's; tool events match its calls."""
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "".join(
        b["text"] for b in _blocks(message, "text"))
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "".join(
        b["thinking"] for b in _blocks(message, "thinking"))
    uses = _blocks(message, "tool_use")
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(e.index, e.id, e.name) for e in started] == [(i, u["id"], u["name"]) for i, u in enumerate(uses)]
    for i, use in enumerate(uses):
        raw = "".join(e.fragment for e in events if isinstance(e, ToolCallDelta) and e.index == i)
        assert (json.loads(raw) if raw else {}) == use["input"]
    assert not any(isinstance(e, Retrying) for e in events)


def check_error(error: ModelError, events: list[StreamEvent], name: str) -> None:
    """The error matches the fixture's ``expected.error`` (and its partial text, if any)."""
    exp = expected(name)["expected"]
    want = exp["error"]
    assert error.kind == want["kind"]
    assert error.status == want["http_status"]
    assert error.retryable is want["retryable"]
    assert error.url.endswith(("/v1/messages", "/chat/completions"))
    assert error.url in str(error) and str(want["http_status"]) in str(error)
    if "message_contains" in want:
        assert want["message_contains"] in str(error)
    if "message" in want:
        assert want["message"] in str(error)
    if "retry_after_s" in want:
        assert error.retry_after == want["retry_after_s"]
    assert not any(isinstance(e, Completed) for e in events)
    if exp.get("text"):
        assert error.partial == {"role": "assistant", "content": [{"type": "text", "text": exp["text"]}]}
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == exp["text"]
    else:
        assert error.partial is None
    assert SECRET not in str(error) and SECRET not in repr(error)
