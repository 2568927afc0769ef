"""Retries before the first streamed byte, never after; error messages; the API key never shows."""

from __future__ import annotations

import json
import socket
import time
from email.utils import formatdate

import pytest

from backend_wire import SECRET, backend, collect, collect_until_error
from conftest import wire
from loopback import LoopbackServer, Reply, sse
from scout_tui.backends import PROVIDERS, make_backend, register_provider
from scout_tui.backends.anthropic import AnthropicBackend
from scout_tui.backends.base import Completed, Retrying
from scout_tui.backends.failures import backoff, retry_after_seconds
from scout_tui.backends.openai import OpenAIBackend
from scout_tui.core.errors import ScoutError

JSON = {"content-type": "application/json"}


def error_reply(status: int, message: str = "nope", etype: str = "api_error", **headers: str) -> Reply:
    body = json.dumps({"type": "error", "error": {"type": etype, "message": message}}).encode()
    return Reply(body, status, {**JSON, **headers})


def retrying(events) -> list[Retrying]:
    return [e for e in events if isinstance(e, Retrying)]


async def test_429_then_200_succeeds_after_one_retrying_event():
    with LoopbackServer([error_reply(429, "slow down", "rate_limit_error"), Reply(wire("anthropic_text.sse"))]) as server:
        events = await collect(backend("anthropic", base_url=server.url, max_retries=3))
        assert len(server.requests) == 2
    [retry] = retrying(events)
    assert (retry.attempt, retry.max_attempts) == (1, 3)
    assert "rate limited" in retry.reason and "429" in retry.reason
    assert isinstance(events[-1], Completed)


async def test_retry_after_ms_is_honoured():
    with LoopbackServer([Reply(wire("openai_error_429.json"), 429, {**JSON, "retry-after-ms": "80"}),
                         Reply(wire("openai_text.sse"))]) as server:
        started = time.monotonic()
        events = await collect(backend("openai", base_url=server.url, max_retries=1))
        elapsed = time.monotonic() - started
    assert retrying(events)[0].delay == pytest.approx(0.08)
    assert elapsed >= 0.08  # a lower bound: a loaded machine only waits longer


async def test_retry_after_seconds_is_honoured_and_529_is_retried():
    with LoopbackServer([Reply(wire("anthropic_error_overloaded_529.json"), 529, {**JSON, "retry-after": "0"}),
                         Reply(wire("anthropic_text.sse"))]) as server:
        events = await collect(backend("anthropic", base_url=server.url, max_retries=2))
    [retry] = retrying(events)
    assert retry.delay == 0 and retry.reason == "Anthropic overloaded (HTTP 529)"


def test_retry_after_reads_seconds_dates_and_milliseconds_and_is_capped():
    assert retry_after_seconds({"retry-after": "3"}) == 3
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    before = time.time()
    due = int(before + 10)  # an HTTP date has whole seconds
    waited = retry_after_seconds({"retry-after": formatdate(before + 10, usegmt=True)})
    after = time.time()
    assert due - after <= waited <= due - before  # the seconds left until the date, read in between
    assert retry_after_seconds({"retry-after": formatdate(time.time() - 10, usegmt=True)}) == 0
    assert retry_after_seconds({"retry-after": "3600"}, cap=60) == 60
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_backoff_doubles_from_the_base_up_to_the_cap_with_jitter_below():
    for attempt, full in ((1, 0.5), (2, 1.0), (3, 2.0), (6, 8.0), (20, 8.0)):
        delays = [backoff(attempt, 0.5, 8.0) for _ in range(50)]
        assert all(0.75 * full <= d <= full for d in delays)
        assert len(set(delays)) > 1


async def test_retries_run_out_and_the_last_error_is_raised():
    with LoopbackServer([error_reply(503, "busy")] * 3) as server:
        events, error = await collect_until_error(backend("anthropic", base_url=server.url, max_retries=2))
        assert len(server.requests) == 3
    assert [e.attempt for e in retrying(events)] == [1, 2]
    assert (error.kind, error.status, error.retryable) == ("server_error", 503, True)
    assert "3 attempts" in str(error)


@pytest.mark.parametrize(("status", "kind"), [(400, "invalid_request"), (401, "auth"), (403, "auth"), (404, "not_found")])
async def test_client_errors_are_not_retried(status, kind):
    with LoopbackServer([error_reply(status, "bad"), Reply(wire("anthropic_text.sse"))]) as server:
        events, error = await collect_until_error(backend("anthropic", base_url=server.url, max_retries=3))
        assert len(server.requests) == 1
    assert (error.kind, error.status, error.retryable) == (kind, status, False)
    assert retrying(events) == []


