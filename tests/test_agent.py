"""The agent loop against a real backend over a loopback socket, with real tools."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from scout_tui.engine.agent import Agent, user_message
from scout_tui.engine.context import ContextWindow
from scout_tui.engine.settings import AgentSettings
from scout_tui.core.messages import TOOL_INTERRUPTED
from scout_tui.backends import make_backend
from scout_tui.engine.history import problems
from scout_tui.engine.tool_runner import CUT_BY_MAX_TOKENS, ToolRunner
from scout_tui.tools import builtin_registry
from tests.agent_helpers import collect, interrupted, make_agent
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream, openai_stream, split, sse


def test_the_agent_holds_its_context_window_and_tool_runner_instead_of_inheriting_them(tmp_path):
    """Issue 29: ``Agent`` was a ``ContextWindow`` (and before that a ``ToolRunner``), the state
    each read declared as bare annotations; it holds them now, each given what it reads."""
    assert Agent.__mro__[1:] == (object,)
    backend = make_backend("anthropic", model="claude-sonnet-4-5", api_key="sk-test", max_retries=0)
    agent = Agent(backend, builtin_registry(), AgentSettings(cwd=tmp_path, context_window=10_000))
    assert isinstance(agent.window, ContextWindow) and isinstance(agent.runner, ToolRunner)
    assert agent.window.context_window == 10_000 and agent.window.tools is agent.tools
    agent.messages = [user_message("hi")]  # as each turn does: the window reads the list now held
    assert agent.window.messages is agent.messages
    assert agent.window.preview().messages == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


async def test_text_answer_is_one_turn(tmp_path):
    with LoopbackServer([Reply(anthropic_stream(["Hello", " there"]))]) as server:
        agent = make_agent(server, tmp_path)
        events = await collect(agent, [], "hi")
    types = [e.type for e in events]
    # Fragments that arrive together are merged (backends/offloop.py): one delta or two.
    assert [t for t in types if t != "message.delta"] == ["message.user", "prompt.compacted", "message.assistant",
                                                          "turn.end"]
    assert types.index("message.assistant") > types.index("message.delta") > types.index("prompt.compacted")
    assert "".join(e.text for e in events if e.type == "message.delta") == "Hello there"
    assert events[-2].data["message"]["content"] == [{"type": "text", "text": "Hello there"}]
    assert events[-1].data == {"stop_reason": "end_turn"}
    body = server.requests[0].json()
    # The system prompt and the newest message carry cache breakpoints (tools + system pass
    # the 1,024-token minimum).
    assert body["system"] == [{"type": "text", "text": "You are a test.", "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi",
                                                              "cache_control": {"type": "ephemeral"}}]}]
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}


async def test_tool_call_runs_and_its_result_goes_back_to_the_model(tmp_path):
    (tmp_path / "notes.txt").write_text("the answer is 42\n")
    first = anthropic_stream(["Reading."], ("toolu_1", "read", ['{"pa', 'th": "no', 'tes.txt"}']))
    with LoopbackServer([Reply(split(first, 11)), Reply(anthropic_stream(["It says 42."]))]) as server:
        agent = make_agent(server, tmp_path)
        events = await collect(agent, [], "what is in notes.txt?")
    ends = [e for e in events if e.type == "tool.end"]
    assert len(ends) == 1 and ends[0].data["is_error"] is False
    sent = server.requests[1].json()["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    result = sent[2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1"
    assert "the answer is 42" in json.dumps(result)
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert problems(agent.messages) == []


async def test_parallel_read_only_calls_keep_call_order(tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    calls = [("call_a", "read", {"path": "a.txt"}), ("call_b", "grep", {"pattern": "beta"}), ("call_c", "read", {"path": "missing.txt"})]
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    chunks = [(None, {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
        {"index": i, "id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (cid, name, args) in enumerate(calls)]}, "finish_reason": None}]}),
        (None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}), (None, "[DONE]")]
    with LoopbackServer([Reply(sse(chunks)), Reply(openai_stream(["done"]))]) as server:
        agent = make_agent(server, tmp_path, provider="openai")
        await collect(agent, [], "look")
    tool_messages = [m for m in server.requests[1].json()["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_a", "call_b", "call_c"]
    assert "alpha" in tool_messages[0]["content"] and "beta" in tool_messages[1]["content"]
    results = agent.messages[2]["content"]
    assert [r["is_error"] for r in results] == [False, False, True]


async def test_max_turns_stops_and_says_so_with_a_valid_history(tmp_path):
    loop = anthropic_stream([], ("toolu_x", "glob", ['{"pattern": "*.txt"}']))
    with LoopbackServer(handler=lambda rec: Reply(loop)) as server:
        agent = make_agent(server, tmp_path, max_turns=2)
        events = await collect(agent, [], "loop forever")
    assert len(server.requests) == 2
    assert events[-1].data == {"stop_reason": "max_turns"}
    assert any(e.type == "notice" and "max_turns" in e.data["text"] for e in events)
    assert problems(agent.messages) == []


async def test_tool_call_cut_by_max_tokens_is_never_run(tmp_path):
    cut = anthropic_stream([], ("toolu_w", "write", ['{"path": "out.txt", "content": "x"}']), stop_reason="max_tokens")
    with LoopbackServer([Reply(cut), Reply(anthropic_stream(["ok"]))]) as server:
        agent = make_agent(server, tmp_path)
        await collect(agent, [], "write it")
    assert not (tmp_path / "out.txt").exists()
    result = agent.messages[2]["content"][0]
    assert result["is_error"] is True and result["content"] == CUT_BY_MAX_TOKENS


async def test_error_mid_stream_ends_the_turn_and_the_next_request_says_the_partial_answer_failed(tmp_path):
    broken = sse([
        ("message_start", {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
                                                                "content": [], "model": "x", "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Half an"}}),
        ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ])
    with LoopbackServer([Reply(broken), Reply(anthropic_stream(["Whole answer."]))]) as server:
        agent = make_agent(server, tmp_path)
        events = await collect(agent, [], "first")
        assert events[-2].type == "error" and "Overloaded" in events[-2].data["message"]
        assert events[-1].data == {"stop_reason": "error"}
        partial = [e for e in events if e.type == "message.assistant"]
        assert partial and partial[0].data["message"]["incomplete"] is True
        await collect(agent, agent.messages, "second")
    sent = server.requests[1].json()["messages"]
    # the failed prompt once, its partial answer, then the failure the model is told of before the new prompt
    assert [[b["text"] for b in m["content"]] for m in sent] == [["first"], ["Half an"],
                                                                 ["[Request failed: overloaded]", "second"]]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]


async def test_interrupt_during_the_stream_keeps_the_partial_answer(tmp_path):
    body = anthropic_stream(["Partial ", "answer", " never finished"])
    cut = body.index(b"\n\n", body.index(b"Partial ")) + 2  # the first piece ends after one delta
    pieces = [body[:cut], body[cut:]]
    # The rest of the answer never comes in the test's lifetime: only the interrupt ends the turn.
    with LoopbackServer([Reply(pieces, delay=600.0)]) as server:
        agent = make_agent(server, tmp_path)
        closing = await interrupted(agent, [], "go", lambda seen: any(e.type == "message.delta" for e in seen))
    assert closing[0].type == "message.assistant" and closing[0].data["interrupted"] is True
    assert closing[0].data["message"]["content"][0]["text"].startswith("Partial")
    assert closing[-1].data == {"stop_reason": "interrupted"}
    assert problems(agent.messages) == []


async def test_interrupt_during_bash_answers_the_call_and_kills_it(tmp_path):
    marker = tmp_path / "finished"
    call = ("toolu_b", "bash", [json.dumps({"command": f"echo started; sleep 600; touch {marker}"})])
    with LoopbackServer([Reply(anthropic_stream([], call))]) as server:
        agent = make_agent(server, tmp_path)
        seen = []

        async def consume():
            async for event in agent.run([], "sleep"):
                seen.append(event)

        task = asyncio.create_task(consume())
        await wait_until(None, lambda: printed(seen, "started"), what="the shell has started")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 60)  # only the kill can end a 600 s sleep this soon
        closing = agent.interrupt()
    ends = [e for e in closing if e.type == "tool.end"]
    assert ends and ends[0].data["content"] == TOOL_INTERRUPTED
    results = [e for e in closing if e.type == "message.user"][0].data["message"]["content"]
    assert results[0]["tool_use_id"] == "toolu_b" and results[0]["is_error"] is True
    assert problems(agent.messages) == []
    assert not marker.exists()


async def test_a_turn_sends_the_compacted_prompt_while_the_store_keeps_every_byte(tmp_path, tmp_home):
    from scout_tui.core.bus import TRANSIENT
    from scout_tui.store.event_log import Store

    big = "x" * 5000
    history = [{"role": "user", "content": [{"type": "text", "text": "start"}]}]
    for i in range(30):
        history.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "read", "input": {"path": f"f{i}"}}]})
        history.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": f"{i}:{big}", "is_error": False}]})
    history.append({"role": "assistant", "content": [{"type": "text", "text": "read them all"}]})
    store = Store(tmp_path / "s.db")
    sid = store.create_session(tmp_path)
    for message in history:
        store.append(sid, __import__("scout_tui.core.bus", fromlist=["Event"]).Event.of(f"message.{message['role']}", {"message": message}))
    settings = {"epoch_tool_call_threshold": 10, "epoch_full_tool_calls": 5, "epoch_compacted_tool_calls": 10, "epoch_size": 5}
    with LoopbackServer([Reply(anthropic_stream(["ok"]))]) as server:
        agent = make_agent(server, tmp_path, strategies="shorten_tools_epoch", compaction_settings=settings)
        events = []
        async for event in agent.run(store.messages(sid), "go on"):
            events.append(event)
            if event.type not in TRANSIENT:
                store.append(sid, event)
    sent = server.requests[0].json()["messages"]
    sent_text = json.dumps(sent)
    assert sent_text.count(big) < 30 and "Truncated (5003)" in sent_text
    assert problems(sent) == []
    [figures] = [e.data for e in events if e.type == "prompt.compacted"]
    assert figures["dropped"] > 0 and figures["truncated"] > 0 and figures["tokens_after"] < figures["tokens_before"]
    stored = store.messages(sid)
    assert stored[: len(history)] == history  # every byte kept
    assert json.dumps(stored).count(big) == 30


async def test_api_keys_never_reach_tool_processes_output_or_the_model(tmp_path, monkeypatch):
    from scout_tui.config.layers import Config
    from scout_tui.session.runtime import tool_environment

    key = "sk-ant-SECRET-0123456789"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    monkeypatch.setenv("SOME_OTHER_NAME", key)  # the same key under a name we do not know
    monkeypatch.setenv("HARMLESS", "visible")
    config = Config(api_key=key)
    (tmp_path / ".env").write_text(f"KEY={key}\n")  # e.g. a .env file the model reads
    command = json.dumps({"command": "env | sort; cat .env"})
    replies = [Reply(anthropic_stream([], ("toolu_e", "bash", [command]))), Reply(anthropic_stream(["done"]))]
    with LoopbackServer(replies) as server:
        backend = make_backend("anthropic", model="m", api_key=key, base_url=server.url, max_retries=0)
        settings = AgentSettings(cwd=tmp_path, tool_env=tool_environment(config), secrets=[key])
        agent = Agent(backend, builtin_registry(), settings)
        events = [e async for e in agent.run([], "show env")]
    shown = json.dumps([e.data for e in events])
    assert key not in shown and key not in json.dumps(agent.messages)
    assert key not in server.requests[1].body.decode()
    result = agent.messages[2]["content"][0]["content"]
    assert "HARMLESS=visible" in result and "ANTHROPIC_API_KEY" not in result and "KEY=[redacted]" in result


async def test_an_interrupted_tool_call_reports_how_long_it_ran(tmp_path, fixed_clock):
    fixed_clock.step = 0  # the clock moves only when the test says
    call = ("toolu_t", "bash", [json.dumps({"command": "echo started; sleep 600"})])
    with LoopbackServer([Reply(anthropic_stream([], call))]) as server:
        agent = make_agent(server, tmp_path)
        seen = []

        async def consume():
            async for event in agent.run([], "sleep"):
                seen.append(event)

        task = asyncio.create_task(consume())
        await wait_until(None, lambda: printed(seen, "started"), what="the shell has started")
        fixed_clock.advance(7.25)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 60)  # only the kill ends a 600 s sleep
        [end] = [e for e in agent.interrupt() if e.type == "tool.end"]
    assert end.data["elapsed"] == 7.25


def printed(events: list, text: str) -> bool:
    """Whether a tool has printed ``text`` among ``events`` (its process is running)."""
    return any(e.type == "tool.output" and text in e.data["text"] for e in events)


async def test_an_answer_cut_by_max_tokens_or_an_empty_one_is_pointed_out(tmp_path):
    with LoopbackServer([Reply(anthropic_stream(["half an"], stop_reason="max_tokens")), Reply(anthropic_stream([]))]) as server:
        agent = make_agent(server, tmp_path)
        cut = [e.data["text"] for e in await collect(agent, [], "long") if e.type == "notice"]
        empty = [e.data["text"] for e in await collect(agent, agent.messages, "again") if e.type == "notice"]
    assert len(cut) == 1 and "max_tokens" in cut[0]
    assert empty == ["The model sent an empty answer."]


async def test_a_call_a_deny_rule_refuses_is_never_previewed(tmp_path):
    import os

    from scout_tui.tools.permissions import Policy, parse_rule

    os.mkfifo(tmp_path / "pipe")  # reading it to make a diff would block for ever
    call = ("toolu_1", "write", [json.dumps({"path": "pipe", "content": "x"})])
    with LoopbackServer([Reply(anthropic_stream([], call)), Reply(anthropic_stream(["ok"]))]) as server:
        policy = Policy("yolo", deny=[parse_rule("write:pipe", "test")], workspace=tmp_path)
        agent = make_agent(server, tmp_path, permissions=policy)
        events = await asyncio.wait_for(collect(agent, [], "write"), 60)  # a hang guard: a FIFO blocks its reader
    [end] = [e for e in events if e.type == "tool.end"]
    assert end.data["is_error"] and "denied by the rule 'write:pipe' (test)" in end.data["content"]
    assert [e.data["by"] for e in events if e.type == "permission.decision"] == ["rule"]


async def test_a_key_printed_in_two_pieces_never_shows_live_or_in_the_saved_output(tmp_path):
    key = "sk-ant-SECRET-0123456789"
    (tmp_path / "key.txt").write_text(key)
    # Half the key, a pause (a separate output piece), the other half; then enough to be cut.
    script = "head -c 12 key.txt; sleep 0.3; tail -c +13 key.txt; echo; seq 1 20000"
    replies = [Reply(anthropic_stream([], ("toolu_k", "bash", [json.dumps({"command": script})]))),
               Reply(anthropic_stream(["done"]))]
    with LoopbackServer(replies) as server:
        backend = make_backend("anthropic", model="m", api_key=key, base_url=server.url, max_retries=0)
        settings = AgentSettings(cwd=tmp_path, secrets=[key], output_dir=tmp_path / "out")
        agent = Agent(backend, builtin_registry(), settings)
        events = [e async for e in agent.run([], "show")]
    live = "".join(e.data["text"] for e in events if e.type == "tool.output")
    assert key[:12] not in live and "[redacted]" in live and live.rstrip().endswith("20000")
    [end] = [e for e in events if e.type == "tool.end"]
    saved = Path(end.data["output_path"]).read_text()
    assert key not in saved and key[:12] not in saved and saved.startswith("[redacted]\n1\n")


async def test_two_cut_results_of_one_reused_call_id_keep_their_own_files(tmp_path):
    call = ("call_0", "bash", [json.dumps({"command": "seq 1 20000"})])
    replies = [Reply(anthropic_stream([], call)), Reply(anthropic_stream([], call)), Reply(anthropic_stream(["ok"]))]
    with LoopbackServer(replies) as server:
        agent = make_agent(server, tmp_path, output_dir=tmp_path / "out")
        events = await collect(agent, [], "count twice")
    paths = [e.data["output_path"] for e in events if e.type == "tool.end"]
    assert len(paths) == 2 and paths[0] != paths[1] and all(Path(p).exists() for p in paths)
