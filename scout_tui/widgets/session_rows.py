"""The sessions pane's lines as plain text: how a session reads (title, message count, age, tokens
and dollars, fitted to a width), how its leaves read (compactions, turns that changed files) and
which sessions a title filter keeps. No widget.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Iterable

from rich.cells import cell_len, set_cell_size

from ..checkpoints.restores import undone_turns
from ..store.event_log import SessionInfo
from ..core.text import one_line
from scout_tui.core.figures import dollars, tokens

TITLE_WIDTH = 40
"""Cells of a session title shown at most."""

MIN_TITLE = 12
"""Cells of a title kept before any other part is added beside it (see ``session_label``)."""

FOLD_MARK = "  ▶"
"""How a folded branch's line ends when its note (``folded_note``) does not fit."""

Part = tuple[str, str]
"""A piece of a line and its role, which the tree styles: "title" (bold when the session is the
current one), "fork", "meta", "failed" or "toggle" (a click there folds or unfolds the branch)."""

_KEPT_FIRST = ("lead", "fork", "title", "toggle", "failed", "fork of", "age", "money", "fork at", "msgs", "tokens",
               "note")
"""The parts of a session's line, most important first: the first ones are kept when the room is short."""

_FORK = ("fork", "fork at", "fork of")
"""The parts of a branch's mark before its title, in the order shown: ``⑂ at 3 fork of ``."""

_META = ("failed", "msgs", "age", "tokens", "money")
"""The figures after the title, in the order they are shown."""


def relative_time(updated: float, now: float | None = None) -> str:
    """``updated`` (epoch seconds) relative to ``now``: "just now", "5m ago", "3h ago", "2d ago"."""
    seconds = max(0.0, (time.time() if now is None else now) - updated)
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


def title_of(session: SessionInfo) -> str:
    """The session's title as stored ("" when it has none)."""
    return str(session.title or "")


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


@dataclass(frozen=True)
class CompactionEntry:
    """The data of a compaction leaf: one ``session.compacted`` event of the open session's branch.

    ``session_id`` is the open session (an inherited compaction is undone by forking it too:
    the branch shares its parent's messages up to ``count``); ``count`` the message count when
    the compaction was made (undo forks there), ``at`` its cut (messages before it summarised);
    tokens of the prompt before and after; ``by`` is ``user``, ``auto``, ``overflow`` or ``plugin``.
    """

    session_id: str
    count: int
    at: int
    tokens_before: int
    tokens_after: int
    by: str

    @classmethod
    def from_event(cls, session_id: str, data: dict) -> CompactionEntry:
        """From a ``session.compacted`` event's data (``Store.compactions``); missing figures are 0."""
        return cls(session_id, _int(data.get("count")), _int(data.get("at")), _int(data.get("tokens_before")),
                   _int(data.get("tokens_after")), str(data.get("by") or ""))

    @property
    def position(self) -> tuple[int, int]:
        """Where the leaf goes among the session's leaves: before the message at ``count``, as
        the chat's marker does (so before a turn whose prompt is that message)."""
        return (self.count, 0)


@dataclass(frozen=True)
class CheckpointEntry:
    """The data of a checkpoint leaf: one turn of the open session's branch that changed files
    (a ``checkpoint`` event, ``bus.Checkpoint``).

    ``turn`` is the index of the prompt that began the turn (``/diff`` opens there), ``paths``
    the files it changed (a renamed file by its new path), ``undone`` whether ``/undo`` or a
    rewind has taken its changes back (``restores.undone_turns``).
    """

    session_id: str
    turn: int
    paths: tuple[str, ...]
    undone: bool = False

    @property
    def position(self) -> tuple[int, int]:
        """Where the leaf goes among the session's leaves: at its prompt, after a compaction
        made just before it."""
        return (self.turn, 1)


Leaf = CompactionEntry | CheckpointEntry
"""A leaf under the open session's line."""


