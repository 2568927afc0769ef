"""The OpenAI-compatible backend: every wire fixture, the request it sends, and the stream kinds
compatible servers produce (ids missing, indexes reused or absent, fields repeated, cut streams)."""

from __future__ import annotations

import json
import re

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
from conftest import WIRE, expected, wire
from loopback import LoopbackServer, Reply, split
from scout_tui.backends.base import Completed, TextDelta, ThinkingDelta, ToolCallDelta, ToolCallStarted
from scout_tui.backends.openai import to_wire

FIXTURES = fixtures(("openai", "ollama", "openrouter", "vllm"))


def test_every_wire_fixture_is_played_by_one_backend_test():
    everything = fixtures(("",))
    assert sorted(FIXTURES + fixtures(("anthropic",))) == everything
    assert len(everything) == 19 and all((WIRE / n).exists() for n in everything)


async def _play(name: str, transport=None, url: str | None = None):
    b = backend("openai", base_url=url, transport=transport)
    if expected(name)["expected"]["outcome"] == "complete":
        check_complete(await collect(b), name)
    else:
        events, error = await collect_until_error(b)
        check_error(error, events, name)


@pytest.mark.parametrize("name", FIXTURES)
async def test_fixture_over_a_real_socket(name):
    status, headers = serve_of(name)
    with LoopbackServer([Reply(split(wire(name), 50), status, headers)]) as server:
        await _play(name, url=server.url + "/v1")
        assert server.requests[0].path == "/v1/chat/completions"


@pytest.mark.parametrize("size", SPLITS)
@pytest.mark.parametrize("name", FIXTURES)
async def test_fixture_split_into_small_pieces(name, size):
    status, headers = serve_of(name)
    await _play(name, transport=mock_transport(wire(name), size, status, headers))


# --- the request ------------------------------------------------------------------------------

TOOLS = [{"name": "read", "description": "Read a file", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]


async def test_request_headers_and_body_follow_chat_completions():
    with LoopbackServer([Reply(wire("openai_text.sse"))]) as server:
        b = backend("openai", model="gpt-test", base_url=server.url + "/v1")
        await collect(b, request(model="gpt-test", system="Be brief.", tools=TOOLS, max_tokens=321))
        sent = server.requests[0]
    assert sent.headers["authorization"] == f"Bearer {SECRET}"
    assert sent.headers["content-type"].startswith("application/json")
    assert sent.json() == {
        "model": "gpt-test",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        "max_tokens": 321,
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [{"type": "function", "function": {"name": "read", "description": "Read a file",
                                                    "parameters": TOOLS[0]["input_schema"]}}],
    }


async def test_no_authorization_header_without_a_key():
    with LoopbackServer([Reply(wire("ollama_tool_whole.sse"))]) as server:
        await collect(backend("openai", api_key=None, base_url=server.url + "/v1"))
        assert "authorization" not in server.requests[0].headers


TURN = [
    {"role": "user", "content": [{"type": "text", "text": "look at a and b"}]},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "two reads", "signature": "sig"},
        {"type": "tool_use", "id": "call_a", "name": "read", "input": {"path": "a"}},
        {"type": "tool_use", "id": "call_b", "name": "read", "input": {"path": "b"}},
    ]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "call_b", "content": [{"type": "text", "text": "no such file"}], "is_error": True},
        {"type": "text", "text": "also check c"},
        {"type": "tool_result", "tool_use_id": "call_a", "content": "A = 1"},
    ]},
]


