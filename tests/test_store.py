"""The session store: append-only events, projections equal to their replay, lookups."""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scout_tui.core.bus import Bus, Event
from scout_tui.core.errors import ScoutError
from scout_tui.core.messages import tool_uses
from scout_tui.store.projection import title_of
from scout_tui.store.event_log import SCHEMA_VERSION, Store


def user(text: str) -> Event:
    return Event.of("message.user", {"message": {"role": "user", "content": [{"type": "text", "text": text}]}})


def assistant(text: str, usage: dict | None = None) -> Event:
    message = {"role": "assistant", "content": [{"type": "text", "text": text}]}
    return Event.of(
        "message.assistant",
        {"message": message, "usage": usage or {}, "stop_reason": "end_turn", "model": "m", "interrupted": False},
    )


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "sessions.db") as s:
        yield s


def test_default_path_is_under_scout_home(tmp_home: Path) -> None:
    assert Store().path == tmp_home / ".scout-data" / "sessions.db"


def test_database_uses_wal_and_the_current_schema_version(store: Store, tmp_path: Path) -> None:
    store.create_session(tmp_path)
    raw = sqlite3.connect(store.path)
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5
    raw.close()


def test_connection_opens_lazily(tmp_path: Path) -> None:
    Store(tmp_path / "lazy" / "sessions.db")
    assert not (tmp_path / "lazy").exists()


@pytest.mark.parametrize("statement", ["UPDATE events SET type = 'x'", "DELETE FROM events"])
def test_events_are_append_only(store: Store, tmp_path: Path, statement: str) -> None:
    sid = store.create_session(tmp_path)
    store.append(sid, user("hi"))
    raw = sqlite3.connect(store.path)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        raw.execute(statement)
    raw.close()
    assert [e[2] for e in store.events(sid)] == ["session.create", "message.user"]


def test_messages_are_visible_to_another_store_before_close(store: Store, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path)
    store.append(sid, user("first"))
    store.append(sid, assistant("second"))
    with Store(store.path) as other:
        assert [m["role"] for m in other.messages(sid)] == ["user", "assistant"]
        assert other.messages(sid)[1]["content"] == [{"type": "text", "text": "second"}]


def test_hostile_text_round_trips_exactly(store: Store, tmp_path: Path) -> None:
    text = "nul\x00 cr\r\n ansi\x1b[31mred\x1b[0m emoji 😀👩‍👩‍👧 lone \udcff quote ' \" ; DROP TABLE events; --"
    content = [
        {"type": "text", "text": text},
        {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": text, "n": 1.5}},
    ]
    sid = store.create_session(tmp_path)
    store.append(sid, Event.of("message.assistant", {"message": {"role": "assistant", "content": content}}))
    with Store(store.path) as other:
        assert other.messages(sid) == [{"role": "assistant", "content": content}]


def test_transient_events_are_not_stored(store: Store, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path)
    assert store.append(sid, Event.of("message.delta", {"kind": "text", "text": "x"})) is None
    assert store.append(sid, Event.of("tool.output", {"id": "t", "text": "x"})) is None
    assert [e[2] for e in store.events(sid)] == ["session.create"]


def test_other_events_are_stored_without_touching_messages(store: Store, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path)
    store.append(sid, user("go"))
    before = store.session(sid)
    event_id = store.append(sid, Event.of("tool.end", {"id": "t", "name": "bash", "content": "ok", "is_error": False}))
    assert event_id is not None
    assert store.events(sid)[-1][:4] == (event_id, sid, "tool.end", {"id": "t", "name": "bash", "content": "ok", "is_error": False})
    assert store.session(sid) == before and len(store.messages(sid)) == 1


def test_bus_subscriber_records_the_session(store: Store, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path)
    bus = Bus()
    bus.on("*", store.subscriber(sid))
    bus.emit(user("via bus"))
    bus.emit(Event.of("message.delta", {"kind": "text", "text": "v"}))
    bus.emit(assistant("answer"))
    assert [e[2] for e in store.events(sid)] == ["session.create", "message.user", "message.assistant"]


def test_appending_to_an_unknown_session_is_an_error(store: Store) -> None:
    with pytest.raises(ScoutError, match="no session nope"):
        store.append("nope", user("x"))


def test_title_comes_from_the_first_user_messages_first_line(store: Store, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path)
    store.append(sid, user("\n  Fix the flaky test in ci  \nmore detail"))
    store.append(sid, user("a later message"))
    assert store.session(sid).title == "Fix the flaky test in ci"
    long = store.create_session(tmp_path)
    store.append(long, user("x" * 200))
    assert len(store.session(long).title) <= 60 and store.session(long).title.endswith("…")
    named = store.create_session(tmp_path, title="chosen")
    store.append(named, user("not the title"))
    assert store.session(named).title == "chosen"
    store.append(named, Event.of("session.rename", {"title": "renamed"}))
    assert store.session(named).title == "renamed"


def test_token_totals_add_cache_tokens_to_input(store: Store, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path)
    store.append(sid, user("q"))
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 100, "cache_write_tokens": 1000}
    store.append(sid, assistant("a", usage))
    store.append(sid, user("q2"))
    store.append(sid, assistant("a2", {"input_tokens": 1, "output_tokens": 2}))
    info = store.session(sid)
    assert (info.input_tokens, info.output_tokens, info.message_count) == (1111, 7, 4)


