"""The session store: an append-only sqlite event log (the truth) and its projections.

``events`` is never updated or deleted (triggers refuse); ``sessions`` and ``messages`` are
projections that one function, ``_project``, builds both live and in ``rebuild()``. Sessions
form a tree: a ``session.fork`` event starts a branch that shares its parent's first ``at``
messages without copying them, and reading a branch resolves its ancestry.

Event vocabulary stored here (besides the agent's, see ``bus.py``):

- ``session.create`` {id, cwd, title?}: a new root session. Stores of schema 1 also wrote
  forks this way, with {parent, fork_at}; the projector reads those as ``session.fork``.
- ``session.fork``   {parent, at, cwd, title?}: a branch of ``parent`` sharing its first ``at``
  messages (the event's session id is the branch's id).
- ``session.rename`` {title}; ``session.delete`` {}; ``session.restore`` {}.
- ``session.compact_cancelled`` {usage, cost, model}: a summary the person did not apply (its
  request still cost tokens).
- ``session.compacted`` (see ``summary.py``): a summary in force from then on; a branch inherits
  an ancestor's compaction only when it was made before the branch's fork point
  (``count < fork_at``), so a fork at a compaction's ``count`` undoes it.

Spending (tokens and dollars) is summed per session from ``message.assistant``,
``session.compacted`` and ``session.compact_cancelled`` events into the ``sessions`` row: each
branch counts its own requests.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from scout_tui.bus import TRANSIENT, Event
from scout_tui.config import data_dir
from scout_tui.errors import ScoutError
from scout_tui.history import blocks, tool_uses
from scout_tui.models import prompt_tokens

SCHEMA_VERSION = 3
TITLE_CHARS = 60
MIN_PREFIX = 4
BUSY_TIMEOUT_MS = 10_000  # how long a write waits for another process's transaction

_EVENTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_session ON events (session_id, id);
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only: UPDATE refused'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only: DELETE refused'); END;
"""

_PROJECTION_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    parent TEXT,
    fork_at INTEGER,
    cwd TEXT,
    title TEXT,
    created REAL,
    updated REAL,
    message_count INTEGER,
    input_tokens INTEGER,
    output_tokens INTEGER,
    deleted INTEGER DEFAULT 0,
    title_inherited INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost REAL NOT NULL DEFAULT 0,
    compactions INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS sessions_by_cwd ON sessions (cwd, updated);
CREATE INDEX IF NOT EXISTS sessions_by_parent ON sessions (parent);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT,
    seq INTEGER,
    role TEXT,
    content TEXT,
    event_id INTEGER,
    created REAL,
    incomplete INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, seq)
);
"""

_SESSION_COLUMNS = (
    "id, parent, fork_at, cwd, title, created, updated, message_count, input_tokens, output_tokens,"
    " cache_read_tokens, cache_write_tokens, cost, compactions, deleted"
)
_ALL_SESSION_COLUMNS = _SESSION_COLUMNS + ", title_inherited"


@dataclass
class SessionInfo:
    """One row of the ``sessions`` projection. Times are Unix seconds; tokens are totals.

    ``input_tokens`` counts input + cache read + cache write tokens of this session's own
    assistant messages; ``message_count`` includes the ``fork_at`` messages shared with a parent.
    ``title`` is the first line of the first user message, a chosen title (``session.rename``),
    or for a branch its parent's title until the branch's own first user message replaces it.
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


EventRow = tuple[int, str, str, dict, float]


