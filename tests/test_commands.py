"""Slash commands: one registry for the composer, the palette and /help."""

from __future__ import annotations

from pathlib import Path

import pytest

from scout_tui.session.commands import Command, Commands, literal
from scout_tui.widgets.chat_messages import Notice, UserMessage
from tests.app_helpers import SIZE, make_app, send, settle
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream


def _registry(ran: list) -> Commands:
    return Commands([Command("fork", "[N]", "branch", lambda args: ran.append(("fork", args))),
                     Command("quit", "", "quit", lambda args: ran.append(("quit", args)), aliases=("exit",))])


def test_a_line_starting_with_a_word_after_the_slash_is_a_command():
    ran: list = []
    commands = _registry(ran)
    parsed = commands.parse("  /fork   3 ")
    assert parsed is not None and parsed.command is commands.get("fork") and parsed.args == "3"
    parsed.command.run(parsed.args)
    assert ran == [("fork", "3")]
    assert commands.parse("/exit").command.name == "quit"
    unknown = commands.parse("/model gpt-5")
    assert unknown is not None and unknown.command is None and unknown.name == "model"


@pytest.mark.parametrize("text", ["/usr/bin/env is missing", "//fork", "hello /fork", "/", "/ fork", "/3d"])
def test_paths_literal_slashes_and_plain_text_are_prompts(text):
    assert _registry([]).parse(text) is None


def test_literal_gives_the_text_after_the_first_slash():
    assert literal("//fork it") == "/fork it"
    assert literal("/fork") is None and literal("fork") is None


def test_later_registration_wins_by_name_and_keeps_its_place():
    ran: list = []
    commands = _registry(ran)
    commands.add(Command("fork", "", "a plugin's fork", lambda args: ran.append("plugin"), owner="mine"))
    assert [c.name for c in commands] == ["fork", "quit"]
    commands.parse("/fork").command.run("")
    assert ran == ["plugin"]
    assert "`/fork` a plugin's fork (mine)" in commands.help_text()


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    return workdir


async def test_an_unknown_command_is_reported_and_not_sent(repo):
    with LoopbackServer([Reply(anthropic_stream(["ok"]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "/modle gpt-5")  # a typo: no command is named so, none completes it
            await wait_until(pilot, lambda: any("Unknown command `/modle`" in n.text for n in app.query(Notice)))
            await send(app, pilot, "//model is a slash command")
            await settle(app, pilot)
            shown = [str(u.content) for u in app.query(UserMessage)]
    assert len(server.requests) == 1
    sent = server.requests[0].json()["messages"][0]["content"]
    assert "/model is a slash command" in str(sent) and shown == ["/model is a slash command"]


async def test_help_and_the_palette_list_the_registry(repo):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        app.commands.add(Command("hello", "NAME", "says hello", lambda args: None, owner="greeter"))
        await send(app, pilot, "/help")
        await wait_until(pilot, lambda: any("says hello" in n.text for n in app.query(Notice)))
        help_text = [n.text for n in app.query(Notice) if "says hello" in n.text][0]
        for command in app.commands:
            assert command.usage in help_text
        titles = [c.title for c in app.get_system_commands(app.screen)]
    assert {"New session", "Fork session", "Compact conversation", "Cost", "/hello"} <= set(titles)


async def test_ctrl_t_after_tree_command_goes_back_to_the_composer(repo):
    from scout_tui.widgets import ChatView, Composer, SessionTree

    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        app.query_one(ChatView).focus()
        await pilot.press("ctrl+t", "ctrl+t")  # to the tree and back to the chat
        await wait_until(pilot, lambda: app.query_one(ChatView).has_focus)
        await send(app, pilot, "/tree")
        await wait_until(pilot, lambda: app.query_one(SessionTree).has_focus)
        await pilot.press("ctrl+t")
        await wait_until(pilot, lambda: app.focused is not app.query_one(SessionTree))
        assert isinstance(app.focused, Composer)