async def test_tool_results_follow_their_call_in_call_order_then_the_users_text():
    with LoopbackServer([Reply(wire("openai_text.sse"))]) as server:
        await collect(backend("openai", base_url=server.url), request(messages=TURN))
        sent = server.requests[0].json()["messages"]
    assert sent == [
        {"role": "user", "content": "look at a and b"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "read", "arguments": '{"path": "a"}'}},
            {"id": "call_b", "type": "function", "function": {"name": "read", "arguments": '{"path": "b"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_a", "content": "A = 1"},
        {"role": "tool", "tool_call_id": "call_b", "content": "Error: no such file"},
        {"role": "user", "content": "also check c"},
    ]


def test_assistant_text_goes_with_its_tool_calls_and_thinking_only_messages_are_skipped():
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "Reading."},
                                          {"type": "tool_use", "id": "c1", "name": "read", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "…"}]},
    ]
    wire_messages = to_wire(messages)
    assert wire_messages[1] == {"role": "assistant", "content": "Reading.", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]}
    assert [m["role"] for m in wire_messages] == ["user", "assistant", "tool"]


def test_results_and_texts_read_as_everywhere_else_with_the_error_prefix_on_the_wire():
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "First."},
                                          {"type": "tool_use", "id": "c1", "name": "shot", "input": {}},
                                          {"type": "text", "text": "Second."}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "is_error": True,
                                      "content": [{"type": "text", "text": "half"}, image]}]},
    ]
    wire_messages = to_wire(messages)
    assert wire_messages[1]["content"] == "First.\nSecond."
    assert wire_messages[2]["content"] == "Error: half\n[image block]"


# --- stream kinds -----------------------------------------------------------------------------


def chunk(delta: dict | None = None, finish: str | None = None, **extra) -> str:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return json.dumps({"object": "chat.completion.chunk", "choices": choices, **extra})


def body(*chunks: str, done: bool = True) -> bytes:
    out = "".join(f"data: {c}\n\n" for c in chunks) + ("data: [DONE]\n\n" if done else "")
    return out.encode()


def call(index=None, id=None, name=None, arguments=None, type=None) -> dict:
    fn = {k: v for k, v in (("name", name), ("arguments", arguments)) if v is not None}
    raw = {"index": index, "id": id, "type": type, "function": fn}
    return {k: v for k, v in raw.items() if v is not None}


async def _stream(data: bytes, size: int = 7):
    return await collect(backend("openai", transport=mock_transport(data, size)))


async def _fail(data: bytes, size: int = 7):
    return await collect_until_error(backend("openai", transport=mock_transport(data, size)))


def uses(events) -> list[dict]:
    return [b for b in events[-1].message["content"] if b["type"] == "tool_use"]


async def test_a_missing_tool_call_id_gets_a_stable_unique_one():
    events = await _stream(body(
        chunk({"tool_calls": [call(0, name="read", arguments='{"path": "a"}')]}),
        chunk({"tool_calls": [call(1, name="read", arguments='{"path": "b"}')]}),
        chunk({}, "tool_calls"),
    ))
    ids = [u["id"] for u in uses(events)]
    assert all(re.fullmatch(r"call_\d+_\w+", i) for i in ids) and len(set(ids)) == 2
    assert [e.id for e in events if isinstance(e, ToolCallStarted)] == ids
    check_events_add_up(events, events[-1].message)


async def test_an_index_reused_with_a_new_id_is_a_new_call():
    events = await _stream(body(
        chunk({"tool_calls": [call(0, "call_1", "read", '{"path": "a"}', "function")]}),
        chunk({"tool_calls": [call(0, "call_2", "grep", '{"pattern": "x"}', "function")]}),
        chunk({}, "tool_calls"),
    ))
    assert [(u["id"], u["name"], u["input"]) for u in uses(events)] == [
        ("call_1", "read", {"path": "a"}), ("call_2", "grep", {"pattern": "x"})]
    check_events_add_up(events, events[-1].message)


async def test_the_same_index_repeated_without_ids_after_a_complete_call_is_a_new_call():
    events = await _stream(body(
        chunk({"tool_calls": [call(0, name="read", arguments='{"path": "a"}')]}),
        chunk({"tool_calls": [call(0, name="read", arguments='{"path": "b"}')]}),
        chunk({}, "tool_calls"),
    ))
    assert [u["input"] for u in uses(events)] == [{"path": "a"}, {"path": "b"}]


