"""``/diff``, ``/undo``, ``/redo`` and rewinding at a message: the files of the session's turns
shown, put back as they were before a turn (or again as it left them), asked first, recorded as
``checkpoint.restore`` events.

A feature of ``ScoutApp`` (app.py). What can be undone is worked out by ``restores.py`` from the
branch's checkpoint events (``Store.checkpoint_events``: a fork sees the checkpoints of the
turns it shares). A file changed since the turn by someone else is named in the question, never
overwritten unasked. The store and git are read in threads.
"""

from __future__ import annotations


from scout_tui.core.errors import ScoutError
from scout_tui.checkpoints.restores import Restore, rewind_to, undone_turns
from scout_tui.session import restore
from scout_tui.session.restore import NotRestorable, count, names, restore_lines
from scout_tui.widgets.chat_view import ChatView
from scout_tui.widgets.composer import Composer
from scout_tui.tui.feature import Feature, feature_work

class FileChanges(Feature):
    """``/diff``, ``/undo``, ``/redo`` and rewinding for ``ScoutApp``."""

    def _checkpoint_events(self) -> list[tuple[str, dict]]:
        return self.app.store.checkpoint_events(self.app.session.id) if self.app.session.id else []

    def _prompt_texts(self) -> dict[int, str]:
        """The chat's prompts shown now, by their position in the conversation."""
        from scout_tui.widgets.chat_messages import UserMessage

        return {m.index: m.text for m in self.app.chat.query(UserMessage) if m.index is not None}

    def _quoted_prompt(self, at: int, width: int = 40) -> str | None:
        """The prompt at message ``at`` as shown in the chat, quoted and cut to ``width``, or None."""
        from scout_tui.core.text import one_line

        prompt = self._prompt_texts().get(at)
        return f"“{one_line(prompt, width)}”" if prompt else None

    def turn_name(self, turn: int) -> str:
        """The turn at message ``turn`` as people know it: by its prompt (``restore.turn_name``)."""
        return restore.turn_name(self.app.session, turn)

    def _point_name(self, at: int) -> str:
        """Message position ``at`` as people know it: before its prompt, when shown."""
        quoted = self._quoted_prompt(at)
        return f"before {quoted}" if quoted else f"message {at}"

    def _diff_command(self, _: str) -> None:
        self.show_diffs()

    @feature_work(thread=True, exclusive=True, group="checkpoint")
    def show_diffs(self, turn: int | None = None) -> None:
        """``/diff``: the session's changed files by turn and in total, each with its diff (read in
        a thread: the store and git), in ``DiffView``, opened at ``turn``'s files if given."""
        from scout_tui.checkpoints.snapshots import why_skipped
        from scout_tui.session.runtime import checkpoint_store
        from scout_tui.core.text import one_line
        from scout_tui.widgets.diff_view import DiffView, FileDiff

        store = checkpoint_store(self.app.session.config, self.app.cwd)
        events = self._checkpoint_events()
        found = [data for kind, data in events if kind == "checkpoint"]
        undone = set(undone_turns(events))
        if not found or store is None:
            self.app.call_from_thread(self.app.chat.add_notice, "No file changes in this session yet.", "warning")
            return
        prompts = self.app.call_from_thread(self._prompt_texts)
        rows: list[FileDiff] = []
        start = 0
        try:
            for c in found:
                if c["turn"] == turn:
                    start = len(rows)
                # what to read first, first: the list cuts a long label with "…" (its CSS)
                said = f"“{one_line(prompts[c['turn']], 40)}”" if prompts.get(c["turn"]) else f"at message {c['turn']}"
                rows.append(FileDiff(f"{count(len(c['files']), 'file')}{' (undone)' if c['turn'] in undone else ''}"
                                     f" · {said}"))
                rows += [FileDiff(f["path"], f["path"], f["status"],
                                  store.diff(c["before"], c["after"], [p for p in (f.get("old_path"), f["path"]) if p]))
                         for f in c["files"]]
                rows += [FileDiff(f"  not kept: {p} ({why_skipped(p)})") for p in c.get("skipped", [])]
            now = store.snapshot().tree  # the files as they are, undone turns and all
            total = store.changes(found[0]["before"], now)
            rows.append(FileDiff(f"Net, as now · {count(len(total), 'file')}"))
            rows += [FileDiff(f.path, f.path, f.status,
                              store.diff(found[0]["before"], now, [p for p in (f.old_path, f.path) if p]))
                     for f in total]
        except ScoutError as e:
            self.app.call_from_thread(self.app.chat.add_notice, str(e), "error")
            return
        title = (f"{count(len(found), 'turn')} of this session changed files"
                 + (f", {len(undone)} undone since" if undone else "")
                 + f" · {count(len(total), 'file')} {'differs' if len(total) == 1 else 'differ'} now from before the first")
        self.app.call_from_thread(self.app.push_screen, DiffView(rows, title, start=start))

    def _undo_command(self, _: str) -> None:
        self.plan_restore(redo=False)

    def _redo_command(self, _: str) -> None:
        self.plan_restore(redo=True)

    def _changed_by_others(self, plan: Restore) -> list[str] | None:
        """``plan``'s paths someone else changed since (in a thread), or None after saying why
        they could not be read."""
        from scout_tui.session.runtime import checkpoint_store

        store = checkpoint_store(self.app.session.config, self.app.cwd)
        if store is None:
            self.app.call_from_thread(self.app.chat.add_notice, "Checkpoints are off (checkpoints = \"off\").", "warning")
            return None
        try:
            return store.changed_since(plan.since, plan.paths)
        except ScoutError as e:
            self.app.call_from_thread(self.app.chat.add_notice, str(e), "error")
            return None

    @feature_work(exclusive=True, group="checkpoint")
    async def plan_restore(self, redo: bool) -> None:
        """Find what ``/undo`` or ``/redo`` would change (``restore.plan_restore``: the store and
        git, in threads), then ask."""
        app = self.app
        if app.session.id is None or app.busy:
            app.chat.add_notice("Nothing to undo yet." if not app.busy else "A turn is running: press Esc first.",
                                "warning")
            return
        try:
            plan, others = await restore.plan_restore(app.session, redo)
        except NotRestorable as e:
            app.chat.add_notice(str(e), "warning")
            return
        except ScoutError as e:
            app.chat.add_notice(str(e), "error")
            return
        self._ask_restore(plan, others)

    def _ask_restore(self, plan: Restore, others: list[str]) -> None:
        from scout_tui.widgets.dialogs import ConfirmScreen

        verb = "Redo" if plan.redo else "Undo"
        lines = [f"{verb} the file changes of {self.turn_name(plan.turn)}?", "", *restore_lines(plan, others)]

        def done(yes: bool | None) -> None:
            if yes:
                self.restore_files(plan)

        self.app.push_screen(ConfirmScreen("\n".join(lines), yes=verb.lower(), no="cancel", enter=not others), done)

    @feature_work(exclusive=True, group="checkpoint")
    async def restore_files(self, plan: Restore, rewind_at: int | None = None, fork: str | None = None) -> None:
        """Write the files back (in a thread) and record it in the session. ``rewind_at``: this
        rewinds the files to that message; ``fork`` (the prompt to offer, maybe "") then forks
        the conversation there too."""
        try:
            self.app.delivery.shown(await self.app.session.restore_files(plan))
        except ScoutError as e:
            self.app.chat.add_notice(str(e), "error")
            return
        files = names(plan.paths)
        if rewind_at is None:
            self.app.chat.add_notice(restore.restored(plan, self.turn_name(plan.turn)))
        elif fork is None:
            self.app.chat.add_notice(f"Rewound the files to {self._point_name(rewind_at)}: {files}. The conversation is "
                                 "unchanged; /redo makes the turns' changes again, one at a time.")
        else:  # the chat is about to show the branch: the fork says it
            self.app.sessions.fork_session(rewind_at, fork, rewound=files)

    # -- rewind at a message ------------------------------------------------------------------

    def _rewind_command(self, args: str) -> None:
        """``/rewind N``: the choice for message N; ``/rewind``: the newest prompt selected in the
        chat, to move from and press ``r``."""
        from scout_tui.widgets.chat_messages import UserMessage

        prompts = [m for m in self.app.chat.query(UserMessage) if m.index is not None]
        if args:
            if not (args.isascii() and args.isdigit()):
                self.app.chat.add_notice("Use `/rewind` (then pick a message) or `/rewind N` (to message N).", "error")
                return
            at = int(args)
            self.plan_rewind(at, next((m.text for m in prompts if m.index == at), ""))
        elif not prompts:
            self.app.chat.add_notice("Nothing to rewind yet: send a message first.", "warning")
        else:
            self.app.chat.focus()
            self.app.chat.select(prompts[-1])
            self.app.chat.add_notice("Rewind: ↑/↓ to a message, then r (before a prompt, or after an answer).")

    def rewind_requested(self, message: ChatView.RewindRequested) -> None:
        self.plan_rewind(message.at, message.prompt)

    @feature_work(thread=True, exclusive=True, group="checkpoint")
    def plan_rewind(self, at: int, prompt: str) -> None:
        """Find which files rewinding to message ``at`` would write back (in a thread), then
        offer the choice: code and conversation, the conversation only, the code only."""
        if self.app.busy:
            self.app.call_from_thread(self.app.chat.add_notice, "A turn is running: press Esc first.", "warning")
            return
        plan = rewind_to(self._checkpoint_events(), at)
        others: list[str] | None = []
        if plan is not None and (others := self._changed_by_others(plan)) is None:
            return
        self.app.call_from_thread(self._ask_rewind, at, prompt, plan, others or [])

    def _ask_rewind(self, at: int, prompt: str, plan: Restore | None, others: list[str]) -> None:
        from scout_tui.widgets.dialogs import ChoiceScreen

        from scout_tui.core.text import one_line

        where = f"before “{one_line(prompt, 48)}”" if prompt else "after this answer"
        lines = [f"Rewind to {where} (message {at})?", ""]
        if plan is None:
            lines.append("No file was changed after this message: only the conversation can go back.")
            choices = [("conversation", "Fork the conversation here")]
        else:
            lines += ["The code goes back as it was then:", *restore_lines(plan, others)]
            choices = [("both", "Both: restore the files and fork the conversation here"),
                       ("conversation", "Conversation only: fork here, keep the files"),
                       ("code", "Code only: restore the files, keep the conversation")]

        def chosen(choice: str | None) -> None:
            self.app.query_one(Composer).focus()  # not the chat, where typed letters are keys (r rewinds)
            if choice == "conversation":
                self.app.sessions.fork_session(at, prompt)
            elif choice in ("both", "code") and plan is not None:
                self.restore_files(plan, at, prompt if choice == "both" else None)

        # Cancel highlighted: an Enter meant for the composer changes nothing
        self.app.push_screen(ChoiceScreen("\n".join(lines), choices + [("cancel", "Cancel")], initial=len(choices)), chosen)
