"""SessionTree: forks nested with their fork points, current marked, live updates in place,
n / r / d requests, typing to filter, and an SVG snapshot.

Update the snapshot after an intended visual change with
`pytest --snapshot-update tests/test_widgets_session_tree.py`.
"""

from __future__ import annotations

from dataclasses import replace

from textual.widgets import Input

from scout_tui.widgets import THEME_VARIABLE_DEFAULTS, SessionTree
from scout_tui.widgets.dialogs import ConfirmScreen, PromptScreen
from scout_tui.widgets.session_rows import relative_time
from tests.session_tree_helpers import NOW, TreeApp, info, lines, sessions, strips


def titles(tree: SessionTree) -> list[str]:
    """The sessions shown, top to bottom, by id."""
    return [tree.get_node_at_line(i).data.id for i in range(tree.last_line + 1)]


def colour_of(tree: SessionTree, text: str) -> str | None:
    """The foreground colour (hex) of the segment that shows ``text``."""
    for line in strips(tree):
        for segment in line:
            if text in segment.text:
                return segment.style.color.triplet.hex if segment.style and segment.style.color else None
    raise AssertionError(f"{text!r} not shown")


async def test_forks_are_nested_under_their_parents_with_fork_point_and_current_marked():
    app = TreeApp(current="b")
    async with app.run_test(size=(80, 12)) as pilot:
        tree = app.query_one(SessionTree)
        await pilot.pause()
        shown = lines(tree)
        assert titles(tree) == ["root", "d", "b", "c", "orphan", "other"]  # newest first per level
        assert len(shown) == 6 and "Deleted one" not in "".join(shown)
        root, d, b, c, orphan, other = shown
        assert root.strip() == "Parser rewrite  12 msgs · 3h ago"
        assert d.index("⑂ at 1 Different plan  4 msgs · 5m ago") > root.index("Parser")
        assert b.index("● ⑂ at 3 Try a lexer  7 msgs · 1h ago") > root.index("Parser")
        assert c.index("⑂ at 5 Lexer with tables") > b.index("⑂")  # a fork of a fork: deeper
        # Its parent is not listed: top level, fork point still shown.
        assert orphan.strip() == "⑂ at 2 Branch of a deleted session  3 msgs · 1d ago"
        assert other.strip() == "Old work  1 msg · 2d ago"
        assert [line.count("●") for line in shown] == [0, 0, 1, 0, 0, 0]
        await pilot.press("down")  # the cursor's colours would hide the ones checked below
        assert colour_of(tree, "Try a lexer") == THEME_VARIABLE_DEFAULTS["tree-current"]
        assert colour_of(tree, "⑂ at 1") == THEME_VARIABLE_DEFAULTS["tree-fork"]
        assert app.posted == []  # set_sessions posts nothing


async def test_enter_opens_the_session_under_the_cursor():
    app = TreeApp(current="b")
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.press("down", "enter")  # the cursor starts on the current session
        await pilot.pause()
        assert app.posted == [("opened", "c")]


async def test_a_live_update_of_the_same_shape_redraws_labels_and_keeps_the_nodes():
    app = TreeApp(current="b")
    async with app.run_test(size=(80, 12)) as pilot:
        tree = app.query_one(SessionTree)
        await pilot.press("space", "up")  # fold "b", then go to "d"
        node = tree.cursor_node
        assert node is not None and node.data.id == "d" and "c" not in titles(tree)
        changed = [replace(s, message_count=6, updated=NOW - 200) if s.id == "d" else s for s in sessions()]
        tree.set_sessions(changed, "b")
        await pilot.pause()
        assert tree.cursor_node is node  # updated in place: no rebuild
        assert "Different plan  6 msgs · 3m ago" in lines(tree)[1]
        assert "c" not in titles(tree)  # still folded


async def test_a_new_session_or_branch_keeps_the_cursor_and_the_folds():
    app = TreeApp(current="b")
    async with app.run_test(size=(80, 12)) as pilot:
        tree = app.query_one(SessionTree)
        await pilot.press("space", "up")  # fold "b", then go to "d"
        grown = [info("new", "Brand new", 5), info("e", "Newest branch", 1, parent="root", fork_at=2), *sessions()]
        tree.set_sessions(grown, "b")
        await pilot.pause()
        assert titles(tree) == ["new", "root", "e", "d", "b", "orphan", "other"]
        assert tree.cursor_node is not None and tree.cursor_node.data.id == "d"
        await pilot.press("enter")
        await pilot.pause()
        assert app.posted == [("opened", "d")]