class Store:
    """Sessions in one sqlite file (WAL), safe to call from a worker thread and from several
    processes at once (every write is one short ``BEGIN IMMEDIATE`` transaction; a writer
    waits up to ``BUSY_TIMEOUT_MS`` for another's to end instead of failing).

    The connection opens on first use, and upgrades an older schema then (see ``MIGRATIONS``);
    every call holds one lock, so the app may call the store through ``asyncio.to_thread``
    while the UI thread also reads it.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path: Path = Path(path) if path is not None else data_dir() / "sessions.db"
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    # -- connection ---------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        """The open connection (caller holds the lock); creates or migrates the schema once."""
        if self._db is not None:
            return self._db
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise ScoutError(f"{self.path}: cannot open session store: {exc}") from None
        try:
            db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            # Checked without a write lock first: the common case (current schema) never
            # contends with another process's writes.
            if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                with _transaction(db):
                    _upgrade(db, self.path)
        except sqlite3.DatabaseError as exc:
            db.close()
            raise ScoutError(f"{self.path}: cannot open session store: {exc}") from None
        except BaseException:
            db.close()
            raise
        self._db = db
        return db

    def close(self) -> None:
        """Close the connection; a later call opens it again."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ------------------------------------------------------------------------

    def create_session(
        self,
        cwd: str | Path,
        *,
        title: str | None = None,
        parent: str | None = None,
        fork_at: int | None = None,
    ) -> str:
        """Start a session in directory ``cwd``; returns its id (a full uuid4 hex).

        With ``parent`` this is ``fork(parent, fork_at, title=title, cwd=cwd)``.

        Raises:
            ScoutError: ``parent`` does not exist, or ``fork_at`` is given without a parent.
        """
        if parent is not None:
            return self.fork(parent, fork_at, title=title, cwd=cwd)
        if fork_at is not None:
            raise ScoutError("fork_at needs a parent session")
        data: dict[str, Any] = {"id": uuid.uuid4().hex, "cwd": str(Path(cwd).resolve())}
        if title is not None:
            data["title"] = title
        with self._lock:
            db = self._conn()
            with _transaction(db):
                self._insert(db, data["id"], Event("session.create", data))
        return data["id"]

    def fork(
        self,
        parent_id: str,
        at: int | None = None,
        *,
        title: str | None = None,
        cwd: str | Path | None = None,
    ) -> str:
        """Start a branch of session ``parent_id`` sharing its first ``at`` messages; returns its id.

        Nothing is copied: one ``session.fork {parent, at, cwd, title?}`` event and one
        ``sessions`` row are written whatever the parent's size, and reading the branch
        resolves its ancestry. Forks of forks work to any depth.

        ``at`` is a message count (None: all the parent's messages). It is clamped to
        0..the parent's message count, then moved by ``valid_fork_point`` so that no tool call
        is left without its result; the point used is the branch's ``fork_at``.
        ``title`` defaults to the parent's title, which the branch's own first user message
        then replaces (so sibling branches are told apart by where they diverge).
        ``cwd`` defaults to the parent's directory.

        Raises:
            ScoutError: no session ``parent_id``.
        """
        new_id = uuid.uuid4().hex
        with self._lock:
            db = self._conn()
            with _transaction(db):
                row = db.execute("SELECT message_count, cwd FROM sessions WHERE id = ?", (parent_id,)).fetchone()
                if row is None:
                    raise ScoutError(f"cannot fork: no session {parent_id}")
                count, parent_cwd = row
                point = valid_fork_point(lambda i: _message_at(db, parent_id, i), count, at)
                data: dict[str, Any] = {
                    "parent": parent_id,
                    "at": point,
                    "cwd": str(Path(cwd).resolve()) if cwd is not None else parent_cwd,
                }
                if title is not None:
                    data["title"] = title
                self._insert(db, new_id, Event("session.fork", data))
        return new_id

    def append(self, session_id: str, event: Event) -> int | None:
        """Store ``event`` for the session and update the projections in one transaction.

        Returns the event's row id, or None for transient events (``bus.TRANSIENT``), which
        are not stored. Data is stored as JSON (values that are not JSON types become str).

        Raises:
            ScoutError: no session ``session_id`` (unless the event is its ``session.create``).
        """
        if event.type in TRANSIENT:
            return None
        with self._lock:
            db = self._conn()
            with _transaction(db):
                if event.type != "session.create":
                    if db.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
                        raise ScoutError(f"no session {session_id} to record {event.type} in")
                return self._insert(db, session_id, event)

    def rename(self, session_id: str, title: str) -> None:
        """Give a session a chosen title (a ``session.rename`` event); runs of whitespace,
        newlines included, become one space so the title stays one line.

        Raises:
            ScoutError: no session ``session_id``, or ``title`` is blank.
        """
        clean = " ".join(title.split())
        if not clean:
            raise ScoutError(f"cannot rename session {session_id}: the title is blank")
        self.append(session_id, Event("session.rename", {"title": clean}))

    def delete(self, session_id: str) -> None:
        """Hide a session from listings (a ``session.delete`` event; ``restore`` undoes it).

        Its rows stay, and its branches stay readable (they show as roots in ``tree``).

        Raises:
            ScoutError: no session ``session_id``.
        """
        self.append(session_id, Event("session.delete", {}))

    def restore(self, session_id: str) -> None:
        """Show a deleted session again (a ``session.restore`` event).

        Raises:
            ScoutError: no session ``session_id``.
        """
        self.append(session_id, Event("session.restore", {}))

    def subscriber(self, session_id: str) -> Callable[[Event], None]:
        """A bus handler that appends every event to ``session_id``: ``bus.on("*", ...)``."""

        def record(event: Event) -> None:
            self.append(session_id, event)

        return record

    @staticmethod
    def _insert(db: sqlite3.Connection, session_id: str, event: Event) -> int:
        """Insert one event row and project it (caller holds the lock and a transaction)."""
        # Timestamps strictly increase with the event id, even within one clock tick or
        # across processes, so "newest" is never a tie and replay order matches time order.
        last = db.execute("SELECT created FROM events ORDER BY id DESC LIMIT 1").fetchone()
        created = time.time()
        if last is not None and created <= last[0]:
            created = last[0] + 1e-6
        data = _dumps(event.data)
        cursor = db.execute(
            "INSERT INTO events (session_id, type, data, created) VALUES (?, ?, ?, ?)",
            (session_id, event.type, data, created),
        )
        event_id = cursor.lastrowid
        assert event_id is not None
        _project(db, (event_id, session_id, event.type, data, created))
        return event_id

    def rebuild(self) -> None:
        """Drop the projections and replay every event in id order (one transaction)."""
        with self._lock:
            db = self._conn()
            with _transaction(db):
                _rebuild_projections(db)

    # -- reading ------------------------------------------------------------------------

    def messages(self, session_id: str, since: int = 0) -> list[dict]:
        """The conversation ``[{"role", "content"}, ...]`` in order; [] for an unknown id.

        ``since`` skips the first messages: the result starts at that position (so the tail of
        a long session reads in time proportional to the tail). A message cut short by a stream
        error also carries ``"incomplete": True``.

        A fork's list starts with its parent's first ``fork_at`` messages (recursively): one
        range query per ancestor, read in one snapshot.
        """
        with self._lock:
            db = self._conn()
            with _snapshot(db):
                segments: list[tuple[str, int, int | None]] = []
                limit: int | None = None
                for sid, parent, fork_at in _chain(db, session_id):
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

    def session(self, session_id: str) -> SessionInfo | None:
        """The session with this id, or with this unique prefix (at least 4 characters).

        Returns None when nothing matches. Raises ScoutError when the prefix is ambiguous.
        """
        with self._lock:
            db = self._conn()
            row = db.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if row is not None:
                return _info(row)
            if len(session_id) < MIN_PREFIX:
                return None
            # A range scan on the primary key: every id starting with the prefix sorts
            # between the prefix and the prefix followed by the largest code point.
            rows = db.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id >= ? AND id < ? ORDER BY id LIMIT 6",
                (session_id, session_id + "\U0010ffff"),
            ).fetchall()
        if len(rows) > 1:
            shown = ", ".join(r[0] for r in rows[:5]) + (", ..." if len(rows) > 5 else "")
            raise ScoutError(f"session id prefix {session_id!r} is ambiguous: {shown}")
        return _info(rows[0]) if rows else None

    def find(self, ref: str) -> SessionInfo:
        """``session(ref)``, deleted sessions included, but a miss is an error.

        Raises:
            ScoutError: nothing matches ``ref`` (an id, or a prefix of at least 4 characters),
                or the prefix is ambiguous.
        """
        info = self.session(ref)
        if info is None:
            raise ScoutError(f"no session matches {ref!r} (see `scout-tui sessions --all`)")
        return info

    def ancestry(self, session_id: str) -> list[SessionInfo]:
        """The session and its ancestors, root first and ``session_id`` last; [] if unknown."""
        with self._lock:
            db = self._conn()
            with _snapshot(db):
                ids = [sid for sid, _, _ in _chain(db, session_id)]
                rows = [db.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (sid,)).fetchone()
                        for sid in reversed(ids)]
        return [_info(r) for r in rows]

    def sessions(self, cwd: str | Path | None = None, include_deleted: bool = False) -> list[SessionInfo]:
        """Sessions newest-updated first; only those of directory ``cwd`` unless it is None."""
        where, params = [], []
        if cwd is not None:
            where.append("cwd = ?")
            params.append(str(Path(cwd).resolve()))
        if not include_deleted:
            where.append("deleted = 0")
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        with self._lock:
            rows = self._conn().execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions {clause} ORDER BY updated DESC, created DESC", params
            ).fetchall()
        return [_info(r) for r in rows]

    def tree(self, cwd: str | Path | None = None, include_deleted: bool = False) -> list[tuple[SessionInfo, int]]:
        """``sessions(cwd, include_deleted)`` as a tree, in display order: ``[(info, depth)]``.

        See ``tree_order``: branches follow their parent one level deeper, siblings newest
        first; a branch whose parent is not listed (deleted, or in another directory) is a root.
        """
        return tree_order(self.sessions(cwd, include_deleted))

    def latest(self, cwd: str | Path) -> str | None:
        """The id of the most recently updated non-deleted session in ``cwd``, or None."""
        with self._lock:
            row = self._conn().execute(
                "SELECT id FROM sessions WHERE cwd = ? AND deleted = 0 ORDER BY updated DESC, created DESC LIMIT 1",
                (str(Path(cwd).resolve()),),
            ).fetchone()
        return row[0] if row else None

    def events(self, session_id: str | None = None) -> list[EventRow]:
        """Stored events ``(id, session_id, type, data, created)`` in id order; all sessions if None."""
        sql = "SELECT id, session_id, type, data, created FROM events"
        params: tuple = ()
        if session_id is not None:
            sql += " WHERE session_id = ?"
            params = (session_id,)
        with self._lock:
            rows = self._conn().execute(sql + " ORDER BY id", params).fetchall()
        return [(i, sid, type_, json.loads(data), created) for i, sid, type_, data, created in rows]

    def compactions(self, session_id: str) -> list[dict]:
        """The summary compactions in force along this branch, oldest first: the data of each
        ``session.compacted`` event (see ``summary.py``) plus ``event_id`` and ``session_id``.
        An ancestor's count only when made before the branch's fork point (``count < fork_at``);
        the last one is the summary the model sees."""
        found: list[dict] = []
        with self._lock:
            db = self._conn()
            with _snapshot(db):
                for sid, limit, _ in reversed(_shared_limits(db, session_id)):
                    rows = db.execute("SELECT id, data FROM events WHERE session_id = ? AND type = 'session.compacted'"
                                      " ORDER BY id", (sid,)).fetchall()
                    for event_id, raw in rows:
                        data = json.loads(raw)
                        if limit is None or int(data.get("count", 0)) < limit:
                            found.append({**data, "event_id": event_id, "session_id": sid})
        return found

    def last_window(self, session_id: str) -> int | None:
        """The context window, in tokens, the session's last request was fitted to (its newest
        ``prompt.compacted`` event's ``context_window``), or None: a window learnt from a
        server's overflow error outlives the process."""
        with self._lock:
            row = self._conn().execute(
                "SELECT json_extract(data, '$.context_window') FROM events WHERE session_id = ?"
                " AND type = 'prompt.compacted' ORDER BY id DESC LIMIT 1", (session_id,)).fetchone()
        return int(row[0]) if row and isinstance(row[0], int) and row[0] > 0 else None

    def spending(self, session_id: str) -> dict[str, dict[str, float]]:
        """What this branch's conversation cost, by model: ``{model: {"requests", "input_tokens",
        "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost"}}`` (``input_tokens``
        uncached; tokens as counts, cost in dollars). Ancestors count up to the fork point;
        summary requests count under their model."""
        totals: dict[str, dict[str, float]] = {}
        with self._lock:
            db = self._conn()
            with _snapshot(db):
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
                            ("requests", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                             "cost"), 0))
                        row["requests"] += 1
                        for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
                            row[key] += int(usage.get(key) or 0)
                        row["cost"] += float(data.get("cost") or 0.0)
        return totals

    def tool_details(self, session_id: str) -> dict[str, dict[str, str]]:
        """What the tool pane shows of a stored call beyond its result: ``{tool_use_id: {"diff":
        unified diff, "output_path": file of the whole output}}`` (either key may be missing),
        from the ``tool.end`` events of the session and its ancestors (a branch's own win)."""
        details: dict[str, dict[str, str]] = {}
        with self._lock:
            db = self._conn()
            with _snapshot(db):
                ids = [sid for sid, _, _ in _chain(db, session_id)]
                for sid in reversed(ids):  # root first, so the branch's own events come last
                    rows = db.execute(
                        "SELECT json_extract(data, '$.id'), json_extract(data, '$.diff'),"
                        " json_extract(data, '$.output_path') FROM events WHERE session_id = ? AND type = 'tool.end'"
                        " AND (json_extract(data, '$.diff') IS NOT NULL OR json_extract(data, '$.output_path') IS NOT NULL)"
                        " ORDER BY id", (sid,)).fetchall()
                    for tool_use_id, diff, output_path in rows:
                        found = {k: v for k, v in (("diff", diff), ("output_path", output_path)) if v}
                        details[str(tool_use_id)] = found
        return details

    def projection_rows(self) -> tuple[list[tuple], list[tuple]]:
        """Every ``sessions`` row (by id, all columns) and ``messages`` row (by session, seq)."""
        with self._lock:
            db = self._conn()
            with _snapshot(db):
                sessions = db.execute(f"SELECT {_ALL_SESSION_COLUMNS} FROM sessions ORDER BY id").fetchall()
                messages = db.execute(
                    "SELECT session_id, seq, role, content, event_id, created, incomplete FROM messages"
                    " ORDER BY session_id, seq"
                ).fetchall()
        return sessions, messages


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
        if results is not None and results.get("role") == "user" and any(
            b.get("type") == "tool_result" for b in blocks(results)
        ):
            point += 1
        else:
            point -= 1
    return point


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


