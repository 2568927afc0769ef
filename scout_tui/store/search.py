"""The full-text search index: a projection of the stored messages and summaries into SQLite
FTS5, ranked by bm25, with snippets (https://www.sqlite.org/fts5.html).

One document per (session, message, role): what the person typed (``prompt``), what the model
wrote (``answer``, thinking included), the inputs of its tool calls (``tool_input``: commands,
paths, patterns), tool outputs (``tool_output``) and compaction summaries (``summary``). A
document belongs to the session that stores the message, so a fork's shared messages are found
once, in the branch they were written in; a subagent's transcript is its own session.

Messages are indexed in batches after they are stored, not inside each append: an FTS5 insert
writes a segment per transaction, which would double what an append costs (``benchmarks/
sessions.py``). ``index_some`` indexes, in the order they were stored, the messages after
``search_state.indexed_rowid``: ``Store.search`` first catches up (a few messages since the last
search), and a front end catches up in the background after a turn. A store written before the
index existed gets it from its schema-5 migration, which queues every message: a front end
indexes that backlog in batches off its UI loop, showing ``backlog`` as progress.
``rebuild_projections`` empties the index and queues everything again. Summaries, which are
rare, are indexed as their event is projected.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from typing import Any

from scout_tui.core.messages import blocks, is_turn_marker, result_text
from scout_tui.core.text import sanitize
from scout_tui.store.search_query import ROLES, parse_query
from scout_tui.store.queries import SESSION_COLUMNS, SessionInfo, chain, info_of

__all__ = ["ROLES", "SearchHit", "SearchQuery", "backlog", "index_message", "index_some", "index_summary",
           "search", "start_index"]

SEARCH_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS search_text USING fts5(body, tokenize = 'unicode61 remove_diacritics 2');
CREATE TABLE IF NOT EXISTS search_docs (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    role TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS search_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    indexed_rowid INTEGER NOT NULL
);
"""
"""``search_text`` holds the bodies (rowid = ``search_docs.id``); ``search_state`` how far the
stored messages are indexed (every ``messages`` row up to rowid ``indexed_rowid``)."""

SEARCH_TABLES = ("search_text", "search_docs", "search_state")
DOC_CHARS = 32_000
"""A document's most characters: the first and last half of a longer text are indexed (a
traceback is at the end of a tool's output, the command it ran at the start)."""
SNIPPET_TOKENS = 14
RANK_WINDOW = 2_000
"""At most this many of a query's newest matching documents are ranked by bm25 (a common word
matches most of a large store; ranking all of them took 60 ms at 100,000 messages)."""
MARK_OPEN, MARK_CLOSE = "\x02", "\x03"


@dataclass(frozen=True)
class SearchQuery:
    """A search: ``text`` as typed (``search_query.parse_query``: words, ``"phrases"``,
    ``prefix*``, ``-exclusions``, ``role:``/``after:``/``before:``), and filters: ``cwd`` one
    project's directory (None: every project), ``roles`` (``ROLES``; () every role), ``since``
    (inclusive) and ``until`` (exclusive) in epoch seconds, ``limit`` hits at most."""

    text: str
    cwd: str | None = None
    roles: tuple[str, ...] = ()
    since: float | None = None
    until: float | None = None
    limit: int = 50


@dataclass(frozen=True)
class SearchHit:
    """One matching document, best first.

    ``session`` stores the message (a fork's shared messages are its ancestor's); ``root_id`` is
    the root of that session's tree; ``seq`` is the 0-based index of the message in
    ``Store.messages(session.id)`` (for a summary, the message count when it was made);
    ``created`` epoch seconds; ``snippet`` about ``SNIPPET_TOKENS`` words around the match as
    ``(text, is_match)`` spans; ``score`` bm25 (lower is better).
    """

    session: SessionInfo
    root_id: str
    seq: int
    role: str
    created: float
    snippet: tuple[tuple[str, bool], ...]
    score: float

    @property
    def snippet_text(self) -> str:
        """The snippet as plain text."""
        return "".join(text for text, _ in self.snippet)


# -- indexing ------------------------------------------------------------------------------


def documents(role: str, content: Any) -> list[tuple[str, str]]:
    """The ``(role, body)`` documents of a stored message of ``role`` ("user" or "assistant")
    with ``content`` (a str or content blocks); [] for a turn marker or a message with no text."""
    message = {"role": role, "content": content}
    if is_turn_marker(message):
        return []
    parts: dict[str, list[str]] = {}
    for block in blocks(message):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.setdefault("prompt" if role == "user" else "answer", []).append(str(block.get("text") or ""))
        elif kind == "thinking":
            parts.setdefault("answer", []).append(str(block.get("thinking") or ""))
        elif kind == "tool_use":
            parts.setdefault("tool_input", []).append(f"{block.get('name', '')} {_values(block.get('input'))}")
        elif kind == "tool_result":
            parts.setdefault("tool_output", []).append(result_text(block.get("content")))
    out = []
    for kind, texts in parts.items():
        body = "\n".join(t for t in texts if t.strip())
        if body:
            out.append((kind, _clip(body)))
    return out


