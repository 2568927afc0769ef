"""Sessions as a tree: O(1) forks, forks of forks, valid fork points, titles, delete, tree order."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from scout_tui.core.bus import Event
from scout_tui.core.errors import ScoutError
from scout_tui.store.event_log import Store, valid_fork_point


def say(role: str, text: str) -> Event:
    return Event.of(f"message.{role}", {"message": {"role": role, "content": [{"type": "text", "text": text}]}})


def calls(*ids: str) -> Event:
    content = [{"type": "text", "text": "running"}] + [
        {"type": "tool_use", "id": i, "name": "bash", "input": {"command": "ls"}} for i in ids
    ]
    return Event.of("message.assistant", {"message": {"role": "assistant", "content": content}})


def results(*ids: str) -> Event:
    content = [{"type": "tool_result", "tool_use_id": i, "content": "ok", "is_error": False} for i in ids]
    return Event.of("message.user", {"message": {"role": "user", "content": content}})


def texts(store: Store, sid: str) -> list[str]:
    return [next((b.get("text") or b.get("tool_use_id") for b in m["content"]), "") for m in store.messages(sid)]


def conversation(store: Store, cwd: Path, n: int) -> str:
    sid = store.create_session(cwd)
    for i in range(n):
        store.append(sid, say("user" if i % 2 == 0 else "assistant", f"m{i}"))
    return sid


def row_counts(path: Path) -> tuple[int, int, int]:
    raw = sqlite3.connect(path)
    try:
        return tuple(raw.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("events", "sessions", "messages"))
    finally:
        raw.close()


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "sessions.db") as s:
        yield s


# -- fork -------------------------------------------------------------------------------


def test_fork_writes_the_same_rows_for_a_small_and_a_large_parent(store: Store, tmp_path: Path) -> None:
    written = []
    for size in (10, 1000):
        parent = conversation(store, tmp_path, size)
        before = row_counts(store.path)
        store.fork(parent, size // 2)
        after = row_counts(store.path)
        written.append(tuple(a - b for a, b in zip(after, before)))
    assert written == [(1, 1, 0), (1, 1, 0)]  # one event, one sessions row, no message rows


def test_fork_is_a_session_fork_event(store: Store, tmp_path: Path) -> None:
    parent = conversation(store, tmp_path, 4)
    branch = store.fork(parent, 2).id
    [(_, sid, type_, data, _)] = store.events(branch)
    assert (sid, type_, data) == (branch, "session.fork", {"parent": parent, "at": 2, "cwd": str(tmp_path.resolve())})


def test_fork_returns_the_branch_as_stored(store: Store, tmp_path: Path) -> None:
    parent = conversation(store, tmp_path, 4)
    branch = store.fork(parent, 2, title="try")
    assert branch == store.session(branch.id)
    assert (branch.parent, branch.fork_at, branch.message_count, branch.title) == (parent, 2, 2, "try")


def test_fork_without_a_point_shares_every_message(store: Store, tmp_path: Path) -> None:
    parent = conversation(store, tmp_path, 5)
    branch = store.fork(parent)
    assert store.messages(branch.id) == store.messages(parent)
    assert (branch.fork_at, branch.message_count) == (5, 5)


@pytest.mark.parametrize("at", [0, 4, 6])
def test_fork_shares_the_first_at_messages(store: Store, tmp_path: Path, at: int) -> None:
    parent = conversation(store, tmp_path, 6)
    branch = store.fork(parent, at)
    assert branch.fork_at == at and texts(store, branch.id) == [f"m{i}" for i in range(at)]


@pytest.mark.parametrize("at", [-1, 7])
def test_fork_point_outside_the_parents_messages_is_an_error(store: Store, tmp_path: Path, at: int) -> None:
    parent = conversation(store, tmp_path, 6)
    with pytest.raises(ScoutError, match=f"cannot fork session {parent[:8]} at message {at}: it has 6 messages"):
        store.fork(parent, at)
    assert [s.id for s in store.sessions()] == [parent]


def test_forks_of_forks_read_through_four_levels(store: Store, tmp_path: Path) -> None:
    root = conversation(store, tmp_path, 4)  # m0..m3
    chain, expected = [root], [f"m{i}" for i in range(4)]
    for depth in range(1, 5):
        at = len(expected) - 1  # drop the newest shared message each time
        branch = store.fork(chain[-1], at).id
        store.append(branch, say("user", f"d{depth}a"))
        store.append(branch, say("assistant", f"d{depth}b"))
        expected = expected[:at] + [f"d{depth}a", f"d{depth}b"]
        chain.append(branch)
        assert texts(store, branch) == expected
    assert texts(store, root) == ["m0", "m1", "m2", "m3"]  # ancestors untouched
    assert [s.id for s in store.ancestry(chain[-1])] == chain
    assert expected == ["m0", "m1", "m2", "d1a", "d2a", "d3a", "d4a", "d4b"]
    assert store.session(chain[-1]).message_count == 8


def test_appending_to_a_parent_later_does_not_change_its_branch(store: Store, tmp_path: Path) -> None:
    parent = conversation(store, tmp_path, 2)
    branch = store.fork(parent).id
    store.append(parent, say("user", "after the fork"))
    assert texts(store, branch) == ["m0", "m1"]


def test_fork_of_an_unknown_session_is_an_error(store: Store) -> None:
    with pytest.raises(ScoutError, match="cannot fork: no session nope"):
        store.fork("nope")


def test_fork_defaults_to_the_parents_directory(store: Store, tmp_path: Path) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    parent = conversation(store, here, 1)
    assert store.fork(parent).cwd == str(here.resolve())
    assert store.fork(parent, cwd=there).cwd == str(there.resolve())


# -- valid fork points --------------------------------------------------------------------


def tool_session(store: Store, cwd: Path, *, answered: bool = True) -> str:
    """0 user, 1 assistant calling t1 t2, 2 user results, 3 assistant, (or ending at 1 unanswered)."""
    sid = store.create_session(cwd)
    store.append(sid, say("user", "list files"))
    store.append(sid, calls("t1", "t2"))
    if answered:
        store.append(sid, results("t1", "t2"))
        store.append(sid, say("assistant", "done"))
    return sid


def test_fork_right_after_tool_calls_moves_forward_to_take_their_results(store: Store, tmp_path: Path) -> None:
    parent = tool_session(store, tmp_path)
    branch = store.fork(parent, 2)  # would end with the assistant's tool_use blocks
    assert branch.fork_at == 3
    assert texts(store, branch.id) == ["list files", "running", "t1"]


def test_fork_after_unanswered_tool_calls_moves_back_before_them(store: Store, tmp_path: Path) -> None:
    parent = tool_session(store, tmp_path, answered=False)  # calls still running, or cut off
    branch = store.fork(parent)
    assert branch.fork_at == 1 and texts(store, branch.id) == ["list files"]


@pytest.mark.parametrize("at", [0, 1, 3, 4])
def test_fork_points_that_split_no_tool_call_stay(store: Store, tmp_path: Path, at: int) -> None:
    parent = tool_session(store, tmp_path)
    assert store.fork(parent, at).fork_at == at


def test_fork_point_is_checked_through_the_parents_ancestry(store: Store, tmp_path: Path) -> None:
    grandparent = tool_session(store, tmp_path)
    parent = store.fork(grandparent, 4).id
    store.append(parent, say("user", "more"))
    assert store.fork(parent, 2).fork_at == 3  # the tool_use lives in the grandparent


def test_valid_fork_point_reads_only_messages_next_to_the_point() -> None:
    messages = [say("user", "q").data["message"], calls("t").data["message"], results("t").data["message"]]
    messages += [say("assistant" if i % 2 else "user", "x").data["message"] for i in range(10_000)]
    read: list[int] = []

    def message_at(i: int) -> dict:
        read.append(i)
        return messages[i]

    assert valid_fork_point(message_at, len(messages), 2) == 3
    assert valid_fork_point(message_at, len(messages), None) == len(messages)
    assert max(read) == len(messages) - 1 and len(read) <= 4


# -- titles, delete, restore ---------------------------------------------------------------


def test_a_branch_carries_its_parents_title_until_its_own_first_user_message(store: Store, tmp_path: Path) -> None:
    parent = conversation(store, tmp_path, 2)
    store.rename(parent, "Chosen ✍")
    branch = store.fork(parent, 1).id
    assert store.session(branch).title == "Chosen ✍"
    store.append(branch, say("assistant", "an answer names nothing"))
    store.append(branch, say("user", "Une autre idée : ü"))
    assert store.session(branch).title == "Une autre idée : ü"
    assert store.session(parent).title == "Chosen ✍"


def test_a_branch_s_title_is_marked_inherited_until_its_own_prompt_or_a_rename(store: Store, tmp_path: Path) -> None:
    parent = conversation(store, tmp_path, 2)
    branch = store.fork(parent, 2).id
    assert store.session(branch).title_inherited and not store.session(parent).title_inherited
    store.append(branch, results())  # a user message without text names nothing
    assert store.session(branch).title_inherited
    store.append(branch, say("user", "a new direction"))
    assert (store.session(branch).title, store.session(branch).title_inherited) == ("a new direction", False)
    renamed = store.fork(parent, 2).id
    store.rename(renamed, "chosen")
    store.append(renamed, say("user", "not the title"))
    assert (store.session(renamed).title, store.session(renamed).title_inherited) == ("chosen", False)
    store.rebuild()
    assert [store.session(sid).title_inherited for sid in (parent, branch, renamed)] == [False, False, False]
    assert store.session(store.fork(parent, 1).id).title_inherited


def test_a_fork_given_a_title_keeps_it(store: Store, tmp_path: Path) -> None:
    branch = store.fork(conversation(store, tmp_path, 2), title="experiment").id
    store.append(branch, say("user", "not the title"))
    assert store.session(branch).title == "experiment"


def test_rename_makes_one_line_and_refuses_blank_titles(store: Store, tmp_path: Path) -> None:
    sid = conversation(store, tmp_path, 1)
    store.rename(sid, "  two\nlines\t here ")
    assert store.session(sid).title == "two lines here"
    assert store.events(sid)[-1][2:4] == ("session.rename", {"title": "two lines here"})
    with pytest.raises(ScoutError, match="blank"):
        store.rename(sid, " \n ")
    with pytest.raises(ScoutError, match="no session nope"):
        store.rename("nope", "x")


def test_a_session_whose_newest_turn_ended_in_an_error_is_failed(store: Store, tmp_path: Path) -> None:
    sid = conversation(store, tmp_path, 2)
    assert store.session(sid).last_stop_reason is None and not store.session(sid).failed
    store.append(sid, Event.of("turn.end", {"stop_reason": "end_turn"}))
    store.append(sid, say("user", "once more"))
    store.append(sid, Event.of("error", {"message": "HTTP 401: invalid x-api-key", "kind": "auth"}))
    store.append(sid, Event.of("turn.end", {"stop_reason": "error"}))
    [listed] = store.sessions(tmp_path)
    assert listed.failed and listed.last_stop_reason == "error" and store.session(sid).failed
    branch = store.fork(sid, 2)  # the parent's failed turn is not the branch's
    assert not branch.failed and not store.session(branch.id).failed
    store.append(sid, Event.of("turn.end", {"stop_reason": "interrupted"}))  # a later turn that did not fail
    assert store.session(sid).last_stop_reason == "interrupted" and not store.session(sid).failed


def test_delete_hides_through_an_event_and_restore_brings_it_back(store: Store, tmp_path: Path) -> None:
    sid = conversation(store, tmp_path, 3)
    rows = row_counts(store.path)
    store.delete(sid)
    assert store.sessions(tmp_path) == [] and store.tree(tmp_path) == []
    assert row_counts(store.path) == (rows[0] + 1, rows[1], rows[2])  # an event more, no row less
    assert store.session(sid).deleted and len(store.messages(sid)) == 3
    store.restore(sid)
    assert [s.id for s in store.sessions(tmp_path)] == [sid]
    with pytest.raises(ScoutError, match="no session nope"):
        store.delete("nope")


def test_metadata_records_directory_times_and_counts(store: Store, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path)
    created = store.session(sid).created
    store.append(sid, say("user", "hello"))
    info = store.session(sid)
    assert info.cwd == str(tmp_path.resolve()) and info.title == "hello" and info.message_count == 1
    assert info.created == created < info.updated


# -- tree -----------------------------------------------------------------------------------


def test_tree_nests_branches_under_parents_newest_sibling_first(store: Store, tmp_path: Path) -> None:
    a = conversation(store, tmp_path, 2)
    a1 = store.fork(a, 1).id
    a2 = store.fork(a, 2).id
    a1x = store.fork(a1).id
    b = conversation(store, tmp_path, 1)
    store.append(a1, say("assistant", "a1 is now the newest child of a"))
    shown = [(info.id, depth) for info, depth in store.tree(tmp_path)]
    assert shown == [(b, 0), (a, 0), (a1, 1), (a1x, 2), (a2, 1)]


def test_tree_shows_a_branch_of_a_hidden_or_elsewhere_parent_as_a_root(store: Store, tmp_path: Path) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    hidden = conversation(store, here, 2)
    orphan = store.fork(hidden).id
    elsewhere = conversation(store, there, 2)
    visitor = store.fork(elsewhere, cwd=here).id
    store.delete(hidden)
    assert [(i.id, d) for i, d in store.tree(here)] == [(visitor, 0), (orphan, 0)]
    assert [(i.id, d) for i, d in store.tree(here, include_deleted=True)] == [(visitor, 0), (hidden, 0), (orphan, 1)]
    everything = {i.id: d for i, d in store.tree()}
    assert everything[visitor] == 1 and everything[elsewhere] == 0


def test_messages_since_reads_the_tail_through_the_ancestry(tmp_path):
    from scout_tui.core.bus import Event
    from scout_tui.store.event_log import Store

    store = Store(tmp_path / "s.db")
    root = store.create_session(tmp_path)
    for i in range(6):
        role = "user" if i % 2 == 0 else "assistant"
        store.append(root, Event.of(f"message.{role}", {"message": {"role": role, "content": [{"type": "text", "text": f"m{i}"}]}}))
    branch = store.fork(root, 4).id
    store.append(branch, Event.of("message.user", {"message": {"role": "user", "content": [{"type": "text", "text": "b4"}]}}))
    texts = lambda ms: [m["content"][0]["text"] for m in ms]
    assert texts(store.messages(branch, since=3)) == ["m3", "b4"]
    assert texts(store.messages(branch, since=0)) == texts(store.messages(branch))
    assert texts(store.messages(root, since=5)) == ["m5"] and store.messages(root, since=9) == []
