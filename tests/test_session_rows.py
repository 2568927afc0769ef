"""The sessions pane's rows as text, at every width: only the title is ever cut (ending in "…");
every other part is shown whole or left out whole, the least important first."""

from __future__ import annotations

from dataclasses import replace

import pytest
from rich.cells import cell_len

from scout_tui.widgets.session_rows import (CheckpointEntry, CompactionEntry, checkpoint_entries, checkpoint_label,
                                           compaction_label, folded_note, session_label)
from tests.session_tree_helpers import NOW, info

ROOM = range(0, 121)
"""Every width a row is fitted to in these tests, in cells: from none to wider than any row."""

SESSIONS = {
    "root with spending": replace(info("r", "Refactor the config loader to read layered files", 25 * 60, 25),
                                  input_tokens=110_000, output_tokens=10_000, cost=0.4213),
    "fork with tokens only": replace(info("f", "Try TOML tables", 3 * 3600, 4, parent="r", fork_at=2),
                                     input_tokens=900, output_tokens=50),
    "short title": info("s", "hi", 10, 1),
    "untitled": info("u", "", 2 * 86_400, 0),
    "wide characters": info("w", "設定ローダーを書き直す 🐛 修正", 600, 12, parent="r", fork_at=10),
    "failed -p run": replace(info("p", "summarise the README", 120, 1), last_stop_reason="error"),
    "fork without a prompt of its own": replace(info("n", "Refactor the config loader to read layered files", 60, 25,
                                                     parent="r", fork_at=25), title_inherited=True),
}

FOLDED = {"not folded": "", "folded": folded_note(2, 1)}


def check_row(parts: list[tuple[str, str]], whole: list[tuple[str, str]], room: int) -> None:
    """``parts`` fit in ``room`` cells, and each is a part of the ``whole`` row (the same row
    with room for everything), but for the title, which may be its head ending in "…", and the
    fork mark ``⑂ at 3 fork of ``, which may leave out its fork point and its "fork of"."""
    assert cell_len("".join(text for text, _ in parts)) <= room
    whole_title = next(text for text, role in whole if role == "title" and text.strip() not in ("", "●"))
    mark = "".join(text for text, role in whole if role == "fork")  # "⑂ at 3 fork of " at most
    point = mark.removeprefix("⑂ ").removesuffix("fork of ")
    of = "fork of " if mark.endswith("fork of ") else ""
    fork_marks = {"⑂ " + at + fork_of for at in ("", point) for fork_of in ("", of)}
    for text, role in parts:
        if role == "title" and text not in ("● ", "  "):
            assert text == whole_title or (text.endswith("…") and whole_title.startswith(text[:-1])), (text, room)
        elif role == "fork":
            assert text in fork_marks, (text, room)
        elif role == "toggle":
            assert text in {whole[-1][0], "  ▶"}, (text, room)
        else:
            assert (text, role) in whole, (text, room)


@pytest.mark.parametrize("folded", FOLDED.values(), ids=FOLDED.keys())
@pytest.mark.parametrize("session", SESSIONS.values(), ids=SESSIONS.keys())
def test_at_every_width_a_row_fits_and_no_part_but_the_title_is_cut(session, folded):
    whole = session_label(session, current=True, now=NOW, room=10_000, folded=folded)
    for room in ROOM:
        check_row(session_label(session, current=True, now=NOW, room=room, folded=folded), whole, room)


def test_a_wide_row_shows_every_part():
    row = session_label(SESSIONS["root with spending"], current=True, now=NOW, room=200, folded=folded_note(2, 0))
    assert "".join(text for text, _ in row) == (
        "● Refactor the config loader to read laye…  25 msgs · 25m ago · 120k tok · $0.42  ▶ 2 branches")


@pytest.mark.parametrize(("room", "shown"), [
    (52, "  Refactor th…  25 msgs · 25m ago · 120k tok · $0.42"),
    (44, "  Refactor the c…  25 msgs · 25m ago · $0.42"),  # the tokens beside the dollars go first
    (38, "  Refactor the confi…  25m ago · $0.42"),  # then the message count
    (30, "  Refactor the confi…  25m ago"),  # then the dollars: the title and its age stay
    (20, "  Refactor the conf…"),
])
def test_a_narrow_row_keeps_the_title_and_age_and_leaves_out_counts_whole(room, shown):
    row = session_label(SESSIONS["root with spending"], current=False, now=NOW, room=room)
    assert "".join(text for text, _ in row) == shown