def test_latest_picks_the_newest_session_of_this_directory(store: Store, tmp_path: Path) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir(), there.mkdir()
    old = store.create_session(here)
    new = store.create_session(here)
    store.append(old, user("old one updated last"))
    store.create_session(there)
    assert store.latest(here) == store.session(old)
    assert store.latest(str(here / ".." / "here")).id == old  # compared as resolved paths
    store.append(old, Event.of("session.delete", {}))
    assert store.latest(here).id == new
    assert [s.id for s in store.sessions(here)] == [new]
    assert {s.id for s in store.sessions(here, include_deleted=True)} == {old, new}
    assert len(store.sessions()) == 2
    store.append(old, Event.of("session.restore", {}))
    assert store.latest(here).id == old
    assert store.latest(tmp_path / "elsewhere") is None


def test_session_lookup_by_unique_prefix(store: Store, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path)
    assert store.session(sid[:4]).id == sid
    assert store.session(sid[:3]) is None  # too short to be a prefix
    assert store.session("zzzz") is None
    for fake in ("abcd1111", "abcd2222"):
        store.append(fake, Event.of("session.create", {"id": fake, "cwd": str(tmp_path)}))
    assert store.session("abcd1").id == "abcd1111"
    with pytest.raises(ScoutError, match="ambiguous.*abcd1111, abcd2222"):
        store.session("abcd")


def test_fork_shares_the_parents_first_messages(store: Store, tmp_path: Path) -> None:
    parent = store.create_session(tmp_path)
    for i in range(3):
        store.append(parent, user(f"u{i}"))
        store.append(parent, assistant(f"a{i}"))
    child = store.create_session(tmp_path, parent=parent, fork_at=2)
    store.append(child, user("branch"))
    texts = [m["content"][0]["text"] for m in store.messages(child)]
    assert texts == ["u0", "a0", "branch"]
    assert store.session(child).message_count == 3 and len(store.messages(parent)) == 6
    with pytest.raises(ScoutError, match="at message 7: it has 6 messages"):
        store.create_session(tmp_path, parent=parent, fork_at=7)
    with pytest.raises(ScoutError, match="no session nope"):
        store.create_session(tmp_path, parent="nope")


async def test_store_is_usable_from_a_worker_thread(store: Store, tmp_path: Path) -> None:
    sid = store.create_session(tmp_path)
    await asyncio.gather(*(asyncio.to_thread(store.append, sid, user(f"m{i}")) for i in range(8)))
    assert store.session(sid).message_count == 8
    assert sorted(m["content"][0]["text"] for m in store.messages(sid)) == [f"m{i}" for i in range(8)]


# -- incremental projection == rebuild(), row for row --------------------------------