async def test_tool_calls_without_an_index_are_new_calls_unless_their_id_is_known():
    events = await _stream(body(
        chunk({"tool_calls": [call(id="c1", name="read", arguments='{"path":')]}),
        chunk({"tool_calls": [call(id="c1", arguments=' "a"}')]}),
        chunk({"tool_calls": [call(id="c2", name="read", arguments='{"path": "b"}')]}),
        chunk({"tool_calls": [call(name="glob", arguments='{"pattern": "*"}')]}),
        chunk({}, "tool_calls"),
    ))
    assert [(u["id"], u["name"], u["input"]) for u in uses(events)][:2] == [
        ("c1", "read", {"path": "a"}), ("c2", "read", {"path": "b"})]
    assert (uses(events)[2]["name"], uses(events)[2]["input"]) == ("glob", {"pattern": "*"})
    check_events_add_up(events, events[-1].message)


async def test_repeated_role_id_name_and_type_are_set_once_and_only_arguments_append():
    pieces = ['{"com', 'mand": ', '"ls"}']
    events = await _stream(body(*[
        chunk({"role": "assistant", "content": "", "tool_calls": [call(0, "call_x", "bash", p, "function")]}) for p in pieces
    ], chunk({"role": "assistant"}, "tool_calls")))
    assert uses(events) == [{"type": "tool_use", "id": "call_x", "name": "bash", "input": {"command": "ls"}}]
    assert [e for e in events if isinstance(e, ToolCallStarted)] == [ToolCallStarted(0, "call_x", "bash")]


async def test_arguments_given_as_an_object_are_accepted():
    events = await _stream(body(chunk({"tool_calls": [call(0, "c", "read", {"path": "a"})]}), chunk({}, "tool_calls")))
    assert uses(events)[0]["input"] == {"path": "a"}


async def test_fragments_before_the_name_wait_for_it():
    events = await _stream(body(
        chunk({"tool_calls": [call(0, "c", arguments='{"path"')]}),
        chunk({"tool_calls": [call(0, name="read", arguments=': "a"}')]}),
        chunk({}, "tool_calls"),
    ))
    tool_events = [e for e in events if isinstance(e, (ToolCallStarted, ToolCallDelta))]
    assert tool_events == [ToolCallStarted(0, "c", "read"), ToolCallDelta(0, '{"path": "a"}')]


async def test_stop_with_tool_calls_means_tool_use():
    events = await _stream(body(chunk({"tool_calls": [call(0, "c", "read", "{}")]}, "stop")))
    assert (events[-1].stop_reason, events[-1].stop_reason_raw) == ("tool_use", "stop")


@pytest.mark.parametrize(("raw", "ours"), [("stop", "end_turn"), ("length", "max_tokens"),
                                           ("content_filter", "refusal"), ("function_call", "tool_use")])
async def test_finish_reasons_map_to_our_stop_reasons(raw, ours):
    events = await _stream(body(chunk({"content": "Hi"}), chunk({}, raw)))
    assert (events[-1].stop_reason, events[-1].stop_reason_raw) == (ours, raw)


async def test_empty_string_finish_reason_is_null():
    # Older Ollama sent "" on every chunk: with no [DONE] the stream never finished.
    _, error = await _fail(body(chunk({"content": "Hi"}, ""), chunk({"content": "!"}, ""), done=False))
    assert error.kind == "incomplete_stream"


async def test_a_stream_without_done_or_finish_reason_is_incomplete():
    events, error = await _fail(body(chunk({"content": "Half"}), done=False))
    assert error.kind == "incomplete_stream" and error.retryable is True and error.status == 200
    assert error.partial == {"role": "assistant", "content": [{"type": "text", "text": "Half"}]}
    assert not any(isinstance(e, Completed) for e in events)


async def test_a_finish_reason_then_a_close_without_done_is_complete():
    events = await _stream(body(chunk({"content": "Whole."}), chunk({}, "stop"), done=False))
    assert events[-1].message["content"] == [{"type": "text", "text": "Whole."}]


