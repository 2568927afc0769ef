"""``write`` and ``edit`` of a file with more than one hard link ask first (issue 12, item 5):
the same file has other names, perhaps outside the workspace."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from scout_tui.tools.approvals import Approval
from scout_tui.tools.permissions import Policy
from tests.loopback import LoopbackServer, Reply, anthropic_stream
from tests.agent_helpers import collect, make_agent


@pytest.mark.parametrize("call", [("write", {"path": "notes.txt", "content": "two\n"}),
                                  ("edit", {"path": "notes.txt", "old_string": "one", "new_string": "two"})])
def test_changing_a_hard_linked_file_asks_even_in_auto_edit(tmp_path, call):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "outside.txt").write_text("one\n")
    os.link(tmp_path / "outside.txt", workspace / "notes.txt")
    asked = []

    async def approve(request):
        asked.append(request)
        return Approval("deny", "no")

    read = ("toolu_0", "read", [json.dumps({"path": "notes.txt"})])  # write replaces only what was read
    replies = [Reply(anthropic_stream([], read)), Reply(anthropic_stream([], ("toolu_1", call[0], [json.dumps(call[1])]))),
               Reply(anthropic_stream(["done"]))]

    async def turn():
        with LoopbackServer(replies) as server:
            agent = make_agent(server, workspace, permissions=Policy("auto-edit", workspace=workspace), approve=approve)
            return await asyncio.wait_for(collect(agent, [], "go"), 60)

    events = asyncio.run(turn())
    [request] = asked
    assert "notes.txt has 2 hard links" in request.reason and request.suggestions == ()
    [_, end] = [e.data for e in events if e.type == "tool.end"]
    assert end["is_error"]
    assert (tmp_path / "outside.txt").read_text() == "one\n"


def test_a_file_with_one_link_runs_unasked_in_auto_edit(tmp_path):
    (tmp_path / "notes.txt").write_text("one\n")
    check = Policy("auto-edit", workspace=tmp_path).check("write", {"path": "notes.txt", "content": "x"}, tmp_path)
    assert check.verdict == "allow"