TEXT = st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from("\x00\r\n\x1b😀é日ß"), max_size=20)
USAGE = st.fixed_dictionaries(
    {k: st.integers(0, 10_000) for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")}
)
TARGET = st.integers(0, 50)
STEP = st.one_of(
    st.tuples(st.just("create"), st.integers(0, 2), st.one_of(st.none(), TEXT)),
    st.tuples(st.just("fork"), TARGET, st.one_of(st.none(), st.integers(-2, 12)), st.one_of(st.none(), TEXT)),
    st.tuples(st.just("user"), TARGET, TEXT),
    st.tuples(st.just("assistant"), TARGET, TEXT, USAGE),
    st.tuples(st.just("calls"), TARGET, st.integers(1, 2), st.booleans()),
    st.tuples(st.just("event"), TARGET, st.sampled_from(["tool.start", "notice", "message.delta", "usage"]), TEXT),
    st.tuples(st.just("rename"), TARGET, TEXT),
    st.tuples(st.just("delete"), TARGET, st.booleans()),
)


def expected_fork_point(messages: list[dict], at: int | None) -> int:
    """The documented rule, restated: forward over a results message, else back over the calls."""
    point = len(messages) if at is None else at
    while point and tool_uses(messages[point - 1]):
        has_results = point < len(messages) and any(b["type"] == "tool_result" for b in messages[point]["content"])
        point += 1 if has_results else -1
    return point


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=1, max_size=30))
def test_rebuild_equals_the_incremental_projection(steps: list[tuple]) -> None:
    """Appends, tool calls, forks of forks, renames and deletes: the live projection equals its
    replay row for row, and matches a plain model of conversations, fork points and titles."""
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "s.db") as store:
        dirs = [Path(tmp) / name for name in ("a", "b", "c")]
        ids: list[str] = []
        conversation: dict[str, list[dict]] = {}
        title: dict[str, str | None] = {}
        inherited: dict[str, bool] = {}
        for n, step in enumerate(steps):
            kind = step[0]
            if kind == "create":
                ids.append(store.create_session(dirs[step[1]], title=step[2]))
                conversation[ids[-1]], title[ids[-1]], inherited[ids[-1]] = [], step[2], False
                continue
            if not ids:
                continue
            sid = ids[step[1] % len(ids)]
            if kind == "fork":
                if step[2] is not None and not 0 <= step[2] <= len(conversation[sid]):
                    with pytest.raises(ScoutError, match="cannot fork"):
                        store.fork(sid, step[2], title=step[3])
                    continue
                made = store.fork(sid, step[2], title=step[3])
                point = expected_fork_point(conversation[sid], step[2])
                assert made == store.session(made.id) and made.fork_at == point
                branch = made.id
                ids.append(branch)
                conversation[branch] = conversation[sid][:point]
                title[branch], inherited[branch] = (step[3], False) if step[3] is not None else (title[sid], True)
            elif kind in ("user", "assistant"):
                event = user(step[2]) if kind == "user" else assistant(step[2], step[3])
                store.append(sid, event)
                conversation[sid].append(event.data["message"])
                own = title_of(event.data["message"]["content"]) if kind == "user" else None
                if own is not None and (title[sid] is None or inherited[sid]):
                    title[sid], inherited[sid] = own, False
            elif kind == "calls":
                calls = [{"type": "tool_use", "id": f"t{n}-{i}", "name": "bash", "input": {"command": "ls é"}}
                         for i in range(step[2])]
                messages = [{"role": "assistant", "content": calls}]
                if step[3]:
                    answers = [{"type": "tool_result", "tool_use_id": c["id"], "content": "ok ✓", "is_error": False}
                               for c in calls]
                    messages.append({"role": "user", "content": answers})
                for message in messages:
                    store.append(sid, Event.of(f"message.{message['role']}", {"message": message}))
                    conversation[sid].append(message)
            elif kind == "event":
                store.append(sid, Event.of(step[2], {"text": step[3]}))
            elif kind == "rename":
                if step[2].split():
                    store.rename(sid, step[2])
                    title[sid], inherited[sid] = " ".join(step[2].split()), False
                else:
                    with pytest.raises(ScoutError, match="blank"):
                        store.rename(sid, step[2])
            else:
                store.delete(sid) if step[2] else store.restore(sid)
        live = store.projection_rows()
        for sid, messages in conversation.items():
            assert store.messages(sid) == messages
            assert store.session(sid).title == title[sid]
            assert store.session(sid).message_count == len(messages)
        store.rebuild()
        assert store.projection_rows() == live


def test_incomplete_message_keeps_its_mark(tmp_home, tmp_path):
    """A message cut by a stream error is stored marked, so it is not resent as a real answer."""
    store = Store(tmp_path / "s.db")
    sid = store.create_session(tmp_path)
    store.append(sid, Event.of("message.user", {"message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}))
    cut = {"role": "assistant", "content": [{"type": "text", "text": "Refactoring the"}], "incomplete": True}
    store.append(sid, Event.of("message.assistant", {"message": cut, "usage": {}, "stop_reason": "error"}))
    assert store.messages(sid)[1] == cut
    assert "incomplete" not in store.messages(sid)[0]
    before = store.projection_rows()
    store.rebuild()
    assert store.projection_rows() == before


def test_a_refused_message_is_marked_incomplete_live_and_after_rebuild(tmp_home, tmp_path):
    """``message.refused``: the person's message did not fit the context window and nothing
    answered it; it stays, marked, so that it is never sent again with later messages."""
    store = Store(tmp_path / "s.db")
    sid = store.create_session(tmp_path)
    huge = {"role": "user", "content": [{"type": "text", "text": "E" * 1000}]}
    store.append(sid, Event.of("message.user", {"message": huge}))
    store.append(sid, Event.of("message.refused", {"index": 0}))
    store.append(sid, Event.of("message.user", {"message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}))
    assert [m.get("incomplete", False) for m in store.messages(sid)] == [True, False]
    before = store.projection_rows()
    store.rebuild()
    assert store.projection_rows() == before