async def test_a_cut_tool_call_is_left_out_of_partial():
    _, error = await _fail(body(chunk({"content": "Reading."}), chunk({"tool_calls": [call(0, "c", "read", '{"pa')]}), done=False))
    assert error.partial == {"role": "assistant", "content": [{"type": "text", "text": "Reading."}]}


async def test_a_tool_call_cut_by_length_is_kept_with_empty_input():
    events = await _stream(body(chunk({"tool_calls": [call(0, "c", "write", '{"content": "lo')]}, "length")))
    assert events[-1].stop_reason == "max_tokens"
    assert uses(events) == [{"type": "tool_use", "id": "c", "name": "write", "input": {}}]


async def test_tool_arguments_that_are_not_an_object_are_kept_as_unparsed_arguments():
    events = await _stream(body(chunk({"tool_calls": [call(0, "c", "read", '{"path": ')]}, "tool_calls")))
    assert uses(events) == [{"type": "tool_use", "id": "c", "name": "read", "input": {"unparsed_arguments": '{"path":'}}]
    events = await _stream(body(chunk({"tool_calls": [call(0, "c", "read", '["a.txt"]')]}, "tool_calls")))
    assert uses(events)[0]["input"] == {"unparsed_arguments": '["a.txt"]'}


async def test_reasoning_content_and_reasoning_are_thinking_without_signature():
    events = await _stream(body(chunk({"reasoning_content": "First, "}), chunk({"reasoning": "then."}),
                                chunk({"content": "Answer."}, "stop")))
    assert events[-1].message["content"] == [{"type": "thinking", "thinking": "First, then."},
                                             {"type": "text", "text": "Answer."}]
    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == ["First, ", "then."]


async def test_leading_whitespace_streams_with_the_first_visible_text():
    events = await _stream(body(chunk({"content": "\n\n"}), chunk({"content": "Hi"}), chunk({}, "stop")))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["\n\nHi"]


async def test_usage_on_any_chunk_counts_and_cached_tokens_leave_input():
    usage = {"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 60}}
    events = await _stream(body(chunk({"content": "Hi"}, "stop", usage=usage)))
    assert events[-1].usage.as_dict() == {"input_tokens": 40, "output_tokens": 20, "cache_read_tokens": 60,
                                          "cache_write_tokens": 0, "reasoning_tokens": None,
                                          "cache_write_1h_tokens": 0}


async def test_sse_comments_and_crlf_line_ends_are_handled():
    data = b": keep-alive\r\n\r\n" + body(chunk({"content": "Hi"}), chunk({}, "stop")).replace(b"\n", b"\r\n")
    events = await _stream(data, size=1)
    assert events[-1].message["content"] == [{"type": "text", "text": "Hi"}]


async def test_an_error_object_mid_stream_carries_its_kind_from_the_code():
    # OpenRouter puts the upstream status in error.code.
    _, error = await _fail(body(chunk({"content": "So"}), json.dumps({"error": {"code": 429, "message": "slow down"}}), done=False))
    assert (error.kind, error.retryable, error.status) == ("rate_limited", True, 200)
    assert "slow down" in str(error)


async def test_a_whole_completion_from_a_server_that_ignored_stream_true_is_accepted():
    whole = {"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "c9", "type": "function", "function": {"name": "read", "arguments": '{"path": "a"}'}}]}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 3}}
    transport = mock_transport(json.dumps(whole).encode(), 64, 200, {"content-type": "application/json"})
    events = await collect(backend("openai", transport=transport))
    assert uses(events) == [{"type": "tool_use", "id": "c9", "name": "read", "input": {"path": "a"}}]
    assert events[-1].stop_reason == "tool_use"


async def test_an_html_page_instead_of_a_stream_is_a_bad_response():
    transport = mock_transport(b"<html><body>Welcome to nginx</body></html>", 64, 200, {"content-type": "text/html"})
    _, error = await collect_until_error(backend("openai", transport=transport))
    assert error.kind == "bad_response" and "Welcome to nginx" in str(error)
