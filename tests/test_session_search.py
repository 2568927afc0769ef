"""``/search`` and ``s`` in the sessions pane: the words of every stored session (a real sqlite
store, its full-text index), found as you type; Enter opens the hit's session at its message,
scrolled to and marked, where ``f`` forks as usual; Tab searches every project; Esc goes back."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest
from textual.widgets import Input, OptionList, Static

from scout_tui.store.event_log import Store
from scout_tui.store.search import SearchQuery
from scout_tui.widgets import Composer
from scout_tui.widgets.chat_messages import ToolCallLine, UserMessage
from scout_tui.widgets.chat_view import ChatView
from scout_tui.widgets.session_search import SessionSearch, when
from scout_tui.widgets.session_tree import SessionTree
from tests.app_helpers import SIZE, make_app, say, send, settle, steady, text_block, type_ahead
from tests.conftest import wait_until

FIXTURES = Path(__file__).parent / "fixtures"
LATER = 3 * 86_400.0
"""The search screen's "now" in these tests: three days after the sessions were written."""


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    return workdir


def _sessions(repo: Path, elsewhere: Path, reads: int = 40) -> tuple[str, str]:
    """A session of ``repo`` and a fork of it whose build prints ``ZanzibarError`` (message 4 of
    the fork), then ``reads`` read calls and an answer: a long branch, so the hit is far above
    what opens mounted. And a session of ``elsewhere`` that names zanzibar in a prompt. Returns
    ``(root id, fork id)``."""
    with Store() as store:
        root = store.create_session(repo)
        say(store, root, "user", text_block("why is the build red?"))
        say(store, root, "assistant", text_block("Let me look at the logs first."))
        fork = store.fork(root, 2).id
        say(store, fork, "user", text_block("run the build instead"))
        say(store, fork, "assistant", {"type": "tool_use", "id": "toolu_make", "name": "bash", "input": {"command": "make"}})
        say(store, fork, "user", {"type": "tool_result", "tool_use_id": "toolu_make", "is_error": True,
                                   "content": "cc -o app main.c\nZanzibarError: the widget exploded at line 7"})
        for i in range(reads):
            say(store, fork, "assistant", {"type": "tool_use", "id": f"toolu_r{i}", "name": "read", "input": {"path": f"f{i}.c"}})
            say(store, fork, "user", {"type": "tool_result", "tool_use_id": f"toolu_r{i}", "content": f"int f{i};"})
        say(store, fork, "assistant", text_block("The widget code overflows its buffer."))
        other = store.create_session(elsewhere)
        say(store, other, "user", text_block("what is a zanzibarerror anyway?"))
    return root, fork


@pytest.fixture
def stored(repo: Path, tmp_path: Path) -> tuple[str, str]:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return _sessions(repo, elsewhere)


@pytest.fixture
def later(monkeypatch: pytest.MonkeyPatch) -> float:
    """The search screen's clock stopped three days after now: every hit reads "3d ago"."""
    now = time.time() + LATER + 3600  # an hour of slack for writing them: still "3d ago"
    monkeypatch.setattr(SessionSearch, "default_clock", staticmethod(lambda: now))
    return now


def _search(app) -> SessionSearch:
    assert isinstance(app.screen, SessionSearch)
    return app.screen


async def _open(app, pilot, query: str = "") -> SessionSearch:
    """``/search QUERY``, once the screen shows what it found for it."""
    await send(app, pilot, f"/search {query}".rstrip())
    await wait_until(pilot, lambda: isinstance(app.screen, SessionSearch), what="the search screen")
    screen = _search(app)
    await _found(pilot, screen)
    return screen


async def _found(pilot, screen: SessionSearch) -> None:
    """Wait until the list shows the hits of what the field holds."""
    await wait_until(pilot, lambda: screen.searched == screen.key, what=f"the hits of {screen.key}")


def _status(screen: SessionSearch) -> Static:
    return screen.query_one("#search-status", Static)


async def test_typing_finds_a_word_of_a_tool_output_in_a_fork_with_its_branch_and_the_match_marked(repo, stored, later):
    root, fork = stored
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        screen = await _open(app, pilot)
        await pilot.press(*"zanzibarerr*")
        await _found(pilot, screen)
        assert [(h.session.id, h.seq, h.role) for h in screen.hits] == [(fork, 4, "tool_output")]
        row = screen.query_one("#search-hits", OptionList).get_option_at_index(0).prompt
        head, snippet = str(row).split("\n")
        assert head.startswith("run the build instead")  # the branch's title: its own first prompt
        assert f"3d ago · tool output · ⑂ {fork[:8]} fork of {root[:8]} at 2" in head
        assert "ZanzibarError: the widget exploded" in snippet
        assert [str(row)[s.start:s.end] for s in row.spans if "reverse" in str(s.style)] == ["ZanzibarError"]
        assert "1 hit ·" in str(_status(screen).render())


