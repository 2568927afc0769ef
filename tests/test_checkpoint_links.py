"""The turns that changed files, linked to /diff: a leaf under the open session in the sessions
pane for each (Enter opens /diff at its turn; "(undone)" once /undo took it back), read again
when a stored session is opened; and ``d`` on a tool-pane row of a call that may change files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scout_tui.tui.app import ScoutApp
from scout_tui.core.bus import Event
from scout_tui.config.layers import load_config
from scout_tui.store.event_log import Store
from scout_tui.widgets import SessionTree, ToolActivity
from scout_tui.widgets.dialogs import ConfirmScreen
from scout_tui.widgets.session_rows import CheckpointEntry
from tests.app_helpers import SIZE, make_app, send, settle
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream
from tests.session_tree_helpers import lines


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    (workdir / "notes.txt").write_text("the answer is 42\n")
    return workdir


def _call(tool_id: str, name: str, **input: str) -> Reply:
    return Reply(anthropic_stream([f"Calling {name}."], (tool_id, name, [json.dumps(input)])))


def _replies() -> list[Reply]:
    """Three turns: the first writes a.txt (its prompt is message 0), the second b.txt (message
    4), the third (message 8) reads a file and runs a command that changes none."""
    done = Reply(anthropic_stream(["Done."]))
    return [_call("toolu_a", "write", path="a.txt", content="a\n"), done,
            _call("toolu_b", "write", path="b.txt", content="b\n"), done,
            _call("toolu_r", "read", path="notes.txt"), _call("toolu_e", "bash", command="echo hi"), done]


async def _turns(app, pilot, count: int) -> None:
    for prompt in ("write a.txt", "write b.txt", "read and echo")[:count]:
        await send(app, pilot, prompt)
        await settle(app, pilot)


def _checkpoint_leaves(tree: SessionTree) -> list[CheckpointEntry]:
    nodes = (tree.get_node_at_line(line) for line in range(tree.last_line + 1))
    return [node.data for node in nodes if isinstance(node.data, CheckpointEntry)]


def _toasts(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


def _diff_view_at(app) -> str | None:
    """The first file shown by the /diff view open now, or None when none is open."""
    from scout_tui.widgets.diff_view import DiffView

    screen = app.screen
    return screen.rows[screen.start + 1].path if isinstance(screen, DiffView) else None


async def test_the_sessions_pane_marks_each_turn_that_changed_files_and_enter_on_one_opens_its_diff(repo):
    with LoopbackServer(_replies()[:4]) as server:
        app = make_app(repo, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await _turns(app, pilot, 2)
            tree = app.query_one(SessionTree)
            sid = app.session.id
            await wait_until(pilot, lambda: _checkpoint_leaves(tree) == [
                CheckpointEntry(sid, 0, ("a.txt",)), CheckpointEntry(sid, 4, ("b.txt",))])
            assert any(line.endswith("✎ msg 4: 1 file · b.txt") for line in lines(tree))

            await send(app, pilot, "/undo")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            await pilot.press("y")
            await wait_until(pilot, lambda: [e.undone for e in _checkpoint_leaves(tree)] == [False, True])
            assert any(line.endswith("✎ msg 4: 1 file · b.txt (undone)") for line in lines(tree))

            tree.focus()
            await pilot.pause()
            tree.move_cursor(next(tree.get_node_at_line(n) for n in range(tree.last_line + 1)
                                  if tree.get_node_at_line(n).data == _checkpoint_leaves(tree)[1]))
            await pilot.press("enter")
            await wait_until(pilot, lambda: _diff_view_at(app) == "b.txt")


async def test_a_stored_session_s_turns_that_changed_files_are_leaves_once_it_is_opened(repo):
    store = Store()
    sid = store.create_session(repo)
    for role, text in (("user", "write a.txt"), ("assistant", "Done.")):
        store.append(sid, Event.of(f"message.{role}", {"message": {"role": role, "content": text}}))
    files = [{"status": "added", "path": "src/a.txt", "old_path": None}]
    store.append(sid, Event.of("checkpoint", {"turn": 0, "before": "b0", "after": "a0", "files": files}))
    store.append(sid, Event.of("checkpoint.restore", {"turn": 0, "tree": "b0", "paths": ["src/a.txt"]}))
    app = ScoutApp(load_config(repo, flags={"api_key": "sk-test"}), cwd=repo, resume=sid)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.tree_pane is not None
                         and _checkpoint_leaves(app.tree_pane) == [CheckpointEntry(sid, 0, ("src/a.txt",), True)])


async def test_d_on_a_tool_row_opens_diff_at_its_turn_and_is_offered_only_for_calls_that_may_change_files(repo):
    with LoopbackServer(_replies()) as server:
        app = make_app(repo, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await _turns(app, pilot, 3)
            rows = app.query_one(ToolActivity).query_one("#tool-list")
            rows.focus()

            def offered(row: int) -> bool:
                rows.highlighted = row
                binding = app.screen.active_bindings.get("d")
                return binding is not None and binding.binding.id == "tools.diff"

            await pilot.pause()
            await wait_until(pilot, lambda: not offered(2))  # read: changes nothing
            await wait_until(pilot, lambda: offered(3))  # bash, in a turn that changed nothing
            await pilot.press("d")
            await wait_until(pilot, lambda: "“read and echo” changed no files." in _toasts(app))

            await wait_until(pilot, lambda: offered(1))  # the write of b.txt
            await pilot.press("d")
            await wait_until(pilot, lambda: _diff_view_at(app) == "b.txt")