async def test_x_should_retry_false_stops_a_retry():
    with LoopbackServer([error_reply(500, "no", **{"x-should-retry": "false"}), Reply(wire("anthropic_text.sse"))]) as server:
        _, error = await collect_until_error(backend("anthropic", base_url=server.url, max_retries=3))
        assert len(server.requests) == 1
    assert error.retryable is False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_connection_refused_is_retried_then_names_the_url():
    url = f"http://127.0.0.1:{free_port()}"
    events, error = await collect_until_error(backend("openai", base_url=url, max_retries=2))
    assert [r.reason for r in retrying(events)] == ["OpenAI-compatible API cannot connect"] * 2
    assert (error.kind, error.status, error.retryable) == ("connection", None, True)
    assert error.url == f"{url}/chat/completions" and error.url in str(error)
    assert "OpenAI" in str(error)


async def test_no_retry_once_text_has_streamed():
    cut = sse([(None, {"choices": [{"index": 0, "delta": {"content": "Partial answer"}, "finish_reason": None}]})])
    with LoopbackServer([Reply(cut), Reply(wire("openai_text.sse"))]) as server:
        events, error = await collect_until_error(backend("openai", base_url=server.url, max_retries=3))
        assert len(server.requests) == 1
    assert error.kind == "incomplete_stream" and error.retryable is True
    assert retrying(events) == []


async def test_an_overloaded_error_mid_stream_is_raised_not_retried():
    with LoopbackServer([Reply(wire("anthropic_overloaded_midstream.sse")), Reply(wire("anthropic_text.sse"))]) as server:
        _, error = await collect_until_error(backend("anthropic", base_url=server.url, max_retries=3))
        assert len(server.requests) == 1
    assert (error.kind, error.status, error.retryable) == ("overloaded", 200, True)


async def test_a_silent_server_mid_stream_is_a_timeout_with_the_partial_answer():
    first = sse([(None, {"choices": [{"index": 0, "delta": {"content": "Thinking about"}, "finish_reason": None}]})])
    # The rest would come 600 s later: the 0.2 s read timeout is first on any machine.
    with LoopbackServer([Reply([first, b"data: [DONE]\n\n"], delay=600)]) as server:
        _, error = await collect_until_error(backend("openai", base_url=server.url, timeout=0.2, max_retries=3))
        assert len(server.requests) == 1
    assert error.kind == "timeout"
    assert error.partial == {"role": "assistant", "content": [{"type": "text", "text": "Thinking about"}]}


# --- the key never shows ------------------------------------------------------------------


async def test_the_api_key_never_appears_in_an_error():
    echo = {"error": {"message": f"Incorrect API key provided: {SECRET}.", "type": "invalid_request_error", "code": "invalid_api_key"}}
    with LoopbackServer([Reply(json.dumps(echo).encode(), 401, JSON)]) as server:
        _, error = await collect_until_error(backend("openai", base_url=server.url))
    assert error.kind == "auth"
    assert "Incorrect API key provided" in str(error)
    for text in (str(error), repr(error), error.url, repr(error.args)):
        assert SECRET not in text


async def test_the_api_key_never_appears_in_a_connection_error():
    _, error = await collect_until_error(backend("anthropic", base_url=f"http://127.0.0.1:{free_port()}"))
    assert SECRET not in str(error) and SECRET not in repr(error)
    assert error.__cause__ is None  # the transport error (which holds the request headers) is not chained


# --- error messages -------------------------------------------------------------------------


async def test_an_error_body_that_is_not_json_is_quoted_in_short():
    with LoopbackServer([Reply(b"<html>502 Bad Gateway</html>" + b"x" * 5000 + b"tail", 502, {"content-type": "text/html"})]) as server:
        _, error = await collect_until_error(backend("openai", base_url=server.url))
    assert "502 Bad Gateway" in str(error) and "tail" not in str(error)
    assert (error.kind, error.status) == ("server_error", 502)


async def test_ollama_style_string_error_is_read():
    with LoopbackServer([Reply(b'{"error": "model \\"llama9\\" not found, try pulling it first"}', 404, JSON)]) as server:
        _, error = await collect_until_error(backend("openai", base_url=server.url))
    assert error.kind == "not_found" and "try pulling it first" in str(error)


# --- the provider registry ------------------------------------------------------------------


def test_the_builtin_providers_and_their_defaults():
    assert PROVIDERS["anthropic"] is AnthropicBackend and PROVIDERS["openai"] is OpenAIBackend
    assert make_backend("anthropic").model == "claude-sonnet-4-5"
    b = make_backend("openai", model=None, base_url=None)
    assert (b.model, b.base_url) == ("gpt-4.1", "https://api.openai.com/v1")


def test_unknown_provider_is_a_scout_error_naming_it():
    with pytest.raises(ScoutError, match="'gemini'.*anthropic, openai"):
        make_backend("gemini", model="x")


def test_a_later_registration_wins(monkeypatch):
    monkeypatch.setitem(PROVIDERS, "openai", OpenAIBackend)  # restored after the test
    made = []

    def factory(**kwargs):
        made.append(kwargs)
        return AnthropicBackend(**kwargs)

    register_provider("openai", factory)
    assert isinstance(make_backend("openai", model="m"), AnthropicBackend)
    assert made == [{"model": "m"}]
