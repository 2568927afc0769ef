"""/undo and /redo in the app: the last turn's files back as they were, asked first; someone
else's later edit named before it is overwritten; the restores recorded in the session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scout_tui.checkpoints.restores import next_step, rewind_to
from scout_tui.store.event_log import Store
from scout_tui.widgets.chat_messages import Notice
from scout_tui.widgets.dialogs import ConfirmScreen
from tests.app_helpers import SIZE, make_app, send, settle
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream


def _checkpoint(turn: int, *paths: str) -> tuple[str, dict]:
    files = [{"status": "modified", "path": p, "old_path": None} for p in paths]
    return "checkpoint", {"turn": turn, "before": f"b{turn}", "after": f"a{turn}", "files": files}


def test_undo_takes_the_newest_turn_not_undone_and_redo_the_last_undone():
    events = [_checkpoint(0, "x"), _checkpoint(4, "y")]
    assert next_step(events, redo=False).turn == 4 and next_step(events, redo=True) is None
    events.append(("checkpoint.restore", {"turn": 4, "redo": False}))
    assert next_step(events, redo=False).turn == 0 and next_step(events, redo=True).turn == 4
    events.append(("checkpoint.restore", {"turn": 0, "redo": False}))
    assert next_step(events, redo=False) is None and next_step(events, redo=True).turn == 0
    events.append(("checkpoint.restore", {"turn": 0, "redo": True}))
    assert next_step(events, redo=True).turn == 4
    undo = next_step([_checkpoint(0, "x")], redo=False)
    assert (undo.tree, undo.since, undo.paths) == ("b0", "a0", ["x"])
    redo = next_step([_checkpoint(0, "x"), ("checkpoint.restore", {"turn": 0, "redo": False})], redo=True)
    assert (redo.tree, redo.since) == ("a0", "b0")


def test_nothing_to_undo_or_redo_says_why():
    from scout_tui.session.restore import why_nothing as _why_nothing

    assert "no turn of this session changed files" in _why_nothing([], redo=False)
    undone = [_checkpoint(0, "f"), ("checkpoint.restore", {"turn": 0, "redo": False})]
    assert "every turn's file changes are undone already" in _why_nothing(undone, redo=False)
    assert "a turn changed files since the last undo" in _why_nothing(undone + [_checkpoint(4, "g")], redo=True)
    assert "nothing was undone" in _why_nothing([_checkpoint(0, "f")], redo=True)


def test_a_turn_after_an_undo_is_not_undone_by_it_and_ends_what_redo_can_make_again():
    # seen by a new user: after /undo, the next turn counted as undone, so /undo skipped it and
    # /redo wrote the undone turn over its work
    events = [_checkpoint(0, "f"), ("checkpoint.restore", {"turn": 0, "redo": False}), _checkpoint(4, "f")]
    assert next_step(events, redo=False).turn == 4
    assert next_step(events, redo=True) is None
    assert rewind_to(events, 4).turn == 4
    events.append(("checkpoint.restore", {"turn": 4, "redo": False}))
    assert next_step(events, redo=True).turn == 4  # its own undo can be redone
    assert next_step(events, redo=False) is None  # the first is still undone


def test_a_rewind_takes_back_every_turn_from_the_point_and_redo_makes_them_again_earliest_first():
    events = [_checkpoint(0, "a"), _checkpoint(2, "b"), _checkpoint(4, "c", "b")]
    plan = rewind_to(events, 1)
    assert (plan.turn, plan.tree, plan.since, plan.paths) == (2, "b2", "a4", ["b", "c"])
    assert rewind_to(events, 5) is None
    events.append(("checkpoint.restore", {"turn": plan.turn, "redo": False}))
    assert next_step(events, redo=False).turn == 0  # the turns rewound are undone
    assert rewind_to(events, 1) is None  # nothing left to rewind there
    assert next_step(events, redo=True).turn == 2
    events.append(("checkpoint.restore", {"turn": 2, "redo": True}))
    assert next_step(events, redo=True).turn == 4
    assert rewind_to(events, 1).paths == ["b"]  # turn 2 is back, turn 4 still undone


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    (workdir / "notes.txt").write_text("the answer is 42\n")
    return workdir


def _notices(app) -> str:
    return "\n".join(n.text for n in app.query(Notice))


def _turn_replies() -> list[Reply]:
    write = ("toolu_w", "write", [json.dumps({"path": "new.txt", "content": "made\n"})])
    bash = ("toolu_b", "bash", [json.dumps({"command": "rm notes.txt"})])
    return [Reply(anthropic_stream(["Writing."], write)), Reply(anthropic_stream(["Removing."], bash)),
            Reply(anthropic_stream(["Done."]))]


async def _turn(app, pilot) -> None:
    """One turn of ``_turn_replies``: new.txt written, notes.txt removed."""
    await send(app, pilot, "make new.txt and remove notes.txt")
    await settle(app, pilot)


async def test_undo_asks_then_restores_and_redo_changes_them_again(repo):
    with LoopbackServer(_turn_replies()) as server:
        app = make_app(repo, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await _turn(app, pilot)
            assert (repo / "new.txt").exists() and not (repo / "notes.txt").exists()
            await send(app, pilot, "/undo")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            question = str(app.screen.question)
            assert "remove: new.txt" in question and "bring back: notes.txt" in question
            await pilot.press("y")
            await wait_until(pilot, lambda: "Undid the file changes" in _notices(app))
            assert not (repo / "new.txt").exists() and (repo / "notes.txt").read_text() == "the answer is 42\n"
            from scout_tui.widgets.diff_view import DiffView

            await send(app, pilot, "/diff")  # the turn is marked undone; nothing differs now
            await wait_until(pilot, lambda: isinstance(app.screen, DiffView))
            assert app.screen.rows[0].label.startswith("2 files (undone) · ")
            assert app.screen.rows[-1].label == "Net, as now · 0 files"
            assert "1 undone since · 0 files differ now" in app.screen.title_text
            await pilot.press("escape")
            await send(app, pilot, "/redo")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            await pilot.press("y")
            await wait_until(pilot, lambda: "Redid the file changes" in _notices(app))
            assert (repo / "new.txt").read_text() == "made\n" and not (repo / "notes.txt").exists()
            kinds = [kind for _, _, kind, _, _ in Store().events(app.session.id)]
            assert kinds.count("checkpoint") == 1 and kinds.count("checkpoint.restore") == 2


async def test_a_file_changed_after_the_turn_is_named_and_cancel_leaves_it(repo):
    with LoopbackServer(_turn_replies()) as server:
        app = make_app(repo, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await _turn(app, pilot)
            (repo / "new.txt").write_text("my own edit\n")
            await send(app, pilot, "/undo")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            assert "Changed since by someone else, and overwritten: new.txt" in str(app.screen.question)
            await pilot.press("enter")  # not enough to overwrite someone's work: only y is
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen) and (repo / "new.txt").read_text() == "my own edit\n"
            await pilot.press("n")
            await settle(app, pilot)
            assert (repo / "new.txt").read_text() == "my own edit\n" and not (repo / "notes.txt").exists()


async def test_undo_with_no_turn_that_changed_files_says_so(repo):
    with LoopbackServer([Reply(anthropic_stream(["Just talk."]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "hello")
            await settle(app, pilot)
            await send(app, pilot, "/undo")
            await wait_until(pilot, lambda: "Nothing to undo: no turn of this session changed files" in _notices(app))


async def test_diff_lists_the_files_by_turn_and_in_total_with_the_highlighted_one_s_diff(repo):
    from scout_tui.widgets.diff_view import DiffView

    with LoopbackServer(_turn_replies()) as server:
        app = make_app(repo, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await _turn(app, pilot)
            await send(app, pilot, "/diff")
            await wait_until(pilot, lambda: isinstance(app.screen, DiffView))
            view = app.screen
            assert [(r.label, r.status) for r in view.rows] == [
                ("2 files · “make new.txt and remove notes.txt”", ""), ("new.txt", "added"), ("notes.txt", "deleted"),
                ("Net, as now · 2 files", ""), ("new.txt", "added"), ("notes.txt", "deleted")]
            await pilot.pause()
            assert "+made" in str(view.query_one("#diff-body").render())
            await pilot.press("j")  # the next file: its diff
            await wait_until(pilot, lambda: "-the answer is 42" in str(view.query_one("#diff-body").render()))
            await pilot.press("escape")
            assert not isinstance(app.screen, DiffView)


@pytest.mark.usefixtures("fixed_ids", "fixed_clock")
def test_snapshot_of_the_diff_view(snap_compare, repo) -> None:
    from scout_tui.widgets.diff_view import DiffView
    from tests.app_helpers import steady

    with LoopbackServer(_turn_replies()) as server:
        app = make_app(repo, server, permission_mode="yolo")

        async def run_before(pilot) -> None:
            await _turn(app, pilot)
            await send(app, pilot, "/diff")
            await wait_until(pilot, lambda: isinstance(app.screen, DiffView))
            await steady(app, pilot)

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_a_restore_question_names_the_first_files_and_counts_the_rest():
    from scout_tui.session.restore import LISTED_FILES, restore_lines
    from scout_tui.checkpoints.restores import Restore

    files = [{"status": "added", "path": f"f{n:02}.txt"} for n in range(LISTED_FILES + 3)]
    lines = restore_lines(Restore(0, "t", [f["path"] for f in files], "s", files=files), ["f00.txt"])
    assert lines[:2] == ["  remove: f00.txt", "  remove: f01.txt"] and len(lines) == LISTED_FILES + 3
    assert lines[LISTED_FILES] == "  and 3 more (/diff lists them)"
    assert lines[-1] == "Changed since by someone else, and overwritten: f00.txt"
    renamed = [{"status": "renamed", "path": "new.py", "old_path": "old.py"}]
    assert restore_lines(Restore(0, "t", ["new.py", "old.py"], "s", files=renamed), []) == [
        "  rename back: new.py → old.py"]
    assert restore_lines(Restore(0, "t", ["new.py", "old.py"], "s", redo=True, files=renamed), []) == [
        "  rename again: old.py → new.py"]
