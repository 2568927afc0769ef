"""A malformed tool call (arguments not JSON, not an object, an unknown tool) becomes an error
result the model reads, and the turn goes on (issue 12, item 9): the real agent, and `-p` as a
subprocess, against loopback model servers of both providers."""

from __future__ import annotations

import asyncio
import json

import pytest

from scout_tui.engine.history import problems
from tests.loopback import LoopbackServer, Reply, anthropic_stream, openai_stream
from tests.agent_helpers import collect, make_agent
from tests.headless_helpers import env, repo, scout  # noqa: F401 — fixtures

STREAMS = {"anthropic": anthropic_stream, "openai": openai_stream}


async def one_call(tmp_path, provider: str, name: str, arguments: str):
    """A turn whose model calls ``name`` with ``arguments`` (raw text), then answers "done"."""
    stream = STREAMS[provider]
    replies = [Reply(stream([], ("call_1", name, [arguments]))), Reply(stream(["done"]))]
    with LoopbackServer(replies) as server:
        agent = make_agent(server, tmp_path, provider=provider)
        events = await asyncio.wait_for(collect(agent, [], "go"), 60)
    [end] = [e for e in events if e.type == "tool.end"]
    return end.data, server, agent, events


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_arguments_that_are_not_json_are_an_error_result_and_the_turn_goes_on(tmp_path, provider):
    end, server, agent, events = await one_call(tmp_path, provider, "read", '{"path": "notes.txt"')
    assert end["is_error"]
    assert end["content"] == ("Tool call 'read' had arguments that are not a JSON object: '{\"path\": \"notes.txt\"'; "
                              "send them again as a JSON object.")
    assert len(server.requests) == 2 and events[-1].data == {"stop_reason": "end_turn"}
    assert problems(agent.messages) == []
    assert "not a JSON object" in json.dumps(server.requests[1].json()["messages"])


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_arguments_that_are_json_but_not_an_object_are_an_error_result(tmp_path, provider):
    end, server, agent, _ = await one_call(tmp_path, provider, "read", '["notes.txt"]')
    assert end["is_error"] and end["content"].startswith("Tool call 'read' had arguments that are not a JSON object")
    assert len(server.requests) == 2 and problems(agent.messages) == []


def test_the_resent_call_has_an_object_as_input_for_both_apis(tmp_path):
    end, server, _, _ = asyncio.run(one_call(tmp_path, "anthropic", "read", "path=notes.txt"))
    [use] = [b for m in server.requests[1].json()["messages"] for b in m["content"] if b.get("type") == "tool_use"]
    assert use["input"] == {"unparsed_arguments": "path=notes.txt"}
    end, server, _, _ = asyncio.run(one_call(tmp_path, "openai", "read", "path=notes.txt"))
    [call] = [c for m in server.requests[1].json()["messages"] for c in m.get("tool_calls") or []]
    assert json.loads(call["function"]["arguments"]) == {"unparsed_arguments": "path=notes.txt"}


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_an_unknown_tool_is_an_error_result_naming_the_tools_there_are(tmp_path, provider):
    end, server, agent, _ = await one_call(tmp_path, provider, "reed", '{"path": "notes.txt"}')
    assert end["is_error"] and end["content"].startswith("Unknown tool 'reed'. Available tools: bash, edit, glob")
    assert len(server.requests) == 2 and problems(agent.messages) == []


@pytest.mark.parametrize("provider, stream", [("anthropic", anthropic_stream), ("openai", openai_stream)])
def test_print_mode_answers_a_malformed_call_and_exits_0_with_the_final_answer(repo, env, provider, stream):  # noqa: F811
    replies = [Reply(stream([], ("call_1", "read", ['{"path": notes.txt}']))), Reply(stream(["It says 42."]))]
    with LoopbackServer(replies) as server:
        run_env = {**env, "OPENAI_API_KEY": "sk-test"}
        done = scout(["-p", "what is in notes.txt?", "--provider", provider, "--base-url", server.url,
                      "--model", "test-model"], repo, run_env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "It says 42."
    assert len(server.requests) == 2
