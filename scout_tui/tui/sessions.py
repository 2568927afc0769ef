"""The app's sessions: opening one (its newest messages first, the rest once they are on
screen), the sessions pane's requests (open, new, rename, delete), forking from the chat or
``/fork``, and the session list kept fresh while other processes write to the store. The open
session's turns that changed files show as leaves in the sessions pane; a leaf, or ``d`` on a
tool-pane row, opens ``/diff`` at its turn.

A feature of ``ScoutApp`` (app.py). Store reads and writes run in threads; what they read comes
back as messages.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.message import Message
from textual.worker import WorkerCancelled, WorkerFailed

from scout_tui.store import opening as sessions
from scout_tui.core import urgency
from scout_tui.core.errors import ScoutError
from scout_tui.store.opening import OpenedSession
from scout_tui.widgets import ChatView, Composer
from scout_tui.tui.feature import Feature, feature_work

if TYPE_CHECKING:
    from scout_tui.widgets import SessionTree


OPEN_TAIL = 40
"""Messages of a stored session read before the first paint (the chat mounts the newest 24)."""


class SessionOpened(Message):
    """A session was read (off the event loop) and can be shown (``sessions.OpenedSession``;
    its defaults: a new session). For a long session only the newest messages are read first:
    ``messages`` holds None for the older ones until ``HistoryLoaded`` brings them."""

    def __init__(self, opened: OpenedSession, at: int | None = None) -> None:
        super().__init__()
        self.opened = opened
        self.at = at
        """The message to show once it is open (``Sessions.reveal``), if one was asked for."""
        self.messages: list[dict | None] = [None] * opened.since + opened.messages


@dataclass
class HistoryLoaded(Message):
    """The whole conversation of a session opened with only its newest messages."""

    session_id: str
    messages: list[dict]


@dataclass
class ToolDetailsLoaded(Message):
    """The diffs, saved-output paths and durations of a stored session's tool calls (``Store.tool_details``)."""

    session_id: str
    details: dict[str, dict[str, Any]]


@dataclass
class CheckpointsLoaded(Message):
    """The file checkpoints of a stored session's branch (``Store.checkpoint_events``)."""

    session_id: str
    events: list[tuple[str, dict]]


@dataclass
class SessionsListed(Message):
    """The sessions of this directory were read from the store."""

    sessions: list