def checkpoint_entries(session_id: str, events: Iterable[tuple[str, dict]]) -> list[CheckpointEntry]:
    """A leaf for each ``checkpoint`` of ``events`` (``(type, data)`` in the order written, as
    ``Store.checkpoint_events`` gives them), marked undone as the ``checkpoint.restore`` events
    among them say."""
    events = list(events)
    undone = set(undone_turns(events))
    return [CheckpointEntry(session_id, _int(data.get("turn")),
                            tuple(str(f.get("path") or "") for f in data.get("files") or ()),
                            _int(data.get("turn")) in undone)
            for kind, data in events if kind == "checkpoint"]


def cut(text: str, cells: int) -> str:
    """``text`` in at most ``cells`` terminal cells: whole when it fits, else its head and "…"
    (never half a wide character or a grapheme); "" for less than one cell."""
    if cell_len(text) <= cells:
        return text
    if cells < 1:
        return ""
    return set_cell_size(text, cells - 1).rstrip() + "…"


def session_label(session: SessionInfo, *, current: bool, now: float, room: int, folded: str = "") -> list[Part]:
    """A session's line in at most ``room`` terminal cells:
    ``● ⑂ at 3 Title  failed · 7 msgs · 10m ago · 120k tok · $0.42  ▶ 2 branches``.

    ``now`` is epoch seconds (for the age); ``folded`` is ``folded_note``'s text when the
    branch is folded, else "". Tokens and dollars are left out while 0; "failed" is there while
    the session's newest turn ended in an error (``SessionInfo.failed``: a ``-p`` run refused or
    cut short by the server, say). A branch still carrying its parent's title (no prompt of its
    own yet, not renamed) reads ``⑂ at 3 fork of Title``; a subagent's session (a child, not a
    branch) ``⚙ explore Description``.

    Only the title is ever cut (ending in "…"); every other part is shown whole or left out
    whole, the least important first when the room is short (``_KEPT_FIRST``: a message count
    cut to "25 m" would read as minutes). A title keeps ``MIN_TITLE`` cells before any other
    part is added, and takes what is left over, up to ``TITLE_WIDTH``.
    """
    fork_of, title = session.title_parts()
    title = one_line(title, 4 * TITLE_WIDTH) or "(untitled)"
    count = int(session.message_count or 0)
    spent = int(session.input_tokens or 0) + int(session.output_tokens or 0)
    cost = float(getattr(session, "cost", 0.0) or 0.0)
    subagent = session.subagent_mark
    fork_at = getattr(session, "fork_at", None) if session.parent is not None and not subagent else None
    texts = {
        "lead": "● " if current else "  ",
        "fork": f"{subagent} " if subagent else "⑂ " if session.parent is not None else "",
        "toggle": FOLD_MARK if folded else "",
        "failed": "failed" if session.failed else "",
        "fork of": fork_of,
        "age": relative_time(float(session.updated or 0), now=now),
        "money": dollars(cost) if cost > 0 else f"{tokens(spent)} tok" if spent else "",
        "fork at": f"at {fork_at} " if fork_at is not None else "",
        "msgs": f"{count} msg{'s' if count != 1 else ''}",
        "tokens": f"{tokens(spent)} tok" if spent and cost > 0 else "",
        "note": folded,
    }

    def width(kept: set[str], title_cells: int) -> int:
        """Cells of a line of the parts ``kept`` and a title of ``title_cells``."""
        meta = [cell_len(texts[name]) for name in _META if name in kept]
        fold = "note" if "note" in kept else "toggle" if "toggle" in kept else None
        return (title_cells + sum(cell_len(texts[name]) for name in ("lead", *_FORK) if name in kept)
                + (2 + sum(meta) + 3 * (len(meta) - 1) if meta else 0) + (cell_len(texts[fold]) if fold else 0))

    # The parts kept are always the first ones (of those the session has): once a part does not
    # fit, no less important one takes its place; the title takes the room left instead.
    kept: set[str] = set()
    title_cells = 0
    for name in _KEPT_FIRST:
        if name == "title":
            title_cells = max(0, min(cell_len(title), MIN_TITLE, room - width(kept, 0)))
        elif texts[name]:
            if width(kept | {name}, title_cells) > room:
                break
            kept.add(name)
    title_cells = max(title_cells, min(cell_len(title), TITLE_WIDTH, room - width(kept, 0)))

    parts: list[Part] = []
    if "lead" in kept:
        parts.append((texts["lead"], "title"))
    fork = "".join(texts[name] for name in _FORK if name in kept)
    if fork:
        parts.append((fork, "fork"))
    if title_cells > 0:
        parts.append((cut(title, title_cells), "title"))
    for i, name in enumerate(name for name in _META if name in kept):
        parts.append(("  " if i == 0 else " · ", "meta"))
        parts.append((texts[name], "failed" if name == "failed" else "meta"))
    if "toggle" in kept:
        parts.append((texts["note" if "note" in kept else "toggle"], "toggle"))
    return parts