async def test_a_new_current_session_inside_a_folded_branch_is_unfolded():
    app = TreeApp(current="b")
    async with app.run_test(size=(80, 12)) as pilot:
        tree = app.query_one(SessionTree)
        await pilot.press("space")  # fold "b": "c" hidden
        assert "c" not in titles(tree)
        tree.set_sessions(sessions(), "c")
        await pilot.pause()
        assert "c" in titles(tree) and "●" in lines(tree)[titles(tree).index("c")]


async def test_deleting_the_highlighted_session_leaves_the_cursor_on_the_same_line():
    app = TreeApp(current="b")
    async with app.run_test(size=(80, 12)) as pilot:
        tree = app.query_one(SessionTree)
        await pilot.press("down", "down")  # b -> c -> orphan
        tree.set_sessions([s for s in sessions() if s.id != "orphan"], "b")
        await pilot.pause()
        assert tree.cursor_node is not None and tree.cursor_node.data.id == "other"


async def test_n_asks_for_a_new_session():
    app = TreeApp()
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.press("n")
        await pilot.pause()
        assert app.posted == [("new",)]


async def test_r_renames_with_the_typed_title_and_esc_cancels():
    app = TreeApp(current="b")
    async with app.run_test(size=(80, 16)) as pilot:
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        assert app.screen.query_one(Input).value == "Try a lexer"  # prefilled, selected
        await pilot.press(*"Lexer", "space", *"v2", "enter")
        await pilot.pause()
        assert app.posted == [("rename", "b", "Lexer v2")]
        await pilot.press("r", "escape")
        await pilot.pause()
        assert not isinstance(app.screen, PromptScreen)
        assert app.posted == [("rename", "b", "Lexer v2")]  # cancelled: nothing, not the app's Esc


async def test_d_deletes_only_after_confirmation():
    app = TreeApp(current="b")
    async with app.run_test(size=(80, 16)) as pilot:
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert "Try a lexer" in app.screen.question
        await pilot.press("n")
        await pilot.pause()
        await pilot.press("d", "escape")
        await pilot.pause()
        assert app.posted == []
        await pilot.press("d", "y")
        await pilot.pause()
        await pilot.press("down", "d", "enter")
        await pilot.pause()
        assert app.posted == [("delete", "b"), ("delete", "c")]


async def test_typing_filters_by_title_keeping_the_ancestors_of_matches():
    app = TreeApp(current="b")
    async with app.run_test(size=(80, 12)) as pilot:
        tree = app.query_one(SessionTree)
        await pilot.press(*"TABLES")  # t is unbound: it starts the filter; case does not matter
        await pilot.pause()
        assert titles(tree) == ["root", "b", "c"]  # c matches; b and root are its ancestors
        assert tree.border_subtitle is not None and "/TABLES" in tree.border_subtitle
        await pilot.press("backspace", "backspace", "d")  # "TABL" then "d" goes to the filter
        await pilot.pause()
        assert tree.filter_text == "TABLd" and titles(tree) == []
        assert "no match" in tree.border_subtitle
        assert app.posted == [] and app.screen is app.screen_stack[0]  # d did not ask to delete
        await pilot.press("escape")
        await pilot.pause()
        assert tree.filter_text is None and tree.border_subtitle is None
        assert titles(tree) == ["root", "d", "b", "c", "orphan", "other"]
        assert app.posted == []  # the first Esc cleared the filter
        await pilot.press("escape")  # no filter: Esc goes on to the app
        await pilot.pause()
        assert app.posted == [("app escape",)]


async def test_slash_starts_a_filter_whose_letters_include_bound_keys_and_enter_opens():
    app = TreeApp(current="b")
    async with app.run_test(size=(80, 12)) as pilot:
        tree = app.query_one(SessionTree)
        await pilot.press("slash", *"dif")
        await pilot.pause()
        assert titles(tree) == ["root", "d"] and tree.cursor_node.data.id == "d"  # first match
        assert app.posted == []
        await pilot.press("enter")
        await pilot.pause()
        assert app.posted == [("opened", "d")]
        assert tree.filter_text is None and len(titles(tree)) == 6  # Enter closed the filter
        assert tree.cursor_node.data.id == "d"


def test_relative_time_reads_like_a_person_would_say_it():
    assert relative_time(100, now=130) == "just now"
    assert relative_time(0, now=5 * 60) == "5m ago"
    assert relative_time(0, now=3 * 3600 + 5) == "3h ago"
    assert relative_time(0, now=2 * 86_400) == "2d ago"


def test_snapshot_of_nested_forks(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await pilot.pause()

    assert snap_compare(TreeApp(current="b"), terminal_size=(64, 12), run_before=run_before)
