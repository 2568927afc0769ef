"""A store written by schema 1 opens with the current code and keeps every session and message.

``fixtures/store_v1.db`` was made by the schema-1 store (commit 6d3a707) and checkpointed into
one file: six sessions in two directories, a fork and a fork of that fork, tool_use and
tool_result messages, an incomplete message, a rename, a deletion, non-ASCII text.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from scout_tui.core.errors import ScoutError
from scout_tui.store.event_log import SCHEMA_VERSION, Store

FIXTURE = Path(__file__).parent / "fixtures" / "store_v1.db"
REPO = "/home/ana/projects/café-app"
OTHER = "/home/ana/projects/other"

# title -> (cwd, parent title, fork_at, deleted, first text of each message in order)
EXPECTED = {
    "Fix the flaky test — ünïcødé 😀 日本語": (REPO, None, None, False, [
        "Fix the flaky test — ünïcødé 😀 日本語", "Let me run it.", "toolu_01",
        "The test compares accented text; normalise with NFC.", "Please apply the fix", "Done ✓"]),
    "Instead: skip the test on Windows (ß)": (REPO, "Fix the flaky test — ünïcødé 😀 日本語", 4, False, [
        "Fix the flaky test — ünïcødé 😀 日本語", "Let me run it.", "toolu_01",
        "The test compares accented text; normalise with NFC.",
        "Instead: skip the test on Windows (ß)", "Skipped with a marker."]),
    "Also on macOS": (REPO, "Instead: skip the test on Windows (ß)", 5, False, [
        "Fix the flaky test — ünïcødé 😀 日本語", "Let me run it.", "toolu_01",
        "The test compares accented text; normalise with NFC.",
        "Instead: skip the test on Windows (ß)", "Also on macOS", "Refactoring the"]),
    "Docs: README ✍": (REPO, None, None, False, ["Write the README", "# README\n\n```sh\npip install café\n```"]),
    "chosen title": (OTHER, None, None, False, ["hello from elsewhere"]),
    "a session then deleted": (OTHER, None, None, True, ["a session then deleted"]),
}


def first_text(message: dict) -> str:
    block = message["content"][0]
    return block.get("text") or block.get("tool_use_id")


def raw_rows(path: Path, sql: str) -> list[tuple]:
    db = sqlite3.connect(path)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


@pytest.fixture
def v1_copy(tmp_path: Path) -> Path:
    path = tmp_path / "sessions.db"
    shutil.copyfile(FIXTURE, path)
    assert raw_rows(path, "PRAGMA user_version") == [(1,)]
    return path


def test_a_schema_1_store_opens_with_every_session_and_message(v1_copy: Path) -> None:
    with Store(v1_copy) as store:
        sessions = store.sessions(include_deleted=True)
        by_id = {s.id: s for s in sessions}
        assert sorted(s.title for s in sessions) == sorted(EXPECTED)
        for info in sessions:
            cwd, parent_title, fork_at, deleted, firsts = EXPECTED[info.title]
            assert (info.cwd, info.fork_at, info.deleted, info.message_count) == (cwd, fork_at, deleted, len(firsts))
            assert (by_id[info.parent].title if info.parent else None) == parent_title
            assert [first_text(m) for m in store.messages(info.id)] == firsts
        [cut] = [s for s in sessions if s.title == "Also on macOS"]
        assert store.messages(cut.id)[-1]["incomplete"] is True
        [root] = [s for s in sessions if s.title.startswith("Fix the flaky")]
        assert (root.input_tokens, root.output_tokens) == (462, 60)
    assert raw_rows(v1_copy, "PRAGMA user_version") == [(SCHEMA_VERSION,)]


def test_migration_keeps_events_and_its_projection_equals_a_rebuild(v1_copy: Path) -> None:
    events_before = raw_rows(v1_copy, "SELECT * FROM events ORDER BY id")
    with Store(v1_copy) as store:
        migrated = store.projection_rows()
        store.rebuild()
        assert store.projection_rows() == migrated
    assert raw_rows(v1_copy, "SELECT * FROM events ORDER BY id") == events_before
    assert len(events_before) == 26


def test_a_migrated_store_takes_new_forks_of_old_sessions(v1_copy: Path) -> None:
    with Store(v1_copy) as store:
        [old_fork] = [s for s in store.sessions() if s.title == "Also on macOS"]
        branch = store.fork(old_fork.id, 2)  # right after message 1's tool call: takes its results
        assert branch.fork_at == 3
        assert [(i.id, i.title, d) for i, d in store.tree(REPO)][-1] == (branch.id, "Also on macOS", 3)


def test_a_failed_migration_leaves_the_file_as_it_was(v1_copy: Path) -> None:
    db = sqlite3.connect(v1_copy)
    db.execute("INSERT INTO events (session_id, type, data, created) VALUES ('x', 'session.create', '{not json', 1e10)")
    db.commit()
    db.close()
    with pytest.raises(ScoutError, match=r"sessions\.db: cannot migrate session store from schema 1 to 2"):
        Store(v1_copy).sessions()
    assert raw_rows(v1_copy, "PRAGMA user_version") == [(1,)]
    assert len(raw_rows(v1_copy, "SELECT * FROM sessions")) == 6


def test_a_store_from_a_newer_scout_tui_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(ScoutError, match=f"future.db: session store has schema version {SCHEMA_VERSION + 1}"):
        Store(path).sessions()
