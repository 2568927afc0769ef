"""``/search`` (and ``s`` in the sessions pane): the words of every session and branch, searched as
you type through the store's full-text index (``store/search.py``). ``SessionSearch`` is a modal
screen: a search field, this project or all projects (Tab), and the hits best first, each with
its session, branch, when, role and a snippet with the matched words marked; Enter (or a click)
dismisses with the hit, Esc with None.

Typing never waits: each query runs in a thread (an exclusive worker), and a result that comes
back for text no longer in the field is dropped. A store written before the index existed is
indexed here in batches (``Store.index_some``), its progress said on the screen, and a search
typed meanwhile runs once it is done.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from ..core.errors import ScoutError
from ..core.text import sanitize
from .session_rows import TITLE_WIDTH, cut, relative_time
from .welcome import tilde

if TYPE_CHECKING:
    from ..store.event_log import Store
    from ..store.search import SearchHit

INDEX_BATCH = 500
"""Messages of an old store indexed per write transaction while the screen is open (its progress
is said between them); a backlog of at most this many is left to ``Store.search``, which
indexes what is left before it searches."""

SHOWN = 50
"""The most hits listed (the best): more words narrow them."""

RECENT = 365 * 86_400.0
"""Seconds within which a hit's time reads relative ("3d ago"); an older one reads as its date."""

ROLE_NAMES = {"prompt": "prompt", "answer": "answer", "tool_input": "tool call", "tool_output": "tool output",
              "summary": "summary"}
"""How a hit's role (``search.ROLES``) reads on its row."""


def when(created: float, now: float) -> str:
    """A hit's time (epoch seconds) as its row says it: relative to ``now`` ("5m ago", "3d ago",
    ``session_rows.relative_time``) within ``RECENT``, else its local date ("2024-03-14")."""
    if now - created < RECENT:
        return relative_time(created, now)
    return time.strftime("%Y-%m-%d", time.localtime(created))


def branch_of(hit: SearchHit) -> str:
    """The branch a hit is in, by short id: ``5c0075e5`` for a root, ``⑂ 5c0075e5 fork of
    5c0075e4 at 3`` for a branch, ``⚙ explore 5c0075e5`` for a subagent's session."""
    info = hit.session
    if info.subagent_mark:
        return f"{info.subagent_mark} {info.id[:8]}"
    if info.parent is None:
        return info.id[:8]
    at = f" at {info.fork_at}" if info.fork_at is not None else ""
    return f"⑂ {info.id[:8]} fork of {info.parent[:8]}{at}"


def hit_row(hit: SearchHit, now: float, show_cwd: bool = False) -> Content:
    """A hit as two lines of the list: its session's title (bold, cut to ``TITLE_WIDTH`` cells),
    when, role and branch (muted, with the project's folder when ``show_cwd``); then the snippet, the matched words in the
    theme's accent, reversed. Plain text, never read as markup."""
    info = hit.session
    _, title = info.title_parts()
    meta = [when(hit.created, now), ROLE_NAMES.get(hit.role, hit.role), branch_of(hit)]  # the row is cut at its end
    if show_cwd and info.cwd:
        meta.append(tilde(Path(info.cwd)))
    head = Content.assemble((cut(" ".join(sanitize(title).split()), TITLE_WIDTH), "bold"), "  ",
                            (" · ".join(sanitize(part) for part in meta), "$text-muted"))
    snippet = Content.assemble("  ", *((" ".join(sanitize(text).split(" ")), "bold reverse $accent" if match else "")
                                      for text, match in hit.snippet))
    return Content("\n").join([head, snippet])


