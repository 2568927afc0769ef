"""`scout-tui acp`'s slash commands, driven as an editor drives them (the ``agent-client-protocol``
client over a real subprocess's stdio, the model a loopback server, real git checkpoints): the
commands advertised after ``session/new``, ``/compact`` applied so that the next request carries
the summary, ``/undo`` and ``/redo`` of a turn's files, ``/cost``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from scout_tui.engine.summary import INSTRUCTIONS, SUMMARY_HEADER
from scout_tui.session.compacting import STOPPED
from tests.acp_helpers import RecordingClient, acp_process, text
from tests.conftest import wait_until
from tests.headless_helpers import env, repo  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer, Recorded, Reply, anthropic_stream

SUMMARY = "## Current task\nShip the parser fix."
INSTRUCTION_MARK = INSTRUCTIONS.splitlines()[0][:40]


def said(client: RecordingClient, session_id: str) -> list[str]:
    """The agent's message chunks of ``session_id`` (a command's message is one chunk)."""
    return [u.content.text for u in client.of(session_id) if u.session_update == "agent_message_chunk"]


def write_answer(content: str, call_id: str) -> Reply:
    call = (call_id, "write", [json.dumps({"path": "answer.txt", "content": content})])
    return Reply(anthropic_stream(["Writing it."], call))


async def test_the_slash_commands_arrive_once_session_new_is_answered(repo, env):
    client = RecordingClient()
    async with acp_process(repo, env, client) as (conn, _, transcript):
        session = await conn.new_session(cwd=str(repo))
        await wait_until(None, lambda: client.of(session.session_id), what="the available commands")
    [update] = client.of(session.session_id)
    assert update.session_update == "available_commands_update"
    commands = {c.name: c for c in update.available_commands}
    assert {"compact", "undo", "redo", "cost"} <= set(commands)
    assert commands["compact"].input.root.hint and commands["undo"].input is None
    # after the answer: a client knows the session only from it
    lines = [e.message for e in transcript]
    answered = next(i for i, m in enumerate(lines) if m.get("result", {}).get("sessionId") == session.session_id)
    advertised = next(i for i, m in enumerate(lines) if m.get("method") == "session/update")
    assert answered < advertised


def is_summary_request(request: Recorded) -> bool:
    return INSTRUCTION_MARK in json.dumps(request.json()["messages"][-1])


def long_answers(summary: Reply) -> Callable[[Recorded], Reply]:
    """A loopback handler: ``summary`` to a summary request, a long answer to any other."""
    def reply(request: Recorded) -> Reply:
        if is_summary_request(request):
            return summary
        return Reply(anthropic_stream([f"Answer {len(request.json()['messages'])}: " + "words " * 2_000]))

    return reply


async def a_long_conversation(conn, session_id: str, turns: int = 5) -> None:
    for step in range(turns):
        await conn.prompt(session_id=session_id, prompt=text(f"step {step}: look around"))


async def compact_the_parser(repo, env) -> tuple[RecordingClient, str, dict, list[Recorded]]:
    """A long conversation, ``/compact the parser``, then "carry on": the client, the session id,
    the summary request and every request."""
    client = RecordingClient()
    with LoopbackServer(handler=long_answers(Reply(anthropic_stream([SUMMARY])))) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            await a_long_conversation(conn, session.session_id)
            done = await conn.prompt(session_id=session.session_id, prompt=text("/compact the parser"))
            assert done.stop_reason == "end_turn"
            summary_request = server.requests[-1].json()
            await conn.prompt(session_id=session.session_id, prompt=text("carry on"))
    return client, session.session_id, summary_request, server.requests


async def test_compact_applies_a_summary_that_the_next_request_sends_instead_of_the_old_messages(repo, env):
    client, session_id, summary_request, requests = await compact_the_parser(repo, env)
    assert "focus on: the parser" in json.dumps(summary_request["messages"][-1])
    sent = requests[-1].json()["messages"]
    assert SUMMARY_HEADER in json.dumps(sent[0]) and "Ship the parser fix." in json.dumps(sent[0])
    assert "step 0: look around" not in json.dumps(sent)  # summarised, not sent again
    assert "carry on" in json.dumps(sent[-1])
    told = said(client, session_id)
    assert any(m.startswith("Compacted. Summarises messages 0–") and "Ship the parser fix." in m for m in told)


async def test_compact_fires_the_pre_compact_hooks_with_its_focus(repo, env, tmp_path):
    import sys
    from pathlib import Path

    seen = tmp_path / "precompact.json"
    config = Path(env["XDG_CONFIG_HOME"]) / "scout" / "scout.toml"
    config.parent.mkdir(parents=True)
    hook = f"{sys.executable} -c \"import sys; open({str(seen)!r}, 'w').write(sys.stdin.read())\""
    config.write_text(f"[[hooks.PreCompact]]\ncommand = {json.dumps(hook)}\n")
    await compact_the_parser(repo, env)
    event = json.loads(seen.read_text())
    assert event["hook_event_name"] == "PreCompact" and event["trigger"] == "manual"
    assert event["custom_instructions"] == "the parser" and event["session_id"]


async def test_a_cancelled_compact_answers_cancelled_and_changes_nothing(repo, env):
    slow = anthropic_stream([SUMMARY])
    cut = slow.index(b"event: content_block_delta")
    client = RecordingClient()
    with LoopbackServer(handler=long_answers(Reply([slow[:cut], slow[cut:]], delay=600))) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            await a_long_conversation(conn, session.session_id)
            compacting = asyncio.create_task(conn.prompt(session_id=session.session_id, prompt=text("/compact")))
            await wait_until(None, lambda: is_summary_request(server.requests[-1]), what="the summary request")
            await conn.cancel(session_id=session.session_id)
            assert (await asyncio.wait_for(compacting, 60)).stop_reason == "cancelled"  # only a guard against a hang
            await conn.prompt(session_id=session.session_id, prompt=text("carry on"))
    assert said(client, session.session_id)[-2] == STOPPED
    sent = json.dumps(server.requests[-1].json()["messages"])
    assert "step 0: look around" in sent and SUMMARY_HEADER not in sent


async def test_undo_puts_back_a_file_a_turn_wrote_and_redo_writes_it_again(repo, env):
    client = RecordingClient(answer="allow_once")
    replies = [write_answer("43\n", "toolu_w"), Reply(anthropic_stream(["Done."]))]
    with LoopbackServer(replies) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            await conn.prompt(session_id=session.session_id, prompt=text("write the answer"))
            assert (repo / "answer.txt").read_text() == "43\n"
            undone = await conn.prompt(session_id=session.session_id, prompt=text("/undo"))
            assert undone.stop_reason == "end_turn"
            assert not (repo / "answer.txt").exists()
            await conn.prompt(session_id=session.session_id, prompt=text("/redo"))
            assert (repo / "answer.txt").read_text() == "43\n"
    told = said(client, session.session_id)
    assert told[-2] == "Undid the file changes of “write the answer”: answer.txt. The conversation is unchanged."
    assert told[-1] == "Redid the file changes of “write the answer”: answer.txt. The conversation is unchanged."
    assert len(server.requests) == 2  # the commands asked no model


async def test_undo_refuses_to_overwrite_a_file_someone_else_changed_since(repo, env):
    client = RecordingClient(answer="allow_once")
    replies = [write_answer("43\n", "toolu_w"), Reply(anthropic_stream(["Done."]))]
    with LoopbackServer(replies) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            await conn.prompt(session_id=session.session_id, prompt=text("write the answer"))
            (repo / "answer.txt").write_text("my own edit\n")
            await conn.prompt(session_id=session.session_id, prompt=text("/undo"))
    assert (repo / "answer.txt").read_text() == "my own edit\n"
    assert said(client, session.session_id)[-1].startswith(
        "Not undone: someone else changed answer.txt since “write the answer”")


async def test_nothing_to_undo_says_why_and_an_unknown_command_goes_to_the_model(repo, env):
    client = RecordingClient()
    with LoopbackServer([Reply(anthropic_stream(["Sure."]))]) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            await conn.prompt(session_id=session.session_id, prompt=text("/undo"))
            await conn.prompt(session_id=session.session_id, prompt=text("/review the parser"))
    assert said(client, session.session_id)[0] == "Nothing to undo: no turn of this session changed files."
    [request] = server.requests
    assert request.json()["messages"][-1]["content"][0]["text"] == "/review the parser"


async def test_cost_shows_the_sessions_spending_by_model(repo, env):
    client = RecordingClient()
    with LoopbackServer([Reply(anthropic_stream(["Hello."]))]) as server:
        async with acp_process(repo, env, client, "--base-url", server.url, "--model", "claude-sonnet-4-5") as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            await conn.prompt(session_id=session.session_id, prompt=text("say hello"))
            await conn.prompt(session_id=session.session_id, prompt=text("/cost"))
    report = said(client, session.session_id)[-1]
    assert report.startswith("**What this session cost: ")
    assert "| claude-sonnet-4-5 | 1 |" in report and "| ● say hello | 2 |" in report


async def test_init_is_a_prompt_asking_for_agents_md_and_leaves_the_mode_as_it_was(repo, env):
    from scout_tui.session.memory import init_prompt

    client = RecordingClient()
    with LoopbackServer([Reply(anthropic_stream(["I will look."]))]) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            done = await conn.prompt(session_id=session.session_id, prompt=text("/init keep it short"))
    assert done.stop_reason == "end_turn"
    [message] = server.requests[0].json()["messages"]
    assert message["content"][0]["text"] == init_prompt(repo, "keep it short")
    assert not [u for u in client.of(session.session_id) if u.session_update == "current_mode_update"]
    assert said(client, session.session_id)[-1] == "I will look."


async def test_a_markdown_command_is_advertised_and_sends_its_expansion(repo, env):
    (repo / ".agents" / "commands").mkdir(parents=True)
    (repo / ".agents" / "commands" / "greet.md").write_text("---\ndescription: greet someone\n---\nSay hello to $1.\n")
    client = RecordingClient()
    with LoopbackServer([Reply(anthropic_stream(["Hello, Bob!"]))]) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            await wait_until(None, lambda: client.of(session.session_id), what="the available commands")
            done = await conn.prompt(session_id=session.session_id, prompt=text("/greet Bob"))
    assert done.stop_reason == "end_turn"
    [update] = [u for u in client.of(session.session_id) if u.session_update == "available_commands_update"]
    greet = next(c for c in update.available_commands if c.name == "greet")
    assert greet.description == "greet someone (.agents/commands/greet.md)"
    sent = server.requests[0].json()["messages"][0]["content"]
    assert [b["text"] for b in sent if b["type"] == "text"] == ["Say hello to Bob."]
