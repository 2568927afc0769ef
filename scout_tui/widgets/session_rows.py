"""The sessions pane's lines as plain text: how a session or a compaction leaf reads (title, message
count, age, tokens and dollars, fitted to a width) and which sessions a title filter keeps. No widget.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..store import SessionInfo
from ..text import one_line
from .status_bar import dollars, tokens

TITLE_WIDTH = 40
"""Characters of a session title shown at most."""

MIN_TITLE = 16
"""Characters of a title kept before the line's figures give way (see ``session_label``)."""

Part = tuple[str, str]
"""A piece of a line and its role, which the tree styles: "title" (bold when the session is the
current one), "fork", "meta" or "toggle" (a click there folds or unfolds the branch)."""


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


def _int(value: object) -> int:
    try:
        return int(value)  # type: ignore[arg-type]
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


def session_label(session: SessionInfo, *, current: bool, now: float, room: int, folded: str = "") -> list[Part]:
    """A session's line in ``room`` cells: ``● ⑂ at 3 Title  7 msgs · 10m ago · 120k tok · $0.42``.

    ``now`` is epoch seconds (for the age); ``folded`` is ``folded_note``'s text when the
    branch is folded, else "". Tokens and dollars are left out while 0.
    """
    parts: list[Part] = [("● " if current else "  ", "title")]
    if session.parent is not None:
        fork_at = getattr(session, "fork_at", None)
        parts.append((f"⑂ at {fork_at} " if fork_at is not None else "⑂ ", "fork"))
    title = title_of(session) or "(untitled)"
    count = int(session.message_count or 0)
    msgs = f"{count} msg{'s' if count != 1 else ''}"
    age = relative_time(float(session.updated or 0), now=now)
    spent = int(session.input_tokens or 0) + int(session.output_tokens or 0)
    cost = float(getattr(session, "cost", 0.0) or 0.0)
    money = dollars(cost) if cost > 0 else f"{tokens(spent)} tok" if spent else ""
    # The pane is narrow: the title gives way first, then the age and the token count, so
    # what a branch cost stays in view (richest first, the last one always fits).
    room = room - sum(len(text) for text, _ in parts) - len(folded)
    choices = [[msgs, age, f"{tokens(spent)} tok" if spent else "", dollars(cost) if cost > 0 else ""],
               [msgs, money], [money]]
    for meta in choices:
        meta_text = "  " + " · ".join(m for m in meta if m) if any(meta) else ""
        width = room - len(meta_text)
        if width >= min(len(title), MIN_TITLE):
            break
    parts.append((one_line(title, max(min(width, TITLE_WIDTH), MIN_TITLE // 2)), "title"))
    parts.append((meta_text, "meta"))
    if folded:
        parts.append((folded, "toggle"))
    return parts


def folded_note(branches: int, compactions: int) -> str:
    """What a folded session hides: ``  ▶ 2 branches, 1 compaction``."""
    hidden = [f"{branches} branch{'es' if branches != 1 else ''}" if branches else "",
              f"{compactions} compaction{'s' if compactions != 1 else ''}" if compactions else ""]
    return f"  ▶ {', '.join(h for h in hidden if h)}"


def compaction_label(entry: CompactionEntry) -> str:
    """A compaction leaf's line: ``⊟ compacted at msg 57: 142k → 9.0k tokens (auto)``."""
    text = f"⊟ compacted at msg {entry.at}"
    if entry.tokens_before or entry.tokens_after:
        text += f": {tokens(entry.tokens_before)} → {tokens(entry.tokens_after)} tokens"
    if entry.by:
        text += f" ({one_line(entry.by, 20)})"
    return text


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
            if parent_of[info.id] is not None:
                kept.add(parent_of[info.id])  # type: ignore[arg-type]
    return [info for info, _ in ordered if info.id in kept]