async def test_enter_opens_the_fork_at_the_message_in_view_and_marked_and_f_forks_there(repo, stored, later):
    root, fork = stored
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        screen = await _open(app, pilot, "zanzibarerror")
        await pilot.press("enter")
        chat = app.query_one(ChatView)
        await wait_until(pilot, lambda: app.session.id == fork and chat.query_children(".-found"), what="the hit shown")
        await settle(app, pilot)
        [found] = chat.query_children(".-found")
        assert isinstance(found, ToolCallLine) and found.tool_use_id == "toolu_make"
        assert found.region.overlaps(chat.region) and chat.region.contains_region(found.region)  # in the viewport
        assert chat.has_focus
        assert isinstance(chat.selected, UserMessage) and chat.selected.text == "run the build instead"
        await pilot.press("f")
        await wait_until(pilot, lambda: app.session.id not in (root, fork, None), what="the new branch opened")
        branch = app.store.session(app.session.id)
        assert branch is not None and (branch.parent, branch.fork_at) == (fork, 2)
        assert app.query_one(Composer).text == "run the build instead"  # a fork before a prompt offers it
        await pilot.press("down")  # the selection moves on: the mark goes
        assert not chat.query_children(".-found")


async def test_a_tool_output_first_in_its_batch_is_shown_on_its_calls_line(repo, stored, later):
    """The fork's 86 messages mount in batches of 24 from the newest: 38 is the first of one,
    and its call (37) is the last of the batch above."""
    root, fork = stored
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        screen = await _open(app, pilot, '"int f16"')
        assert [(h.seq, h.role) for h in screen.hits] == [(38, "tool_output")]
        await pilot.press("enter")
        chat = app.query_one(ChatView)
        await wait_until(pilot, lambda: app.session.id == fork and chat.query_children(".-found"), what="the hit shown")
        await settle(app, pilot)
        [found] = chat.query_children(".-found")
        assert isinstance(found, ToolCallLine) and found.tool_use_id == "toolu_r16"

        assert chat.region.contains_region(found.region)
        assert isinstance(chat.selected, UserMessage)  # the nearest message above: its calls have no text


async def test_a_hit_in_the_open_session_is_shown_in_place_and_a_click_chooses_it(repo, stored, later):
    root, fork = stored
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.sessions.open_session(fork)
        chat = app.query_one(ChatView)
        await wait_until(pilot, lambda: app.session.id == fork)
        await settle(app, pilot)
        opened = app.sessions._opened
        screen = await _open(app, pilot, "zanzibarerror")
        await pilot.click("#search-hits", offset=(4, 0))  # the first hit's first line
        await wait_until(pilot, lambda: chat.query_children(".-found"), what="the hit shown")
        [found] = chat.query_children(".-found")
        assert isinstance(found, ToolCallLine) and chat.region.contains_region(found.region)
        assert app.session.id == fork and app.sessions._opened is opened  # not read again


async def test_tab_searches_every_project_and_back(repo, stored, later):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        screen = await _open(app, pilot, "zanzibarerror")
        assert len(screen.hits) == 1
        assert "this project" in str(screen.query_one("#search-scope", Static).render())
        await pilot.press("tab")
        await _found(pilot, screen)
        assert screen.all_projects and screen.query_one("#search-query", Input).has_focus
        assert sorted(h.role for h in screen.hits) == ["prompt", "tool_output"]
        rows = [str(screen.query_one("#search-hits", OptionList).get_option_at_index(n).prompt) for n in range(2)]
        assert any("elsewhere" in row.split("\n")[0] for row in rows)  # the other project's folder
        await pilot.press("tab")
        await _found(pilot, screen)
        assert not screen.all_projects and len(screen.hits) == 1


async def test_a_query_it_cannot_run_says_why_and_typing_on_recovers(repo, stored, later):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        screen = await _open(app, pilot, "-zanzibarerror")
        status = _status(screen)
        assert status.has_class("-error") and "a search needs a word to find" in str(status.render())
        assert screen.hits == [] and app.screen is screen
        await pilot.press("home", *"widget ")
        await _found(pilot, screen)
        assert not status.has_class("-error")
        assert [h.role for h in screen.hits] == ["answer"]  # the build's output, which names it, left out


async def test_esc_goes_back_to_the_composer_and_its_draft(repo, stored, later):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        screen = await _open(app, pilot, "zanzibarerror")
        composer = app.query_one(Composer)
        composer.load_text("my draft")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, SessionSearch))
        assert composer.has_focus and composer.text == "my draft" and app.session.id is None
        assert screen.hits  # nothing was opened


async def test_s_in_the_sessions_pane_opens_the_search(repo, stored, later):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+t")
        await wait_until(pilot, lambda: app.focused is not None and isinstance(app.focused, SessionTree))
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, SessionSearch), what="the search screen")
        assert _search(app).query_one("#search-query", Input).has_focus


