"""The composer's completion list: ``/`` commands from the registry, ``@`` workspace paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from textual import events

from scout_tui.session.completion import Choice, Token, complete, file_choice, token_at
from scout_tui.widgets import Composer
from scout_tui.widgets.chat_messages import Notice
from tests.app_helpers import SIZE, make_app, settle, steady
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream


@pytest.mark.parametrize(("line", "column", "expected"), [
    ("/fo", 3, Token("command", "fo", 0, 0, 3)),
    ("/", 1, Token("command", "", 0, 0, 1)),
    ("/fork 3", 2, Token("command", "f", 0, 0, 5)),
    ("/fork 3", 7, None),  # in the arguments
    ("//fork", 6, None),  # a literal slash
    ("/usr/bin", 8, None),  # a path, not a command name
    ("see @src/a", 10, Token("file", "src/a", 0, 4, 10)),
    ("see @src/a.py now", 7, Token("file", "sr", 0, 4, 13)),
    ("@", 1, Token("file", "", 0, 0, 1)),
    ("mail me@example.com", 19, None),  # an @ inside a word
    ("see @a.py then", 14, None),
])
def test_the_token_at_the_cursor(line, column, expected):
    assert token_at(line, 0, column) == expected


def test_completing_replaces_the_whole_word_and_adds_one_space():
    token = token_at("see @sr/x now", 0, 7)
    assert complete("see @sr/x now", token, file_choice("src/app.py")) == ("see @src/app.py now", 16)
    token = token_at("see @sr", 0, 7)
    assert complete("see @sr", token, file_choice("src/app.py")) == ("see @src/app.py ", 16)
    assert complete("see @sr", token, file_choice("src/")) == ("see @src/", 9)  # goes on inside
    token = token_at("/fo", 0, 3)
    assert complete("/fo", token, Choice("/fork", "/fork [N]")) == ("/fork ", 6)


@pytest.fixture
def repo(home_project: Path) -> Path:
    return home_project


def _shown(app) -> list[str]:
    completion = app.query_one(Composer).completion
    return [c.value for c in completion.choices] if completion is not None and completion.shown else []


async def test_slash_opens_the_commands_and_tab_completes_the_highlighted(repo):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("/")
        await wait_until(pilot, lambda: "/fork" in _shown(app))
        assert _shown(app)[:3] == ["/new", "/fork", "/tree"]  # registry order for an empty query
        await pilot.press("r", "e", "n")
        await wait_until(pilot, lambda: _shown(app)[:1] == ["/rename"])
        await pilot.press("tab")
        composer = app.query_one(Composer)
        assert composer.text == "/rename " and composer.has_focus
        await wait_until(pilot, lambda: _shown(app) == [])  # in the arguments now: closed


async def test_enter_on_a_command_without_arguments_runs_it_and_sends_nothing(repo):
    with LoopbackServer([Reply(anthropic_stream(["no"]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("/", "h", "e", "l")
            await wait_until(pilot, lambda: _shown(app)[:1] == ["/help"])
            await pilot.press("enter")
            await wait_until(pilot, lambda: any("**Keys**" in n.text for n in app.query(Notice)))
            await settle(app, pilot)
            assert server.requests == [] and app.query_one(Composer).text == ""


async def test_down_moves_the_highlight_and_escape_closes_the_list_without_interrupting(repo):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("/")
        await wait_until(pilot, lambda: len(_shown(app)) > 2)
        await pilot.press("down", "down", "up")
        assert app.query_one(Composer).completion.chosen.value == "/fork"
        await pilot.press("escape")
        assert _shown(app) == [] and app.query_one(Composer).text == "/"
        await pilot.press("f")  # typing reopens it
        await wait_until(pilot, lambda: "/fork" in _shown(app))


async def test_at_opens_the_workspace_paths_respecting_gitignore(repo):
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("print()\n")
    (repo / "build").mkdir()
    (repo / "build" / "app.py").write_text("x\n")
    (repo / ".gitignore").write_text("build/\n")
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("l", "o", "o", "k", "space", "@", "a", "p")
        await wait_until(pilot, lambda: "@src/app.py" in _shown(app))
        assert not any(v.startswith("@build") for v in _shown(app))
        await pilot.press("enter")  # completes; does not send
        assert app.query_one(Composer).text == "look @src/app.py "


@pytest.mark.usefixtures("fixed_ids", "fixed_clock")
def test_snapshot_of_the_command_list(snap_compare, repo) -> None:
    app = make_app(repo, None, api_key="sk-test")

    async def run_before(pilot) -> None:
        await settle(app, pilot)
        await pilot.press("/", "r", "e")
        await wait_until(pilot, lambda: _shown(app)[:1] == ["/rename"])
        await steady(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_a_mention_in_brackets_is_completed_as_mentions_read_it():
    assert token_at("(see @sr)", 0, 8) == Token("file", "sr", 0, 5, 9)
    assert token_at('("@sr', 0, 5) == Token("file", "sr", 0, 2, 5)


def test_no_command_is_completed_before_the_slash():
    assert token_at("/copy", 0, 0) is None


async def test_a_command_typed_whole_is_first_whatever_the_fuzzy_order(repo):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        assert [c.value for c in app.command_choices("tree")][:1] == ["/tree"]
        assert [c.value for c in app.command_choices("exit")][:1] == ["/quit"]  # an alias


def test_a_highlighted_choice_keeps_its_brackets():
    from textual.fuzzy import Matcher

    from scout_tui.widgets.completion_list import highlighted

    assert highlighted(Matcher("fo"), "/fork [N]").plain == "/fork [N]"
    assert highlighted(Matcher("pag"), "app/[id]/page.tsx").plain == "app/[id]/page.tsx"


def test_a_path_with_spaces_is_completed_quoted_and_its_quote_is_not_queried():
    assert file_choice("my notes.txt").value == '@"my notes.txt"' and file_choice("my dir/").then == " "
    assert token_at('see @"my', 0, 8) == Token("file", "my", 0, 4, 8)


async def test_enter_after_a_path_typed_out_sends_the_prompt(repo):
    # Seen in tmux: "please edit @notes.txt" Enter only completed the path (adding a space), so
    # the next text typed joined this prompt.
    (repo / "notes.txt").write_text("n\n")
    with LoopbackServer([Reply(anthropic_stream(["ok"]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            for key in "edit @notes.txt":
                await pilot.press("space" if key == " " else key)
            await wait_until(pilot, lambda: _shown(app)[:1] == ["@notes.txt"])
            await pilot.press("enter")
            await settle(app, pilot)
            assert json.loads(server.requests[0].body)["messages"][-1]["content"][0]["text"] == "edit @notes.txt"


async def test_a_command_and_its_arguments_typed_at_once_with_enter_run(repo):
    # Seen in tmux (`send-keys '/fork 2' Enter`): the list, still shown for "/fork", took the
    # Enter typed after " 2" and did nothing with it.
    from tests.app_helpers import type_ahead

    app = make_app(repo, None, api_key="sk-test")
    ran: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        from scout_tui.session.commands import Command

        app.commands.add(Command("fork", "[N]", "recorded", ran.append))
        await pilot.press("/", "f", "o", "r", "k")
        await wait_until(pilot, lambda: "/fork" in _shown(app))
        type_ahead(app, " ", "2")  # then the rest at once
        event = events.Key("enter", "\r")
        event.set_sender(app)
        app.post_message(event)
        await wait_until(pilot, lambda: ran == ["2"])
        assert app.query_one(Composer).text == ""


async def test_enter_typed_with_the_rest_of_a_command_runs_what_was_typed_not_the_list_s_older_choice(repo):
    # seen by a new user: '/redo' and Enter sent at once ran '/rename', highlighted in the list
    # still showing the choices for '/re'
    from tests.app_helpers import type_ahead

    app = make_app(repo, None, api_key="sk-test")
    ran: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        from scout_tui.session.commands import Command

        app.commands.add(Command("redo", "", "recorded", lambda args: ran.append("redo")))
        app.commands.add(Command("rename", "TITLE", "recorded", lambda args: ran.append("rename")))
        await pilot.press("/", "r", "e")
        await wait_until(pilot, lambda: "/rename" in _shown(app))
        type_ahead(app, "d", "o")  # then the rest at once, Enter with them
        event = events.Key("enter", "\r")
        event.set_sender(app)
        app.post_message(event)
        await wait_until(pilot, lambda: ran == ["redo"])
        assert app.query_one(Composer).text == ""


@pytest.mark.parametrize("list_before", [False, True], ids=["first-keys-of-the-run", "list-open-for-an-earlier-word"])
async def test_a_command_s_first_letters_and_enter_sent_at_once_run_the_highlighted_completion(repo, list_before):
    # seen by a new user: '/cos' and Enter sent at once said "Unknown command /cos" (3 of 3);
    # with a pause between them it ran /cost, the list's highlighted choice
    from scout_tui.session.commands import Command
    from tests.app_helpers import type_ahead

    app = make_app(repo, None, api_key="sk-test")
    ran: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.commands.add(Command("cost", "", "recorded", lambda args: ran.append("cost")))
        if list_before:
            await pilot.press("/")
            await wait_until(pilot, lambda: "/cost" in _shown(app))
        type_ahead(app, *("cos" if list_before else "/cos"))
        event = events.Key("enter", "\r")
        event.set_sender(app)
        app.post_message(event)
        await wait_until(pilot, lambda: ran == ["cost"])
        assert app.query_one(Composer).text == ""
        assert "Unknown command" not in " ".join(n.text for n in app.query(Notice))


async def test_enter_after_esc_closed_the_list_sends_the_command_as_typed(repo):
    app = make_app(repo, None, api_key="sk-test")
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("/", "c", "o", "s")
        await wait_until(pilot, lambda: "/cost" in _shown(app))
        await pilot.press("escape", "enter")
        await wait_until(pilot, lambda: "Unknown command" in " ".join(n.text for n in app.query(Notice)))