# -- reading helpers (caller holds the lock) ---------------------------------------------


def _chain(db: sqlite3.Connection, session_id: str) -> Iterator[tuple[str, str | None, int | None]]:
    """``(id, parent, fork_at)`` of the session, then of each ancestor up to its root."""
    current: str | None = session_id
    seen: set[str] = set()
    while current is not None and current not in seen:
        seen.add(current)
        row = db.execute("SELECT parent, fork_at FROM sessions WHERE id = ?", (current,)).fetchone()
        if row is None:
            return
        yield current, row[0], row[1]
        current = row[0]


def _message_at(db: sqlite3.Connection, session_id: str, index: int) -> dict | None:
    """Message ``index`` of the session's conversation (ancestry resolved), or None."""
    for sid, parent, fork_at in _chain(db, session_id):
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


# -- the projector ----------------------------------------------------------------------


def _project(db: sqlite3.Connection, row: tuple[int, str, str, str, float]) -> None:
    """Apply one stored event row ``(id, session_id, type, data JSON, created)`` to the projections.

    The only writer of ``sessions`` and ``messages``: live appends and ``rebuild()`` both call
    it, and everything it writes comes from the row and the projection so far, so both give
    identical rows.
    """
    event_id, session_id, type_, raw, created = row
    data = json.loads(raw)
    if type_ == "session.fork":
        _project_session(db, session_id, data, created, data.get("at"))
    elif type_ == "session.create":
        # Schema-1 stores recorded forks as a create with {parent, fork_at}: the same branch.
        _project_session(db, session_id, data, created, data.get("fork_at"))
    elif type_ in ("message.user", "message.assistant"):
        found = db.execute(
            "SELECT message_count, title, title_inherited FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if found is None:
            return
        count, title, inherited = found
        message = data.get("message") or {}
        role = message.get("role") or type_.split(".", 1)[1]
        db.execute(
            "INSERT INTO messages (session_id, seq, role, content, event_id, created, incomplete)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (session_id, count, role, _dumps(message.get("content", [])), event_id, created,
             int(bool(message.get("incomplete")))),
        )
        if role == "user" and (title is None or inherited):
            own = _title(message.get("content"))
            if own is not None:
                title, inherited = own, 0
        db.execute(
            "UPDATE sessions SET message_count = ?, updated = ?, title = ?, title_inherited = ? WHERE id = ?",
            (count + 1, created, title, inherited, session_id),
        )
        _project_spending(db, session_id, data)
    elif type_ == "session.compacted":
        db.execute("UPDATE sessions SET compactions = compactions + 1, updated = ? WHERE id = ?", (created, session_id))
        _project_spending(db, session_id, data)
    elif type_ == "session.compact_cancelled":  # a summary written, then not applied: still paid for
        _project_spending(db, session_id, data)
    elif type_ == "session.rename":
        db.execute("UPDATE sessions SET title = ?, title_inherited = 0 WHERE id = ?", (data.get("title"), session_id))
    elif type_ == "session.delete":
        db.execute("UPDATE sessions SET deleted = 1 WHERE id = ?", (session_id,))
    elif type_ == "session.restore":
        db.execute("UPDATE sessions SET deleted = 0 WHERE id = ?", (session_id,))
    # Every other event (tool.start, tool.end, usage, notice, error, turn.end, retry, ...)
    # is history only: it leaves the projections as they are.