def folded_note(branches: int, compactions: int, checkpoints: int = 0) -> str:
    """What a folded session hides: ``  ▶ 2 branches, 1 compaction, 3 checkpoints``."""
    counts = ((branches, "branch", "branches"), (compactions, "compaction", "compactions"),
              (checkpoints, "checkpoint", "checkpoints"))
    return "  ▶ " + ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in counts if n)


def leaf_label(entry: Leaf, room: int = TITLE_WIDTH * 4) -> str:
    """A leaf's line in at most ``room`` cells (``compaction_label``, ``checkpoint_label``)."""
    return compaction_label(entry, room) if isinstance(entry, CompactionEntry) else checkpoint_label(entry, room)


def compaction_label(entry: CompactionEntry, room: int = TITLE_WIDTH * 4) -> str:
    """A compaction leaf's line in at most ``room`` cells:
    ``⊟ compacted at msg 57: 142k → 9.0k tokens (auto)``; a part that does not fit is left
    out whole (the token figures first, then who made it, the message, "compacted")."""
    parts = ["⊟", " compacted", f" at msg {entry.at}"]
    if entry.tokens_before or entry.tokens_after:
        parts.append(f": {tokens(entry.tokens_before)} → {tokens(entry.tokens_after)} tokens")
    if entry.by:
        parts.append(f" ({one_line(entry.by, 20)})")
    text = ""
    for part in parts:
        if cell_len(text) + cell_len(part) <= room:
            text += part
    return text


def checkpoint_label(entry: CheckpointEntry, room: int = TITLE_WIDTH * 4) -> str:
    """A checkpoint leaf's line in at most ``room`` cells:
    ``✎ msg 3: 2 files · notes.txt, app.py (undone)``. The file names (the last part of each
    path) are cut to the room left, ending in "…"; when short of room they go first, then the
    file count, then "(undone)"."""
    count = len(entry.paths)
    head, files = f"✎ msg {entry.turn}", f": {count} file{'s' if count != 1 else ''}"
    mark = " (undone)" if entry.undone else ""
    if cell_len(head) > room:
        return ""
    if cell_len(head + mark) > room:
        mark = ""
    if cell_len(head + files + mark) > room:
        files = ""
    names = ", ".join(one_line(path.rsplit("/", 1)[-1], 80) for path in entry.paths)
    left = room - cell_len(head + files + mark) - 3
    shown = cut(names, left) if files and names and left >= min(cell_len(names), 6) else ""
    return head + files + (f" · {shown}" if shown else "") + mark


def display_parents(ordered: list[tuple[SessionInfo, int]]) -> dict[str, str | None]:
    """Session id -> the id of the session it is shown under (None: top level), from
    ``store.tree_order``'s (session, depth) rows in display order."""
    parent_of: dict[str, str | None] = {}
    path: list[str] = []
    for info, depth in ordered:
        del path[depth:]
        parent_of[info.id] = path[-1] if path else None
        path.append(info.id)
    return parent_of


def shown_sessions(ordered: list[tuple[SessionInfo, int]], parent_of: dict[str, str | None], needle: str) -> list[SessionInfo]:
    """The sessions shown, in display order, for the casefolded title filter ``needle``: those
    whose title holds it and every ancestor of one (all of them when ``needle`` is "")."""
    if not needle:
        return [info for info, _ in ordered]
    # Reversed display order visits every descendant before its ancestors.
    kept: set[str] = set()
    for info, _ in reversed(ordered):
        if info.id in kept or needle in title_of(info).casefold():
            kept.add(info.id)
            if (parent := parent_of[info.id]) is not None:
                kept.add(parent)
    return [info for info, _ in ordered if info.id in kept]