def index_message(db: sqlite3.Connection, session_id: str, seq: int, role: str, content: Any,
                  created: float) -> None:
    """Index message ``seq`` of ``session_id`` (caller holds a write transaction)."""
    for kind, body in documents(role, content):
        _insert(db, session_id, seq, kind, body, created)


def index_summary(db: sqlite3.Connection, session_id: str, data: dict, created: float) -> None:
    """Index a ``session.compacted`` event's summary (caller holds a write transaction)."""
    summary = str(data.get("summary") or "")
    if summary.strip():
        _insert(db, session_id, int(data.get("count") or data.get("at") or 0), "summary", _clip(summary), created)


def _insert(db: sqlite3.Connection, session_id: str, seq: int, role: str, body: str, created: float) -> None:
    cursor = db.execute("INSERT INTO search_docs (session_id, seq, role, created) VALUES (?, ?, ?, ?)",
                        (session_id, seq, role, created))
    db.execute("INSERT INTO search_text (rowid, body) VALUES (?, ?)", (cursor.lastrowid, body))


def _values(value: Any) -> str:
    """The strings and numbers in a tool call's input, space-separated (its keys are noise)."""
    if isinstance(value, dict):
        return " ".join(_values(v) for v in value.values())
    if isinstance(value, list):
        return " ".join(_values(v) for v in value)
    return "" if value is None else str(value)