class SessionSearch(ModalScreen["SearchHit | None"]):
    """The search over every session's words, dismissed with the hit chosen, or None (Esc).

    Args:
        store: the session store (searched and indexed in threads).
        cwd: this project's directory, as the store records it (resolved).
        query: text to start with (``/search QUERY``).
        clock: "now" for the hits' times (default ``default_clock``).
    """

    DEFAULT_CSS = """
    SessionSearch {
        align: center middle;
        & > #search-box {
            width: 100%;
            max-width: 120;
            height: auto;
            max-height: 90%;
            background: $surface;
            border: round $primary;
            border-title-color: $text;
            border-subtitle-color: $text-muted;
            padding: 0 1;
        }
        & #search-query { border: none; height: 1; padding: 0; background: $surface; }
        & #search-scope { color: $text-muted; }
        & #search-hits {
            height: auto;
            max-height: 24;  /* less on a short screen: see on_resize */
            border: none;
            padding: 0;
            background: $surface;
            text-wrap: nowrap;
            text-overflow: ellipsis;
            & > .option-list--option-highlighted { background: $block-cursor-background; }
        }
        & #search-status { color: $text-muted; }
        & #search-status.-error { color: $text-error; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="session_search.close"),
        Binding("tab", "toggle_scope", "All projects", priority=True, id="session_search.scope"),
        Binding("up", "move(-1)", "Previous", show=False, id="session_search.previous"),
        Binding("down", "move(1)", "Next", show=False, id="session_search.next"),
    ]

    default_clock: ClassVar[Callable[[], float]] = staticmethod(time.time)
    """The "now" of a screen made without a ``clock``; tests stop it."""

    @dataclass
    class Found(Message):
        """A query's hits came back (from its thread): for ``key`` (the text and scope it ran
        with), ``hits`` best first, or ``error`` (a ``ScoutError``'s message), or ``waiting``:
        it runs once an old store's backlog is indexed (``Store.search`` would index it all
        first, in one go, with no progress to show)."""

        key: tuple[str, bool]
        hits: list[SearchHit]
        error: str = ""
        waiting: bool = False

    @dataclass
    class Indexed(Message):
        """An old store's index grew: ``done`` of ``total`` messages are searchable."""

        done: int
        total: int

    def __init__(self, store: Store, cwd: str, query: str = "", clock: Callable[[], float] | None = None) -> None:
        super().__init__()
        self._store = store
        self._cwd = cwd
        self._query = query
        self._clock = clock or type(self).default_clock
        self.all_projects = False
        """Whether every project's sessions are searched (Tab), not only this one's."""
        self.hits: list[SearchHit] = []
        """The hits listed, best first."""
        self.searched: tuple[str, bool] | None = None
        """The text and scope the list shows the hits of (None before the first came back)."""
        self.backlog: tuple[int, int] = (0, 0)
        self.unindexable = False
        """Whether indexing an old store failed here: searches then cover what is indexed."""
        """``(indexed, stored)`` messages while an old store's are being indexed."""
        self.waiting = False
        """The search typed runs once that backlog is indexed."""
        self._error = ""

    def compose(self) -> ComposeResult:
        with Vertical(id="search-box") as box:
            box.border_title = "Search sessions"
            yield Input(self._query, placeholder='words, "a phrase", prefix*, -leave out, role:tool, after:2025-01-31',
                        id="search-query")
            yield Static(id="search-scope")
            yield OptionList(id="search-hits")
            yield Static(id="search-status")

    def on_mount(self) -> None:
        self._fit(self.app.size.height)
        self._show_scope()
        self._show_status()
        self._index_backlog()
        self._search(*self.key)

    def on_resize(self, event: events.Resize) -> None:
        self._fit(event.size.height)

    def _fit(self, rows: int) -> None:
        """Let the list take what the box's other rows (borders, field, scope, a status of up to
        two lines: 7) leave of its 90% of ``rows``, at most 24: a box of ``height: auto`` is not
        shortened by a child's ``max-height`` in ``vh``, so it is set here."""
        self.query_one("#search-hits", OptionList).styles.max_height = max(2, min(24, int(rows * 0.9) - 7))

    @property
    def key(self) -> tuple[str, bool]:
        """What the list should show the hits of: the field's text and ``all_projects``."""
        return self.query_one("#search-query", Input).value, self.all_projects

    # -- searching (in threads) ----------------------------------------------------------------

    @on(Input.Changed, "#search-query")
    def _typed(self) -> None:
        self._search(*self.key)

    @work(thread=True, exclusive=True, group="session-search")
    def _search(self, text: str, all_projects: bool) -> None:
        """Run the search for ``text`` in this worker's thread; its hits come back as ``Found``."""
        from ..store.search import SearchQuery

        if not text.strip():
            self.post_message(self.Found((text, all_projects), []))
            return
        done, total = self._store.index_backlog()
        if total - done > INDEX_BATCH and not self.unindexable:  # _index_backlog indexes it, then searches again
            self.post_message(self.Found((text, all_projects), [], waiting=True))
            return
        try:
            hits = self._store.search(SearchQuery(text, cwd=None if all_projects else self._cwd, limit=SHOWN))
        except ScoutError as e:
            self.post_message(self.Found((text, all_projects), [], str(e)))
            return
        if not get_current_worker().is_cancelled:  # a newer keystroke's query replaces it anyway
            self.post_message(self.Found((text, all_projects), hits))

    @on(Found)
    def _found(self, message: Found) -> None:
        if message.key != self.key or (message.waiting and not self.indexing):
            return  # typed on since, or indexed since: the newer query's hits follow
        self.searched, self.hits, self._error = message.key, message.hits, message.error
        self.waiting = message.waiting
        now = self._clock()
        hits = self.query_one("#search-hits", OptionList)
        hits.set_options(Option(hit_row(hit, now, show_cwd=self.all_projects)) for hit in self.hits)
        hits.highlighted = 0 if self.hits else None
        self._show_status()

    @work(thread=True, exclusive=True, group="session-search-index")
    def _index_backlog(self) -> None:
        """Index what an old store still has queued, a batch at a time, saying how far it got
        (``Indexed``); stops when the screen closes. A few messages stored since the index last
        caught up are left to ``Store.search``. A store that cannot be written (locked by
        another process past its wait, read-only) is searched as far as it is indexed, and a
        warning says why."""
        done, total = self._store.index_backlog()
        if total - done <= INDEX_BATCH:
            return
        worker = get_current_worker()
        try:
            while done < total and not worker.is_cancelled:
                self.post_message(self.Indexed(done, total))
                done, total = self._store.index_some(INDEX_BATCH)
        except (sqlite3.Error, ScoutError) as e:
            self.app.call_from_thread(self.app.notify, f"Older sessions were not indexed ({e}): the search covers "
                                      f"{done:,} of {total:,} messages.", severity="warning")
            self.unindexable, done = True, total  # stop waiting: search what is indexed
        self.post_message(self.Indexed(done, total))

    @on(Indexed)
    def _indexed(self, message: Indexed) -> None:
        was_indexing = self.indexing
        self.backlog = (message.done, message.total)
        if was_indexing and not self.indexing:
            self._search(*self.key)  # the search typed meanwhile waited for this
        self._show_status()

    @property
    def indexing(self) -> bool:
        """Whether an old store's messages are being indexed (a search waits for it)."""
        return self.backlog[0] < self.backlog[1]

    # -- what the screen says --------------------------------------------------------------------

    def _show_scope(self) -> None:
        here = tilde(Path(self._cwd))
        scope = "all projects" if self.all_projects else f"this project ({here})"
        other = "this project" if self.all_projects else "all projects"
        self.query_one("#search-scope", Static).update(Content.assemble(("Searching ", ""), (scope, "bold"),
                                                                          f" · Tab: {other}"))

    def _show_status(self) -> None:
        status = self.query_one("#search-status", Static)
        status.set_class(bool(self._error), "-error")
        parts = []
        if self._error:
            parts.append(self._error)
        elif self.waiting and self.indexing:
            pass  # said with the progress below
        elif self.searched is not None and self.searched[0].strip():
            found = len(self.hits)
            parts.append(f"the best {found} hits (more words narrow them)" if found >= SHOWN
                         else f"{found} hit{'s' * (found != 1)}" if found else "no hits")
        else:
            parts.append("type to search prompts, answers, tool calls and output, summaries")
        if self.indexing:
            waits = ": your search runs once it is done" if self.waiting else ""
            parts.append(f"indexing older sessions: {self.backlog[0]:,} of {self.backlog[1]:,} messages{waits}")
        parts.append("Enter: open at the message · ↑↓: move · Esc: close")
        status.update(Content(" · ".join(parts)))

    # -- keys -------------------------------------------------------------------------------------

    def action_toggle_scope(self) -> None:
        """Tab: search all projects, or this project again."""
        self.all_projects = not self.all_projects
        self._show_scope()
        self._search(*self.key)

    def action_move(self, step: int) -> None:
        """Highlight the next (``step`` 1) or previous (-1) hit."""
        hits = self.query_one("#search-hits", OptionList)
        if hits.highlighted is not None:
            hits.highlighted = max(0, min(len(self.hits) - 1, hits.highlighted + step))

    @on(Input.Submitted, "#search-query")
    def _choose(self) -> None:
        highlighted = self.query_one("#search-hits", OptionList).highlighted
        if highlighted is not None and highlighted < len(self.hits) and self.searched == self.key:
            self.dismiss(self.hits[highlighted])
        else:
            self.app.bell()

    @on(OptionList.OptionSelected, "#search-hits")
    def _clicked(self, message: OptionList.OptionSelected) -> None:
        self.dismiss(self.hits[message.option_index])

    def action_close(self) -> None:
        self.dismiss(None)