def _project_spending(db: sqlite3.Connection, session_id: str, data: dict) -> None:
    """Add an event's ``usage`` and ``cost`` to its session's totals (``input_tokens`` counts
    uncached input, cache reads and cache writes)."""
    usage = data.get("usage") or {}
    read, write = int(usage.get("cache_read_tokens") or 0), int(usage.get("cache_write_tokens") or 0)
    spent_in = prompt_tokens(usage)
    spent_out = int(usage.get("output_tokens") or 0)
    cost = data.get("cost") if isinstance(data.get("cost"), (int, float)) else 0.0
    if spent_in or spent_out or cost:
        db.execute(
            "UPDATE sessions SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?,"
            " cache_read_tokens = cache_read_tokens + ?, cache_write_tokens = cache_write_tokens + ?,"
            " cost = cost + ? WHERE id = ?",
            (spent_in, spent_out, read, write, float(cost), session_id),
        )


def _project_session(db: sqlite3.Connection, session_id: str, data: dict, created: float, at: Any) -> None:
    """One ``sessions`` row for a root session or a branch (``data["parent"]`` set)."""
    parent = data.get("parent")
    title, inherited = data.get("title"), 0
    fork_at: int | None = None
    if parent is not None:
        fork_at = int(at or 0)
        if title is None:
            found = db.execute("SELECT title FROM sessions WHERE id = ?", (parent,)).fetchone()
            title, inherited = (found[0] if found else None), 1
    db.execute(
        "INSERT OR IGNORE INTO sessions (id, parent, fork_at, cwd, title, created, updated, message_count,"
        " input_tokens, output_tokens, deleted, title_inherited) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, ?)",
        (session_id, parent, fork_at, data.get("cwd"), title, created, created, fork_at or 0, inherited),
    )


