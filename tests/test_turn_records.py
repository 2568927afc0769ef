"""Interrupted and failed turns are recorded as such (``messages.turn_marker``): the next request
sends the cut prompt once, its partial answer, and what happened, then the new prompt, on both
wires; ``run(history, None)`` sends a failed turn again (``/retry``)."""

from __future__ import annotations

import json

import pytest

from scout_tui.engine.history import problems
from scout_tui.core.messages import (INTERRUPTED_TURN, RETRIED_TURN, is_turn_marker, last_prompt, retryable, turn_marker,
                                 turn_of)
from scout_tui.session.mentions import typed_text
from tests.agent_helpers import collect, interrupted, make_agent
from tests.loopback import LoopbackServer, Reply, anthropic_stream, openai_stream


def _texts(request) -> list[tuple[str, list[str]]]:
    """A request's messages as (role, [text of each text block]), whatever the wire."""
    out = []
    for m in request.json()["messages"]:
        content = m["content"]
        texts = [content] if isinstance(content, str) else [b["text"] for b in content if b.get("type") == "text"]
        out.append((m["role"], texts))
    return out


@pytest.mark.parametrize("provider, stream", [("anthropic", anthropic_stream), ("openai", openai_stream)])
async def test_a_prompt_interrupted_mid_answer_goes_once_with_its_partial_answer_and_the_interruption(
        tmp_path, provider, stream):
    body = stream(["Half of it ", "and never the rest"])
    piece = b"Half of it "
    cut = body.index(b"\n\n", body.index(piece)) + 2
    with LoopbackServer([Reply([body[:cut], body[cut:]], delay=600), Reply(stream(["Second."]))]) as server:
        agent = make_agent(server, tmp_path, provider=provider)
        closing = await interrupted(agent, [], "slow answer please",
                                    lambda seen: any(e.type == "message.delta" for e in seen))
        assert [e.type for e in closing] == ["message.assistant", "message.user", "turn.end"]
        assert problems(agent.messages) == []
        await collect(agent, agent.messages, "another slow answer")
    sent = [m for m in _texts(server.requests[1]) if m[0] != "system"]
    # OpenAI's translation joins a message's text blocks with a blank line; Anthropic's keeps the blocks
    last = [INTERRUPTED_TURN, "another slow answer"] if provider == "anthropic" else \
        [f"{INTERRUPTED_TURN}\n\nanother slow answer"]
    assert sent == [("user", ["slow answer please"]), ("assistant", ["Half of it "]), ("user", last)]


async def test_a_prompt_interrupted_before_any_text_is_marked_and_not_merged_into_the_next(tmp_path):
    body = anthropic_stream(["Never shown."])
    cut = body.index(b"event: content_block_start")
    with LoopbackServer([Reply([body[:cut], body[cut:]], delay=600), Reply(anthropic_stream(["Second."]))]) as server:
        agent = make_agent(server, tmp_path)
        closing = await interrupted(agent, [], "slow answer please", lambda seen: len(server.requests) == 1)
        assert [e.type for e in closing] == ["message.user", "turn.end"]  # no empty assistant message
        await collect(agent, agent.messages, "another slow answer")
    # Anthropic's wire and repair both join consecutive user turns: the three blocks stay apart, in order
    assert _texts(server.requests[1]) == [("user", ["slow answer please", INTERRUPTED_TURN, "another slow answer"])]


async def test_an_interrupt_after_the_turn_ended_records_nothing(tmp_path):
    with LoopbackServer([Reply(anthropic_stream(["Whole answer."]))]) as server:
        agent = make_agent(server, tmp_path)
        await collect(agent, [], "hi")
        assert agent.interrupt() == []
    assert [m["role"] for m in agent.messages] == ["user", "assistant"]


async def test_a_persistently_overloaded_request_is_recorded_as_failed_and_retry_sends_it_once(tmp_path):
    overloaded = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).encode()
    replies = [Reply(overloaded, 529, {"content-type": "application/json"}), Reply(anthropic_stream(["At last."])),
               Reply(anthropic_stream(["Next."]))]
    with LoopbackServer(replies) as server:
        agent = make_agent(server, tmp_path)
        events = await collect(agent, [], "test 529 persistent")
        assert [e.type for e in events][-3:] == ["message.user", "error", "turn.end"]
        assert retryable(agent.messages)
        retried = [e async for e in agent.run(agent.messages, None)]
        assert [e.type for e in retried if e.type != "message.delta"] == ["message.user", "prompt.compacted",
                                                                          "message.assistant", "turn.end"]
        assert retried[0].data["message"] == turn_marker("retry")  # stored: -c sends what the retry sent
        assert not retryable(agent.messages)
        await collect(agent, agent.messages, "continue")
    assert len(server.requests) == 3
    sent = ("user", ["test 529 persistent", "[Request failed: overloaded]", RETRIED_TURN])
    assert _texts(server.requests[1]) == [sent]
    assert _texts(server.requests[2]) == [sent, ("assistant", ["At last."]), ("user", ["continue"])]


def test_a_turn_marker_is_recognised_and_is_not_typed_text():
    for marker in (turn_marker(), turn_marker("incomplete_stream"), turn_marker("retry")):
        assert is_turn_marker(marker) and typed_text(marker) == ""
    assert turn_marker("incomplete_stream")["content"][0]["text"] == "[Request failed: incomplete stream]"
    typed = {"role": "user", "content": [{"type": "text", "text": "[Request failed: a note]\nand more"}]}
    assert not is_turn_marker(typed) and not is_turn_marker({"role": "assistant", "content": [
        {"type": "text", "text": INTERRUPTED_TURN}]})
    assert not retryable([]) and retryable([{"role": "user", "content": "x"}, turn_marker()])


def test_a_turn_sent_again_by_retry_belongs_to_the_prompt_before_its_marker():
    call = {"type": "tool_use", "id": "toolu_1", "name": "write", "input": {}}
    messages = [{"role": "user", "content": "write it"}, turn_marker("overloaded"),
                {"role": "assistant", "content": [call]}]
    assert turn_of(messages, "toolu_1") == 0 and last_prompt(messages[:2]) == 0
