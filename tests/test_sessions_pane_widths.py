"""The sessions pane of the running app at 80x24 and 120x40: each row fits the pane as laid out
(no line cut short by the pane's edge, no horizontal scroll), its parts whole."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
from textual.color import Color

from scout_tui.store import event_log as store_module
from scout_tui.core.bus import Event
from scout_tui.store.event_log import Store
from scout_tui.widgets.session_tree import SessionTree
from scout_tui.tui.main_screen import NARROW
from tests.app_helpers import make_app
from tests.conftest import wait_until
from tests.session_tree_helpers import NOW, lines, strips

MINUTE = 60.0


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    return workdir


def say(store: Store, sid: str, role: str, text: str, cost: float | None = None) -> None:
    data: dict = {"message": {"role": role, "content": [{"type": "text", "text": text}]}}
    if role == "assistant":
        data.update(usage={"input_tokens": 1_000, "output_tokens": 200}, stop_reason="end_turn", model="m", cost=cost)
    store.append(sid, Event.of(f"message.{role}", data))


def store_sessions(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 25-message session of 25 minutes ago that cost $0.24, a branch of it with its own prompt
    (10 minutes ago, tokens but no price), a branch of that branch with no prompt of its own yet
    (5 minutes ago), and a ``-p`` run the server refused (40 minutes ago)."""
    clock = {"now": NOW - 40.5 * MINUTE}
    with monkeypatch.context() as patch:
        patch.setattr(store_module, "time", types.SimpleNamespace(time=lambda: clock["now"]))
        with Store() as store:
            refused = store.create_session(repo)
            say(store, refused, "user", "summarise the README")
            store.append(refused, Event.of("error", {"message": "HTTP 401: invalid x-api-key", "kind": "auth"}))
            store.append(refused, Event.of("turn.end", {"stop_reason": "error"}))
            clock["now"] = NOW - 25.5 * MINUTE
            root = store.create_session(repo)
            for i in range(25):
                say(store, root, "user" if i % 2 == 0 else "assistant",
                    "Refactor the config loader to read layered files" if i == 0 else f"step {i}", cost=0.02)
            clock["now"] = NOW - 10.5 * MINUTE
            branch = store.fork(root, 2).id
            say(store, branch, "user", "Try TOML tables instead")
            say(store, branch, "assistant", "Done.")
            clock["now"] = NOW - 5.5 * MINUTE
            store.fork(branch, 4)


async def pane_lines(repo: Path, size: tuple[int, int]) -> tuple[list[str], int, bool]:
    """The sessions pane's lines in the app at ``size``, the width (cells) they have, and whether
    "failed" is drawn in the theme's error colour."""
    app = make_app(repo, None)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: app.tree_pane is not None and app.tree_pane.last_line == 3,
                         what="the sessions pane lists the four sessions")
        if size[0] < NARROW:  # folded away: Ctrl+T shows the side panes over the chat
            await pilot.press("ctrl+t")
            await wait_until(pilot, lambda: app.screen.has_class("-side-shown") and app.tree_pane.region.width)
        await pilot.pause()
        tree = app.tree_pane
        assert not tree.show_horizontal_scrollbar
        width = tree.scrollable_content_region.width
        shown = lines(tree)
        for y, line in enumerate(shown):  # what the pane draws is the whole label: nothing cut off at its edge
            node = tree.get_node_at_line(y)
            label = tree.render_label(node, tree.rich_style, tree.rich_style).plain
            assert line.endswith(label.rstrip()) and len(line) <= width, (line, label)
        error = Color.parse(app.theme_variables["text-error"]).rich_color
        in_red = any(segment.text == "failed" and segment.style.color == error for line in strips(tree) for segment in line)
        return shown, width, in_red


async def test_rows_at_80_columns_keep_title_and_age_and_cut_no_unit(repo, monkeypatch):
    monkeypatch.setattr(SessionTree, "default_clock", staticmethod(lambda: NOW))
    store_sessions(repo, monkeypatch)
    shown, width, in_red = await pane_lines(repo, (80, 24))
    assert width == 41 and in_red  # shown over the chat: 44 columns, less its border and padding
    assert shown == [
        "  Refactor th…  25 msgs · 25m ago · $0.24",
        "└─   ⑂ Try TOML tabl…  10m ago · 1.2k tok",
        "   └─   ⑂ fork of Try TOML table…  5m ago",
        "  summarise th…  failed · 1 msg · 40m ago",
    ]


async def test_rows_at_120_columns_show_more_parts_each_whole(repo, monkeypatch):
    monkeypatch.setattr(SessionTree, "default_clock", staticmethod(lambda: NOW))
    store_sessions(repo, monkeypatch)
    shown, width, in_red = await pane_lines(repo, (120, 40))
    assert width == 38 and in_red
    assert shown == [
        "  Refactor the confi…  25m ago · $0.24",
        "└─   ⑂ Try TOML tables inste…  10m ago",
        "   └─   ⑂ fork of Try TOML ta…  5m ago",
        "  summarise the REA…  failed · 40m ago",
    ]