def _rebuild_projections(db: sqlite3.Connection) -> None:
    """Drop ``sessions`` and ``messages`` and replay every event (caller holds a transaction)."""
    db.execute("DROP TABLE IF EXISTS messages")
    db.execute("DROP TABLE IF EXISTS sessions")
    _executescript(db, _PROJECTION_SCHEMA)
    rows = db.execute("SELECT id, session_id, type, data, created FROM events ORDER BY id")
    while batch := rows.fetchmany(1000):
        for row in batch:
            _project(db, row)


# -- schema versions --------------------------------------------------------------------


def _migrate_1_to_2(db: sqlite3.Connection) -> None:
    """Schema 2 adds ``sessions.title_inherited`` and an index on ``sessions.parent``, and the
    projector learned ``session.fork`` and inherited titles. Projections are derived data, so
    replaying the unchanged ``events`` into the new tables is the whole migration."""
    _rebuild_projections(db)


def _migrate_2_to_3(db: sqlite3.Connection) -> None:
    """Schema 3 adds spending (cache tokens, cost) and compaction counts to ``sessions``;
    replaying the events fills them."""
    _rebuild_projections(db)


# MIGRATIONS[v] upgrades a store of schema v to v + 1; each runs inside the one transaction
# that opening holds, so a failed upgrade leaves the file as it was.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _migrate_1_to_2, 2: _migrate_2_to_3}


