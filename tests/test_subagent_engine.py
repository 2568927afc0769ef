"""The subagent engine in-process (``session.subagents``), against a loopback server: which agent
runs, with which tools, model and prompt; what a bad call gets back; nesting; the events passed up."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from scout_tui.config.layers import load_config
from scout_tui.core.bus import SubagentEvent, ToolEnd, ToolStart
from scout_tui.extensions.agents import BUILTIN_AGENTS, AgentDefinition
from scout_tui.session.session import Session
from scout_tui.store.event_log import Store
from tests.loopback import LoopbackServer, Recorded, Reply
from tests.subagent_helpers import tool_stream


def session_for(repo: Path, server: LoopbackServer, agents: list[AgentDefinition] | None = None) -> Session:
    config = load_config(repo, flags={"base_url": server.url, "api_key": "sk-test"})
    session = Session(Store(repo.parent / "sessions.db"), repo, config)
    if agents is not None:
        session.agents = agents
    return session


def scripted(parent_calls: list[dict], child: bytes | None = None) -> tuple[list[Recorded], Callable[[Recorded], Reply]]:
    """A handler: the parent's first request gets ``task`` calls with ``parent_calls`` inputs, a
    child's request ``child`` (default: a short answer), the parent's next one a last answer."""
    seen: list[Recorded] = []

    def handler(recorded: Recorded) -> Reply:
        seen.append(recorded)
        body = recorded.json()
        messages = body["messages"]
        if "CHILD" in json.dumps(messages[0]):
            return Reply(child or tool_stream(["child answer"], []))
        if len(messages) == 1:
            return Reply(tool_stream([], [(f"toolu_{i}", "task", c) for i, c in enumerate(parent_calls)]))
        return Reply(tool_stream(["parent done"], []))

    return seen, handler


async def run_turn(session: Session, text: str = "go") -> list:
    events = [event async for event in session.turn([{"type": "text", "text": text}])]
    await session.close()
    return events


async def test_a_custom_agent_runs_with_its_prompt_model_and_tools(tmp_home, workdir):
    reviewer = AgentDefinition("reviewer", "Reviews code.", "You are REVIEWER-PROMPT.", tools=("read", "grep"),
                               model="claude-haiku-4-5", source=str(workdir / ".agents/agents/reviewer.md"))
    seen, handler = scripted([{"description": "review it", "prompt": "CHILD: review", "agent": "reviewer"}])
    with LoopbackServer(handler=handler) as server:
        session = session_for(workdir, server, [*BUILTIN_AGENTS, reviewer])
        events = await run_turn(session)
    first = seen[0].json()
    task = next(t for t in first["tools"] if t["name"] == "task")
    assert "- reviewer: Reviews code." in task["description"]  # the agents are listed for the model
    child = next(r.json() for r in seen if "CHILD" in json.dumps(r.json()["messages"][0]))
    assert child["model"] == "claude-haiku-4-5"
    assert [t["name"] for t in child["tools"]] == ["read", "grep"]
    system = json.dumps(child["system"])
    assert system.index("REVIEWER-PROMPT") < system.index("You are scout")  # its own prompt first
    ends = [e for e in events if isinstance(e, ToolEnd) and e.name == "task"]
    assert [e.content for e in ends] == ["child answer"] and not ends[0].is_error
    passed = [e for e in events if isinstance(e, SubagentEvent)]
    assert passed and {e.call for e in passed} == {"toolu_0"} and {e.agent for e in passed} == {"reviewer"}
    assert any(isinstance(e.event, ToolStart) or e.event.type == "message.assistant" for e in passed)


async def test_an_unknown_agent_or_a_missing_prompt_is_an_error_the_model_reads(tmp_home, workdir):
    seen, handler = scripted([{"description": "x", "prompt": "CHILD: x", "agent": "nobody"},
                              {"description": "y"}])
    with LoopbackServer(handler=handler) as server:
        events = await run_turn(session_for(workdir, server))
    ends = {e.id: e for e in events if isinstance(e, ToolEnd)}
    assert ends["toolu_0"].is_error and "no agent 'nobody' (known: general, explore)" in ends["toolu_0"].content
    assert ends["toolu_1"].is_error and "prompt" in ends["toolu_1"].content
    assert not any("CHILD" in json.dumps(r.json()["messages"][0]) for r in seen)  # no subagent started


async def test_subagents_nest_only_when_max_depth_allows(tmp_home, workdir):
    for depth, nested in ((1, False), (2, True)):
        (workdir / "scout.toml").write_text(f"[subagents]\nmax_depth = {depth}\n")
        seen, handler = scripted([{"description": "x", "prompt": "CHILD: x"}])
        with LoopbackServer(handler=handler) as server:
            await run_turn(session_for(workdir, server))
        child = next(r.json() for r in seen if "CHILD" in json.dumps(r.json()["messages"][0]))
        assert ("task" in [t["name"] for t in child["tools"]]) is nested


async def test_a_subagent_that_fails_gives_its_error_back(tmp_home, workdir):
    refused = Reply(b'{"type":"error","error":{"type":"invalid_request_error","message":"bad child request"}}', 400,
                    {"content-type": "application/json"})
    seen, handler = scripted([{"description": "x", "prompt": "CHILD: x"}])

    def failing(recorded: Recorded) -> Reply:
        reply = handler(recorded)
        return refused if "CHILD" in json.dumps(recorded.json()["messages"][0]) else reply

    with LoopbackServer(handler=failing) as server:
        events = await run_turn(session_for(workdir, server))
    end = next(e for e in events if isinstance(e, ToolEnd) and e.name == "task")
    assert end.is_error and "The subagent failed" in end.content and "bad child request" in end.content