async def test_every_keystroke_is_kept_and_only_the_last_querys_hits_are_shown(repo, stored, later):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        screen = await _open(app, pilot)
        field = screen.query_one("#search-query", Input)
        type_ahead(app, *"widget exploded")  # queued at once, as a fast typist sends them
        await wait_until(pilot, lambda: field.value == "widget exploded", what="every key typed")
        await _found(pilot, screen)
        assert screen.searched == ("widget exploded", False) and len(screen.hits) == 1
        shown = screen.hits
        stale = app.store.search(SearchQuery("zanzibarerror"))
        screen.post_message(SessionSearch.Found(("widget explo", False), stale))  # an earlier keystroke's, late
        await pilot.pause()
        assert screen.hits is shown and screen.searched == ("widget exploded", False)


async def test_an_old_store_is_indexed_while_the_screen_says_how_far_and_the_search_runs_after(
        tmp_home, workdir, monkeypatch, later):
    from scout_tui.widgets import session_search

    monkeypatch.setattr(session_search, "INDEX_BATCH", 2)  # the fixture's messages in batches of 2, as a big store's
    path = Store().path
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / "store_v4.db", path)  # written before the index: its migration queues every message
    store = Store()
    stored = store.index_backlog()[1]
    assert store.index_backlog() == (0, stored) and stored > 2
    gate = threading.Event()
    index_some = store.index_some

    def held(limit: int = 5_000) -> tuple[int, int]:
        gate.wait(60)
        return index_some(limit)

    monkeypatch.setattr(store, "index_some", held)
    from scout_tui.config.layers import load_config
    from scout_tui.tui.app import ScoutApp

    app = ScoutApp(load_config(workdir, flags={"provider": "anthropic"}), cwd=workdir, store=store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        screen = await _open(app, pilot, "marmoset")
        await pilot.press("tab")
        await wait_until(pilot, lambda: f"indexing older sessions: 0 of {stored} messages: your search runs once it is done"
                         in str(_status(screen).render()), what="the indexing progress")
        assert screen.waiting and screen.hits == []
        gate.set()
        await wait_until(pilot, lambda: not screen.indexing and screen.hits, what="the hit once indexed")
        assert "indexing" not in str(_status(screen).render()) and not screen.waiting
        assert [h.role for h in screen.hits] == ["tool_output"]
        assert store.index_backlog() == (stored, stored)


def test_when_is_relative_within_a_year_and_a_date_before() -> None:
    now = 1_700_000_000.0
    assert when(now - 3 * 86_400 - 5, now) == "3d ago"
    assert when(now - 400 * 86_400, now) == time.strftime("%Y-%m-%d", time.localtime(now - 400 * 86_400))


def test_snapshot_of_the_search_screen(snap_compare, home_project: Path, fixed_ids, fixed_clock, later) -> None:
    elsewhere = home_project.parent / "elsewhere"  # shown as ~/elsewhere on every run
    elsewhere.mkdir()
    _sessions(home_project, elsewhere, reads=2)
    app = make_app(home_project, None, api_key="sk-test")

    async def run_before(pilot) -> None:
        await settle(app, pilot)
        screen = await _open(app, pilot, "zanzibar* OR widget")
        await pilot.press("tab")
        await _found(pilot, screen)
        await steady(app, pilot)

    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)


async def test_an_old_store_that_cannot_be_indexed_now_is_searched_as_far_as_it_is_and_says_why(
        tmp_home, workdir, monkeypatch, later):
    import sqlite3

    from scout_tui.widgets import session_search

    monkeypatch.setattr(session_search, "INDEX_BATCH", 2)
    path = Store().path
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / "store_v4.db", path)
    store = Store()
    calls = []
    warnings: list[str] = []

    def locked(limit: int = 5_000) -> tuple[int, int]:
        calls.append(limit)
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(store, "index_some", locked)
    from scout_tui.config.layers import load_config
    from scout_tui.tui.app import ScoutApp

    app = ScoutApp(load_config(workdir, flags={"provider": "anthropic"}), cwd=workdir, store=store)
    monkeypatch.setattr(app, "notify", lambda message, **kw: warnings.append(str(message)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await send(app, pilot, "/search pangolin")  # the summary: indexed by the migration itself
        await wait_until(pilot, lambda: isinstance(app.screen, SessionSearch), what="the search screen")
        screen = _search(app)
        await pilot.press("tab")
        await wait_until(pilot, lambda: calls and not screen.indexing and screen.hits, what="the summary found")
        assert [h.role for h in screen.hits] == ["summary"]
        assert screen.unindexable and app.is_running
        assert any("Older sessions were not indexed (database is locked)" in w for w in warnings)
