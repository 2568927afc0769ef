"""The Anthropic backend: every wire fixture, the request it sends, and the stream's edge cases."""

from __future__ import annotations

import json

import pytest

from backend_wire import (
    SECRET,
    SPLITS,
    backend,
    check_complete,
    check_error,
    check_events_add_up,
    collect,
    collect_until_error,
    fixtures,
    mock_transport,
    request,
    serve_of,
)
from conftest import expected, wire
from loopback import LoopbackServer, Reply, sse, split
from scout_tui.backends.anthropic import to_wire
from scout_tui.backends.base import Completed, TextDelta, ToolCallStarted
from scout_tui.core.messages import message_text

FIXTURES = fixtures(("anthropic",))


async def _play(name: str, transport=None, url: str | None = None):
    b = backend("anthropic", base_url=url, transport=transport)
    if expected(name)["expected"]["outcome"] == "complete":
        check_complete(await collect(b), name)
    else:
        events, error = await collect_until_error(b)
        check_error(error, events, name)


@pytest.mark.parametrize("name", FIXTURES)
async def test_fixture_over_a_real_socket(name):
    status, headers = serve_of(name)
    with LoopbackServer([Reply(split(wire(name), 50), status, headers)]) as server:
        await _play(name, url=server.url)
        assert server.requests[0].path == "/v1/messages"


@pytest.mark.parametrize("size", SPLITS)
@pytest.mark.parametrize("name", FIXTURES)
async def test_fixture_split_into_small_pieces(name, size):
    status, headers = serve_of(name)
    await _play(name, transport=mock_transport(wire(name), size, status, headers))


# --- the request ------------------------------------------------------------------------------

TOOLS = [{"name": "read", "description": "Read a file", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]


async def test_request_headers_and_body_follow_the_messages_api():
    with LoopbackServer([Reply(wire("anthropic_text.sse"))]) as server:
        b = backend("anthropic", model="claude-test", base_url=server.url + "/")
        await collect(b, request(model="claude-test", system="Be brief.", tools=TOOLS, max_tokens=321))
        sent = server.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == SECRET
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["content-type"].startswith("application/json")
    assert "authorization" not in sent.headers
    assert sent.json() == {
        "model": "claude-test",
        "max_tokens": 321,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "tools": TOOLS,
        "stream": True,
    }


async def test_thinking_goes_back_unchanged_and_unsigned_thinking_is_dropped():
    thinking = {"type": "thinking", "thinking": "Let me look.", "signature": "sig-abc"}
    redacted = {"type": "redacted_thinking", "data": "opaque=="}
    use = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.py"}}
    history = [
        {"role": "user", "content": [{"type": "text", "text": "read a.py"}]},
        {"role": "assistant", "content": [thinking, redacted, {"type": "thinking", "thinking": "from another server"}, use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x = 1", "is_error": False}]},
    ]
    with LoopbackServer([Reply(wire("anthropic_text.sse"))]) as server:
        await collect(backend("anthropic", base_url=server.url), request(messages=history))
        sent = server.requests[0].json()["messages"]
    assert sent[1] == {"role": "assistant", "content": [thinking, redacted, use]}
    assert sent[2] == history[2]


def test_translation_drops_blank_text_and_merges_what_an_empty_message_leaves_adjacent():
    messages = [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "unsigned"}, {"type": "text", "text": "  "}]},
        {"role": "user", "content": [{"type": "text", "text": "two"}]},
    ]
    assert to_wire(messages) == [
        {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
    ]


async def test_thinking_from_a_stream_round_trips_into_the_next_request():
    events = await collect(backend("anthropic", transport=mock_transport(wire("anthropic_thinking.sse"), 64)))
    reply = events[-1].message
    history = [{"role": "user", "content": "27*453?"}, reply, {"role": "user", "content": "thanks"}]
    assert to_wire(history)[1] == reply


# --- stream edge cases ----------------------------------------------------------------------

START = ("message_start", {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": [],
                                                                 "usage": {"input_tokens": 10, "output_tokens": 1}}})
STOP = ("message_stop", {"type": "message_stop"})


