"""Opening a stored session for a front end (the TUI, headless ``-p``): which session a request
names, and what of it a front end needs, read by one set of rules for both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from scout_tui.config.models import prompt_tokens

if TYPE_CHECKING:
    from scout_tui.store.event_log import SessionInfo, Store


@dataclass
class OpenedSession:
    """A session as read for a front end; the defaults are a new session, not stored yet.

    ``messages`` is the conversation from position ``since`` on (``Store.messages`` shape): all
    of it when ``since`` is 0, else only the newest messages, the older ones to be read later.
    ``tokens`` is (input, output) and ``cost`` dollars of the branch's conversation, its
    ancestors' share included, as ``/cost`` counts them (``Store.spending``); ``cost`` is None
    when nothing was priced (unknown models).
    """

    info: SessionInfo | None = None
    messages: list[dict] = field(default_factory=list)
    since: int = 0
    compactions: list[dict] = field(default_factory=list)
    """``Store.compactions``: the summaries in force, oldest first (the last one is sent)."""
    tokens: tuple[int, int] = (0, 0)
    cost: float | None = None
    subagent_cost: float = 0.0
    """Dollars its subagents spent (``Store.subagent_cost``): the session's cost rolls them up."""

    @property
    def id(self) -> str | None:
        """The session's id; None for a new session."""
        return self.info.id if self.info is not None else None

    @property
    def complete(self) -> bool:
        """Whether ``messages`` is the whole conversation."""
        return self.since == 0


def resolve_session(
    store: Store,
    cwd: Path,
    *,
    resume: str | None = None,
    latest: bool = False,
    fork: tuple[str, int | None] | None = None,
) -> SessionInfo | None:
    """The session a front end is asked to open, first match wins:

    - ``fork`` ``(id or prefix, N)``: a new branch of that session in ``cwd`` sharing its first
      N messages (all when N is None); ``Store.fork`` may move N so that no tool call loses its
      result, and the returned ``fork_at`` is the point used;
    - ``resume``: that session (an id or a unique prefix of at least 4 characters; a deleted
      session too, since it is named);
    - ``latest``: the most recently updated session of ``cwd`` that is not deleted;
    - else None: a new session, stored when its first message is.

    Raises:
        ScoutError: the id or prefix matches no session or several, or N is outside 0 to the
            session's message count.
    """
    if fork is not None:
        ref, at = fork
        return store.fork(store.find(ref).id, at, cwd=cwd)
    if resume:
        return store.find(resume)
    if latest:
        return store.latest(cwd)
    return None


def open_session(
    store: Store,
    cwd: Path,
    *,
    resume: str | None = None,
    latest: bool = False,
    fork: tuple[str, int | None] | None = None,
    tail: int | None = None,
) -> OpenedSession:
    """``resolve_session(store, cwd, resume=, latest=, fork=)`` read with ``read_session``.

    Raises:
        ScoutError: as ``resolve_session``, or the store cannot be read.
    """
    info = resolve_session(store, cwd, resume=resume, latest=latest, fork=fork)
    return read_session(store, info, tail=tail)


def read_session(store: Store, info: SessionInfo | None, *, tail: int | None = None) -> OpenedSession:
    """What a front end shows and sends of session ``info`` (None: a new session, nothing read).

    ``tail`` reads only the newest ``tail`` messages (a long session paints at once; the caller
    reads the rest with ``Store.messages``); None reads them all.

    Raises:
        ScoutError: the store cannot be read.
    """
    if info is None:
        return OpenedSession()
    since = max(0, info.message_count - tail) if tail is not None else 0
    spent = store.spending(info.id)
    tokens = (info.input_tokens, info.output_tokens)
    if spent:
        tokens = (sum(prompt_tokens(row) for row in spent.values()), sum(int(row["output_tokens"]) for row in spent.values()))
    cost = sum(row["cost"] for row in spent.values())
    return OpenedSession(
        info=info,
        messages=store.messages(info.id, since=since),
        since=since,
        compactions=store.compactions(info.id),
        tokens=tokens,
        cost=cost if cost > 0 else None,
        subagent_cost=store.subagent_cost(info.id),
    )
