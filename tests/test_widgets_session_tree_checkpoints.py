"""SessionTree: the open session's turns that changed files as leaves among its compactions, in
message order; Enter on one asks for /diff at that turn (r and d leave it alone)."""

from __future__ import annotations

from scout_tui.widgets import SessionTree
from scout_tui.widgets.dialogs import ConfirmScreen, PromptScreen
from scout_tui.widgets.session_rows import CheckpointEntry, CompactionEntry
from tests.session_tree_helpers import TreeApp, lines

COMPACTION = {"at": 20, "count": 30, "summary": "s", "model": "m", "tokens_before": 98_000, "tokens_after": 7_000,
              "by": "user"}


def _checkpoint(turn: int, *paths: str) -> tuple[str, dict]:
    files = [{"status": "modified", "path": p, "old_path": None} for p in paths]
    return "checkpoint", {"turn": turn, "before": f"b{turn}", "after": f"a{turn}", "files": files}


EVENTS = [_checkpoint(2, "notes.txt", "scout_tui/tui/app.py"), _checkpoint(30, "b.py"),
          ("checkpoint.restore", {"turn": 30, "tree": "b30", "paths": ["b.py"], "redo": False})]


class CheckpointTreeApp(TreeApp):
    """TreeApp with a compaction and two checkpoints (the second undone) under "b", recording
    /diff requests too."""

    def on_mount(self) -> None:
        super().on_mount()
        tree = self.query_one(SessionTree)
        tree.set_checkpoints("b", EVENTS)
        tree.set_compactions("b", [COMPACTION])

    def on_session_tree_diff_requested(self, event: SessionTree.DiffRequested) -> None:
        self.posted.append(("diff", event.session_id, event.turn))


def shown(tree: SessionTree) -> list[str]:
    """What each line is: a session id, ``⊟<count>`` for a compaction, ``✎<turn>`` for a checkpoint."""
    out = []
    for line in range(tree.last_line + 1):
        data = tree.get_node_at_line(line).data
        out.append(f"⊟{data.count}" if isinstance(data, CompactionEntry)
                   else f"✎{data.turn}" if isinstance(data, CheckpointEntry) else data.id)
    return out


async def test_checkpoints_are_leaves_among_the_compactions_in_message_order():
    app = CheckpointTreeApp(current="b")
    async with app.run_test(size=(100, 12)) as pilot:
        tree = app.query_one(SessionTree)
        await pilot.pause()
        # The compaction made at 30 messages comes before the turn whose prompt is message 30.
        assert shown(tree) == ["root", "d", "b", "✎2", "⊟30", "✎30", "c", "orphan", "other"]
        assert lines(tree)[3].endswith("├─ ✎ msg 2: 2 files · notes.txt, app.py")
        assert lines(tree)[5].endswith("├─ ✎ msg 30: 1 file · b.py (undone)")
        assert app.posted == []  # set_checkpoints posts nothing


async def test_enter_on_a_checkpoint_leaf_asks_for_its_diff_and_r_and_d_do_nothing_there():
    app = CheckpointTreeApp(current="b")
    async with app.run_test(size=(100, 12)) as pilot:
        await pilot.press("down", "r", "d")  # b -> its first leaf, ✎2
        await pilot.pause()
        assert not isinstance(app.screen, (PromptScreen, ConfirmScreen))
        await pilot.press("enter")
        await pilot.pause()
        assert app.posted == [("diff", "b", 2)]


async def test_new_compactions_keep_the_checkpoints_and_another_session_s_replace_both():
    app = CheckpointTreeApp(current="b")
    async with app.run_test(size=(100, 12)) as pilot:
        tree = app.query_one(SessionTree)
        tree.set_compactions("b", [])
        await pilot.pause()
        assert shown(tree) == ["root", "d", "b", "✎2", "✎30", "c", "orphan", "other"]
        await pilot.press("space")  # fold "b"
        assert lines(tree)[2].endswith("▶ 1 branch, 2 checkpoints")
        await pilot.press("space")
        tree.set_checkpoints("d", EVENTS[:1])  # another session opened
        await pilot.pause()
        assert shown(tree) == ["root", "d", "✎2", "b", "c", "orphan", "other"]
