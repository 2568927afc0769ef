"""Ctrl+R in the composer: the prompts of every stored session (a real sqlite store), searched
in a dialog; Enter puts the chosen one in the composer, Esc leaves the draft."""

from __future__ import annotations

from pathlib import Path

import pytest

from scout_tui.core.messages import turn_marker
from scout_tui.store.event_log import Store
from scout_tui.widgets import Composer
from scout_tui.widgets.history_search import HistorySearch, matching
from tests.app_helpers import SIZE, make_app, say, settle, steady, text_block
from tests.conftest import wait_until


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    return workdir


def _session(store: Store, cwd: Path, *prompts: str) -> str:
    """A stored session of ``cwd``: each prompt answered, in order."""
    sid = store.create_session(cwd)
    for prompt in prompts:
        say(store, sid, "user", text_block(prompt))
        say(store, sid, "assistant", text_block(f"done: {prompt}"))
    return sid


def _two_sessions(repo: Path) -> None:
    """An older session and a newer one in ``repo``, with distinct prompts."""
    with Store() as store:
        _session(store, repo, "rename the parser module to lexer", "add a test for the lexer")
        _session(store, repo, "why does the build fail on arm64?")


def _search(app) -> HistorySearch:
    assert isinstance(app.screen, HistorySearch)
    return app.screen


async def _open(app, pilot) -> HistorySearch:
    """Ctrl+R, and the search once the stored prompts have joined it."""
    await pilot.press("ctrl+r")
    await wait_until(pilot, lambda: isinstance(app.screen, HistorySearch) and not app.screen.reading,
                     what="the stored prompts in the search")
    return _search(app)


async def _closed(app, pilot) -> None:
    await wait_until(pilot, lambda: not isinstance(app.screen, HistorySearch), what="the search to close")


async def test_ctrl_r_finds_an_older_sessions_prompt_and_enter_puts_it_in_the_composer(repo):
    _two_sessions(repo)
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        composer = app.query_one(Composer)
        composer.load_text("my draft")
        search = await _open(app, pilot)
        assert search.prompts == ["why does the build fail on arm64?", "add a test for the lexer",
                                  "rename the parser module to lexer"]  # newest first, across sessions
        await pilot.press(*"PARSER mod")
        await pilot.press("enter")
        await _closed(app, pilot)
        assert composer.text == "rename the parser module to lexer"
        assert composer.cursor_location == composer.document.end and composer.has_focus
        await pilot.press("ctrl+z")  # one edit: the draft is back
        assert composer.text == "my draft"


async def test_esc_leaves_the_draft_and_ctrl_r_again_goes_older(repo):
    _two_sessions(repo)
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        composer = app.query_one(Composer)
        composer.load_text("my draft")
        await _open(app, pilot)
        await pilot.press(*"lexer", "ctrl+r")  # two match: the second, older one
        await pilot.press("escape")
        await _closed(app, pilot)
        assert composer.text == "my draft" and composer.has_focus
        await _open(app, pilot)
        await pilot.press(*"lexer", "ctrl+r", "enter")
        await _closed(app, pilot)
        assert composer.text == "rename the parser module to lexer"


async def test_this_runs_prompts_come_first_and_no_match_keeps_the_search_open(repo):
    _two_sessions(repo)
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        composer = app.query_one(Composer)
        composer.prompt_history = ["a prompt of this run"]
        search = await _open(app, pilot)
        assert search.prompts[:2] == ["a prompt of this run", "why does the build fail on arm64?"]
        await pilot.press(*"nothing like it", "enter")
        assert isinstance(app.screen, HistorySearch)  # no match: Enter takes nothing
        await pilot.press("escape")
        await _closed(app, pilot)
        assert composer.text == ""


def test_stored_prompts_this_directory_first_then_others_without_subagents_tool_results_or_markers(tmp_home, tmp_path):
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir(), there.mkdir()
    with Store() as store:
        _session(store, here, "older prompt here")
        other = _session(store, there, "a prompt elsewhere")
        sid = _session(store, here, "newer prompt here")
        say(store, sid, "user", {"type": "tool_result", "tool_use_id": "t1", "content": "tool output", "is_error": False})
        say(store, sid, "user", turn_marker())
        say(store, sid, "user", {"type": "tool_result", "tool_use_id": "t2", "content": "out", "is_error": False},
             text_block("a steering prompt"))
        kid = store.create_subagent(sid, call="t3", agent="general", description="look around")
        say(store, kid, "user", text_block("written by the model for a subagent"))
        gone = _session(store, here, "in a deleted session")
        store.delete(gone)
        store.fork(other, 2)  # a branch shares its parent's prompts: listed once
        app = make_app(here, None)
        app._store = store
        assert app.sessions.stored_prompts() == ["a steering prompt", "newer prompt here", "older prompt here",
                                                 "a prompt elsewhere"]


def test_matching_wants_every_word_in_any_case_and_keeps_the_order():
    prompts = ["Fix the Parser", "parser: add tests", "unrelated"]
    assert matching(prompts, "PARSER") == ["Fix the Parser", "parser: add tests"]
    assert matching(prompts, "tests parser") == ["parser: add tests"]
    assert matching(prompts, "  ") == prompts


def test_snapshot_of_the_history_search(snap_compare, home_project: Path, fixed_ids, fixed_clock) -> None:
    with Store() as store:
        _session(store, home_project, "rename the parser module to lexer", "add a test for the lexer")
        _session(store, home_project, "why does the build fail on arm64?\nit worked on x86 yesterday")
    app = make_app(home_project, None, api_key="sk-test")

    async def run_before(pilot) -> None:
        await settle(app, pilot)
        app.query_one(Composer).load_text("my draft, in sight below")
        await _open(app, pilot)
        await pilot.press(*"lexer")
        await steady(app, pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