def test_a_narrow_fork_keeps_its_mark_and_leaves_out_its_fork_point_whole():
    fork = SESSIONS["fork with tokens only"]
    assert "".join(t for t, _ in session_label(fork, current=False, now=NOW, room=42)) == (
        "  ⑂ at 2 Try TOML tables  3h ago · 950 tok")
    assert "".join(t for t, _ in session_label(fork, current=False, now=NOW, room=26)) == "  ⑂ Try TOML tabl…  3h ago"


def test_wide_characters_are_counted_as_the_cells_they_take():
    row = session_label(SESSIONS["wide characters"], current=False, now=NOW, room=30)
    text = "".join(t for t, _ in row)
    assert cell_len(text) <= 30 and text.endswith("  10m ago")


def test_a_compaction_leaf_leaves_out_its_parts_whole_at_every_width():
    entry = CompactionEntry("b", 69, 57, 142_000, 9_000, "auto")
    whole = compaction_label(entry)
    pieces = ["⊟", " compacted", " at msg 57", ": 142k → 9.0k tokens", " (auto)"]
    assert whole == "".join(pieces)
    for room in ROOM:
        text = compaction_label(entry, room)
        assert cell_len(text) <= room
        kept = [piece for piece in pieces if piece in text]
        assert "".join(kept) == text, (room, text)


def test_a_checkpoint_leaf_cuts_its_file_names_first_and_keeps_undone_longest_at_every_width():
    entry = CheckpointEntry("b", 3, ("notes.txt", "scout_tui/tui/app.py"), undone=True)
    assert checkpoint_label(entry) == "✎ msg 3: 2 files · notes.txt, app.py (undone)"
    assert checkpoint_label(entry, 40) == "✎ msg 3: 2 files · notes.txt,… (undone)"
    assert checkpoint_label(entry, 25) == "✎ msg 3: 2 files (undone)"
    assert checkpoint_label(entry, 24) == "✎ msg 3 (undone)"
    assert checkpoint_label(CheckpointEntry("b", 12, ("a.py",)), 60) == "✎ msg 12: 1 file · a.py"
    for room in ROOM:
        text = checkpoint_label(entry, room)
        assert cell_len(text) <= room
        assert text == "" or (text.startswith("✎ msg 3") and text.endswith(" (undone)") == (room >= 16)), (room, text)


def test_checkpoint_leaves_are_the_checkpoint_events_marked_undone_as_their_restores_say():
    files = [{"status": "renamed", "path": "new.py", "old_path": "old.py"}]
    events = [("checkpoint", {"turn": 0, "files": files}), ("checkpoint", {"turn": 4, "files": []}),
              ("checkpoint.restore", {"turn": 4, "redo": False})]
    assert checkpoint_entries("s", events) == [CheckpointEntry("s", 0, ("new.py",)), CheckpointEntry("s", 4, (), True)]
    redone = [*events, ("checkpoint.restore", {"turn": 4, "redo": True})]
    assert [e.undone for e in checkpoint_entries("s", redone)] == [False, False]


def test_a_branch_without_a_prompt_of_its_own_reads_as_a_fork_of_its_parents_title():
    fork = SESSIONS["fork without a prompt of its own"]
    assert "".join(t for t, _ in session_label(fork, current=False, now=NOW, room=60)) == (
        "  ⑂ at 25 fork of Refactor the config loa…  25 msgs · 1m ago")
    # Narrower, "fork of" stays while the fork point, the age and the title's end give way.
    assert "".join(t for t, _ in session_label(fork, current=False, now=NOW, room=28)) == (
        "  ⑂ fork of Refactor the co…")
    own = replace(fork, title="Now with includes", title_inherited=False)
    assert "".join(t for t, _ in session_label(own, current=False, now=NOW, room=60)) == (
        "  ⑂ at 25 Now with includes  25 msgs · 1m ago")


def test_a_session_whose_newest_turn_failed_says_so_before_its_figures():
    failed = SESSIONS["failed -p run"]
    row = session_label(failed, current=False, now=NOW, room=60)
    assert "".join(t for t, _ in row) == "  summarise the README  failed · 1 msg · 2m ago"
    assert ("failed", "failed") in row  # its own role: the tree draws it in the error colour
    # Narrower, "failed" stays while the age and the message count give way.
    assert "".join(t for t, _ in session_label(failed, current=False, now=NOW, room=24)) == "  summarise the…  failed"
    done = replace(failed, last_stop_reason="end_turn")
    assert "failed" not in "".join(t for t, _ in session_label(done, current=False, now=NOW, room=60))