class Sessions(Feature):
    """Opening, listing, forking, renaming and deleting sessions for ``ScoutApp``."""

    _opened: OpenedSession | None = None
    """The session shown (``SessionOpened``)."""

    def open_session(self, session_id: str | None, latest: bool = False, at: int | None = None) -> None:
        """Read a session (by id or prefix, the latest of this directory, or none) and show it:
        its newest messages first, so a long session paints at once; once they are on screen,
        the rest of it and the session list (``_after_shown``); then, with ``at``, its message
        ``at`` (``reveal``)."""
        if session_id is None and not latest:  # a new session: nothing to read
            self.app.post_message(SessionOpened(OpenedSession()))
        else:
            self._read_session(session_id, latest, at)

    @feature_work(thread=True, exclusive=True, group="store-read")
    def _read_session(self, session_id: str | None, latest: bool, at: int | None = None) -> None:
        try:
            opened = sessions.open_session(self.app.store, self.app.cwd, resume=session_id, latest=latest, tail=OPEN_TAIL)
        except ScoutError as e:
            self.app.call_from_thread(self.app.notify, str(e), severity="error")
            if self.app.session.id is not None:
                return  # stay in the session that is open
            opened, at = sessions.OpenedSession(), None
        self.app.post_message(SessionOpened(opened, at))

    @feature_work(exclusive=True, group="session-rest")
    async def _after_shown(self, opened: OpenedSession, at: int | None = None) -> None:
        """Once the chat shows ``opened`` (its newest messages drawn): start-up's other work, if
        this is the first session shown (``start_background``), the rest of the session, and
        with ``at`` its message ``at`` shown (``reveal``). Until
        then no thread competes with the drawing for the interpreter (a 2,000-message session's
        history is ~0.1 s of JSON)."""
        for worker in list(self.app.workers):  # ChatView.load's worker: builds and mounts the batch
            if worker.node is self.app.chat and worker.group == "chat-load":
                try:
                    await worker.wait()
                except (WorkerCancelled, WorkerFailed):
                    pass
        shown: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.app.call_after_refresh(lambda: None if shown.done() else shown.set_result(None))
        await shown
        self.app.start_background()  # once: the first session shown, the app's own or one replacing it
        if not opened.messages and not opened.since:
            await self._welcome()
        await self.app.side_panes_ready.wait()  # the panes that show what _read_rest reads
        self._read_rest(opened)
        if at is not None:
            self.reveal(at)

    @feature_work(exclusive=True, group="reveal")
    async def reveal(self, at: int) -> None:
        """Show message ``at`` of the open session (a search's hit): once the whole conversation
        is read, the chat mounts back to it, scrolls to it, marks it and takes the focus, the
        message selected for ``f`` (``ChatView.reveal``)."""
        await self.app.history_ready.wait()
        if await self.app.chat.reveal(at):
            self.app.chat.focus()

    async def _welcome(self) -> None:
        """Welcome the person to an empty session (``widgets/welcome.py``), after its first frame:
        the memory files are read in a thread (``memory.load_memory``: the session keeps them for
        the system prompt it builds next; an import refused is said below), and the model shown is the
        status bar's, as it becomes known."""
        from scout_tui.widgets.welcome import Welcome, memory_names, tilde

        def memory() -> tuple[list[str], list[str]]:
            with urgency.yielding():
                from scout_tui.session.memory import load_memory

            session = self.app.session
            read = session.memory or load_memory(self.app.cwd)
            session.memory = session.memory or read  # the agent built next takes them as read here
            files = list(read.files)
            return memory_names(files, self.app.cwd), [problem for file in files for problem in file.problems]

        names, problems = await asyncio.to_thread(memory)
        welcome = Welcome(tilde(self.app.cwd), names)
        if self.app.chat.show_welcome(welcome):
            for problem in problems:
                self.app.chat.add_notice(problem, "error")
            status = self.app.status
            for name in ("provider", "model"):
                welcome.watch(status, name, lambda _: welcome.set_model(status.provider, status.model))

    @feature_work(thread=True, exclusive=True, group="store-read-rest")
    def _read_rest(self, opened: OpenedSession) -> None:
        """The session list, then the open session's tool-call details (every ``tool.end`` event)
        and, for a long session, its older messages."""
        self.app.post_message(SessionsListed(self.app.store.sessions(self.app.cwd)))
        if session_id := opened.id:
            self.app.call_from_thread(self.app.models.session_model, session_id, self.app.store.model_switch(session_id))
            self.app.post_message(ToolDetailsLoaded(session_id, self.app.store.tool_details(session_id)))
            self.app.post_message(CheckpointsLoaded(session_id, self.app.store.checkpoint_events(session_id)))
            if not opened.complete:
                self.app.post_message(HistoryLoaded(session_id, self.app.store.messages(session_id)))

    def _poll_sessions(self) -> None:
        if not self.app.busy:  # during a turn every stored message refreshes the list anyway
            self.refresh_sessions()

    @feature_work(thread=True, exclusive=True, group="store-list")
    def refresh_sessions(self) -> None:
        self.app.post_message(SessionsListed(self.app.store.sessions(self.app.cwd)))

    def opened(self, message: SessionOpened) -> None:
        opened = message.opened
        if self.app.opened_with_session:  # the first: its model came with the command line
            self.app.opened_with_session, self.app.models.model_chosen_for = False, opened.id
        self.app.session.open(opened, message.messages)
        self.app.side_panes.file_checkpoints = ()  # read once it is shown (``_read_rest``)
        if opened.complete:
            self.app.history_ready.set()
        else:
            self.app.history_ready.clear()
        self._show_opened(opened)
        self._recall_prompts(self.app.session.messages)
        if self.app.background_started:  # at start-up, start_background warns once the frame is painted
            self.app.turns.warn_setup()
        self._after_shown(opened, message.at)
        if opened.complete:
            # After the first paint: the estimate imports the backend and compaction modules.
            self.app.call_after_refresh(self.app.long_session.estimate_context)


    def _show_opened(self, opened: OpenedSession, session_id: str | None = None) -> None:
        """Show the session the app's session now runs (``opened``, as read; ``session_id`` its id
        when ``opened`` was not read from the store): its conversation in the chat, its tool calls
        in the tool pane, its id, tokens and cost in the status bar."""
        # The chat shows the newest; older ones (None until read) fill in place (``ChatView.load``).
        self.app.chat.load(self.app.session.messages, self.app.session.compactions)
        self._opened = opened
        self.show_in_side_panes()
        status = self.app.status
        status.session_id = opened.id or session_id or ""
        status.input_tokens, status.output_tokens = opened.tokens
        status.cost = (opened.cost or 0.0) + opened.subagent_cost if opened.subagent_cost else opened.cost
        status.cache_share = None

    def branch_started(self, session_id: str) -> None:
        """The running turn goes on in a new branch, ``session_id`` (a plan run "in a fresh
        context", ``bus.PlanBranch``), which the session runs now: the chat is cleared to it as
        when a session is opened (``_show_opened``; its first message follows as the turn's next
        event), and the sessions pane lists it beside the exploration it came from."""
        self._show_opened(OpenedSession(messages=self.app.session.messages), session_id)
        self.refresh_sessions()

    def show_in_side_panes(self) -> None:
        """Show the open session's tool calls, compactions and checkpoints in the side panes (once
        they are mounted: ``SidePanes.mount_side_panes`` calls this again)."""
        tools, tree, opened = self.app.tool_pane, self.app.tree_pane, self._opened
        if tools is None or tree is None or opened is None:
            return
        tools.load(opened.messages)
        if opened.id:
            tree.set_compactions(opened.id, self.app.session.compactions)
            tree.set_checkpoints(opened.id, list(self.app.side_panes.file_checkpoints))








    def tool_details_loaded(self, message: ToolDetailsLoaded) -> None:
        if message.session_id == self.app.session.id and self.app.tool_pane is not None:
            self.app.tool_pane.set_details(message.details)

    def history_loaded(self, message: HistoryLoaded) -> None:
        if message.session_id != self.app.session.id or self.app.history_ready.is_set():
            return
        self.app.session.messages[:] = message.messages  # in place: the chat holds this same list
        self.app.history_ready.set()
        if self.app.tool_pane is not None and self._opened is not None:  # their calls wait behind its first row
            self.app.tool_pane.add_older(message.messages[: self._opened.since])
        self.app.query_one(ChatView).older_messages_ready()
        self.app.long_session.estimate_context()

    def sessions_listed(self, message: SessionsListed) -> None:
        if self.app.tree_pane is not None and self.app.tree_pane.is_attached:  # not before it is mounted, nor once the app closes
            self.app.tree_pane.set_sessions(message.sessions, self.app.session.id)

    def _refuse_while_busy(self) -> bool:
        if self.app.busy:
            self.app.notify("A turn is running: press Esc to interrupt it first.", severity="warning")
        return self.app.busy

    def tree_opened(self, message: SessionTree.Opened) -> None:
        if message.session_id != self.app.session.id and not self._refuse_while_busy():
            self.open_session(message.session_id)
        self.app.query_one(Composer).focus()

    def tree_new(self) -> None:
        self.new_session()
        self.app.query_one(Composer).focus()

    async def tree_rename(self, message: SessionTree.RenameRequested) -> None:
        await asyncio.to_thread(self.app.store.rename, message.session_id, message.title)
        self.refresh_sessions()

    async def tree_delete(self, message: SessionTree.DeleteRequested) -> None:
        current = message.session_id == self.app.session.id
        if current and self._refuse_while_busy():
            return
        await asyncio.to_thread(self.app.store.delete, message.session_id)
        if current:
            self.app.post_message(SessionOpened(OpenedSession()))
        self.app.notify("Session deleted: hidden from the list (its events stay in the store).")
        self.refresh_sessions()


    def _recall_prompts(self, messages: list[dict | None]) -> None:
        """Up in the composer recalls the open session's prompts too (newest first), before this
        run's others."""
        from scout_tui.session.mentions import typed_text

        composer = self.app.query_one(Composer)
        prompts = [text for m in reversed(messages) if m and m.get("role") == "user" and (text := typed_text(m)).strip()]
        composer.prompt_history = list(dict.fromkeys(prompts + composer.prompt_history))





    def stored_prompts(self) -> list[str]:
        """Ctrl+R's prompts (``Composer.prompt_source``): what the person typed in every stored
        session (``Store.user_messages``: this directory's first, newest first), each once. Reads
        the store: called in a thread."""
        from scout_tui.session.mentions import typed_text

        return list(dict.fromkeys(text for m in self.app.store.user_messages(self.app.cwd) if (text := typed_text(m)).strip()))

    def fork_requested(self, message: ChatView.ForkRequested) -> None:
        self.fork_session(message.at, message.prompt)

    @feature_work(exclusive=True, group="fork")
    async def fork_session(self, at: int | None, prompt: str = "", undo: bool = False, rewound: str = "") -> None:
        """Branch the current session at ``at`` (None: all its messages) and open the branch
        (``undo``: the fork undoes a compaction made at ``at``; ``rewound``: the files a rewind
        just wrote back; say so)."""
        if self.app.session.id is None:
            self.app.notify("Nothing to fork yet: send a message first.", severity="warning")
            return
        if self._refuse_while_busy():
            return
        try:
            # In this directory, as headless --fork does: the sessions pane lists this directory's.
            branch = await asyncio.to_thread(self.app.store.fork, self.app.session.id, at, cwd=self.app.cwd)
        except ScoutError as e:
            self.app.notify(str(e), severity="error")
            return
        if at is not None and branch.fork_at != at:
            self.app.notify(f"Forked at message {branch.fork_at} instead of {at}, so no tool call is left without its "
                        "result.", severity="warning")
        self.open_session(branch.id)
        composer = self.app.query_one(Composer)
        if prompt:
            composer.load_text(prompt)
            composer.move_cursor(composer.document.end)
        composer.focus()
        if undo:
            self.app.notify(f"Compaction undone: a new branch shares the first {branch.fork_at} messages, "
                        "without that summary. The compacted branch stays in the sessions pane (Ctrl+T).")
        elif rewound:
            self.app.notify(f"Rewound: the files ({rewound}) and the conversation, in a new branch. The branch "
                        "you left stays in the sessions pane (Ctrl+T).")
        else:
            self.app.notify("Forked: a new branch in the sessions pane (Ctrl+T).")

    @feature_work(exclusive=True, group="rename")
    async def rename_session(self, title: str) -> None:
        if self.app.session.id is None:
            self.app.notify("No session to rename yet: send a message first.", severity="warning")
            return
        await asyncio.to_thread(self.app.store.rename, self.app.session.id, title)
        self.refresh_sessions()

    def new_session(self) -> None:
        if self.app.busy:
            self.app.notify("A turn is running: press Esc to interrupt it first.", severity="warning")
            return
        self.app.post_message(SessionOpened(OpenedSession()))
        self.refresh_sessions()
        self.app.query_one(Composer).focus()

