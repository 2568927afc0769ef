"""``/compact [focus]`` beyond writing the summary (``Session.compaction_summary``): whether a
summary may be applied, what applying one says, and the whole command for a front end that shows
no preview to edit (``acp``): summary, check, apply, in one call.

Textual-free; the TUI shows the same sentences around its preview.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from scout_tui.session.session import NotCompacted

if TYPE_CHECKING:
    from scout_tui.core.bus import Event
    from scout_tui.session.session import Session

STOPPED = "Compaction stopped: nothing changed (the summary request was cancelled)."
"""What a cancelled ``/compact`` says (the summary request was stopped before it was applied)."""


def compaction_info(data: dict) -> str:
    """What a summary (``data``, a ``session.compacted`` event's: ``at``, ``count``,
    ``tokens_before``, ``tokens_after``) stands for and saves, in one sentence: "Summarises
    messages 0–11 of 16; the newest 4 stay verbatim. About 9,120 → 2,304 tokens per request."."""
    at, count = data["at"], data["count"]
    return (f"Summarises messages 0–{at - 1} of {count}; the newest {count - at} stay verbatim. About "
            f"{data['tokens_before']:,} → {data['tokens_after']:,} tokens per request.")


def not_applied(why: str) -> str:
    """What the person reads when a summary is not applied because of ``why`` (a clause of
    ``Agent.summary_unfit``), with how to ask for a shorter one."""
    return (f"The summary was not applied: {why}. `/compact` with a focus (e.g. `/compact the failing test`) "
            "asks for a shorter one.")


def cancelled(data: dict) -> Event | None:
    """The ``session.compact_cancelled`` event keeping what a summary that is not applied cost in
    the session's totals (to record), or None when its request cost nothing (a plugin wrote it)."""
    from scout_tui.core.bus import CompactCancelled

    return CompactCancelled(data["usage"], data["model"], data["cost"]) if data["usage"] else None


async def unfit(session: Session, data: dict) -> str | None:
    """Why ``data``'s summary must not be applied (``not_applied``'s sentence), or None when it
    may: ``Agent.summary_unfit``, counted in a thread."""
    why = await asyncio.to_thread(session.ensure_agent().window.summary_unfit, data)
    return None if why is None else not_applied(why)


async def compact(session: Session, focus: str = "", *,
                  writing: Callable[[bool], None] = lambda on: None) -> Event:
    """``/compact [focus]`` applied as soon as it is written (no preview): the summary
    (``Session.compaction_summary``, ``writing`` as there), checked (``unfit``), applied and
    recorded. Returns the ``session.compacted`` event recorded.

    Raises:
        NotCompacted: nothing worth compacting, a plugin vetoed it, or the summary is unfit (its
            cost then recorded, ``cancelled``); the message says which.
        ScoutError: the summary request failed.
        CancelledError: stopped while the summary was written; nothing changed (``STOPPED``).
    """
    data = await session.compaction_summary(focus, writing=writing)
    if (why := await unfit(session, data)) is not None:
        if (paid := cancelled(data)) is not None:
            await session.record(paid)
        raise NotCompacted(why)
    event = session.apply_compaction(data)
    await session.record(event)
    return event