def _clip(body: str) -> str:
    """``body`` as indexed: at most ``DOC_CHARS`` (its two ends), as a terminal shows it
    (``sanitize``: a colour code would glue itself to the next word, ``\x1b[31mERROR`` being the
    word ``31merror``), lone surrogates (bytes a tool printed that were not UTF-8) as ``?``,
    which SQLite cannot take."""
    if len(body) > DOC_CHARS:
        body = body[:DOC_CHARS // 2] + "\n…\n" + body[-DOC_CHARS // 2:]
    body = sanitize(body)
    try:
        body.encode("utf-8")
    except UnicodeEncodeError:
        body = body.encode("utf-8", "replace").decode("utf-8")
    return body


# -- catching up -------------------------------------------------------------------------------


def start_index(db: sqlite3.Connection) -> None:
    """Start the index of a store that has none (the ``SEARCH_SCHEMA`` tables made, empty):
    every stored message is queued (``index_some`` indexes it) and the summaries are indexed
    now. Caller holds a write transaction."""
    if db.execute("SELECT 1 FROM search_state").fetchone() is not None:
        return
    db.execute("INSERT INTO search_state (id, indexed_rowid) VALUES (1, 0)")
    rows = db.execute("SELECT session_id, data, created FROM events WHERE type = 'session.compacted' ORDER BY id")
    for session_id, data, created in rows.fetchall():
        index_summary(db, session_id, json.loads(data), created)


def index_some(db: sqlite3.Connection, limit: int | None = 5_000) -> tuple[int, int]:
    """Index the next ``limit`` messages not indexed yet (None: all of them), in the order they
    were stored; returns ``backlog(db)`` after. Caller holds a write transaction."""
    done, total = backlog(db)
    if done >= total:
        return done, total
    sql = "SELECT rowid, session_id, seq, role, content, created FROM messages WHERE rowid > ? ORDER BY rowid"
    rows = db.execute(sql + " LIMIT ?", (done, limit)) if limit is not None else db.execute(sql, (done,))
    last = done
    for rowid, session_id, seq, role, content, created in rows.fetchall():
        index_message(db, session_id, seq, role, json.loads(content), created)
        last = rowid
    db.execute("UPDATE search_state SET indexed_rowid = ?", (last,))
    return backlog(db)


def backlog(db: sqlite3.Connection) -> tuple[int, int]:
    """``(indexed, stored)``: how many messages are searchable of all stored (by ``messages``
    rowid, which grows with every append); equal when the index is up to date."""
    done = db.execute("SELECT indexed_rowid FROM search_state").fetchone()
    total = db.execute("SELECT coalesce(max(rowid), 0) FROM messages").fetchone()[0]
    return (done[0] if done else 0), total


# -- searching --------------------------------------------------------------------------------


def search(db: sqlite3.Connection, query: SearchQuery) -> list[SearchHit]:
    """The documents matching ``query``, best (lowest bm25) first, at most ``query.limit``;
    deleted sessions left out, but for the messages a live fork shares (``kept_by_forks``: the
    hit then names that fork). [] for a query with no word to find. When more than
    ``RANK_WINDOW`` documents match, the newest ``RANK_WINDOW`` of them are ranked.

    Raises:
        ScoutError: the query cannot be read (``parse_query``), or FTS5 refuses it.
    """
    from scout_tui.core.errors import ScoutError

    parsed = parse_query(query.text)
    if not parsed.match:
        return []
    where = ["search_text MATCH ?", "s.deleted = 0"]
    params: list[Any] = [parsed.match]
    kept = kept_by_forks(db)
    if kept:  # a deleted session's first messages stay found while a live fork shares them
        where[1] = f"(s.deleted = 0{' OR (d.session_id = ? AND d.seq < ?)' * len(kept)})"
        params.extend(value for sid, (shared, _) in kept.items() for value in (sid, shared))
    roles = tuple(r for r in query.roles if r in ROLES) + parsed.roles
    if roles:
        where.append(f"d.role IN ({', '.join('?' * len(roles))})")
        params.extend(roles)
    if query.cwd is not None:
        where.append("s.cwd = ?")
        params.append(query.cwd)
    for bound, op in ((query.since, ">="), (parsed.since, ">="), (query.until, "<"), (parsed.until, "<")):
        if bound is not None:
            where.append(f"d.created {op} ?")
            params.append(bound)
    matched = (f"FROM search_text JOIN search_docs d ON d.id = search_text.rowid JOIN sessions s ON s.id = d.session_id"
               f" WHERE {' AND '.join(where)}")
    try:
        # bm25 costs a read of every matching document: for a common word, most of the store.
        # Past RANK_WINDOW matches (counted newest first, which FTS5 reads in rowid order and
        # stops early), only the newest RANK_WINDOW are ranked.
        edge = db.execute(f"SELECT search_text.rowid {matched} ORDER BY search_text.rowid DESC LIMIT 1 OFFSET ?",
                          (*params, RANK_WINDOW - 1)).fetchone()
        if edge is not None:
            matched += " AND search_text.rowid >= ?"
            params.append(edge[0])
        rows = db.execute(f"SELECT d.session_id, d.seq, d.role, d.created,"
                          f" snippet(search_text, 0, '{MARK_OPEN}', '{MARK_CLOSE}', '…', {SNIPPET_TOKENS}),"
                          f" bm25(search_text) AS score {matched} ORDER BY score LIMIT ?",
                          (*params, max(1, query.limit))).fetchall()
    except sqlite3.OperationalError as exc:
        raise ScoutError(f"cannot search for {query.text!r}: {exc}") from None
    infos: dict[str, tuple[SessionInfo, str]] = {}
    hits = []
    for session_id, seq, role, created, snippet, score in rows:
        if session_id not in infos:
            shown = kept[session_id][1] if session_id in kept else session_id  # the live fork, for a deleted one
            row = db.execute(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", (shown,)).fetchone()
            root = [sid for sid, _, _ in chain(db, session_id)][-1]
            infos[session_id] = (info_of(row), root)
        info, root = infos[session_id]
        hits.append(SearchHit(info, root, seq, role, created, spans(snippet), score))
    return hits


def kept_by_forks(db: sqlite3.Connection) -> dict[str, tuple[int, str]]:
    """Deleted sessions whose first messages a live fork still shows (it shares them, they are
    stored once, in the deleted one): ``{deleted id: (messages shared, a live fork's id)}``."""
    deleted = {sid for (sid,) in db.execute("SELECT id FROM sessions WHERE deleted = 1")}
    kept: dict[str, tuple[int, str]] = {}
    if not deleted:
        return kept
    forks = db.execute("SELECT id FROM sessions WHERE deleted = 0 AND parent IS NOT NULL"
                       " AND coalesce(kind, '') != 'subagent'").fetchall()
    for (live,) in forks:
        shared: int | None = None  # how many of the next ancestor's messages ``live`` shows
        for sid, _, fork_at in chain(db, live):
            if shared is not None and sid in deleted and shared > kept.get(sid, (0, ""))[0]:
                kept[sid] = (shared, live)
            if fork_at is not None:
                shared = fork_at if shared is None else min(shared, fork_at)
    return kept


def spans(snippet: str) -> tuple[tuple[str, bool], ...]:
    """FTS5 ``snippet()`` text with ``MARK_OPEN``/``MARK_CLOSE`` around matches, as
    ``(text, is_match)`` spans; runs of whitespace (newlines included) become one space."""
    out: list[tuple[str, bool]] = []
    for n, part in enumerate(snippet.split(MARK_OPEN)):
        matched, _, rest = part.partition(MARK_CLOSE) if n else ("", "", part)
        for text, is_match in ((matched, True), (rest, False)):
            text = re.sub(r"\s+", " ", text)
            if text:
                out.append((text, is_match))
    return tuple(out)
