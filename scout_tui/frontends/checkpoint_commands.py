"""``scout-tui diff ID`` and ``scout-tui restore ID --to N``: a session's file changes, from the
terminal, read from its ``checkpoint`` events and the workspace's checkpoint store.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scout_tui.core.errors import ScoutError


def _opened(ref: str) -> tuple[str, Path, list[tuple[str, dict]]]:
    """(session id, its folder, its branch's checkpoint events) for a session id or unique prefix."""
    from scout_tui.store.event_log import Store

    with Store() as store:
        info = store.find(ref)
        events = store.checkpoint_events(info.id)
    if info.cwd is None:  # never guess the folder files are written back to
        raise ScoutError(f"session {info.id[:8]} has no folder on record, so its files cannot be found")
    return info.id, Path(info.cwd), events


def diff_command(argv: list[str]) -> int:
    """``scout-tui diff ID [--stat]``: every file the session's turns changed, turn by turn,
    with the unified diff of each turn (``--stat``: the files only)."""
    parser = argparse.ArgumentParser(prog="scout-tui diff",
                                     description="Show the files a session's turns changed, turn by turn.")
    parser.add_argument("id", metavar="ID", help="a session id, or a unique prefix of at least 4 characters")
    parser.add_argument("--stat", action="store_true", help="list the changed files only")
    args = parser.parse_args(argv)
    from scout_tui.checkpoints.snapshots import Checkpoints, why_skipped

    session_id, folder, events = _opened(args.id)
    found = [data for kind, data in events if kind == "checkpoint"]
    if not found:
        print(f"session {session_id[:8]} changed no files (no checkpoint)")
        return 0
    store = Checkpoints(folder)
    out = []
    for checkpoint in found:
        files = checkpoint["files"]
        out.append(f"# turn at message {checkpoint['turn']}: {len(files)} file{'s' * (len(files) != 1)}")
        out += [f"{f['status']:9} {f['path']}" + (f" (from {f['old_path']})" if f.get("old_path") else "")
                for f in files]
        out += [f"not kept  {p} ({why_skipped(p)})" for p in checkpoint.get("skipped", [])]
        if not args.stat:
            out.append(store.diff(checkpoint["before"], checkpoint["after"]).rstrip("\n"))
        out.append("")
    text = "\n".join(out)
    if sys.stdout.isatty():
        from scout_tui.core.text import sanitize

        text = sanitize(text)
    sys.stdout.write(text)
    return 0


def restore_command(argv: list[str]) -> int:
    """``scout-tui restore ID --to N [--dry-run] [--force]``: the session's files as they were
    before its turn at message N: every file that turn and the later ones changed is written
    back (or removed, when it did not exist then). A file changed since the session's last
    turn by someone else is not overwritten without ``--force``."""
    parser = argparse.ArgumentParser(prog="scout-tui restore",
                                     description="Put a session's files back as they were before one of its turns.")
    parser.add_argument("id", metavar="ID", help="a session id, or a unique prefix of at least 4 characters")
    parser.add_argument("--to", type=int, required=True, metavar="N",
                        help="the turn: the position of its prompt (scout-tui diff shows them)")
    parser.add_argument("--dry-run", action="store_true", help="say what would change, change nothing")
    parser.add_argument("--force", action="store_true", help="also overwrite files changed since by someone else")
    args = parser.parse_args(argv)
    from scout_tui.core.bus import CheckpointRestore
    from scout_tui.checkpoints.snapshots import Checkpoints
    from scout_tui.checkpoints.restores import rewind_to
    from scout_tui.store.event_log import Store

    session_id, folder, events = _opened(args.id)
    plan = rewind_to(events, args.to)
    if plan is None:
        turns = ", ".join(str(d["turn"]) for kind, d in events if kind == "checkpoint") or "none"
        raise ScoutError(f"session {session_id[:8]} has no turn that changed files at or after message {args.to}, "
                         f"or they are undone already (turns with changes: {turns})")
    store = Checkpoints(folder)
    others = store.changed_since(plan.since, plan.paths)
    if others and not args.force and not args.dry_run:
        raise ScoutError(f"changed since the session's last turn, not by it: {', '.join(others)}; "
                         "check them, then run again with --force to overwrite them")
    for path in plan.paths:
        there = store.file(plan.tree, path) is not None
        print(f"{'would ' if args.dry_run else ''}{'restore' if there else 'remove'} {path}"
              + (" (changed since by someone else: only --force overwrites it)" if path in others else ""))
    if not args.dry_run:
        store.restore(plan.tree, plan.paths)
        with Store() as sessions:  # as /undo does: the app's /redo can make the turns again
            sessions.append(session_id, CheckpointRestore(plan.turn, plan.tree, plan.paths))
    return 0
