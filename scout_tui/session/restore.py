"""``/undo`` and ``/redo`` of a session, whatever shows it: what the next step writes back
(``plan_restore``, from the branch's checkpoint events by ``checkpoints.restores``), which of
those files someone else changed since, why there is nothing to do, and the sentences that say
it. Writing the files back is ``Session.restore_files``.

Textual-free; the store and git are read in threads.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from scout_tui.checkpoints.restores import Restore, next_step, undone_turns

if TYPE_CHECKING:
    from scout_tui.session.session import Session

LISTED_FILES = 8
"""Files named in a restore's question or report; more are counted."""

_UNDO_WORDS = {"added": "remove", "deleted": "bring back", "renamed": "rename back"}
_REDO_WORDS = {"added": "create again", "deleted": "remove again", "renamed": "rename again"}


class NotRestorable(Exception):
    """``/undo`` or ``/redo`` has nothing to do, or checkpoints are off: the message says which."""


def count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless one: "1 file", "3 files"."""
    return f"{n} {noun}{'s' * (n != 1)}"


def names(paths: list[str]) -> str:
    """``paths`` joined, the first ``LISTED_FILES`` named and the rest counted."""
    more = len(paths) - LISTED_FILES
    return ", ".join(paths[:LISTED_FILES]) + (f" and {more} more" if more > 0 else "")


def why_nothing(events: list[tuple[str, dict]], redo: bool) -> str:
    """Why ``/undo`` (or ``/redo``) has nothing to do, from the branch's checkpoint events
    (``Store.checkpoint_events``: ``(type, data)`` in order)."""
    if not any(kind == "checkpoint" for kind, _ in events):
        return f"Nothing to {'redo' if redo else 'undo'}: no turn of this session changed files."
    if not redo:
        return "Nothing to undo: every turn's file changes are undone already."
    if undone_turns(events):
        return "Nothing to redo: a turn changed files since the last undo, and redoing would overwrite its work."
    return "Nothing to redo: nothing was undone."


def _what(change: dict, redo: bool) -> str:
    """The file a change is about; a rename names both ends, in the direction it goes."""
    if change["status"] == "renamed" and change.get("old_path"):
        ends = (change["old_path"], change["path"]) if redo else (change["path"], change["old_path"])
        return " → ".join(ends)
    return change["path"]


def restore_lines(plan: Restore, others: list[str]) -> list[str]:
    """What ``plan`` will do to each file, one line each (the first ``LISTED_FILES``), and
    which files someone else changed since (``others``)."""
    words = _REDO_WORDS if plan.redo else _UNDO_WORDS
    lines = [f"  {words.get(f['status'], 'change again' if plan.redo else 'restore')}: {_what(f, plan.redo)}"
             for f in plan.files[:LISTED_FILES]]
    if len(plan.files) > LISTED_FILES:  # a question stays on a 24-row screen; /diff lists them all
        lines.append(f"  and {len(plan.files) - LISTED_FILES} more (/diff lists them)")
    if others:
        lines += ["", f"Changed since by someone else, and overwritten: {', '.join(others)}"]
    return lines


async def plan_restore(session: Session, redo: bool) -> tuple[Restore, list[str]]:
    """What ``/undo`` (``redo``: ``/redo``) would write back in ``session`` (``next_step`` of its
    branch's checkpoint events), and which of those files differ now from what the turn left
    (changed by someone else since: a restore must not overwrite them unasked). In threads.

    Raises:
        NotRestorable: nothing to undo or redo (``why_nothing``), or checkpoints are off.
        ScoutError: git could not read the workspace.
    """
    from scout_tui.session.runtime import checkpoint_store

    events = await asyncio.to_thread(session.store.checkpoint_events, session.id) if session.id else []
    plan = next_step(events, redo)
    if plan is None:
        raise NotRestorable(why_nothing(events, redo))
    store = checkpoint_store(session.config, session.cwd)
    if store is None:
        raise NotRestorable('Checkpoints are off (checkpoints = "off").')
    return plan, await asyncio.to_thread(store.changed_since, plan.since, plan.paths)


def turn_name(session: Session, turn: int) -> str:
    """The turn beginning at message ``turn`` as people know it: by its prompt, quoted and cut
    to 40 characters ("the turn at message N" when the prompt is not read or has no text)."""
    from scout_tui.core.text import one_line
    from scout_tui.session.mentions import typed_text

    message = session.messages[turn] if 0 <= turn < len(session.messages) else None
    typed = typed_text(message) if message else ""
    return f"“{one_line(typed, 40)}”" if typed.strip() else f"the turn at message {turn}"


def restored(plan: Restore, turn: str) -> str:
    """What ``/undo`` or ``/redo`` did once ``plan`` is written back, ``turn`` its turn's name
    (``turn_name``)."""
    done = "Redid" if plan.redo else "Undid"
    return f"{done} the file changes of {turn}: {names(plan.paths)}. The conversation is unchanged."
