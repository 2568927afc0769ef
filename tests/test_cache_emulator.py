"""The cache emulators follow the providers' documented prompt-caching rules (see cache_emulator.py)."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from cache_emulator import AnthropicCache, OpenAICache, Rejected, anthropic_sse, loopback_handler
from conftest import wire
from loopback import LoopbackServer, openai_stream

EPHEMERAL = {"type": "ephemeral"}


def text(i: int, size: int = 1200) -> dict:
    """A text block of about ``size`` / 4 tokens whose content names ``i``."""
    return {"type": "text", "text": f"block {i:04d} " + "x" * size}


def body(n: int, marks: dict[int, dict] | None = None, model: str = "claude-sonnet-4-5", first: int = 0) -> dict:
    """A Messages body of one user message holding ``n`` text blocks; ``marks`` puts a
    cache_control on block positions (0-based)."""
    blocks = [text(first + i) for i in range(n)]
    for i, control in (marks or {}).items():
        blocks[i] = {**blocks[i], "cache_control": control}
    return {"model": model, "max_tokens": 1024, "messages": [{"role": "user", "content": blocks}]}


def tokens_through(emulator: AnthropicCache, n: int) -> int:
    """Tokens of the first ``n`` blocks of ``body(...)``."""
    return emulator.tokens_of(body(n))


def rejected(fn, *args) -> Rejected:
    with pytest.raises(Rejected) as caught:
        fn(*args)
    return caught.value


# --- Anthropic: validation -------------------------------------------------------------------


def test_five_breakpoints_are_rejected_with_the_apis_400():
    cache = AnthropicCache()
    error = rejected(cache.bill, body(6, {i: EPHEMERAL for i in range(5)}))
    assert error.status == 400
    assert error.body == {"type": "error", "error": {"type": "invalid_request_error",
                          "message": "A maximum of 4 blocks with cache_control may be provided. Found 5."}}
    cache.bill(body(6, {i: EPHEMERAL for i in range(4)}))  # four are allowed


def test_a_1h_breakpoint_after_a_5m_one_is_rejected():
    cache = AnthropicCache()
    error = rejected(cache.bill, body(6, {1: {"type": "ephemeral", "ttl": "5m"}, 4: {"type": "ephemeral", "ttl": "1h"}}))
    assert error.status == 400 and error.body["error"]["type"] == "invalid_request_error"
    assert "longer TTL must appear before shorter" in error.body["error"]["message"]
    # a breakpoint without ttl is a 5m one
    assert rejected(cache.bill, body(6, {1: EPHEMERAL, 4: {"type": "ephemeral", "ttl": "1h"}})).status == 400
    cache.bill(body(6, {1: {"type": "ephemeral", "ttl": "1h"}, 4: EPHEMERAL}))  # 1h before 5m is fine


def test_cache_control_on_an_empty_text_or_a_thinking_block_is_rejected():
    cache = AnthropicCache()
    empty = {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [
        {"role": "user", "content": [text(0), {"type": "text", "text": "", "cache_control": EPHEMERAL}]}]}
    error = rejected(cache.bill, empty)
    assert error.status == 400
    assert error.body["error"]["message"] == "messages.0.content.1.text: cache_control cannot be set for empty text blocks"
    thinking = {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [
        {"role": "user", "content": [text(0)]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hm", "signature": "s", "cache_control": EPHEMERAL},
            {"type": "text", "text": "ok"}]},
        {"role": "user", "content": [text(1)]}]}
    error = rejected(cache.bill, thinking)
    assert error.body["error"]["message"] == "messages.1.content.0.thinking.cache_control: Extra inputs are not permitted"


# --- Anthropic: writes and reads -------------------------------------------------------------


def test_a_breakpoint_below_the_minimum_writes_nothing():
    cache = AnthropicCache()
    short = body(3, {2: EPHEMERAL})  # ~900 tokens < 1024
    assert cache.tokens_of(short) < 1024
    for _ in range(2):
        usage = cache.bill(short)
        assert usage["cache_creation_input_tokens"] == 0 and usage["cache_read_input_tokens"] == 0
        assert usage["input_tokens"] == cache.tokens_of(short)


def test_the_minimum_depends_on_the_model_and_can_be_set():
    prompt = body(8, {7: EPHEMERAL}, model="claude-haiku-4-5")  # ~2,400 tokens: under Haiku 4.5's 4,096
    assert AnthropicCache().bill(prompt)["cache_creation_input_tokens"] == 0
    assert AnthropicCache().bill({**prompt, "model": "claude-sonnet-4-5"})["cache_creation_input_tokens"] > 0
    assert AnthropicCache(min_tokens=1024).bill(prompt)["cache_creation_input_tokens"] == AnthropicCache().tokens_of(prompt)


def test_a_request_extending_the_previous_one_reads_its_prefix():
    cache = AnthropicCache()
    first = cache.bill(body(5, {4: EPHEMERAL}))
    assert first["cache_creation_input_tokens"] == tokens_through(cache, 5)
    assert first["cache_read_input_tokens"] == 0 and first["input_tokens"] == 0
    # The marker moves to the new last block; the old block has no marker any more.
    second = cache.bill(body(12, {11: EPHEMERAL}))
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    assert second["cache_creation_input_tokens"] == tokens_through(cache, 12) - tokens_through(cache, 5)
    assert second["cache_creation"] == {"ephemeral_5m_input_tokens": second["cache_creation_input_tokens"],
                                        "ephemeral_1h_input_tokens": 0}


def test_tokens_after_the_last_breakpoint_are_plain_input():
    cache = AnthropicCache()
    usage = cache.bill(body(8, {5: EPHEMERAL}))
    assert usage["cache_creation_input_tokens"] == tokens_through(cache, 6)
    assert usage["input_tokens"] == tokens_through(cache, 8) - tokens_through(cache, 6)


def test_the_lookback_reaches_20_blocks_before_a_breakpoint_and_no_further():
    cache = AnthropicCache()
    cache.bill(body(5, {4: EPHEMERAL}))  # an entry at position 4
    assert cache.bill(body(25, {24: EPHEMERAL}))["cache_read_input_tokens"] == tokens_through(cache, 5)  # 20 after

    cache = AnthropicCache()
    cache.bill(body(5, {4: EPHEMERAL}))
    usage = cache.bill(body(26, {25: EPHEMERAL}))  # 21 blocks after, no breakpoint in between
    assert usage["cache_read_input_tokens"] == 0
    assert usage["cache_creation_input_tokens"] == tokens_through(cache, 26)


def test_an_intermediate_breakpoint_bridges_a_long_growth():
    cache = AnthropicCache()
    cache.bill(body(5, {4: EPHEMERAL}))
    usage = cache.bill(body(40, {20: EPHEMERAL, 39: EPHEMERAL}))
    assert usage["cache_read_input_tokens"] == tokens_through(cache, 5)


def test_a_changed_early_block_invalidates_everything_after_it():
    cache = AnthropicCache()
    cache.bill(body(10, {3: EPHEMERAL, 9: EPHEMERAL}))
    changed = body(10, {3: EPHEMERAL, 9: EPHEMERAL})
    changed["messages"][0]["content"][1] = text(999)
    usage = cache.bill(changed)
    assert usage["cache_read_input_tokens"] == 0
    assert usage["cache_creation_input_tokens"] == cache.tokens_of(changed)


def test_a_different_model_misses():
    cache = AnthropicCache()
    cache.bill(body(6, {5: EPHEMERAL}))
    assert cache.bill(body(6, {5: EPHEMERAL}, model="claude-sonnet-4"))["cache_read_input_tokens"] == 0
    assert cache.bill(body(6, {5: EPHEMERAL}))["cache_read_input_tokens"] == tokens_through(cache, 6)


def test_the_marker_changes_neither_identity_nor_size():
    cache = AnthropicCache()
    assert cache.tokens_of(body(6, {5: EPHEMERAL})) == cache.tokens_of(body(6))
    cache.bill(body(6, {5: {"type": "ephemeral", "ttl": "1h"}}))
    assert cache.bill(body(6, {5: EPHEMERAL}))["cache_read_input_tokens"] == tokens_through(cache, 6)


def test_a_5m_entry_expires_after_five_idle_minutes_and_a_read_refreshes_it():
    cache = AnthropicCache()
    cache.bill(body(6, {5: EPHEMERAL}))
    cache.advance(299)
    assert cache.bill(body(6, {5: EPHEMERAL}))["cache_read_input_tokens"] == tokens_through(cache, 6)
    cache.advance(299)  # 598 s after the write, 299 s after the read
    assert cache.bill(body(6, {5: EPHEMERAL}))["cache_read_input_tokens"] == tokens_through(cache, 6)
    cache.advance(301)
    usage = cache.bill(body(6, {5: EPHEMERAL}))
    assert usage["cache_read_input_tokens"] == 0 and usage["cache_creation_input_tokens"] == tokens_through(cache, 6)


def test_a_read_through_the_lookback_refreshes_the_entry_it_found():
    cache = AnthropicCache()
    cache.bill(body(5, {4: EPHEMERAL}))
    cache.advance(200)
    assert cache.bill(body(10, {9: EPHEMERAL}))["cache_read_input_tokens"] == tokens_through(cache, 5)
    cache.advance(200)  # 400 s after the write, 200 s after the read
    assert cache.bill(body(5, {4: EPHEMERAL}))["cache_read_input_tokens"] == tokens_through(cache, 5)


def test_a_1h_entry_lives_an_hour():
    cache = AnthropicCache()
    first = cache.bill(body(6, {5: {"type": "ephemeral", "ttl": "1h"}}))
    assert first["cache_creation"]["ephemeral_1h_input_tokens"] == tokens_through(cache, 6)
    cache.advance(3599)
    assert cache.bill(body(6, {5: {"type": "ephemeral", "ttl": "1h"}}))["cache_read_input_tokens"] > 0
    cache.advance(3601)
    assert cache.bill(body(6, {5: {"type": "ephemeral", "ttl": "1h"}}))["cache_read_input_tokens"] == 0


def test_mixed_ttls_bill_each_span_at_the_ttl_of_the_breakpoint_ending_it():
    cache = AnthropicCache()
    usage = cache.bill(body(8, {3: {"type": "ephemeral", "ttl": "1h"}, 7: EPHEMERAL}))
    assert usage["cache_creation"] == {"ephemeral_1h_input_tokens": tokens_through(cache, 4),
                                       "ephemeral_5m_input_tokens": tokens_through(cache, 8) - tokens_through(cache, 4)}


def test_tools_and_system_are_block_positions_before_the_messages():
    cache = AnthropicCache()
    tools = [{"name": f"t{i}", "description": "d" * 2000, "input_schema": {"type": "object"}} for i in range(3)]
    tools[-1] = {**tools[-1], "cache_control": EPHEMERAL}
    prompt = {**body(2), "tools": tools, "system": [{"type": "text", "text": "s" * 400, "cache_control": EPHEMERAL}]}
    cache.bill(prompt)
    other = {**prompt, "system": [{"type": "text", "text": "changed" * 60, "cache_control": EPHEMERAL}]}
    usage = cache.bill(other)  # the tools' entry survives a changed system prompt
    assert usage["cache_read_input_tokens"] == cache.tokens_of({"tools": tools})


def test_input_over_the_context_window_is_rejected_with_the_documented_shape():
    cache = AnthropicCache(context_window=2000)
    prompt = body(8)
    error = rejected(cache.bill, prompt)
    fixture = json.loads(wire("anthropic_error_prompt_too_long_400.json"))
    assert error.status == 400
    assert error.body["type"] == fixture["type"] and error.body["error"]["type"] == fixture["error"]["type"]
    assert error.body["error"]["message"] == f"prompt is too long: {cache.tokens_of(prompt)} tokens > 2000 maximum"
    assert re.fullmatch(r"prompt is too long: \d+ tokens > \d+ maximum", fixture["error"]["message"])


def test_max_tokens_is_not_part_of_the_prompt_too_long_check():
    prompt = {**body(6), "max_tokens": 1000}
    window = AnthropicCache().tokens_of(prompt) + 10
    assert AnthropicCache(context_window=window).bill(prompt)["input_tokens"] > 0
    error = rejected(AnthropicCache(context_window=window, max_tokens_overflow="reject").bill, prompt)
    assert error.body["error"]["message"].startswith("input length and `max_tokens` exceed context limit: ")


# --- OpenAI ----------------------------------------------------------------------------------


def chat(n: int, key: str | None = None, model: str = "gpt-4.1") -> dict:
    """A Chat Completions body: a system message, then ``n`` user/assistant messages of ~300 tokens."""
    messages = [{"role": "system", "content": "You are a careful assistant."}]
    for i in range(n):
        messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i:04d} " + "y" * 1200})
    out = {"model": model, "messages": messages, "stream": True}
    if key is not None:
        out["prompt_cache_key"] = key
    return out


def shared_tokens(a: dict, b: dict) -> int:
    x, y = OpenAICache.prompt_text(a), OpenAICache.prompt_text(b)
    n = 0
    while n < min(len(x), len(y)) and x[n] == y[n]:
        n += 1
    return n // 4


def test_openai_hits_count_in_128_token_steps_from_1024():
    cache = OpenAICache()
    first = cache.bill(chat(10))
    assert first["prompt_tokens_details"]["cached_tokens"] == 0
    second_body = chat(14)
    second = cache.bill(second_body)
    shared = shared_tokens(chat(10), second_body)
    cached = second["prompt_tokens_details"]["cached_tokens"]
    assert cached == 1024 + (shared - 1024) // 128 * 128
    assert cached <= shared < cached + 128 and cached != shared  # rounded down, not the raw prefix
    assert second["prompt_tokens"] == cache.tokens_of(second_body)  # cached tokens are included


def test_openai_prompts_under_1024_tokens_are_not_cached():
    cache = OpenAICache()
    small = chat(2)
    assert cache.tokens_of(small) < 1024
    cache.bill(small)
    assert cache.bill(small)["prompt_tokens_details"]["cached_tokens"] == 0
    assert cache.bill(chat(6))["prompt_tokens_details"]["cached_tokens"] == 0  # nothing was stored
    # A long prompt sharing under 1024 tokens with a cached one reads nothing either.
    diverging = chat(6)
    diverging["messages"][4]["content"] = "changed " + diverging["messages"][4]["content"]
    assert 900 < shared_tokens(chat(6), diverging) < 1024
    assert cache.bill(diverging)["prompt_tokens_details"]["cached_tokens"] == 0


def test_openai_requests_with_different_prompt_cache_keys_do_not_share():
    cache = OpenAICache()
    cache.bill(chat(10, key="a"))
    assert cache.bill(chat(12, key="b"))["prompt_tokens_details"]["cached_tokens"] == 0
    assert cache.bill(chat(12, key="a"))["prompt_tokens_details"]["cached_tokens"] > 0
    assert cache.bill(chat(12, key="a", model="gpt-4o"))["prompt_tokens_details"]["cached_tokens"] == 0


def test_openai_entries_are_evicted_after_five_idle_minutes():
    cache = OpenAICache()
    cache.bill(chat(10))
    cache.advance(299)
    assert cache.bill(chat(10))["prompt_tokens_details"]["cached_tokens"] > 0
    cache.advance(301)
    assert cache.bill(chat(10))["prompt_tokens_details"]["cached_tokens"] == 0


def test_openai_overflow_is_context_length_exceeded_with_the_documented_shape():
    cache = OpenAICache(context_window=2000)
    prompt = chat(10)
    error = rejected(cache.bill, prompt)
    fixture = json.loads(wire("openai_error_context_length_400.json"))
    assert error.status == 400
    assert {k: v for k, v in error.body["error"].items() if k != "message"} == \
        {k: v for k, v in fixture["error"].items() if k != "message"}
    assert error.body["error"]["message"] == (
        f"This model's maximum context length is 2000 tokens. However, your messages resulted in "
        f"{cache.tokens_of(prompt)} tokens. Please reduce the length of the messages.")
    tools = [{"type": "function", "function": {"name": "bash", "description": "run", "parameters": {"type": "object"}}}]
    message = rejected(cache.bill, {**prompt, "tools": tools}).body["error"]["message"]
    assert re.fullmatch(
        r"This model's maximum context length is 2000 tokens\. However, your messages resulted in \d+ tokens "
        r"\(\d+ in the messages, \d+ in the functions\)\. Please reduce the length of the messages or functions\.",
        message)


def test_a_strict_server_rejects_prompt_cache_key():
    strict = OpenAICache(reject_prompt_cache_key=True)
    error = rejected(strict.bill, chat(2, key="session-1"))
    assert error.status == 400
    assert error.body["object"] == "error" and error.body["type"] == "BadRequestError" and error.body["code"] == 400
    assert "extra_forbidden" in error.body["message"] and "prompt_cache_key" in error.body["message"]
    assert strict.bill(chat(2))["prompt_tokens"] > 0  # without the field it answers


# --- the handler over real HTTP --------------------------------------------------------------


def sse_data(raw: bytes) -> list[dict]:
    return [json.loads(line[6:]) for line in raw.decode().splitlines()
            if line.startswith("data: ") and line[6:].strip() != "[DONE]"]


def test_the_anthropic_handler_streams_the_emulators_usage_over_http():
    handler = loopback_handler(AnthropicCache(), lambda request, usage: anthropic_sse(usage, ["hi"]))
    with LoopbackServer(handler=handler) as server:
        starts = []
        for n in (5, 12):
            response = httpx.post(f"{server.url}/v1/messages", json=body(n, {n - 1: EPHEMERAL}))
            assert response.status_code == 200
            starts.append(next(e for e in sse_data(response.content) if e["type"] == "message_start"))
        bad = httpx.post(f"{server.url}/v1/messages", json=body(6, {i: EPHEMERAL for i in range(5)}))
    usages = [s["message"]["usage"] for s in starts]
    for usage, billed in zip(usages, handler.billed):
        for field in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "cache_creation"):
            assert usage[field] == billed.usage[field]
    assert usages[1]["cache_read_input_tokens"] == usages[0]["cache_creation_input_tokens"] > 0
    assert bad.status_code == 400 and bad.json()["error"]["message"].endswith("Found 5.")


def test_scripted_sse_bodies_get_the_emulators_usage():
    handler = loopback_handler(OpenAICache(), [openai_stream(["a"]), openai_stream(["b"], prompt_tokens=7)])
    with LoopbackServer(handler=handler) as server:
        httpx.post(f"{server.url}/v1/chat/completions", json=chat(10))
        raw = httpx.post(f"{server.url}/v1/chat/completions", json=chat(12)).content
        spent = httpx.post(f"{server.url}/v1/chat/completions", json=chat(12))
    final = [e for e in sse_data(raw) if e.get("usage")][-1]["usage"]
    assert final["prompt_tokens"] == handler.billed[1].usage["prompt_tokens"]
    billed = handler.billed[1].usage
    assert final["prompt_tokens_details"]["cached_tokens"] == billed["prompt_tokens_details"]["cached_tokens"] > 0
    assert final["total_tokens"] == final["prompt_tokens"] + final["completion_tokens"]
    assert spent.status_code == 500  # the script ran out
