"""Opening a session for a front end (``sessions.open_session``): which session, and what of it
the TUI and headless ``-p`` both read, from a real store file."""

from __future__ import annotations

from pathlib import Path

import pytest

from scout_tui.core.bus import Event
from scout_tui.core.errors import ScoutError
from scout_tui.store.opening import OpenedSession, open_session, resolve_session
from scout_tui.store.event_log import Store


def say(role: str, text: str) -> Event:
    return Event.of(f"message.{role}", {"message": {"role": role, "content": [{"type": "text", "text": text}]}})


def answer(text: str, *, model: str = "claude-sonnet-4-5", tokens: int = 100, cost: float | None = 0.01) -> Event:
    usage = {"input_tokens": tokens, "output_tokens": 10, "cache_read_tokens": 5, "cache_write_tokens": 0}
    return Event.of("message.assistant", {"message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
                                          "usage": usage, "stop_reason": "end_turn", "model": model, "cost": cost})


def texts(messages: list[dict]) -> list[str]:
    return [m["content"][0]["text"] for m in messages]


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "sessions.db") as s:
        yield s


@pytest.fixture
def here(tmp_path: Path) -> Path:
    path = tmp_path / "here"
    path.mkdir()
    return path


def conversation(store: Store, cwd: Path, exchanges: int, **priced) -> str:
    sid = store.create_session(cwd)
    for i in range(exchanges):
        store.append(sid, say("user", f"q{i}"))
        store.append(sid, answer(f"a{i}", **priced))
    return sid


def test_nothing_named_is_a_new_session_and_stores_nothing(store: Store, here: Path) -> None:
    assert open_session(store, here) == OpenedSession()
    assert OpenedSession().id is None and OpenedSession().complete
    assert store.sessions() == []


def test_resume_by_a_unique_prefix_reads_the_whole_conversation(store: Store, here: Path) -> None:
    sid = conversation(store, here, 2)
    opened = open_session(store, here, resume=sid[:6])
    assert opened.id == sid and opened.info == store.session(sid)
    assert texts(opened.messages) == ["q0", "a0", "q1", "a1"] and opened.complete


def test_resume_opens_a_deleted_session_it_names(store: Store, here: Path) -> None:
    sid = conversation(store, here, 1)
    store.delete(sid)
    assert open_session(store, here, resume=sid).id == sid


def test_resume_of_an_unknown_id_is_an_error(store: Store, here: Path) -> None:
    conversation(store, here, 1)
    with pytest.raises(ScoutError, match="no session matches 'ffff0000'"):
        open_session(store, here, resume="ffff0000")


def test_resume_of_a_prefix_too_short_says_how_long_one_must_be(store: Store, here: Path) -> None:
    sid = conversation(store, here, 1)
    with pytest.raises(ScoutError, match="a prefix needs at least 4 characters"):
        open_session(store, here, resume=sid[:2])


def test_latest_opens_the_newest_live_session_of_the_directory(store: Store, here: Path, tmp_path: Path) -> None:
    old = conversation(store, here, 1)
    new = conversation(store, here, 1)
    conversation(store, tmp_path, 1)  # newer, elsewhere
    assert open_session(store, here, latest=True).id == new
    store.delete(new)
    assert open_session(store, here, latest=True).id == old


def test_latest_in_a_directory_without_sessions_is_a_new_session(store: Store, here: Path, tmp_path: Path) -> None:
    conversation(store, tmp_path, 1)
    assert open_session(store, here, latest=True) == OpenedSession()


def test_fork_makes_a_branch_in_this_directory_and_says_where_it_forked(store: Store, here: Path,
                                                                         tmp_path: Path) -> None:
    parent = store.create_session(tmp_path)
    store.append(parent, say("user", "list files"))
    use = {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}
    store.append(parent, Event.of("message.assistant", {"message": {"role": "assistant", "content": [use]}}))
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "a.txt", "is_error": False}
    store.append(parent, Event.of("message.user", {"message": {"role": "user", "content": [result]}}))
    opened = open_session(store, here, fork=(parent[:8], 2))  # 2 would split the call from its result
    assert (opened.info.parent, opened.info.fork_at, opened.info.cwd) == (parent, 3, str(here.resolve()))
    assert len(opened.messages) == 3 and opened.info == store.session(opened.id)


@pytest.mark.parametrize("at", [-1, 3])
def test_a_fork_point_outside_the_conversation_is_an_error_and_makes_no_branch(store: Store, here: Path,
                                                                                at: int) -> None:
    parent = conversation(store, here, 1)
    with pytest.raises(ScoutError, match=f"cannot fork session {parent[:8]} at message {at}: it has 2 messages"):
        resolve_session(store, here, fork=(parent, at))
    assert [s.id for s in store.sessions()] == [parent]


def test_tail_reads_only_the_newest_messages(store: Store, here: Path) -> None:
    sid = conversation(store, here, 5)
    opened = open_session(store, here, resume=sid, tail=3)
    assert (opened.since, texts(opened.messages), opened.complete) == (7, ["a3", "q4", "a4"], False)
    whole = open_session(store, here, resume=sid, tail=10)
    assert (whole.since, len(whole.messages), whole.complete) == (0, 10, True)


def test_tokens_and_cost_count_the_branch_with_its_shared_part(store: Store, here: Path) -> None:
    parent = conversation(store, here, 3, tokens=100, cost=0.01)  # messages 0-5
    branch = store.fork(parent, 2).id
    store.append(branch, say("user", "again"))
    store.append(branch, answer("other", tokens=200, cost=0.02))
    opened = open_session(store, here, resume=branch)
    assert opened.tokens == (105 + 205, 20)  # input counts cache reads; the parent's a1, a2 not shared
    assert opened.cost == pytest.approx(0.03)


def test_cost_is_none_when_nothing_was_priced(store: Store, here: Path) -> None:
    sid = conversation(store, here, 1, model="my-local", cost=None)
    opened = open_session(store, here, resume=sid)
    assert opened.cost is None and opened.tokens == (105, 10)


def test_compactions_in_force_come_along_and_no_window_does(store: Store, here: Path) -> None:
    sid = conversation(store, here, 2)
    usage = {"input_tokens": 900, "output_tokens": 100, "cache_read_tokens": 0, "cache_write_tokens": 0}
    store.append(sid, Event.of("session.compacted", {
        "at": 2, "count": 4, "summary": "the summary", "model": "claude-haiku-4-5", "tokens_before": 9_000,
        "tokens_after": 2_000, "usage": usage, "cost": 0.001, "focus": "", "by": "user"}))
    store.append(sid, Event.of("prompt.compacted", {"context_window": 32_000}))
    opened = open_session(store, here, resume=sid)
    assert [c["summary"] for c in opened.compactions] == ["the summary"]
    # The window a request was fitted to is the model's and its server's, never the session's.
    assert not hasattr(opened, "window")
    undone = open_session(store, here, fork=(sid, 4))  # a fork at the compaction's count undoes it
    assert undone.compactions == []
