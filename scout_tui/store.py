"""The session store: an append-only sqlite event log (the truth) and its projections.

``events`` is never updated or deleted (triggers refuse); ``sessions`` and ``messages`` are
projections that one function, ``_project``, builds both live and in ``rebuild()``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from scout_tui.bus import TRANSIENT, Event
from scout_tui.config import data_dir
from scout_tui.errors import ScoutError

SCHEMA_VERSION = 1
TITLE_CHARS = 60
MIN_PREFIX = 4

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
    deleted INTEGER DEFAULT 0
);
CREATE INDEX IF NOT EXISTS sessions_by_cwd ON sessions (cwd, updated);
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
    "id, parent, fork_at, cwd, title, created, updated, message_count, input_tokens, output_tokens, deleted"
)


@dataclass
class SessionInfo:
    """One row of the ``sessions`` projection. Times are Unix seconds; tokens are totals.

    ``input_tokens`` counts input + cache read + cache write tokens of this session's own
    assistant messages; ``message_count`` includes the ``fork_at`` messages shared with a parent.
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
    deleted: bool


EventRow = tuple[int, str, str, dict, float]


class Store:
    """Sessions in one sqlite file (WAL), safe to call from a worker thread.

    The connection opens on first use; every call holds one lock, so the app may call the
    store through ``asyncio.to_thread`` while the UI thread also reads it.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path: Path = Path(path) if path is not None else data_dir() / "sessions.db"
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    # -- connection ---------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        """The open connection (caller holds the lock); creates the file and schema once."""
        if self._db is not None:
            return self._db
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise ScoutError(f"{self.path}: cannot open session store: {exc}") from None
        try:
            db.execute("PRAGMA busy_timeout = 5000")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            with _transaction(db):
                version = db.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:
                    raise ScoutError(
                        f"{self.path}: session store has schema version {version}; "
                        f"this scout-tui reads version {SCHEMA_VERSION} (upgrade scout-tui)"
                    )
                if version < SCHEMA_VERSION:
                    _executescript(db, _EVENTS_SCHEMA + _PROJECTION_SCHEMA)
                    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
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

        With ``parent`` the session is a fork sharing the parent's first ``fork_at`` messages
        (default: all of them); nothing is copied.

        Raises:
            ScoutError: ``parent`` does not exist, or ``fork_at`` is outside 0..its message count.
        """
        data: dict[str, Any] = {"id": uuid.uuid4().hex, "cwd": str(Path(cwd).resolve())}
        if title is not None:
            data["title"] = title
        with self._lock:
            db = self._conn()
            with _transaction(db):
                if parent is not None:
                    row = db.execute("SELECT message_count FROM sessions WHERE id = ?", (parent,)).fetchone()
                    if row is None:
                        raise ScoutError(f"cannot fork: no session {parent}")
                    at = row[0] if fork_at is None else fork_at
                    if not 0 <= at <= row[0]:
                        raise ScoutError(f"cannot fork session {parent} at message {at}: it has {row[0]}")
                    data["parent"], data["fork_at"] = parent, at
                elif fork_at is not None:
                    raise ScoutError("fork_at needs a parent session")
                self._insert(db, data["id"], Event("session.create", data))
        return data["id"]

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
                db.execute("DROP TABLE IF EXISTS messages")
                db.execute("DROP TABLE IF EXISTS sessions")
                _executescript(db, _PROJECTION_SCHEMA)
                rows = db.execute("SELECT id, session_id, type, data, created FROM events ORDER BY id")
                while batch := rows.fetchmany(1000):
                    for row in batch:
                        _project(db, row)

    # -- reading ------------------------------------------------------------------------

    def messages(self, session_id: str) -> list[dict]:
        """The conversation ``[{"role", "content"}, ...]`` in order; [] for an unknown id.

        A message cut short by a stream error also carries ``"incomplete": True``.

        A fork's list starts with its parent's first ``fork_at`` messages (recursively).
        """
        with self._lock:
            db = self._conn()
            segments: list[tuple[str, int, int | None]] = []
            limit: int | None = None
            current: str | None = session_id
            seen: set[str] = set()
            while current is not None and current not in seen:
                seen.add(current)
                row = db.execute("SELECT parent, fork_at FROM sessions WHERE id = ?", (current,)).fetchone()
                if row is None:
                    break
                start = (row[1] or 0) if row[0] is not None else 0
                segments.append((current, start, limit))
                limit = start if limit is None else min(limit, start)
                current = row[0]
            result: list[dict] = []
            for sid, start, stop in reversed(segments):
                rows = db.execute(
                    "SELECT role, content, incomplete FROM messages WHERE session_id = ? AND seq >= ? AND seq < ?"
                    " ORDER BY seq",
                    (sid, start, stop if stop is not None else 2**62),
                )
                for role, content, incomplete in rows:
                    message = {"role": role, "content": json.loads(content)}
                    if incomplete:
                        message["incomplete"] = True
                    result.append(message)
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

    def projection_rows(self) -> tuple[list[tuple], list[tuple]]:
        """Every ``sessions`` row (by id) and ``messages`` row (by session, seq), for comparing."""
        with self._lock:
            db = self._conn()
            sessions = db.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions ORDER BY id").fetchall()
            messages = db.execute(
                "SELECT session_id, seq, role, content, event_id, created, incomplete FROM messages"
                " ORDER BY session_id, seq"
            ).fetchall()
        return sessions, messages