def _upgrade(db: sqlite3.Connection, path: Path) -> None:
    """Bring the schema to SCHEMA_VERSION (caller holds a write transaction).

    Raises:
        ScoutError: the store is newer than this code, or a migration failed.
    """
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise ScoutError(
            f"{path}: session store has schema version {version}; "
            f"this scout-tui reads version {SCHEMA_VERSION} (upgrade scout-tui)"
        )
    if version == SCHEMA_VERSION:
        return  # another process upgraded it while we waited for the lock
    if version == 0:  # a new file
        _executescript(db, _EVENTS_SCHEMA + _PROJECTION_SCHEMA)
    else:
        for step in range(version, SCHEMA_VERSION):
            try:
                MIGRATIONS[step](db)
            except (sqlite3.Error, ValueError) as exc:  # ValueError: an event's data is not JSON
                raise ScoutError(
                    f"{path}: cannot migrate session store from schema {step} to {step + 1}: {exc}"
                ) from None
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


# -- small helpers ------------------------------------------------------------------------


def _title(content: Any) -> str | None:
    """The first non-blank line of the first text in ``content``, clipped to TITLE_CHARS."""
    if isinstance(content, str):
        texts = [content]
    else:
        texts = [b.get("text") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
    for text in texts:
        for line in (text or "").splitlines():
            line = line.strip()
            if line:
                return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"
    return None


def _dumps(value: Any) -> str:
    """JSON text as stored: UTF-8 as is, except lone surrogates, which only escaped JSON can carry."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # e.g. bytes decoded with surrogateescape; "\\udcff" escapes load back to the same str.
        text = json.dumps(value, ensure_ascii=True, default=str)
    return text


def _info(row: tuple) -> SessionInfo:
    *head, deleted = row
    return SessionInfo(*head, deleted=bool(deleted))


def _shared_limits(db: sqlite3.Connection, session_id: str) -> list[tuple[str, int | None, int | None]]:
    """``(id, message limit, last event id)`` for the session and each ancestor, newest first:
    an ancestor contributes its first ``limit`` messages, and its events up to the event that
    stored the last of them (None: no limit, the session itself)."""
    out: list[tuple[str, int | None, int | None]] = []
    limit: int | None = None
    for sid, parent, fork_at in _chain(db, session_id):
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


def _executescript(db: sqlite3.Connection, script: str) -> None:
    """Run ``;``-separated DDL inside the caller's transaction (executescript would COMMIT)."""
    for statement in _statements(script):
        db.execute(statement)


def _statements(script: str) -> list[str]:
    """Split DDL into complete statements (trigger bodies contain ``;``)."""
    out, buf = [], ""
    for part in script.split(";"):
        buf += part + ";"
        if sqlite3.complete_statement(buf):
            if buf.strip(" \n;"):
                out.append(buf.strip())
            buf = ""
    return out


class _transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error) on an autocommit connection.

    IMMEDIATE takes the write lock up front: a deferred transaction that reads and then writes
    can fail at once with "database is locked" when another process wrote in between (its
    snapshot is stale, and waiting cannot help), while IMMEDIATE just waits ``busy_timeout``.
    """

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")


class _snapshot:
    """A read transaction: several SELECTs see one state, whatever other processes commit."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN")

    def __exit__(self, *exc: object) -> None:
        self.db.execute("COMMIT")
