"""The approval prompt and the sandbox, in the real app: ``o`` runs one command outside the
sandbox; with no sandbox available the first command that would run unasked asks, and ``a``
answers for the rest of the session."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from scout_tui.store.event_log import Store
from scout_tui.tools import sandbox as sandbox_module
from scout_tui.tools.sandbox import available
from scout_tui.widgets import ToolActivity
from scout_tui.widgets.approval import ApprovalScreen
from tests.app_helpers import SIZE, make_app, rendered, send, settle
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream

needs_bwrap = pytest.mark.skipif(not (sys.platform.startswith("linux") and available()),
                                 reason="bwrap cannot run here: install the Debian/Ubuntu package bubblewrap")


def bash_reply(tool_id: str, command: str) -> Reply:
    return Reply(anthropic_stream([], (tool_id, "bash", [json.dumps({"command": command})])))


async def prompt_up(app, pilot) -> ApprovalScreen:
    await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the approval prompt")
    await wait_until(pilot, lambda: app.screen.armed, what="the prompt to take keys")
    return app.screen


@needs_bwrap
async def test_o_runs_the_command_once_outside_the_sandbox(tmp_home: Path, workdir: Path, outside: Path) -> None:
    target = outside / "note.txt"
    replies = [bash_reply("toolu_1", f"echo kept > {target}"), Reply(anthropic_stream(["Written."]))]
    with LoopbackServer(replies) as server:
        app = make_app(workdir, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "write the note")
            screen = await prompt_up(app, pilot)
            assert screen.request.sandbox == "in"
            keys = rendered(screen.query_one("#keys"))
            assert "y run in the sandbox" in keys and "o run once outside the sandbox" in keys
            await pilot.press("o")
            await settle(app, pilot)
            assert app.query_one(ToolActivity).status_of("toolu_1") == "ok"
            assert "outside the sandbox" in rendered(app.query_one(ToolActivity))
            decisions = [d["decision"] for _, _, kind, d, _ in Store().events(app.session.id)
                         if kind == "permission.decision"]
    assert target.read_text() == "kept\n" and decisions == ["allow_outside"]


async def test_with_no_sandbox_a_asks_once_for_the_whole_session(tmp_home: Path, workdir: Path, monkeypatch) -> None:
    monkeypatch.setattr(sandbox_module, "available", lambda: False)  # a machine without bwrap
    replies = [bash_reply("toolu_1", "echo one"), bash_reply("toolu_2", "echo two"), Reply(anthropic_stream(["Done."]))]
    with LoopbackServer(replies) as server:
        app = make_app(workdir, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "echo twice")
            screen = await prompt_up(app, pilot)
            assert screen.request.sandbox == "none"
            assert "Run this command without a sandbox?" in rendered(screen.query_one("#question"))
            await pilot.press("a")
            await settle(app, pilot)
            tools = app.query_one(ToolActivity)
            assert tools.status_of("toolu_1") == tools.status_of("toolu_2") == "ok"
            asked = [d["id"] for _, _, kind, d, _ in Store().events(app.session.id) if kind == "permission.ask"]
    assert asked == ["toolu_1"]


@needs_bwrap
async def test_what_a_command_planted_and_was_moved_aside_is_said_in_the_chat(tmp_home: Path, workdir: Path) -> None:
    from scout_tui.widgets.chat_messages import Notice

    replies = [bash_reply("toolu_1", "mkdir -p .agents/plugins && echo 'import os' > .agents/plugins/p.py"),
               Reply(anthropic_stream(["Done."]))]
    with LoopbackServer(replies) as server:
        app = make_app(workdir, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "plant it")
            await settle(app, pilot)
            notices = " ".join(n.text for n in app.query(Notice))
    assert "A command created .agents" in notices and "moved to" in notices and "for you to review" in notices
    assert "write or edit tool" not in notices  # words for the model stay in the result
    assert not (workdir / ".agents").exists()
