"""Every tool call ends with a result, whatever fails on its way (issue 12, item 4): the real
agent against a loopback model server, real files in a temporary folder."""

from __future__ import annotations

import asyncio
import errno
import json
import os
from pathlib import Path

import pytest

from scout_tui.engine.history import problems
from scout_tui.tools.permissions import Policy
from tests.loopback import LoopbackServer, Reply, anthropic_stream
from tests.agent_helpers import collect, make_agent

HANG_GUARD = 60.0
"""Seconds before a test that would otherwise hang for ever fails; never reached when it passes."""


async def one_call(tmp_path: Path, name: str, arguments: dict, **agent_options) -> tuple[list, LoopbackServer, object]:
    """Run a turn whose model calls ``name`` with ``arguments`` once, then answers "done"."""
    call = ("toolu_1", name, [json.dumps(arguments)])
    with LoopbackServer([Reply(anthropic_stream([], call)), Reply(anthropic_stream(["done"]))]) as server:
        agent = make_agent(server, tmp_path, **agent_options)
        events = await asyncio.wait_for(collect(agent, [], "go"), HANG_GUARD)
    return events, server, agent


def the_end(events: list) -> dict:
    [end] = [e for e in events if e.type == "tool.end"]
    return end.data


@pytest.fixture
def loop(tmp_path: Path) -> str:
    """``a`` → ``b`` → ``a``: a symlink loop in the workspace."""
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    return "a"


@pytest.mark.parametrize("name, arguments", [
    ("read", {}),
    ("write", {"content": "x"}),
    ("edit", {"old_string": "x", "new_string": "y"}),
])
@pytest.mark.parametrize("mode", ["ask", "auto-edit", "yolo"])
async def test_a_symlink_loop_ends_the_call_with_an_error_and_the_turn_goes_on(tmp_path, loop, name, arguments, mode):
    policy = Policy(mode, workspace=tmp_path)
    events, server, agent = await one_call(tmp_path, name, {"path": loop, **arguments}, permissions=policy)
    end = the_end(events)
    assert end["is_error"] and "a is a symbolic link loop" in end["content"]
    assert len(server.requests) == 2  # the model read the error and answered
    assert events[-1].data == {"stop_reason": "end_turn"}
    assert problems(agent.messages) == []


async def test_reading_a_fifo_is_refused_at_once(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    events, server, _ = await one_call(tmp_path, "read", {"path": "pipe"}, permissions=Policy("ask", workspace=tmp_path))
    end = the_end(events)
    assert end["is_error"] and "pipe is not a regular file" in end["content"]
    assert len(server.requests) == 2


async def test_grep_of_a_fifo_is_refused_rather_than_reported_as_no_match(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    events, _, _ = await one_call(tmp_path, "grep", {"pattern": "x", "path": "pipe"})
    end = the_end(events)
    assert end["is_error"] and "pipe is not a regular file" in end["content"]


async def test_a_fifo_put_in_a_files_place_after_the_check_is_refused_not_waited_on(tmp_path, monkeypatch):
    from scout_tui.tools import files

    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "file.txt").write_text("x\n")
    checked = files.existing_file
    # The check sees a regular file; by the time it is opened, a FIFO stands in its place.
    monkeypatch.setattr(files, "existing_file", lambda ctx, path: checked(ctx, path).with_name("pipe"))
    events, _, _ = await one_call(tmp_path, "read", {"path": "file.txt"})
    end = the_end(events)
    assert end["is_error"] and "file.txt is not a regular file" in end["content"]


async def test_an_unreadable_file_is_a_clear_error(tmp_path, monkeypatch):
    from scout_tui.tools import files

    (tmp_path / "secret.txt").write_text("x\n")
    real_open = os.open

    def denied(path, flags, *args):  # root reads any file, so the kernel's refusal is played here
        if str(path).endswith("secret.txt"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(files.os, "open", denied)
    events, server, _ = await one_call(tmp_path, "read", {"path": "secret.txt"})
    end = the_end(events)
    assert end["is_error"] and end["content"] == "read: permission denied: secret.txt"
    assert len(server.requests) == 2


async def test_a_permission_check_that_raises_gives_an_error_result(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("embedded null byte")

    monkeypatch.setattr(Policy, "check", broken)
    (tmp_path / "notes.txt").write_text("x\n")
    events, server, agent = await one_call(tmp_path, "read", {"path": "notes.txt"}, permissions=Policy("ask", workspace=tmp_path))
    end = the_end(events)
    assert end["is_error"] and end["content"] == ("Not run: checking this read call against the permission rules "
                                                  "failed (ValueError: embedded null byte).")
    assert len(server.requests) == 2 and problems(agent.messages) == []


async def test_an_approval_prompt_that_raises_gives_an_error_result(tmp_path):
    async def approve(request):
        raise RuntimeError("the prompt broke")

    events, server, _ = await one_call(tmp_path, "write", {"path": "new.txt", "content": "x"},
                                       permissions=Policy("ask", workspace=tmp_path), approve=approve)
    end = the_end(events)
    assert end["is_error"] and end["content"] == "write failed: RuntimeError: the prompt broke"
    assert not (tmp_path / "new.txt").exists()
    assert len(server.requests) == 2


async def test_a_plugin_tool_whose_result_is_not_text_still_ends(tmp_path):
    from scout_tui.tools.base import Tool, ToolResult, object_schema

    async def run(input, ctx):
        return ToolResult(["not", "text"])  # a plugin bug: content must be a str

    call = ("toolu_1", "odd", ["{}"])
    with LoopbackServer([Reply(anthropic_stream([], call)), Reply(anthropic_stream(["done"]))]) as server:
        agent = make_agent(server, tmp_path)
        agent.tools.add(Tool("odd", "A plugin tool.", object_schema(), run, read_only=True))
        events = await asyncio.wait_for(collect(agent, [], "go"), HANG_GUARD)
    assert the_end(events)["content"] == "['not', 'text']"
    assert len(server.requests) == 2
