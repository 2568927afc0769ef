"""SessionTree: newest first, forks nested, current marked, Opened only on selection."""

from __future__ import annotations

import time
from dataclasses import dataclass

from textual.app import App, ComposeResult
from textual.geometry import Region

from scout_tui.widgets import THEME_VARIABLE_DEFAULTS, SessionTree
from scout_tui.widgets.session_tree import relative_time


@dataclass
class Info:
    """A duck-typed session info, as the store returns them."""

    id: str
    title: str
    updated: float
    message_count: int = 2
    parent: str | None = None


class TreeApp(App):
    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return THEME_VARIABLE_DEFAULTS

    def compose(self) -> ComposeResult:
        yield SessionTree(id="tree")

    def on_session_tree_opened(self, event: SessionTree.Opened) -> None:
        self.opened.append(event.session_id)


def lines(tree: SessionTree) -> list[str]:
    strips = tree.render_lines(Region(0, 0, tree.size.width, tree.size.height))
    return [s.text.rstrip() for s in strips if s.text.strip()]


def sessions() -> list[Info]:
    """Sessions aged relative to now (not import time: "just now" must not go stale mid-suite)."""
    now = time.time()
    return [
        Info("old", "Old work", now - 3 * 86_400, 12),
        Info("new", "Newest [bold]thing[/]", now - 5, 1),
        Info("mid", "Middle", now - 7_200, 5),
        Info("fork", "A fork \x1b[31mred\x1b[0m", now - 600, 7, parent="mid"),
    ]


async def test_sessions_are_listed_newest_first_with_forks_nested_and_current_marked():
    app = TreeApp()
    async with app.run_test(size=(80, 12)) as pilot:
        tree = app.query_one(SessionTree)
        tree.set_sessions(sessions(), "mid")
        await pilot.pause()
        shown = lines(tree)
        assert shown[0].strip() == "Newest [bold]thing[/]  1 msg · just now"
        assert "● Middle  5 msgs · 2h ago" in shown[1]
        assert "A fork red  7 msgs · 10m ago" in shown[2] and shown[2].index("A fork") > shown[1].index("Middle")
        assert "Old work  12 msgs · 3d ago" in shown[3]
        assert app.opened == []  # set_sessions posts nothing


async def test_enter_opens_the_session_under_the_cursor():
    app = TreeApp()
    async with app.run_test(size=(80, 12)) as pilot:
        tree = app.query_one(SessionTree)
        tree.set_sessions(sessions(), "new")
        tree.focus()
        await pilot.pause()
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.opened == ["mid"]


async def test_cursor_stays_on_the_same_session_when_the_list_changes():
    app = TreeApp()
    async with app.run_test(size=(80, 12)) as pilot:
        tree = app.query_one(SessionTree)
        tree.set_sessions(sessions(), "new")
        tree.focus()
        await pilot.pause()
        await pilot.press("down", "down", "down")  # new, mid, fork, old
        assert tree.cursor_node is not None and tree.cursor_node.data.id == "old"
        tree.set_sessions([Info("newer", "Brand new", time.time()), *sessions()], "newer")
        await pilot.pause()
        assert tree.cursor_node is not None and tree.cursor_node.data.id == "old"
        await pilot.press("enter")
        await pilot.pause()
        assert app.opened == ["old"]


def test_relative_time_reads_like_a_person_would_say_it():
    assert relative_time(100, now=130) == "just now"
    assert relative_time(0, now=5 * 60) == "5m ago"
    assert relative_time(0, now=3 * 3600 + 5) == "3h ago"
    assert relative_time(0, now=2 * 86_400) == "2d ago"
