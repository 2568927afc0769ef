"""``/undo`` and ``/redo``: the files of the session's last turn put back as they were before it
(or again as it left them), asked first, recorded as ``checkpoint.restore`` events.

A mixin of ``ScoutApp`` (app.py). What can be undone is read from the session's events: its
``checkpoint`` events (``bus.Checkpoint``) and the restores made since (``bus.CheckpointRestore``).
A file changed since the turn by someone else is named in the question, never overwritten
unasked.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from textual import work

from scout_tui.errors import ScoutError


@dataclass(frozen=True)
class Undo:
    """What ``/undo`` (``redo`` False) or ``/redo`` would do: write ``tree`` (the turn's snapshot
    before or after it) for ``paths``, those ``others`` changed since by someone else."""

    turn: int
    tree: str
    paths: list[str]
    redo: bool
    others: list[str]


def next_step(events: list[tuple[str, dict]], redo: bool) -> dict | None:
    """The checkpoint ``/undo`` (or ``/redo``) acts on, from a session's ``(type, data)`` events in
    order: undo takes the newest turn not undone; redo the turn undone last, if not redone."""
    checkpoints = {d["turn"]: d for kind, d in events if kind == "checkpoint"}
    undone: list[int] = []  # turns undone, in the order they were
    for kind, data in events:
        if kind == "checkpoint.restore":
            if data["redo"]:
                undone = [t for t in undone if t != data["turn"]]
            else:
                undone.append(data["turn"])
        elif kind == "checkpoint":
            undone = [t for t in undone if t < data["turn"]]  # a new turn: what was undone stays so
    if redo:
        return checkpoints.get(undone[-1]) if undone else None
    left = [t for t in checkpoints if t not in undone]
    return checkpoints[max(left)] if left else None


class CheckpointsMixin:
    """``/undo`` and ``/redo`` for ``ScoutApp``."""

    def _diff_command(self, _: str) -> None:
        self.show_diffs()

    @work(thread=True, exclusive=True, group="checkpoint")
    def show_diffs(self) -> None:
        """``/diff``: the session's changed files by turn and in total, each with its diff (read in
        a thread: the store and git), in ``DiffView``."""
        from scout_tui.checkpoint_commands import session_checkpoints
        from scout_tui.runtime import checkpoint_store
        from scout_tui.widgets.diff_view import DiffView, FileDiff

        store = checkpoint_store(self.config, self.cwd)
        found = session_checkpoints(self.store, self.session_id) if self.session_id else []
        if not found or store is None:
            self.call_from_thread(self.chat.add_notice, "No file changes in this session yet.", "warning")
            return
        rows: list[FileDiff] = []
        try:
            for c in found:
                rows.append(FileDiff(f"Turn at message {c['turn']} · {len(c['files'])} file(s)"))
                rows += [FileDiff(f["path"], f["path"], f["status"],
                                  store.diff(c["before"], c["after"], [p for p in (f.get("old_path"), f["path"]) if p]))
                         for f in c["files"]]
            total = store.changes(found[0]["before"], found[-1]["after"])
            rows.append(FileDiff(f"Whole session · {len(total)} file(s)"))
            rows += [FileDiff(f.path, f.path, f.status,
                              store.diff(found[0]["before"], found[-1]["after"], [p for p in (f.old_path, f.path) if p]))
                     for f in total]
        except ScoutError as e:
            self.call_from_thread(self.chat.add_notice, str(e), "error")
            return
        title = f"Files changed in this session: {len(total)} over {len(found)} turn(s)"
        self.call_from_thread(self.push_screen, DiffView(rows, title))

    def _undo_command(self, _: str) -> None:
        self.plan_restore(redo=False)

    def _redo_command(self, _: str) -> None:
        self.plan_restore(redo=True)

    @work(thread=True, exclusive=True, group="checkpoint")
    def plan_restore(self, redo: bool) -> None:
        """Find what ``/undo`` or ``/redo`` would change (in a thread: the store and git), then ask."""
        if self.session_id is None or self.busy:
            self.call_from_thread(self.chat.add_notice, "Nothing to undo yet." if not self.busy
                                  else "A turn is running: press Esc first.", "warning")
            return
        from scout_tui.runtime import checkpoint_store

        events = [(kind, data) for _, _, kind, data, _ in self.store.events(self.session_id)]
        step = next_step(events, redo)
        store = checkpoint_store(self.config, self.cwd)
        if step is None or store is None:
            what = "redo" if redo else "undo"
            self.call_from_thread(self.chat.add_notice, f"Nothing to {what}: no turn of this session changed files"
                                  + (" since" if redo else "") + ".", "warning")
            return
        paths = sorted({p for f in step["files"] for p in (f["path"], f.get("old_path")) if p})
        try:
            others = store.changed_since(step["before"] if redo else step["after"], paths)
        except ScoutError as e:
            self.call_from_thread(self.chat.add_notice, str(e), "error")
            return
        plan = Undo(step["turn"], step["after"] if redo else step["before"], paths, redo, others)
        self.call_from_thread(self._ask_restore, plan, step["files"])

    def _ask_restore(self, plan: Undo, files: list[dict]) -> None:
        from scout_tui.widgets.dialogs import ConfirmScreen

        verb = "Redo" if plan.redo else "Undo"
        lines = [f"{verb} the file changes of the turn at message {plan.turn}?", ""]
        for f in files:
            status = f["status"]
            if plan.redo:
                shown = {"added": "create again", "deleted": "remove again"}.get(status, "change again")
            else:
                shown = {"added": "remove", "deleted": "bring back", "renamed": "rename back"}.get(status, "restore")
            lines.append(f"  {shown}: {f['path']}")
        if plan.others:
            lines += ["", f"Changed since by someone else, and overwritten: {', '.join(plan.others)}"]

        def done(yes: bool | None) -> None:
            if yes:
                self.restore_files(plan)

        self.push_screen(ConfirmScreen("\n".join(lines), yes=verb.lower(), no="cancel"), done)

    @work(exclusive=True, group="checkpoint")
    async def restore_files(self, plan: Undo) -> None:
        """Write the files back (in a thread) and record it in the session."""
        from scout_tui.bus import CheckpointRestore
        from scout_tui.runtime import checkpoint_store

        store = checkpoint_store(self.config, self.cwd)
        assert store is not None
        try:
            await asyncio.to_thread(store.restore, plan.tree, plan.paths)
        except ScoutError as e:
            self.chat.add_notice(str(e), "error")
            return
        await self.deliver(CheckpointRestore(plan.turn, plan.tree, plan.paths, plan.redo))
        done = "Redid" if plan.redo else "Undid"
        self.chat.add_notice(f"{done} the file changes of the turn at message {plan.turn}: "
                             f"{', '.join(plan.paths)}. The conversation is unchanged.")
