"""Subagents' child sessions in the store (``Store.create_subagent``, schema 4) and wherever a
person looks at sessions: isolation from the parent, ``-c``, forks, the projection rebuilt, the
migration of a schema-3 file, the cost roll-up, ``/cost``, ``scout-tui sessions``, the sessions
pane and ACP's ``session/list``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from scout_tui.core.bus import MessageAssistant, MessageUser, ModelSwitch
from scout_tui.session.cost import cost_report
from scout_tui.store.event_log import Store
from scout_tui.store.opening import read_session
from scout_tui.store.projection import SCHEMA_VERSION
from scout_tui.widgets.session_rows import session_label


def text(role: str, words: str) -> dict:
    return {"role": role, "content": [{"type": "text", "text": words}]}


def turn(store: Store, sid: str, prompt: str, answer: str, cost: float) -> None:
    store.append(sid, MessageUser(text("user", prompt)))
    store.append(sid, MessageAssistant(text("assistant", answer), {"input_tokens": 100, "output_tokens": 10},
                                       "end_turn", "claude-test", cost=cost))


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Store, str, str, str]:
    """A parent with two turns, a subagent child (with a grandchild) started by its second turn."""
    store = Store(tmp_path / "s.db")
    parent = store.create_session(tmp_path)
    store.append(parent, ModelSwitch("anthropic", "claude-opus-4-1"))
    turn(store, parent, "first", "one", 0.10)
    turn(store, parent, "second", "two", 0.20)
    child = store.create_subagent(parent, call="toolu_1", agent="explore", description="find the parser")
    turn(store, child, "CHILD: find it", "it is in parse.py", 0.05)
    grandchild = store.create_subagent(child, call="toolu_2", agent="general", description="read parse.py")
    turn(store, grandchild, "GRANDCHILD", "read it", 0.01)
    return store, parent, child, grandchild


def test_a_child_shares_nothing_with_its_parent_and_is_never_the_latest(tree, tmp_path):
    store, parent, child, _ = tree
    info = store.session(child)
    assert (info.kind, info.call, info.agent, info.parent, info.title) == (
        "subagent", "toolu_1", "explore", parent, "find the parser")
    assert [m["content"][0]["text"] for m in store.messages(child)] == ["CHILD: find it", "it is in parse.py"]
    assert store.compactions(child) == [] and store.model_switch(child) is None
    assert store.latest(tmp_path).id == parent  # -c goes on with the person's session
    assert info.shown_title == "find the parser"  # not "fork of …"


def test_a_fork_of_a_child_is_a_normal_branch_of_its_transcript(tree):
    store, _, child, _ = tree
    branch = store.fork(child, 1)
    assert branch.kind is None and branch.parent == child
    assert [m["content"][0]["text"] for m in store.messages(branch.id)] == ["CHILD: find it"]


def test_rebuilding_the_projection_gives_the_same_rows(tree):
    store, *_ = tree
    before = store.projection_rows()
    store.rebuild()
    assert store.projection_rows() == before


def test_a_schema_3_store_migrates_with_no_child_and_loses_nothing(tmp_path):
    path = tmp_path / "old.db"
    store = Store(path)
    sid = store.create_session(tmp_path)
    turn(store, sid, "hello", "hi", 0.01)
    store.close()
    db = sqlite3.connect(path)  # the file as schema 3 left it: no kind, call, agent columns
    db.executescript("CREATE TABLE s3 AS SELECT id, parent, fork_at, cwd, title, created, updated, message_count,"
                     " input_tokens, output_tokens, deleted, title_inherited, cache_read_tokens, cache_write_tokens,"
                     " cost, compactions FROM sessions; DROP TABLE sessions; ALTER TABLE s3 RENAME TO sessions;"
                     " PRAGMA user_version = 3;")
    db.close()
    with Store(path) as store:
        info = store.session(sid)
        assert info.kind is None and info.title == "hello" and info.cost == pytest.approx(0.01)
        assert len(store.messages(sid)) == 2
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5


def test_the_subagents_cost_rolls_up_into_the_parents(tree):
    store, parent, child, _ = tree
    assert store.subagent_cost(parent) == pytest.approx(0.06)  # the child's and the grandchild's
    assert store.subagent_cost(child) == pytest.approx(0.01)
    assert store.subagent_cost(store.fork(parent, 2).id) == 0  # a fork counts its own
    opened = read_session(store, store.session(parent))
    assert opened.cost == pytest.approx(0.30) and opened.subagent_cost == pytest.approx(0.06)
    report = cost_report(store, parent, Path(store.session(parent).cwd), None)
    assert "What this session cost: $0.36" in report and "$0.06 of it by its subagents" in report
    assert "⚙ explore find the parser" in report


def test_the_sessions_pane_marks_a_child_with_its_agent(tree):
    store, parent, child, _ = tree
    line = "".join(text for text, _ in session_label(store.session(child), current=False, now=0, room=80))
    assert line.startswith("  ⚙ explore find the parser") and "$0.05" in line and "⑂" not in line


def test_scout_tui_sessions_lists_children_with_parent_and_kind(tree, tmp_path, monkeypatch):
    import subprocess
    import sys

    store, parent, child, grandchild = tree
    store.close()
    env = {"SCOUT_HOME": str(tmp_path), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    (tmp_path / "sessions.db").write_bytes((tmp_path / "s.db").read_bytes())
    for suffix in ("-wal", "-shm"):
        if (tmp_path / f"s.db{suffix}").exists():
            (tmp_path / f"sessions.db{suffix}").write_bytes((tmp_path / f"s.db{suffix}").read_bytes())
    run = lambda *args: subprocess.run([sys.executable, "-m", "scout_tui", "sessions", *args], cwd=tmp_path, env=env,
                                       capture_output=True, text=True, timeout=60)
    listed = json.loads(run("--json").stdout)
    by_id = {s["id"]: s for s in listed}
    assert (by_id[child]["parent"], by_id[child]["kind"], by_id[child]["call"], by_id[child]["agent"]) == (
        parent, "subagent", "toolu_1", "explore")
    assert by_id[parent]["kind"] is None and by_id[grandchild]["depth"] == 2
    shown = run().stdout
    assert "└ ⚙ explore: find the parser" in shown and "⚙ general: read parse.py" in shown


def test_the_cost_views_branch_table_marks_a_child_with_its_agent(tree):
    from rich.console import Console

    from scout_tui.widgets.cost_view import branch_table

    store, parent, child, _ = tree
    console = Console(width=120, record=True)
    console.print(branch_table(store.tree(Path(store.session(parent).cwd)), parent))
    shown = console.export_text()
    assert "⚙ explore find the parser" in shown and "⑂ at 0" not in shown
