"""SessionTree: what each session spent, and the open session's compactions as leaves that
``u`` asks to undo (and that Enter, r and d leave alone)."""

from __future__ import annotations

from dataclasses import replace

from scout_tui.widgets import SessionTree
from scout_tui.widgets.dialogs import ConfirmScreen, PromptScreen
from scout_tui.widgets.session_rows import CompactionEntry
from tests.session_tree_helpers import TreeApp, info, lines, sessions

COMPACTIONS = [
    {"at": 20, "count": 30, "summary": "first", "model": "m", "tokens_before": 98_000, "tokens_after": 7_000,
     "by": "user", "event_id": 11, "session_id": "root"},
    {"at": 57, "count": 69, "summary": "second", "model": "m", "tokens_before": 142_000, "tokens_after": 9_000,
     "by": "auto", "event_id": 40, "session_id": "b"},
]


class CompactionTreeApp(TreeApp):
    """TreeApp with two compactions shown under "b", recording undo requests too."""

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one(SessionTree).set_compactions("b", COMPACTIONS)

    def on_session_tree_undo_compaction_requested(self, event: SessionTree.UndoCompactionRequested) -> None:
        self.posted.append(("undo", event.session_id, event.count))


def shown(tree: SessionTree) -> list[str]:
    """What each line is: a session id, or ``⊟<count>`` for a compaction leaf."""
    out = []
    for line in range(tree.last_line + 1):
        data = tree.get_node_at_line(line).data
        out.append(f"⊟{data.count}" if isinstance(data, CompactionEntry) else data.id)
    return out


def go_to(tree: SessionTree, what: str) -> None:
    tree.move_cursor(tree.get_node_at_line(shown(tree).index(what)))


async def test_each_session_shows_its_tokens_and_dollars_when_it_spent_any():
    app = TreeApp(current="b")
    async with app.run_test(size=(100, 12)) as pilot:
        tree = app.query_one(SessionTree)
        spent = {"root": dict(input_tokens=110_000, output_tokens=10_000, cost=0.4213),
                 "d": dict(input_tokens=900, output_tokens=50),  # no price known: no dollars
                 "other": dict(cost=0.004)}
        tree.set_sessions([replace(s, **spent.get(s.id, {})) for s in sessions()], "b")
        await pilot.pause()
        by_id = dict(zip(["root", "d", "b", "c", "orphan", "other"], lines(tree)))
        assert by_id["root"].endswith("Parser rewrite  12 msgs · 3h ago · 120k tok · $0.42")
        assert by_id["d"].endswith("Different plan  4 msgs · 5m ago · 950 tok")
        assert by_id["other"].endswith("Old work  1 msg · 2d ago · <$0.01")
        assert by_id["b"].endswith("Try a lexer  7 msgs · 1h ago")


async def test_compactions_are_leaves_under_the_open_session_oldest_first_before_its_branches():
    app = CompactionTreeApp(current="b")
    async with app.run_test(size=(100, 12)) as pilot:
        tree = app.query_one(SessionTree)
        await pilot.pause()
        assert shown(tree) == ["root", "d", "b", "⊟30", "⊟69", "c", "orphan", "other"]
        first, second = lines(tree)[3:5]
        assert first.endswith("⊟ compacted at msg 20: 98.0k → 7.0k tokens (user)")
        assert second.endswith("⊟ compacted at msg 57: 142k → 9.0k tokens (auto)")
        assert first.index("├─ ⊟") > lines(tree)[2].index("└─ ● ⑂ at 3 Try a lexer")  # nested under "b"
        assert tree.get_node_at_line(3).data == CompactionEntry("b", 30, 20, 98_000, 7_000, "user")
        assert app.posted == []  # set_compactions posts nothing


async def test_u_on_a_compaction_leaf_asks_to_undo_it_and_is_offered_only_there():
    app = CompactionTreeApp(current="b")
    async with app.run_test(size=(100, 12)) as pilot:
        tree = app.query_one(SessionTree)
        await pilot.pause()
        assert "u" not in app.screen.active_bindings  # on a session: u is free for the filter
        await pilot.press("down", "down")  # b -> first leaf -> second leaf
        assert tree.highlighted_session is None and tree.highlighted_compaction is not None
        assert app.screen.active_bindings["u"].binding.description == "Undo compaction"
        await pilot.press("u")
        await pilot.pause()
        assert app.posted == [("undo", "b", 69)]
        await pilot.press("down", "u")  # on "c": u starts a filter instead
        await pilot.pause()
        assert app.posted == [("undo", "b", 69)] and tree.filter_text == "u"


async def test_enter_rename_and_delete_do_nothing_on_a_compaction_leaf():
    app = CompactionTreeApp(current="b")
    async with app.run_test(size=(100, 12)) as pilot:
        await pilot.press("down")
        await pilot.press("enter", "r")
        await pilot.pause()
        assert not isinstance(app.screen, PromptScreen)
        await pilot.press("d")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        assert app.posted == []
        await pilot.press("up", "enter")  # back on "b", Enter opens it as before
        await pilot.pause()
        assert app.posted == [("opened", "b")]


async def test_a_rebuild_keeps_the_leaves_and_the_cursor_on_its_leaf():
    app = CompactionTreeApp(current="b")
    async with app.run_test(size=(100, 12)) as pilot:
        tree = app.query_one(SessionTree)
        await pilot.press("down", "down")
        tree.set_sessions([info("new", "Brand new", 5), *sessions()], "b")  # a new row: rebuilt
        await pilot.pause()
        assert shown(tree) == ["new", "root", "d", "b", "⊟30", "⊟69", "c", "orphan", "other"]
        assert tree.highlighted_compaction is not None and tree.highlighted_compaction.count == 69
        await pilot.press("u")
        await pilot.pause()
        assert app.posted == [("undo", "b", 69)]


async def test_a_filter_hides_the_leaves_and_closing_it_brings_them_back():
    app = CompactionTreeApp(current="b")
    async with app.run_test(size=(100, 12)) as pilot:
        tree = app.query_one(SessionTree)
        await pilot.press("slash", *"lexer")
        await pilot.pause()
        assert shown(tree) == ["root", "b", "c"]
        await pilot.press("escape")
        await pilot.pause()
        assert shown(tree) == ["root", "d", "b", "⊟30", "⊟69", "c", "orphan", "other"]


async def test_folding_the_session_hides_its_leaves_and_says_how_many():
    app = CompactionTreeApp(current="b")
    async with app.run_test(size=(100, 12)) as pilot:
        tree = app.query_one(SessionTree)
        await pilot.press("space")  # fold "b"
        assert shown(tree) == ["root", "d", "b", "orphan", "other"]
        assert lines(tree)[2].endswith("▶ 1 branch, 2 compactions")


async def test_new_compactions_replace_the_old_ones_and_none_removes_them():
    app = CompactionTreeApp(current="b")
    async with app.run_test(size=(100, 12)) as pilot:
        tree = app.query_one(SessionTree)
        tree.set_compactions("d", COMPACTIONS[:1])  # another session opened
        await pilot.pause()
        assert shown(tree) == ["root", "d", "⊟30", "b", "c", "orphan", "other"]
        tree.set_compactions("d", [])
        await pilot.pause()
        assert shown(tree) == ["root", "d", "b", "c", "orphan", "other"]
        assert "▶" not in lines(tree)[1]  # nothing to fold any more
        go_to(tree, "d")
        await pilot.press("enter")
        await pilot.pause()
        assert app.posted == [("opened", "d")]
