"""The session store: an append-only sqlite event log (the truth) and its projections.

``events`` is never updated or deleted (triggers refuse); ``sessions`` and ``messages`` are
projections that one function, ``projection.project``, builds both live and in ``rebuild()``.
Sessions form a tree: a ``session.fork`` event starts a branch that shares its parent's first
``at`` messages without copying them, and reading a branch resolves its ancestry
(``store_queries``).

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
- ``session.model`` {provider, model}: the model of the next requests (``model_switch``); a
  branch inherits the last one made before its fork point. It leaves the projections alone.

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
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from scout_tui.store import queries as queries
from scout_tui.store import search as search
from scout_tui.core.bus import (Event, ModelSwitch, SessionCreate, SessionDelete, SessionFork, SessionRename,
                           SessionRestore, SessionSubagent)
from scout_tui.config.layers import data_dir
from scout_tui.core.errors import ScoutError
from scout_tui.store.projection import (MIGRATIONS, SCHEMA_VERSION, connect, dumps, project, rebuild_projections, snapshot,
                                  transaction)
from scout_tui.store.queries import SESSION_COLUMNS, SessionInfo, info_of, tree_order, valid_fork_point

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "EventRow", "SessionInfo", "Store", "tree_order", "valid_fork_point"]

MIN_PREFIX = 4

EventRow = tuple[int, str, str, dict, float]


class Store:
    """Sessions in one sqlite file (WAL), safe to call from a worker thread and from several
    processes at once (every write is one short ``BEGIN IMMEDIATE`` transaction; a writer
    waits up to ``projection.BUSY_TIMEOUT_MS`` for another's to end instead of failing).

    The connection opens on first use, and upgrades an older schema then (see
    ``projection.MIGRATIONS``); every call holds one lock, so the app may call the store
    through ``asyncio.to_thread`` while the UI thread also reads it.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path: Path = Path(path) if path is not None else data_dir() / "sessions.db"
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    # -- connection ---------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        """The open connection (caller holds the lock); creates or migrates the schema once."""
        if self._db is None:
            self._db = connect(self.path)
        return self._db

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """The connection, the lock held and one read snapshot open throughout."""
        with self._lock:
            db = self._conn()
            with snapshot(db):
                yield db

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

        With ``parent`` this is ``fork(parent, fork_at, title=title, cwd=cwd).id``.

        Raises:
            ScoutError: ``parent`` does not exist, ``fork_at`` is out of its range, or
                ``fork_at`` is given without a parent.
        """
        if parent is not None:
            return self.fork(parent, fork_at, title=title, cwd=cwd).id
        if fork_at is not None:
            raise ScoutError("fork_at needs a parent session")
        created = SessionCreate(uuid.uuid4().hex, str(Path(cwd).resolve()), title)
        with self._lock:
            db = self._conn()
            with transaction(db):
                self._insert(db, created.id, created)
        return created.id

    def fork(
        self,
        parent_id: str,
        at: int | None = None,
        *,
        title: str | None = None,
        cwd: str | Path | None = None,
    ) -> SessionInfo:
        """Start a branch of session ``parent_id`` sharing its first ``at`` messages; returns the
        branch as stored, its ``fork_at`` being the fork point used.

        Nothing is copied: one ``session.fork {parent, at, cwd, title?}`` event and one
        ``sessions`` row are written whatever the parent's size, and reading the branch
        resolves its ancestry. Forks of forks work to any depth.

        ``at`` is a message count, 0 to the parent's message count (None: all of them). It is
        moved by ``valid_fork_point`` so that no tool call is left without its result.
        ``title`` defaults to the parent's title, which the branch's own first user message
        then replaces (so sibling branches are told apart by where they diverge).
        ``cwd`` defaults to the parent's directory.

        Raises:
            ScoutError: no session ``parent_id`` (a full id), or ``at`` is outside 0..its
                message count.
        """
        new_id = uuid.uuid4().hex
        with self._lock:
            db = self._conn()
            with transaction(db):
                row = db.execute("SELECT message_count, cwd FROM sessions WHERE id = ?", (parent_id,)).fetchone()
                if row is None:
                    raise ScoutError(f"cannot fork: no session {parent_id}")
                count, parent_cwd = row
                if at is not None and not 0 <= at <= count:
                    raise ScoutError(f"cannot fork session {parent_id[:8]} at message {at}: it has {count} messages")
                point = valid_fork_point(lambda i: queries.message_at(db, parent_id, i), count, at)
                branch = SessionFork(parent_id, point, str(Path(cwd).resolve()) if cwd is not None else parent_cwd, title)
                self._insert(db, new_id, branch)
                made = db.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (new_id,)).fetchone()
        return info_of(made)

    def create_subagent(self, parent_id: str, *, call: str, agent: str, description: str,
                        cwd: str | Path | None = None) -> str:
        """Start the child session of session ``parent_id`` where a subagent works on its ``task``
        call ``call`` (one ``session.subagent`` event); returns its id. It shares no message with
        the parent, its title is ``description``, and ``latest`` (``-c``) never picks it.

        Raises:
            ScoutError: no session ``parent_id`` (a full id).
        """
        new_id = uuid.uuid4().hex
        with self._lock:
            db = self._conn()
            with transaction(db):
                row = db.execute("SELECT cwd FROM sessions WHERE id = ?", (parent_id,)).fetchone()
                if row is None:
                    raise ScoutError(f"cannot start a subagent: no session {parent_id}")
                child = SessionSubagent(parent_id, call, agent, description,
                                        str(Path(cwd).resolve()) if cwd is not None else row[0])
                self._insert(db, new_id, child)
        return new_id

    def append(self, session_id: str, event: Event) -> int | None:
        """Store ``event`` for the session and update the projections in one transaction.

        Returns the event's row id, or None for transient events (``Event.stored`` False), which
        are not stored. Data is stored as JSON (values that are not JSON types become str).

        Raises:
            ScoutError: no session ``session_id`` (unless the event is its ``session.create``).
        """
        if not event.stored:
            return None
        with self._lock:
            db = self._conn()
            with transaction(db):
                if not isinstance(event, SessionCreate):
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
        self.append(session_id, SessionRename(clean))

    def delete(self, session_id: str) -> None:
        """Hide a session from listings (a ``session.delete`` event; ``restore`` undoes it).

        Its rows stay, and its branches stay readable (they show as roots in ``tree``).

        Raises:
            ScoutError: no session ``session_id``.
        """
        self.append(session_id, SessionDelete())

    def restore(self, session_id: str) -> None:
        """Show a deleted session again (a ``session.restore`` event).

        Raises:
            ScoutError: no session ``session_id``.
        """
        self.append(session_id, SessionRestore())

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
        data = dumps(event.data)
        cursor = db.execute(
            "INSERT INTO events (session_id, type, data, created) VALUES (?, ?, ?, ?)",
            (session_id, event.type, data, created),
        )
        event_id = cursor.lastrowid
        assert event_id is not None
        project(db, (event_id, session_id, event.type, data, created))
        return event_id

    def rebuild(self) -> None:
        """Drop the projections and replay every event in id order (one transaction)."""
        with self._lock:
            db = self._conn()
            with transaction(db):
                rebuild_projections(db)

    # -- reading: sessions --------------------------------------------------------------

    def session(self, session_id: str) -> SessionInfo | None:
        """The session with this id, or with this unique prefix (at least 4 characters).

        Returns None when nothing matches. Raises ScoutError when the prefix is ambiguous.
        """
        with self._reading() as db:
            row = db.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if row is not None:
                return info_of(row)
            if len(session_id) < MIN_PREFIX:
                return None
            # A range scan on the primary key: every id starting with the prefix sorts
            # between the prefix and the prefix followed by the largest code point.
            rows = db.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id >= ? AND id < ? ORDER BY id LIMIT 6",
                (session_id, session_id + "\U0010ffff"),
            ).fetchall()
        if len(rows) > 1:
            shown = ", ".join(r[0] for r in rows[:5]) + (", ..." if len(rows) > 5 else "")
            raise ScoutError(f"session id prefix {session_id!r} is ambiguous: {shown}")
        return info_of(rows[0]) if rows else None

    def find(self, ref: str) -> SessionInfo:
        """``session(ref)``, deleted sessions included, but a miss is an error.

        Raises:
            ScoutError: nothing matches ``ref`` (an id, or a prefix of at least 4 characters),
                or the prefix is ambiguous.
        """
        info = self.session(ref)
        if info is None:
            short = f": a prefix needs at least {MIN_PREFIX} characters" if len(ref) < MIN_PREFIX else ""
            raise ScoutError(f"no session matches {ref!r}{short} (see `scout-tui sessions --all`)")
        return info

    def ancestry(self, session_id: str) -> list[SessionInfo]:
        """The session and its ancestors, root first and ``session_id`` last; [] if unknown."""
        with self._reading() as db:
            ids = [sid for sid, _, _ in queries.chain(db, session_id)]
            rows = [db.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (sid,)).fetchone()
                    for sid in reversed(ids)]
        return [info_of(r) for r in rows]

    def sessions(self, cwd: str | Path | None = None, include_deleted: bool = False) -> list[SessionInfo]:
        """Sessions newest-updated first; only those of directory ``cwd`` unless it is None."""
        where, params = [], []
        if cwd is not None:
            where.append("cwd = ?")
            params.append(str(Path(cwd).resolve()))
        if not include_deleted:
            where.append("deleted = 0")
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        with self._reading() as db:
            rows = db.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions {clause} ORDER BY updated DESC, created DESC", params
            ).fetchall()
        return [info_of(r) for r in rows]

    def tree(self, cwd: str | Path | None = None, include_deleted: bool = False) -> list[tuple[SessionInfo, int]]:
        """``sessions(cwd, include_deleted)`` as a tree, in display order: ``[(info, depth)]``.

        See ``tree_order``: branches follow their parent one level deeper, siblings newest
        first; a branch whose parent is not listed (deleted, or in another directory) is a root.
        """
        return tree_order(self.sessions(cwd, include_deleted))

    def latest(self, cwd: str | Path) -> SessionInfo | None:
        """The most recently updated non-deleted session in ``cwd`` that the person started or
        forked (not a subagent's), or None."""
        with self._reading() as db:
            row = db.execute(
                f"SELECT {SESSION_COLUMNS} FROM sessions WHERE cwd = ? AND deleted = 0 AND kind IS NULL"
                " ORDER BY updated DESC, created DESC LIMIT 1",
                (str(Path(cwd).resolve()),),
            ).fetchone()
        return info_of(row) if row else None

    # -- reading: a branch's conversation and events --------------------------------------

    def messages(self, session_id: str, since: int = 0) -> list[dict]:
        """The conversation ``[{"role", "content"}, ...]`` in order; [] for an unknown id.

        ``since`` skips the first messages: the result starts at that position (so the tail of
        a long session reads in time proportional to the tail). A message cut short by a stream
        error also carries ``"incomplete": True``.

        A fork's list starts with its parent's first ``fork_at`` messages (recursively): one
        range query per ancestor, read in one snapshot.
        """
        with self._reading() as db:
            return queries.messages(db, session_id, since)

    def user_messages(self, cwd: str | Path, limit: int = 2000) -> list[dict]:
        """The person's messages across sessions, for prompt history search: the user messages
        (``{"role", "content"}``) holding text, of every non-deleted session the person started
        or forked (not a subagent's), those of directory ``cwd`` first, each group newest first;
        at most ``limit``. A branch's shared messages are its parent's, so each comes once."""
        with self._reading() as db:
            return queries.user_messages(db, str(Path(cwd).resolve()), limit)

    def events(self, session_id: str | None = None) -> list[EventRow]:
        """Stored events ``(id, session_id, type, data, created)`` in id order; all sessions if None."""
        sql = "SELECT id, session_id, type, data, created FROM events"
        params: tuple = ()
        if session_id is not None:
            sql += " WHERE session_id = ?"
            params = (session_id,)
        with self._reading() as db:
            rows = db.execute(sql + " ORDER BY id", params).fetchall()
        return [(i, sid, type_, json.loads(data), created) for i, sid, type_, data, created in rows]

    def compactions(self, session_id: str) -> list[dict]:
        """The summary compactions in force along this branch, oldest first: the data of each
        ``session.compacted`` event (see ``summary.py``) plus ``event_id`` and ``session_id``.
        An ancestor's count only when made before the branch's fork point (``count < fork_at``);
        the last one is the summary the model sees."""
        with self._reading() as db:
            return queries.compactions(db, session_id)

    def checkpoint_events(self, session_id: str) -> list[tuple[str, dict]]:
        """The file checkpoints along this branch, oldest first, as ``(type, data)``: the
        ``checkpoint`` events (``bus.Checkpoint``) and ``checkpoint.restore`` events
        (``bus.CheckpointRestore``). An ancestor's count for the turns the branch shares (its
        ``turn`` below the fork point), its restores only when made before the branch was, so
        ``/undo`` in a fresh fork can take back the parent's last shared turn."""
        with self._reading() as db:
            return queries.checkpoint_events(db, session_id)

    def model_switch(self, session_id: str, at: int | None = None) -> ModelSwitch | None:
        """The profile and model the session goes on with: its newest ``session.model`` event
        (``bus.ModelSwitch``), or None when it never switched (the configured model then).

        A branch inherits its ancestors' switches made before its fork point: while the
        ancestor had no more messages than the branch shares, and before the branch was made.
        So a fork after a switch goes on with the switched model, a fork at a message before
        it with the model in force then, and a switch in the parent after the fork does not
        reach the branch. ``at`` asks the same of a branch not made yet: sharing the first
        ``at`` messages of ``session_id``."""
        with self._reading() as db:
            data = queries.model_switch(db, session_id, at)
        event = Event.of("session.model", data) if data is not None else None
        return event if isinstance(event, ModelSwitch) else None

    def spending(self, session_id: str) -> dict[str, dict[str, float]]:
        """What this branch's conversation cost, by model: ``{model: {"requests", "input_tokens",
        "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost"}}`` (``input_tokens``
        uncached; tokens as counts, cost in dollars). Ancestors count up to the fork point;
        summary requests count under their model."""
        with self._reading() as db:
            return queries.spending(db, session_id)

    def usage_since(self, session_id: str, since: int) -> dict[str, float]:
        """What the requests of this branch's messages from index ``since`` on cost:
        ``{"requests", "input_tokens" (uncached, cache read and cache write), "output_tokens",
        "cost" (dollars)}``, from the usage each assistant message was stored with, and the
        summary requests (compactions, also cancelled ones) this branch made after that point."""
        with self._reading() as db:
            return queries.usage_since(db, session_id, since)

    def subagent_cost(self, session_id: str) -> float:
        """Dollars the subagents of session ``session_id`` spent: its children of kind
        ``subagent`` and theirs, to any depth (not its forks, which count their own)."""
        with self._reading() as db:
            return queries.subagent_cost(db, session_id)

    def call_subagent_cost(self, session_ids: list[str], calls: list[str]) -> float:
        """Dollars the subagents that ``task`` calls ``calls`` (tool_use ids) of sessions
        ``session_ids`` started spent, with their own subagents' (``subagent_cost``)."""
        if not session_ids or not calls:
            return 0.0
        with self._reading() as db:
            return queries.call_subagent_cost(db, session_ids, calls)

    def tool_details(self, session_id: str) -> dict[str, dict[str, Any]]:
        """What the tool pane shows of a stored call beyond its result: ``{tool_use_id: {"diff":
        unified diff, "output_path": file of the whole output, "elapsed": seconds it ran}}`` (any
        key may be missing), from the ``tool.end`` events of the session and its ancestors (a
        branch's own win), so a branch shows its shared calls as its parent does."""
        with self._reading() as db:
            return queries.tool_details(db, session_id)

    # -- searching ----------------------------------------------------------------------

    def search(self, query: search.SearchQuery) -> list[search.SearchHit]:
        """Messages and summaries of every branch matching ``query`` (see ``search.search``),
        best first. Messages stored since the index last caught up are indexed first (one
        write transaction), so every stored message is searched; when that cannot write (another
        process held the write lock past ``busy_timeout``), what is indexed is.

        Raises:
            ScoutError: the query cannot be read or run.
        """
        with self._lock:
            db = self._conn()
            done, total = search.backlog(db)
            if done < total:
                try:
                    with transaction(db):
                        search.index_some(db, None)
                except sqlite3.OperationalError:
                    pass  # caught up by the next search
            with snapshot(db):
                return search.search(db, query)

    def index_backlog(self) -> tuple[int, int]:
        """``(indexed, stored)`` messages: equal when every stored message is searchable (see
        ``search.backlog``)."""
        with self._reading() as db:
            return search.backlog(db)

    def index_some(self, limit: int = 5_000) -> tuple[int, int]:
        """Index the next ``limit`` messages not indexed yet (one short write transaction, so
        appends from other threads and processes go on between batches); returns
        ``index_backlog()`` after. A front end calls it off its UI loop: in batches for an old
        store's backlog (showing progress), after a turn to keep searches instant."""
        with self._lock:
            db = self._conn()
            with transaction(db):
                return search.index_some(db, limit)

    def projection_rows(self) -> tuple[list[tuple], list[tuple]]:
        """Every ``sessions`` row (by id, all columns) and ``messages`` row (by session, seq)."""
        with self._reading() as db:
            return queries.projection_rows(db)
