"""What ``/undo``, ``/redo`` and a rewind write back, worked out from a branch's checkpoint
events (``Store.checkpoint_events``): pure functions, no git and no store.

A ``checkpoint`` event (``bus.Checkpoint``) holds a turn's snapshots before and after it; a
``checkpoint.restore`` event (``bus.CheckpointRestore``) says files were written back: with
``redo`` False every turn recorded before it, at or after its ``turn``, not undone yet is undone
by it (one turn for ``/undo``, all of them for a rewind), with ``redo`` True its ``turn`` is done
again. A turn that changes files after an undo ends what ``/redo`` can make again.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Restore:
    """Files to write back: ``paths`` as snapshot ``tree`` has them (removed where it has none),
    for the turns at or after message ``turn`` (``redo``: that turn, done again). ``since`` is
    the snapshot the files should match now (a file that does not was changed since by someone
    else). ``files`` are the ``{"status", "path", "old_path"}`` changes being taken back or made
    again, for showing."""

    turn: int
    tree: str
    paths: list[str]
    since: str
    redo: bool = False
    files: list[dict] = field(default_factory=list)


def undone_turns(events: list[tuple[str, dict]]) -> list[int]:
    """The turns whose file changes are undone now, in the order redo would take them back
    (last first), from ``(type, data)`` checkpoint events in order. A restore undoes the turns
    recorded before it, never one that came later."""
    return _replay(events)[0]


def redoable_turns(events: list[tuple[str, dict]]) -> list[int]:
    """The undone turns ``/redo`` may make again, last first: none once a later turn changed
    files (its work would be overwritten), as in any editor's undo history."""
    return _replay(events)[1]


def _replay(events: list[tuple[str, dict]]) -> tuple[list[int], list[int]]:
    """(undone turns, redoable turns), replaying the events in order."""
    seen: list[int] = []
    undone: list[int] = []
    redoable: list[int] = []
    for kind, data in events:
        if kind == "checkpoint":
            seen.append(data["turn"])
            redoable = []  # a new turn's work: redoing an older one would overwrite it
        elif kind == "checkpoint.restore":
            if data.get("redo"):
                undone = [t for t in undone if t != data["turn"]]
                redoable = [t for t in redoable if t != data["turn"]]
            else:  # newest first, so that the earliest is redone first
                taken = sorted((t for t in seen if t >= data["turn"] and t not in undone), reverse=True)
                undone += taken
                redoable += taken
    return undone, redoable


def _paths(files: list[dict]) -> list[str]:
    return sorted({p for f in files for p in (f["path"], f.get("old_path")) if p})


def next_step(events: list[tuple[str, dict]], redo: bool) -> Restore | None:
    """What ``/undo`` (or ``/redo``) does, or None: undo takes the newest turn not undone back to
    its before-snapshot; redo makes the turn undone last again (its after-snapshot), unless a
    turn changed files since (``redoable_turns``)."""
    checkpoints = {d["turn"]: d for kind, d in events if kind == "checkpoint"}
    undone, redoable = _replay(events)
    if redo:
        step = checkpoints.get(redoable[-1]) if redoable else None
    else:
        left = [t for t in checkpoints if t not in undone]
        step = checkpoints[max(left)] if left else None
    if step is None:
        return None
    return Restore(step["turn"], step["after" if redo else "before"], _paths(step["files"]),
                   step["before" if redo else "after"], redo, step["files"])


def rewind_to(events: list[tuple[str, dict]], at: int) -> Restore | None:
    """The files as they were when the conversation had ``at`` messages, or None when no turn
    not undone changed files from there on: every turn at or after message ``at`` is taken back,
    to the before-snapshot of the earliest of them (its paths: all those turns changed)."""
    undone = undone_turns(events)
    later = [d for kind, d in events if kind == "checkpoint" and d["turn"] >= at and d["turn"] not in undone]
    if not later:
        return None
    later.sort(key=lambda d: d["turn"])
    files: list[dict] = []  # each path's first change from there: what taking them all back does to it
    seen: set[str] = set()
    for f in (f for d in later for f in d["files"]):
        if f["path"] not in seen:
            files.append(f)
            seen.update(p for p in (f["path"], f.get("old_path")) if p)
    return Restore(later[0]["turn"], later[0]["before"], _paths(files), later[-1]["after"], False, files)
