"""The workspace's checkpoint of one agent turn: a snapshot before its first call that may change
files, another after it, and the ``checkpoint`` event of what changed between them.

``Agent.turn_checkpoint`` holds one; its ``ToolRunner`` calls ``before_change``. No Textual.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING

from scout_tui.core.bus import Checkpoint, Event, Notice
from scout_tui.core.errors import ScoutError

if TYPE_CHECKING:
    from scout_tui.checkpoints.snapshots import Checkpoints, Snapshot


class TurnCheckpoint:
    """Snapshots around the turns of one agent, in ``store`` (``checkpoints.snapshots``; None:
    no snapshots). ``begin`` each turn; after it (or after an interrupt), ``after`` gives its
    checkpoint when a call began changing files."""

    def __init__(self, store: Checkpoints | None) -> None:
        self.store = store
        """The workspace's snapshot store (None: no snapshots, or off after one failed)."""
        self._before: Snapshot | None = None  # the running turn's before-snapshot, once taken
        self._at = 0  # the running turn's position: its prompt's index

    def begin(self, at: int) -> None:
        """A turn whose prompt is message ``at`` of the conversation begins: nothing snapshotted yet."""
        self._before, self._at = None, at

    async def before_change(self) -> Notice | None:
        """Before the turn's first call that may change files: its before-snapshot (in a
        thread). A notice when it fails (the call still runs)."""
        if self.store is None or self._before is not None:
            return None
        try:
            self._before = await asyncio.to_thread(self.store.snapshot)
        except ScoutError as e:
            self.store = None  # not again this session: each call would say the same
            return Notice(f"Checkpoints are off for this session: {e}")
        return None

    async def after(self) -> list[Event]:
        """The turn's ``checkpoint`` (its after-snapshot taken in a thread) when it began
        changing files and changed any, and a notice naming the files it changed that are not
        kept (too large, or inside a repository of their own: /undo leaves them as they are);
        nothing when no call of the turn could change files. A failing snapshot is a notice,
        never a failed turn."""
        from scout_tui.checkpoints.snapshots import why_skipped

        before, self._before = self._before, None
        if before is None or self.store is None:
            return []
        try:
            after = await asyncio.to_thread(self.store.snapshot)
            changes = await asyncio.to_thread(self.store.changes, before.tree, after.tree)
        except ScoutError as e:
            return [Notice(f"No checkpoint of this turn's files: {e}")]
        left_out = set(before.skipped) | set(after.skipped)
        # a file that crossed the size limit looks added or deleted between the snapshots: it is neither
        kept = [c for c in changes if c.path not in left_out and c.old_path not in left_out]
        crossed = {p for c in changes for p in (c.path, c.old_path) if p in left_out}
        skipped = sorted(crossed | (set(after.skipped) - set(before.skipped)))  # this turn's, not the workspace's
        out: list[Event] = []
        if kept:  # none: it could have changed files and did not (a file written as it was)
            out.append(Checkpoint(self._at, before.tree, after.tree, [dataclasses.asdict(c) for c in kept], skipped))
        if skipped:
            out.append(Notice("Not kept in this turn's checkpoint, so /undo leaves them as they are: "
                              + ", ".join(f"{p} ({why_skipped(p)})" for p in skipped)))
        return out
