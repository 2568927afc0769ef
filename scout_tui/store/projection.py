"""The session store's sqlite file: its schema, how it opens (and upgrades an older schema),
and how stored events become the ``sessions`` and ``messages`` tables.

``project`` is the only writer of both tables: ``Store.append`` calls it for each new event and
``rebuild_projections`` for every stored one, so the two give identical rows (a release gate in
``tests/test_store.py``).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Callable

from scout_tui.core.errors import ScoutError
from scout_tui.core.messages import message_text
from scout_tui.config.models import prompt_tokens
from scout_tui.store import search

SCHEMA_VERSION = 5
TITLE_CHARS = 60
BUSY_TIMEOUT_MS = 10_000  # how long a write waits for another process's transaction

EVENTS_SCHEMA = """
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

PROJECTION_SCHEMA = """
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
    compactions INTEGER NOT NULL DEFAULT 0,
    kind TEXT,
    call TEXT,
    agent TEXT
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


# -- the file -----------------------------------------------------------------------------


def connect(path: Path) -> sqlite3.Connection:
    """Open (or create) the store at ``path`` in WAL mode, its schema at SCHEMA_VERSION.

    The connection is in autocommit mode, for use from any thread under the caller's lock;
    writes go through ``transaction``, multi-SELECT reads through ``snapshot``.

    Raises:
        ScoutError: the file cannot be opened, is not a store, is newer than this code, or
            an upgrade failed.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        raise ScoutError(f"{path}: cannot open session store: {exc}") from None
    try:
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        # Checked without a write lock first: the common case (current schema) never
        # contends with another process's writes.
        if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            with transaction(db):
                upgrade(db, path)
    except sqlite3.DatabaseError as exc:
        db.close()
        raise ScoutError(f"{path}: cannot open session store: {exc}") from None
    except BaseException:
        db.close()
        raise
    return db


class transaction:
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


