"""``/compact [focus]`` for a session: its summary written (``compaction_summary``, not applied yet),
edited (``edited_compaction``) and applied (``apply_compaction``); whether a summary may be applied,
what applying one says, and the whole command for a front end that shows no preview to edit
(``acp``): summary, check, apply, in one call (``compact``).

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


async def compaction_summary(session: Session, focus: str = "", *,
                             writing: Callable[[bool], None] = lambda on: None) -> dict:
    """``/compact [focus]``'s summary, not applied yet: the cut keeps at most a quarter of the
    prompt verbatim (asked for by the person, so it shrinks); the plugins' ``before_compact``
    hook may veto it or supply the summary; else the summary model writes it (``writing(True)``
    before, ``writing(False)`` after). Returns the data of the ``session.compacted`` event that
    applies it (``apply_compaction``), its ``usage``, ``model`` and ``cost`` those of the summary
    request. Tokens are counted in threads.

    Raises:
        NotCompacted: nothing worth compacting yet, or a plugin vetoed it (the sentence says which).
        ScoutError: the summary request failed.
    """
    from scout_tui.core.bus import BeforeCompact
    from scout_tui.engine.context import MIN_GAIN
    from scout_tui.session.session_hooks import before_compact

    agent = await asyncio.to_thread(session.ensure_agent)
    agent.messages = list(session.messages)
    cut = agent.window.plan_compaction(keep=await asyncio.to_thread(lambda: agent.window.tokens_now() // 4))
    if cut is None:
        raise NotCompacted("Nothing to compact yet: every message is newer than what a summary keeps verbatim.")
    gain = await asyncio.to_thread(agent.window.compaction_gain, cut)
    if gain < MIN_GAIN:
        raise NotCompacted(f"Nothing worth compacting yet: a summary would save about {gain:.0%} of each "
                           "request (what is older than the newest messages is small).")
    hook = BeforeCompact(at=cut, count=len(agent.messages), focus=focus, by="user")
    session.bus.emit(hook)
    for notice in await before_compact(session, hook):
        await session.record(notice)
    supplied, veto = hook.answer()
    if veto:
        raise NotCompacted(f"Compaction vetoed by a plugin: {veto}")
    writing(True)
    try:
        return await agent.window.summarize(focus, by="user" if supplied is None else "plugin", cut=cut,
                                     supplied=supplied)
    finally:
        writing(False)

async def edited_compaction(session: Session, data: dict, text: str) -> dict:
    """``data`` (``compaction_summary``'s) with its summary replaced by the person's edit
    ``text``, and what each request would then carry counted again (in a thread)."""
    from scout_tui.engine.summary import Compaction

    agent = session.ensure_agent()
    edited = Compaction(data["at"], data["count"], text)
    return {**data, "summary": text, "tokens_after": await asyncio.to_thread(agent.window.tokens_now, edited)}

def apply_compaction(session: Session, data: dict) -> Event:
    """Make ``data`` (``compaction_summary``'s) the summary the next requests carry; returns
    the ``session.compacted`` event to record."""
    from scout_tui.core.bus import SessionCompacted

    session.ensure_agent().window.apply_compaction(data)
    return SessionCompacted(**data)


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
    (``compaction_summary``, ``writing`` as there), checked (``unfit``), applied and
    recorded. Returns the ``session.compacted`` event recorded.

    Raises:
        NotCompacted: nothing worth compacting, a plugin vetoed it, or the summary is unfit (its
            cost then recorded, ``cancelled``); the message says which.
        ScoutError: the summary request failed.
        CancelledError: stopped while the summary was written; nothing changed (``STOPPED``).
    """
    data = await compaction_summary(session, focus, writing=writing)
    if (why := await unfit(session, data)) is not None:
        if (paid := cancelled(data)) is not None:
            await session.record(paid)
        raise NotCompacted(why)
    event = apply_compaction(session, data)
    await session.record(event)
    return event