# -- the projector ----------------------------------------------------------------------


def _project(db: sqlite3.Connection, row: tuple[int, str, str, str, float]) -> None:
    """Apply one stored event row ``(id, session_id, type, data JSON, created)`` to the projections.

    The only writer of ``sessions`` and ``messages``: live appends and ``rebuild()`` both call
    it, and everything it writes comes from the row, so both give identical rows.
    """
    event_id, session_id, type_, raw, created = row
    data = json.loads(raw)
    if type_ == "session.create":
        parent = data.get("parent")
        fork_at = data.get("fork_at") if parent is not None else None
        db.execute(
            "INSERT OR IGNORE INTO sessions (id, parent, fork_at, cwd, title, created, updated,"
            " message_count, input_tokens, output_tokens, deleted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0)",
            (session_id, parent, fork_at, data.get("cwd"), data.get("title"), created, created, fork_at or 0),
        )
    elif type_ in ("message.user", "message.assistant"):
        found = db.execute("SELECT message_count, title FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if found is None:
            return
        count, title = found
        message = data.get("message") or {}
        role = message.get("role") or type_.split(".", 1)[1]
        db.execute(
            "INSERT INTO messages (session_id, seq, role, content, event_id, created, incomplete)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (session_id, count, role, _dumps(message.get("content", [])), event_id, created,
             int(bool(message.get("incomplete")))),
        )
        usage = data.get("usage") or {}
        spent_in = sum(int(usage.get(k) or 0) for k in ("input_tokens", "cache_read_tokens", "cache_write_tokens"))
        spent_out = int(usage.get("output_tokens") or 0)
        if title is None and role == "user":
            title = _title(message.get("content"))
        db.execute(
            "UPDATE sessions SET message_count = ?, updated = ?, title = ?,"
            " input_tokens = input_tokens + ?, output_tokens = output_tokens + ? WHERE id = ?",
            (count + 1, created, title, spent_in, spent_out, session_id),
        )
    elif type_ == "session.rename":
        db.execute("UPDATE sessions SET title = ? WHERE id = ?", (data.get("title"), session_id))
    elif type_ == "session.delete":
        db.execute("UPDATE sessions SET deleted = 1 WHERE id = ?", (session_id,))
    elif type_ == "session.restore":
        db.execute("UPDATE sessions SET deleted = 0 WHERE id = ?", (session_id,))
    # Every other event (tool.start, tool.end, usage, notice, error, turn.end, retry, ...)
    # is history only: it leaves the projections as they are.


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
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error) on an autocommit connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")