class snapshot:
    """A read transaction: several SELECTs see one state, whatever other processes commit."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN")

    def __exit__(self, *exc: object) -> None:
        self.db.execute("COMMIT")


# -- the projector ----------------------------------------------------------------------


def project(db: sqlite3.Connection, row: tuple[int, str, str, str, float]) -> None:
    """Apply one stored event row ``(id, session_id, type, data JSON, created)`` to the projections.

    Everything it writes comes from the row and the projection so far, so a live append and a
    replay give identical rows. The caller holds a write transaction.
    """
    event_id, session_id, type_, raw, created = row
    data = json.loads(raw)
    if type_ == "session.fork":
        _project_session(db, session_id, data, created, data.get("at"))
    elif type_ == "session.subagent":  # a child session: no message shared with its parent
        _project_session(db, session_id, {**data, "title": data.get("description")}, created, 0)
        db.execute("UPDATE sessions SET kind = 'subagent', call = ?, agent = ? WHERE id = ?",
                   (data.get("call"), data.get("agent"), session_id))
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
            (session_id, count, role, dumps(message.get("content", [])), event_id, created,
             int(bool(message.get("incomplete")))),
        )
        if role == "user" and (title is None or inherited):
            own = title_of(message.get("content"))
            if own is not None:
                title, inherited = own, 0
        db.execute(
            "UPDATE sessions SET message_count = ?, updated = ?, title = ?, title_inherited = ? WHERE id = ?",
            (count + 1, created, title, inherited, session_id),
        )
        _project_spending(db, session_id, data)
    elif type_ == "message.refused":  # over the context window, unanswered: never sent again
        db.execute("UPDATE messages SET incomplete = 1 WHERE session_id = ? AND seq = ?",
                   (session_id, data.get("index")))
    elif type_ == "session.compacted":
        db.execute("UPDATE sessions SET compactions = compactions + 1, updated = ? WHERE id = ?", (created, session_id))
        search.index_summary(db, session_id, data, created)
        _project_spending(db, session_id, data)
    elif type_ == "session.compact_cancelled":  # a summary written, then not applied: still paid for
        _project_spending(db, session_id, data)
    elif type_ == "session.rename":
        db.execute("UPDATE sessions SET title = ?, title_inherited = 0 WHERE id = ?", (data.get("title"), session_id))
    elif type_ == "session.delete":
        db.execute("UPDATE sessions SET deleted = 1 WHERE id = ?", (session_id,))
    elif type_ == "session.restore":
        db.execute("UPDATE sessions SET deleted = 0 WHERE id = ?", (session_id,))
    # Every other event (tool.start, tool.end, notice, error, turn.end, retry, and the usage
    # events of stores written before usage lived in message.assistant, ...)
    # is history only: it leaves the projections as they are.


def _project_spending(db: sqlite3.Connection, session_id: str, data: dict) -> None:
    """Add an event's ``usage`` and ``cost`` to its session's totals (``input_tokens`` counts
    uncached input, cache reads and cache writes)."""
    usage = data.get("usage") or {}
    read, write = int(usage.get("cache_read_tokens") or 0), int(usage.get("cache_write_tokens") or 0)
    spent_in = prompt_tokens(usage)
    spent_out = int(usage.get("output_tokens") or 0)
    cost = given if isinstance(given := data.get("cost"), (int, float)) else 0.0
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


def rebuild_projections(db: sqlite3.Connection) -> None:
    """Drop ``sessions``, ``messages`` and the search index and replay every event (caller
    holds a transaction)."""
    for table in ("messages", "sessions", *search.SEARCH_TABLES):
        db.execute(f"DROP TABLE IF EXISTS {table}")
    executescript(db, PROJECTION_SCHEMA + search.SEARCH_SCHEMA)
    db.execute("INSERT INTO search_state (id, indexed_rowid) VALUES (1, 0)")
    rows = db.execute("SELECT id, session_id, type, data, created FROM events ORDER BY id")
    while batch := rows.fetchmany(1000):
        for row in batch:
            project(db, row)


# -- schema versions --------------------------------------------------------------------


def _migrate_1_to_2(db: sqlite3.Connection) -> None:
    """Schema 2 adds ``sessions.title_inherited`` and an index on ``sessions.parent``, and the
    projector learned ``session.fork`` and inherited titles. Projections are derived data, so
    replaying the unchanged ``events`` into the new tables is the whole migration."""
    rebuild_projections(db)


def _migrate_2_to_3(db: sqlite3.Connection) -> None:
    """Schema 3 adds spending (cache tokens, cost) and compaction counts to ``sessions``;
    replaying the events fills them."""
    rebuild_projections(db)


def _migrate_3_to_4(db: sqlite3.Connection) -> None:
    """Schema 4 adds child sessions (``session.subagent``): ``sessions.kind``, ``call`` and
    ``agent``; replaying the events fills them."""
    rebuild_projections(db)


def _migrate_4_to_5(db: sqlite3.Connection) -> None:
    """Schema 5 adds the full-text search index (``search.py``): its tables, the summaries
    indexed, and every stored message queued for ``Store.index_some``; the other projections
    stay as they are."""
    executescript(db, search.SEARCH_SCHEMA)
    search.start_index(db)


# MIGRATIONS[v] upgrades a store of schema v to v + 1; each runs inside the one transaction
# that opening holds, so a failed upgrade leaves the file as it was.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _migrate_1_to_2, 2: _migrate_2_to_3,
                                                              3: _migrate_3_to_4, 4: _migrate_4_to_5}


def upgrade(db: sqlite3.Connection, path: Path) -> None:
    """Bring the schema to SCHEMA_VERSION (caller holds a write transaction); ``path`` names
    the file in errors.

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
        executescript(db, EVENTS_SCHEMA + PROJECTION_SCHEMA + search.SEARCH_SCHEMA)
        search.start_index(db)
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


def title_of(content: Any) -> str | None:
    """The first non-blank line of the first text in ``content`` (a message's content: a str
    or content blocks), clipped to TITLE_CHARS characters; None when there is no text."""
    for line in message_text({"content": content}).splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"
    return None


def dumps(value: Any) -> str:
    """JSON text as stored: UTF-8 as is, except lone surrogates, which only escaped JSON can carry."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # e.g. bytes decoded with surrogateescape; "\\udcff" escapes load back to the same str.
        text = json.dumps(value, ensure_ascii=True, default=str)
    return text


def executescript(db: sqlite3.Connection, script: str) -> None:
    """Run ``;``-separated DDL inside the caller's transaction (``sqlite3``'s executescript
    would COMMIT first)."""
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
