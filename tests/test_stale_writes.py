"""``write`` and ``edit`` refuse a file changed on disk since the session last read or wrote it
(issue 12, item 5): the real agent against a loopback model server, real files."""

from __future__ import annotations

import asyncio
import json

import pytest

from scout_tui.tools.permissions import Policy
from tests.loopback import LoopbackServer, Recorded, Reply, anthropic_stream
from tests.agent_helpers import collect, make_agent


def read_then(tmp_path, second_call: tuple[str, dict], *, person_edits: bool) -> tuple[dict, LoopbackServer]:
    """A turn: the model reads notes.txt; (the person changes it); the model calls
    ``second_call``; then answers "done". Returns the second call's tool.end data."""
    (tmp_path / "notes.txt").write_text("one\n")
    replies = [Reply(anthropic_stream([], ("toolu_1", "read", [json.dumps({"path": "notes.txt"})]))),
               Reply(anthropic_stream([], ("toolu_2", second_call[0], [json.dumps(second_call[1])]))),
               Reply(anthropic_stream(["done"]))]

    def handler(recorded: Recorded) -> Reply:
        if len(replies) == 2 and person_edits:  # the read is done; the person edits before the next call
            (tmp_path / "notes.txt").write_text("one\nthe person's line\n")
        return replies.pop(0)

    async def turn():
        with LoopbackServer(handler=handler) as server:
            agent = make_agent(server, tmp_path, permissions=Policy("yolo", workspace=tmp_path))
            events = await asyncio.wait_for(collect(agent, [], "go"), 60)
        return events, server

    events, server = asyncio.run(turn())
    ends = [e.data for e in events if e.type == "tool.end"]
    assert len(ends) == 2 and len(server.requests) == 3
    return ends[1], server


@pytest.mark.parametrize("call", [("write", {"path": "notes.txt", "content": "two\n"}),
                                  ("edit", {"path": "notes.txt", "old_string": "one", "new_string": "two"})])
def test_a_file_the_person_changed_after_the_read_is_not_overwritten(tmp_path, call):
    end, _ = read_then(tmp_path, call, person_edits=True)
    assert end["is_error"] and "notes.txt changed on disk since you last read or wrote it" in end["content"]
    assert "read it again" in end["content"]
    assert (tmp_path / "notes.txt").read_text() == "one\nthe person's line\n"


@pytest.mark.parametrize("call", [("write", {"path": "notes.txt", "content": "two\n"}),
                                  ("edit", {"path": "notes.txt", "old_string": "one", "new_string": "two"})])
def test_a_file_unchanged_since_the_read_is_changed(tmp_path, call):
    end, _ = read_then(tmp_path, call, person_edits=False)
    assert not end["is_error"], end["content"]
    assert (tmp_path / "notes.txt").read_text() == "two\n"


def test_write_replaces_an_existing_file_only_after_this_session_read_it(tmp_path):
    # A resumed session's reads were an earlier run's (-c, --resume): the file may have changed
    # since, so an agent that has not read it must not replace it blindly.
    (tmp_path / "notes.txt").write_text("the person's text\n")
    write = ("write", {"path": "notes.txt", "content": "two\n"})
    replies = [Reply(anthropic_stream([], ("toolu_1", write[0], [json.dumps(write[1])]))),
               Reply(anthropic_stream([], ("toolu_2", "read", [json.dumps({"path": "notes.txt"})]))),
               Reply(anthropic_stream([], ("toolu_3", write[0], [json.dumps(write[1])]))),
               Reply(anthropic_stream(["done"]))]

    async def turn():
        with LoopbackServer(replies) as server:
            agent = make_agent(server, tmp_path, permissions=Policy("yolo", workspace=tmp_path))
            return await asyncio.wait_for(collect(agent, [], "go"), 60)

    blind, _, after_read = [e.data for e in asyncio.run(turn()) if e.type == "tool.end"]
    assert blind["is_error"] and "you have not read it in this session; read it first" in blind["content"]
    assert not after_read["is_error"] and (tmp_path / "notes.txt").read_text() == "two\n"
