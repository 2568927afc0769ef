"""Read-side queries of the session store: a session's row (``SessionInfo``), a branch's
messages, compactions, spending and tool details with its ancestry resolved, and the pure
fork-point and tree rules.

Each query takes an open connection; ``Store`` calls them holding its lock, inside one read
snapshot, so several SELECTs see one state whatever other processes commit.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from scout_tui.config.models import prompt_tokens
from scout_tui.core.messages import tool_results, tool_uses

ALL_SESSION_COLUMNS = (
    "id, parent, fork_at, cwd, title, created, updated, message_count, input_tokens, output_tokens,"
    " cache_read_tokens, cache_write_tokens, cost, compactions, deleted, title_inherited, kind, call, agent"
)
"""Every column of the ``sessions`` projection."""

SESSION_COLUMNS = (
    ALL_SESSION_COLUMNS + ", (SELECT json_extract(data, '$.stop_reason') FROM events WHERE events.session_id = sessions.id"
    " AND type = 'turn.end' ORDER BY id DESC LIMIT 1)"
)
"""What a ``SessionInfo`` is read from (``SELECT {SESSION_COLUMNS} FROM sessions``), in its field order:
the projection's columns, and the stop reason of the session's newest ``turn.end`` event (read
from the log, walking the session's events back from its newest: one index range)."""


@dataclass
class SessionInfo:
    """One row of the ``sessions`` projection. Times are Unix seconds; tokens are totals.

    ``input_tokens`` counts input + cache read + cache write tokens of this session's own
    assistant messages; ``message_count`` includes the ``fork_at`` messages shared with a parent.
    ``title`` is the first line of the first user message, a chosen title (``session.rename``),
    or for a branch its parent's title until the branch's own first user message replaces it
    (``title_inherited`` meanwhile).
    """

    id: str
    parent: str | None
    fork_at: int | None
    cwd: str | None
    title: str | None
    created: float
    updated: float
    message_count: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float = 0.0
    """Dollars this session's own requests cost (requests of unknown price count 0)."""
    compactions: int = 0
    """Summary compactions made in this session."""
    deleted: bool = False
    title_inherited: bool = False
    """The title is the parent's, copied when the branch was made: the branch has no prompt of
    its own yet, nor a chosen title."""
    kind: str | None = None
    """``subagent`` for a child session where a subagent worked (``session.subagent``); None for a
    session the person started or forked."""
    call: str | None = None
    """A subagent's: the id of its parent's ``task`` call."""
    agent: str | None = None
    """A subagent's: the name of the agent that ran (``general``, a custom agent's)."""
    last_stop_reason: str | None = None
    """How the session's newest turn ended: its own newest ``turn.end`` event's ``stop_reason``
    (``end_turn``, ``error``, ``interrupted``, ``max_turns``…), None before any turn ended."""

    def title_parts(self) -> tuple[str, str]:
        """The title as a person reads it, in two parts: ``("fork of ", title)`` for a branch
        still carrying its parent's title (``title_inherited``), else ``("", title)``; the title
        is "(untitled)" when there is none. The one rule for every list of sessions (the
        sessions pane, ``scout-tui sessions``, ``/cost``, exports, ACP's ``session/list``);
        the pane may leave out the first part when the room is short."""
        lead = "fork of " if self.parent is not None and self.title_inherited and self.kind is None else ""
        return lead, str(self.title or "") or "(untitled)"

    @property
    def subagent_mark(self) -> str:
        """``⚙ AGENT`` for a subagent's session (``kind`` "subagent"), "" for any other: the mark
        every list of sessions puts before its title (the sessions pane, ``/cost``, ``scout-tui
        sessions``)."""
        return f"⚙ {self.agent or 'subagent'}" if self.kind == "subagent" else ""

    @property
    def shown_title(self) -> str:
        """``title_parts`` joined: ``"fork of calc div fix"``, ``"calc div fix"``, ``"(untitled)"``."""
        return "".join(self.title_parts())

    @property
    def failed(self) -> bool:
        """Whether the session's newest turn ended in an error (a refused key, a server error):
        a ``-p`` run that failed, or a conversation whose last request did."""
        return self.last_stop_reason == "error"


def info_of(row: tuple) -> SessionInfo:
    """A ``SessionInfo`` from a row of ``SESSION_COLUMNS``."""
    *head, deleted, inherited, kind, call, agent, stop_reason = row
    return SessionInfo(*head, deleted=bool(deleted), title_inherited=bool(inherited),  # type: ignore[misc]  # head is the columns before these (SESSION_COLUMNS); mypy cannot count a starred row
                       kind=kind, call=call, agent=agent,
                       last_stop_reason=str(stop_reason) if stop_reason is not None else None)


# -- ancestry -------------------------------------------------------------------------------


def chain(db: sqlite3.Connection, session_id: str) -> Iterator[tuple[str, str | None, int | None]]:
    """``(id, parent, fork_at)`` of the session, then of each ancestor up to its root. A
    subagent's session is a root here (its parent shares nothing with it: no message, summary or
    model switch), so its ancestry ends with it."""
    current: str | None = session_id
    seen: set[str] = set()
    while current is not None and current not in seen:
        seen.add(current)
        row = db.execute("SELECT parent, fork_at, kind FROM sessions WHERE id = ?", (current,)).fetchone()
        if row is None:
            return
        if row[2] == "subagent":
            yield current, None, None
            return
        yield current, row[0], row[1]
        current = row[0]


def _shared_limits(db: sqlite3.Connection, session_id: str) -> list[tuple[str, int | None, int | None]]:
    """``(id, message limit, last event id)`` for the session and each ancestor, newest first:
    an ancestor contributes its first ``limit`` messages, and its events up to the event that
    stored the last of them (None: no limit, the session itself)."""
    out: list[tuple[str, int | None, int | None]] = []
    limit: int | None = None
    for sid, parent, fork_at in chain(db, session_id):
        if limit is None:
            out.append((sid, None, None))
        else:
            row = db.execute("SELECT event_id FROM messages WHERE session_id = ? AND seq < ? ORDER BY seq DESC LIMIT 1",
                             (sid, limit)).fetchone()
            out.append((sid, limit, row[0] if row else 0))
        if parent is not None:
            start = fork_at or 0
            limit = start if limit is None else min(limit, start)
    return out


def message_owner(ancestry: list[SessionInfo]) -> Callable[[int], str]:
    """A function from a message index of the last session of ``ancestry`` (root first, as
    ``Store.ancestry`` gives it) to the id of the session that stores that message: a branch
    stores its messages from its fork point on, an ancestor those before."""
    spans: list[tuple[str, int, int | None]] = []  # (id, start, stop), deepest first
    limit: int | None = None
    for info in reversed(ancestry):
        start = (info.fork_at or 0) if info.parent else 0
        spans.append((info.id, start, limit))
        limit = start if limit is None else min(limit, start)

    def owner(index: int) -> str:
        for sid, start, stop in spans:  # deepest first: the branch itself wins
            if index >= start and (stop is None or index < stop):
                return sid
        return spans[-1][0]

    return owner


def usage_since(db: sqlite3.Connection, session_id: str, since: int) -> dict[str, float]:
    """``Store.usage_since``: the assistant messages of the branch from index ``since`` on, one
    range query per session of its ancestry, then the summary requests (``session.compacted``,
    ``session.compact_cancelled``) the branch counts (``spending``'s limits) made after the
    event that stored its message ``since - 1``: event ids grow, so those are the ones made
    after that point on this branch."""
    totals = dict.fromkeys(("requests", "input_tokens", "output_tokens", "cost"), 0.0)

    def add(data: dict) -> None:
        usage = data.get("usage") or {}
        totals["requests"] += 1
        totals["input_tokens"] += prompt_tokens(usage)
        totals["output_tokens"] += int(usage.get("output_tokens") or 0)
        totals["cost"] += float(data.get("cost") or 0.0)

    limit: int | None = None
    after = 0  # the id of the event storing message since - 1 (0: since is 0)
    for sid, parent, fork_at in chain(db, session_id):
        start = (fork_at or 0) if parent is not None else 0
        rows = db.execute("SELECT e.data FROM messages m JOIN events e ON e.id = m.event_id WHERE m.session_id = ?"
                          " AND m.role = 'assistant' AND m.seq >= ? AND m.seq < ?",
                          (sid, max(start, since), limit if limit is not None else 2**62))
        for (raw,) in rows:
            add(json.loads(raw))
        if since and start <= since - 1 and (limit is None or since - 1 < limit):
            row = db.execute("SELECT event_id FROM messages WHERE session_id = ? AND seq = ?",
                             (sid, since - 1)).fetchone()
            after = row[0] if row else after
        limit = start if limit is None else min(limit, start)
        if limit <= since:
            break
    for sid, _, last_event in _shared_limits(db, session_id):
        summaries = db.execute("SELECT data FROM events WHERE session_id = ? AND type IN ('session.compacted',"
                               " 'session.compact_cancelled') AND id > ? AND id <= ?",
                               (sid, after, last_event if last_event is not None else 2**62))
        for (raw,) in summaries:
            data = json.loads(raw)
            if data.get("usage"):
                add(data)
    return totals


# -- messages -------------------------------------------------------------------------------


def messages(db: sqlite3.Connection, session_id: str, since: int = 0) -> list[dict]:
    """``Store.messages``: one range query per ancestor, root first."""
    segments: list[tuple[str, int, int | None]] = []
    limit: int | None = None
    for sid, parent, fork_at in chain(db, session_id):
        start = (fork_at or 0) if parent is not None else 0
        segments.append((sid, start, limit))
        limit = start if limit is None else min(limit, start)
    result: list[dict] = []
    for sid, start, stop in reversed(segments):
        rows = db.execute(
            "SELECT role, content, incomplete FROM messages WHERE session_id = ? AND seq >= ? AND seq < ?"
            " ORDER BY seq",
            (sid, max(start, since), stop if stop is not None else 2**62),
        )
        result.extend(_message(*row) for row in rows)
    return result


def user_messages(db: sqlite3.Connection, cwd: str, limit: int) -> list[dict]:
    """``Store.user_messages``: one scan of the ``messages`` projection, the user messages
    holding a text block (a tool-result-only message is left out by sqlite's JSON functions,
    not parsed here)."""
    rows = db.execute(
        "SELECT m.role, m.content, m.incomplete FROM messages m JOIN sessions s ON s.id = m.session_id"
        " WHERE m.role = 'user' AND s.deleted = 0 AND s.kind IS NULL AND json_valid(m.content)"
        " AND (json_type(m.content) = 'text' OR EXISTS (SELECT 1 FROM json_each(m.content) b"
        "      WHERE CASE WHEN b.type = 'object' THEN json_extract(b.value, '$.type') END = 'text'))"
        " ORDER BY s.cwd IS ? DESC, m.created DESC, m.event_id DESC LIMIT ?",
        (cwd, limit),
    )
    return [_message(*row) for row in rows]


def message_at(db: sqlite3.Connection, session_id: str, index: int) -> dict | None:
    """Message ``index`` of the session's conversation (ancestry resolved), or None."""
    for sid, parent, fork_at in chain(db, session_id):
        if parent is None or index >= (fork_at or 0):
            row = db.execute(
                "SELECT role, content, incomplete FROM messages WHERE session_id = ? AND seq = ?", (sid, index)
            ).fetchone()
            return _message(*row) if row else None
    return None


def _message(role: str, content: str, incomplete: int) -> dict:
    message = {"role": role, "content": json.loads(content)}
    if incomplete:
        message["incomplete"] = True
    return message


# -- events of a branch ---------------------------------------------------------------------


def compactions(db: sqlite3.Connection, session_id: str) -> list[dict]:
    """``Store.compactions``: each ancestor's ``session.compacted`` events made before the fork
    point below it, then the session's own."""
    found: list[dict] = []
    for sid, limit, _ in reversed(_shared_limits(db, session_id)):
        rows = db.execute("SELECT id, data FROM events WHERE session_id = ? AND type = 'session.compacted'"
                          " ORDER BY id", (sid,)).fetchall()
        for event_id, raw in rows:
            data = json.loads(raw)
            if limit is None or int(data.get("count", 0)) < limit:
                found.append({**data, "event_id": event_id, "session_id": sid})
    return found


def model_switch(db: sqlite3.Connection, session_id: str, at: int | None = None) -> dict | None:
    """``Store.model_switch``: the data of the newest ``session.model`` event in force, or None.

    Walks from the session up its ancestry. The session's own events all count (only those
    before its message ``at``, when given). An ancestor's count when made while its branch
    would have seen them: before the branch's fork event, and before the ancestor's first
    message the branch does not share (none of them when the branch shares none of the
    ancestor's own messages).
    """
    before: int | None = None  # an ancestor's events count only before its branch was made
    limit = at  # ... and before the first message its branch does not share
    for sid, parent, fork_at in chain(db, session_id):
        start = (fork_at or 0) if parent is not None else 0
        if limit is None or limit >= start:
            sql = "SELECT data FROM events WHERE session_id = ? AND type = 'session.model'"
            params: list = [sid]
            if before is not None:
                sql += " AND id < ?"
                params.append(before)
            if limit is not None:
                first_unshared = db.execute("SELECT event_id FROM messages WHERE session_id = ? AND seq = ?",
                                            (sid, limit)).fetchone()
                if first_unshared is not None:
                    sql += " AND id < ?"
                    params.append(first_unshared[0])
            row = db.execute(sql + " ORDER BY id DESC LIMIT 1", params).fetchone()
            if row is not None:
                return json.loads(row[0])
        if parent is None:
            return None
        limit = start if limit is None else min(limit, start)
        made = db.execute("SELECT MIN(id) FROM events WHERE session_id = ?", (sid,)).fetchone()
        if made is not None and made[0] is not None:
            before = made[0]
    return None


def spending(db: sqlite3.Connection, session_id: str) -> dict[str, dict[str, float]]:
    """``Store.spending``: an ancestor's requests count up to the event that stored the last
    message the branch shares."""
    totals: dict[str, dict[str, float]] = {}
    for sid, _, last_event in _shared_limits(db, session_id):
        sql = ("SELECT data FROM events WHERE session_id = ? AND type IN ('message.assistant', "
               "'session.compacted', 'session.compact_cancelled')")
        params: tuple = (sid,)
        if last_event is not None:
            sql += " AND id <= ?"
            params = (sid, last_event)
        for (raw,) in db.execute(sql, params):
            data = json.loads(raw)
            usage = data.get("usage") or {}
            if not usage:
                continue
            row = totals.setdefault(str(data.get("model") or "unknown"), dict.fromkeys(
                ("requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost"), 0))
            row["requests"] += 1
            for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
                row[key] += int(usage.get(key) or 0)
            row["cost"] += float(data.get("cost") or 0.0)
    return totals


def tool_details(db: sqlite3.Connection, session_id: str) -> dict[str, dict[str, Any]]:
    """``Store.tool_details``: what the ``tool.end`` events say beyond the result, root first so
    that the branch's own come last and win. One indexed range of events per session of the
    branch's chain; a long session's thousands of calls are a few ms off the UI loop."""
    details: dict[str, dict[str, Any]] = {}
    ids = [sid for sid, _, _ in chain(db, session_id)]
    for sid in reversed(ids):
        rows = db.execute(
            "SELECT json_extract(data, '$.id'), json_extract(data, '$.diff'),"
            " json_extract(data, '$.output_path'), json_extract(data, '$.elapsed')"
            " FROM events WHERE session_id = ? AND type = 'tool.end' ORDER BY id", (sid,)).fetchall()
        for tool_use_id, diff, output_path, elapsed in rows:
            found = {k: v for k, v in (("diff", diff), ("output_path", output_path)) if v}
            if isinstance(elapsed, (int, float)):
                found["elapsed"] = float(elapsed)
            details[str(tool_use_id)] = found
    return details


def projection_rows(db: sqlite3.Connection) -> tuple[list[tuple], list[tuple]]:
    """Every ``sessions`` row (by id, all columns) and ``messages`` row (by session, seq)."""
    sessions = db.execute(f"SELECT {ALL_SESSION_COLUMNS} FROM sessions ORDER BY id").fetchall()
    rows = db.execute(
        "SELECT session_id, seq, role, content, event_id, created, incomplete FROM messages ORDER BY session_id, seq"
    ).fetchall()
    return sessions, rows


# -- fork points and trees (pure) -------------------------------------------------------


def valid_fork_point(message_at: Callable[[int], dict | None], count: int, at: int | None) -> int:
    """The fork point to use when asked to share the first ``at`` of ``count`` messages.

    ``message_at(i)`` returns message ``i`` (0-based) of the parent, in the ``{"role",
    "content"}`` shape. ``at`` None means ``count``; otherwise it is clamped to 0..count.

    Rule: a fork point right after an assistant message that calls tools (message ``at - 1``)
    would leave those ``tool_use`` blocks without their ``tool_result``, which both model APIs
    reject. The person pointed at that assistant message, so the point moves *forward* by one
    to take in the user message carrying its results. When there is no such message (the
    parent ends with calls still unanswered: running, or cut off), it moves *back* to just
    before the assistant message instead, since a result that does not exist cannot be shared.
    Reads at most a few messages, whatever ``count`` is.
    """
    point = count if at is None else max(0, min(at, count))
    while point > 0:
        before = message_at(point - 1)
        if before is None or before.get("role") != "assistant" or not tool_uses(before):
            break
        results = message_at(point) if point < count else None
        if results is not None and results.get("role") == "user" and tool_results(results):
            point += 1
        else:
            point -= 1
    return point


def subagent_cost(db: sqlite3.Connection, session_id: str) -> float:
    """``Store.subagent_cost``: one recursive query over ``sessions.parent``."""
    row = db.execute(
        "WITH RECURSIVE kids(id) AS (SELECT id FROM sessions WHERE parent = ? AND kind = 'subagent'"
        " UNION SELECT s.id FROM sessions s JOIN kids ON s.parent = kids.id WHERE s.kind = 'subagent')"
        " SELECT COALESCE(SUM(cost), 0) FROM sessions WHERE id IN (SELECT id FROM kids)", (session_id,)).fetchone()
    return float(row[0] or 0.0)


def call_subagent_cost(db: sqlite3.Connection, parents: list[str], calls: list[str]) -> float:
    """``Store.call_subagent_cost``: the subagent sessions of ``parents`` started by ``calls``,
    their own cost and their subagents' (``subagent_cost``)."""
    total = 0.0
    for i in range(0, len(calls), 500):  # within SQLite's limit of bound parameters
        batch = calls[i:i + 500]
        rows = db.execute("SELECT id, cost FROM sessions WHERE kind = 'subagent'"
                          f" AND call IN ({','.join('?' * len(batch))}) AND parent IN ({','.join('?' * len(parents))})",
                          (*batch, *parents)).fetchall()
        total += sum(float(cost or 0.0) + subagent_cost(db, sid) for sid, cost in rows)
    return total


def tree_order(sessions: list[SessionInfo]) -> list[tuple[SessionInfo, int]]:
    """``sessions`` (newest-updated first, as ``Store.sessions`` returns them) as a tree.

    Returns ``[(info, depth)]`` depth-first: each branch right after its parent at depth + 1,
    siblings (and roots) newest-updated first. A session whose parent is not in ``sessions``
    is a root (depth 0).
    """
    by_id = {s.id: s for s in sessions}
    children: dict[str | None, list[SessionInfo]] = {}
    for info in sorted(sessions, key=lambda s: (s.updated, s.created), reverse=True):
        key = info.parent if info.parent in by_id and info.parent != info.id else None
        children.setdefault(key, []).append(info)
    out: list[tuple[SessionInfo, int]] = []
    stack: list[tuple[SessionInfo, int]] = [(s, 0) for s in reversed(children.get(None, []))]
    seen: set[str] = set()
    while stack:
        info, depth = stack.pop()
        if info.id in seen:
            continue
        seen.add(info.id)
        out.append((info, depth))
        stack.extend((child, depth + 1) for child in reversed(children.get(info.id, [])))
    return out


def checkpoint_events(db: sqlite3.Connection, session_id: str) -> list[tuple[str, dict]]:
    """``Store.checkpoint_events``: an ancestor's ``checkpoint`` events of the turns the branch
    shares (``turn`` below the fork point) and its ``checkpoint.restore`` events of those turns
    made before the branch was, then the session's own; in the order they were written."""
    found: list[tuple[int, str, dict]] = []
    before: int | None = None  # an ancestor's restores count only before its branch was made
    limit: int | None = None
    for sid, parent, fork_at in chain(db, session_id):
        rows = db.execute("SELECT id, type, data FROM events WHERE session_id = ? AND type IN"
                          " ('checkpoint', 'checkpoint.restore') ORDER BY id", (sid,)).fetchall()
        for event_id, kind, raw in rows:
            data = json.loads(raw)
            shared = limit is None or int(data.get("turn", 0)) < limit
            if shared and (before is None or kind == "checkpoint" or event_id < before):
                found.append((event_id, kind, data))
        start = (fork_at or 0) if parent is not None else 0
        limit = start if limit is None else min(limit, start)
        made = db.execute("SELECT MIN(id) FROM events WHERE session_id = ?", (sid,)).fetchone()
        if made is not None and made[0] is not None:
            before = made[0]
    return [(kind, data) for _, kind, data in sorted(found, key=lambda row: row[0])]
