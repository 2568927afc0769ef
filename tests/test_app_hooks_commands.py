"""Hooks and markdown commands in the real app, driven with Pilot against a loopback model: a
markdown command typed in the composer sends its expansion, and is listed by /help; a PreToolUse
hook blocks a call the model makes; /hooks lists what is configured and from where."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from scout_tui.widgets import ChatView
from tests.app_helpers import SIZE, make_app, rendered, send, settle
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    (workdir / "notes.txt").write_text("the answer is 42\n")
    return workdir


async def test_a_markdown_command_typed_in_the_composer_sends_its_expansion(repo, tmp_home):
    config = tmp_home / ".config" / "scout" / "scout.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[[hooks.UserPromptSubmit]]\ncommand = "echo on-call: Ada"\n')
    (repo / ".claude" / "commands").mkdir(parents=True)
    (repo / ".claude" / "commands" / "greet.md").write_text(
        "---\ndescription: greet someone by name\nargument-hint: NAME\n---\nSay hello to $ARGUMENTS\n")
    with LoopbackServer([Reply(anthropic_stream(["Hello, Bob!"]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.commands.get("greet") is not None, what="the command registered")
            assert "`/greet NAME` greet someone by name (.claude/commands/greet.md)" in app.slash.help_text()
            await send(app, pilot, "/greet Bob")
            await settle(app, pilot)
            sent = server.requests[0].json()["messages"][0]["content"]
            assert [b["text"] for b in sent if b["type"] == "text"] == \
                ["Say hello to Bob", "<hook-context>\non-call: Ada\n</hook-context>"]
            shown = rendered(app.query_one(ChatView))
            assert "Say hello to Bob" in shown and "Hello, Bob!" in shown
            assert "on-call" not in shown  # what the hook added is the model's, not the person's text


async def test_a_pre_tool_use_hook_blocks_a_call_and_hooks_lists_it(repo, tmp_home):
    guard = tmp_home / "guard.py"
    guard.write_text("import sys\nprint('no rm here', file=sys.stderr)\nsys.exit(2)\n")
    config = tmp_home / ".config" / "scout" / "scout.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[[hooks.PreToolUse]]\nmatcher = "bash"\ncommand = {json.dumps(f"{sys.executable} {guard}")}\n')
    replies = [Reply(anthropic_stream(["Removing."], ("toolu_1", "bash", ['{"command": "rm notes.txt"}']))),
               Reply(anthropic_stream(["It was kept."]))]
    with LoopbackServer(replies) as server:
        app = make_app(repo, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "remove notes.txt")
            await settle(app, pilot)
            assert (repo / "notes.txt").exists()
            assert "no rm here" in json.dumps(server.requests[1].json()["messages"][-1])
            await send(app, pilot, "/hooks")
            await wait_until(pilot, lambda: "PreToolUse" in rendered(app.query_one(ChatView)), what="/hooks")
            shown = "".join(rendered(app.query_one(ChatView)).split())  # long paths wrap
            assert "PreToolUsebash:" in shown and "scout.toml:1" in shown and "(60s)" in shown