def text_block(index: int, text: str) -> list[tuple[str, dict]]:
    return [
        ("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def tool_block(index: int, tid: str, name: str, fragments: list[str]) -> list[tuple[str, dict]]:
    return [
        ("content_block_start", {"type": "content_block_start", "index": index,
                                 "content_block": {"type": "tool_use", "id": tid, "name": name, "input": {}}}),
        *[("content_block_delta", {"type": "content_block_delta", "index": index,
                                   "delta": {"type": "input_json_delta", "partial_json": f}}) for f in fragments],
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def delta(stop: str, **usage) -> tuple[str, dict]:
    return ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": usage})


async def _stream(events, size: int = 5):
    return await collect(backend("anthropic", transport=mock_transport(sse(events), size)))


async def test_a_stream_cut_before_message_stop_is_an_error_not_an_answer():
    body = sse([START, *text_block(0, "Half an ans"), delta("end_turn", output_tokens=5)])
    events, error = await collect_until_error(backend("anthropic", transport=mock_transport(body, 9)))
    assert error.kind == "incomplete_stream"
    assert error.retryable is True
    assert error.partial == {"role": "assistant", "content": [{"type": "text", "text": "Half an ans"}]}
    assert not any(isinstance(e, Completed) for e in events)


async def test_partial_leaves_out_tool_calls():
    body = sse([START, *text_block(0, "Let me read it."), *tool_block(1, "toolu_9", "read", ['{"pa'])])
    _, error = await collect_until_error(backend("anthropic", transport=mock_transport(body, 64)))
    assert error.partial == {"role": "assistant", "content": [{"type": "text", "text": "Let me read it."}]}


async def test_blocks_keep_their_order_and_whitespace_text_makes_no_block():
    events = await _stream([START, *text_block(0, "First."), *tool_block(1, "toolu_1", "read", ['{"path": "a"}']),
                            *text_block(2, "\n\n"), *text_block(3, "Then."), delta("tool_use", output_tokens=9), STOP])
    assert [b["type"] for b in events[-1].message["content"]] == ["text", "tool_use", "text"]
    assert [b.get("text") for b in events[-1].message["content"]] == ["First.", None, "Then."]
    # The stream reads as the message's text does (blocks joined by a newline), not "First.Then.".
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "First.\nThen." == message_text(events[-1].message)


async def test_signature_delta_replaces_rather_than_appends():
    events = await _stream([
        START,
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Hmm."}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "old"}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "new"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        *text_block(1, "Done."), delta("end_turn"), STOP,
    ])
    assert events[-1].message["content"][0] == {"type": "thinking", "thinking": "Hmm.", "signature": "new"}


async def test_message_delta_usage_replaces_every_count_it_carries():
    events = await _stream([START, *text_block(0, "ok"),
                            delta("end_turn", output_tokens=30, input_tokens=12, cache_read_input_tokens=4), STOP])
    usage = events[-1].usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (12, 30, 4)


async def test_missing_usage_and_event_names_are_tolerated():
    # No usage in message_start (the doc's thinking example) and no "event:" lines (some proxies).
    events = await _stream([(None, {"type": "message_start", "message": {"id": "m", "content": []}}),
                            *[(None, d) for _, d in text_block(0, "ok")], (None, {"type": "message_stop"})])
    assert events[-1].message["content"] == [{"type": "text", "text": "ok"}]
    assert events[-1].usage.input_tokens == 0


async def test_a_tool_call_cut_by_max_tokens_is_kept_with_empty_input():
    events = await _stream([START, *tool_block(0, "toolu_1", "write", ['{"path": "a.py", "content": "lo']),
                            delta("max_tokens", output_tokens=100), STOP])
    assert events[-1].stop_reason == "max_tokens"
    assert events[-1].message["content"] == [{"type": "tool_use", "id": "toolu_1", "name": "write", "input": {}}]


async def test_invalid_tool_json_in_a_finished_answer_is_kept_as_unparsed_arguments():
    events = await _stream([START, *text_block(0, "Calling."), *tool_block(1, "toolu_1", "read", ['{"path": ']),
                            delta("tool_use"), STOP])
    assert events[-1].message["content"] == [
        {"type": "text", "text": "Calling."},
        {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"unparsed_arguments": '{"path":'}}]


async def test_tool_call_events_use_the_call_ordinal_not_the_block_index():
    events = await collect(backend("anthropic", transport=mock_transport(wire("anthropic_tool_use.sse"), 64)))
    assert [e for e in events if isinstance(e, ToolCallStarted)] == [ToolCallStarted(0, "toolu_01PzK4mW8sQvT2nXbR6yJd9L", "bash")]


async def test_a_whole_message_from_a_server_that_ignored_stream_true_is_accepted():
    message = {"type": "message", "role": "assistant", "stop_reason": "tool_use",
               "content": [{"type": "text", "text": "Reading."}, {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "x"}}],
               "usage": {"input_tokens": 5, "output_tokens": 7}}
    transport = mock_transport(json.dumps(message).encode(), 64, 200, {"content-type": "application/json"})
    events = await collect(backend("anthropic", transport=transport))
    assert events[-1].message["content"] == message["content"]
    assert (events[-1].stop_reason, events[-1].usage.output_tokens) == ("tool_use", 7)
    check_events_add_up(events, events[-1].message)
