"""The Textual app: chat, tool activity and session tree panes, composer, status bar.

The model call and the tools run in a Textual worker (``run_turn``); the agent's events come
back to the widgets as ``AgentEvent`` messages and are stored off the event loop (``app_events.py``).
"""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.screen import ModalScreen
from textual.widgets import Footer

from scout_tui import sessions
from scout_tui.agent import Agent
from scout_tui.app_commands import CommandsMixin
from scout_tui.app_events import AgentEvent, AgentEventsMixin
from scout_tui.app_long import LongSessionMixin, compaction_of
from scout_tui.app_themes import ThemesMixin
from scout_tui.bus import Bus
from scout_tui.commands import Commands, literal
from scout_tui.config import Config
from scout_tui.errors import ScoutError
from scout_tui.models import check_models_tables
from scout_tui.plugins import Plugins, load_plugins
from scout_tui.runtime import SETUP_HELP, build_agent, check_provider, model_name, needs_key
from scout_tui.skills import Skill, discover_skills
from scout_tui.store import Store
from scout_tui.themes import ThemeSource
from scout_tui.tools.permissions import BUILTIN_TOOL_NAMES, Approval, PermissionRequest, policy_from_config
from scout_tui.widgets import ChatView, Composer, SessionTree, StatusBar, ToolActivity
from scout_tui.widgets.approval import ApprovalScreen


class SessionOpened(Message):
    """A session's stored conversation was read (off the event loop) and can be shown.

    For a long session only the newest messages are read first: the older entries of
    ``messages`` are None until ``HistoryLoaded`` brings them (``complete`` is False).
    """

    def __init__(self, session_id: str | None, messages: list[dict | None], tokens: tuple[int, int] = (0, 0),
                 complete: bool = True, compactions: list[dict] | None = None, cost: float | None = None,
                 window: int | None = None) -> None:
        super().__init__()
        self.session_id = session_id
        self.messages = messages
        self.tokens = tokens  # (input, output) totals of the session
        self.complete = complete
        self.compactions = compactions or []  # Store.compactions: the summaries in force, oldest first
        self.cost = cost  # dollars the branch's conversation cost (None: nothing priced)
        self.window = window  # the window the session's last request was fitted to (Store.last_window)


class HistoryLoaded(Message):
    """The whole conversation of a session opened with only its newest messages."""

    def __init__(self, session_id: str, messages: list[dict]) -> None:
        super().__init__()
        self.session_id = session_id
        self.messages = messages


class ToolDetailsLoaded(Message):
    """The diffs and saved-output paths of a stored session's tool calls (``Store.tool_details``)."""

    def __init__(self, session_id: str, details: dict[str, dict[str, str]]) -> None:
        super().__init__()
        self.session_id = session_id
        self.details = details


class ExtensionsLoaded(Message):
    """Skills and plugins were discovered and loaded (off the event loop)."""

    def __init__(self, skills: list, plugins: Plugins, problems: list[str]) -> None:
        super().__init__()
        self.skills = skills
        self.plugins = plugins
        self.problems = problems


class SessionsListed(Message):
    """The sessions of this directory were read from the store."""

    def __init__(self, sessions: list) -> None:
        super().__init__()
        self.sessions = sessions


SESSIONS_POLL = 3.0
"""Seconds between re-reads of the session list, to show other processes' sessions."""

OPEN_TAIL = 40
"""Messages of a stored session read before the first paint (the chat mounts the newest 24)."""


class ScoutApp(AgentEventsMixin, CommandsMixin, LongSessionMixin, ThemesMixin, App):
    """scout-tui's full-screen app.

    Args:
        config: the layered configuration.
        cwd: the working directory (tools act here; sessions are grouped by it).
        resume: a session id (or unique prefix) to open.
        continue_: open the latest session of ``cwd``.
        store: the session store (default: the user's store under the data dir).

    Raises:
        ScoutError: a bad ``[permissions]`` rule in a config file (naming the file and line).
    """

    TITLE = "scout"
    CSS = """
    #main { height: 1fr; }
    #chat { width: 2fr; }
    #side { width: 1fr; min-width: 32; }
    #tools { height: 3fr; border-top: solid $panel; border-title-color: $text-muted; }
    #tree { height: 2fr; border-top: solid $panel; border-title-color: $text-muted; }
    #composer { margin: 0 0; }
    """
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True),
        Binding("escape", "interrupt", "Interrupt", id="agent.interrupt"),
        Binding("ctrl+n", "new_session", "New session", id="session.new"),
        Binding("ctrl+o", "show_prompt", "Model's view", id="prompt.show"),
        Binding("ctrl+t", "toggle_tree", "Sessions", id="session.tree"),
        Binding("shift+tab", "cycle_mode", "Mode", id="permissions.mode", priority=True),
    ]

    busy: reactive[bool] = reactive(False)

    def __init__(
        self,
        config: Config,
        *,
        cwd: Path | None = None,
        resume: str | None = None,
        continue_: bool = False,
        store: Store | None = None,
    ) -> None:
        super().__init__()
        self.config = config
        self.cwd = (cwd or Path.cwd()).resolve()
        self._resume = resume
        self._continue = continue_
        self.store = store or Store()
        # Rules allowed for the session at the approval prompt stay until the app closes.
        self.permissions = policy_from_config(config, self.cwd)
        check_models_tables(config)  # a typo in [models."ID"] stops start-up with its file and line
        self.bus = Bus()
        self.bus.on("*", lambda event: self.post_message(AgentEvent(event)))
        self.session_id: str | None = None
        self.conversation: list[dict | None] = []
        self._history_ready = asyncio.Event()
        self.agent = None
        self.strategies: str | None = None  # None: the configured default
        self._queued: list[str] = []
        self._before_tree = None  # the widget focused before Ctrl+T went to the tree
        self.skills: list[Skill] = []
        self.plugins = Plugins()
        self._extensions_ready = asyncio.Event()  # skills and plugins are loaded
        self._model_ready = asyncio.Event()  # the model's window and prices are read
        self.compactions: list[dict] = []
        self._learnt_window: int | None = None  # a window an earlier run of this session learnt
        self.theme_sources: dict[str, ThemeSource] = {}  # theme name -> the file it came from
        self.commands = Commands(self.builtin_commands())  # plugins' commands join once loaded

    # -- layout -----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        # The panes the agent's events update, held once (not looked up per event).
        self.chat, self.tool_pane, self.status = ChatView(id="chat"), ToolActivity(id="tools"), StatusBar(id="status")
        with Horizontal(id="main"):
            yield self.chat
            with Vertical(id="side"):
                yield self.tool_pane
                yield SessionTree(id="tree")
        yield Composer(id="composer")
        yield self.status
        yield Footer()

    def on_mount(self) -> None:
        self._register_themes()
        self.query_one(ToolActivity).border_title = "Tool activity"
        self.query_one(SessionTree).border_title = "Sessions"
        # Objects alive after start-up live for the whole run: keep the collector off them, so
        # full collections during a stream stay short (see DESIGN.md, performance facts).
        self.call_after_refresh(gc.freeze)
        # Another scout-tui (or `-p`) may write to the same store: list the sessions again now
        # and then, off the event loop (a cheap indexed query).
        self.set_interval(SESSIONS_POLL, self._poll_sessions)
        status = self.query_one(StatusBar)
        status.provider = self.config.provider
        status.model = model_name(self.config)
        status.permission_mode = self.permissions.mode
        for note in self.permissions.notes:
            self.notify(note, title="Permissions", severity="warning", timeout=15)
        self.query_one(Composer).focus()
        self.open_session(self._resume, latest=self._continue)
        self.load_extensions()
        # After the first paint: reading the models.dev data costs ~80 ms of CPU in a thread.
        self.call_after_refresh(self.load_model_info)

    def watch_busy(self, busy: bool) -> None:
        self.query_one(StatusBar).busy = busy

    # -- sessions (store reads run in a thread) -----------------------------------------------

    @work(thread=True, exclusive=True, group="store-read")
    def open_session(self, session_id: str | None, latest: bool = False) -> None:
        """Read a session (by id or prefix, the latest of this directory, or none) and show it."""
        try:
            # The newest messages first, so a long session paints at once; the rest follows.
            opened = sessions.open_session(self.store, self.cwd, resume=session_id, latest=latest, tail=OPEN_TAIL)
        except ScoutError as e:
            self.call_from_thread(self.notify, str(e), severity="error")
            if self.session_id is not None:
                return  # stay in the session that is open
            opened = sessions.OpenedSession()
        session_id = opened.id
        self.post_message(SessionOpened(session_id, [None] * opened.since + opened.messages, opened.tokens,
                                        complete=opened.complete, compactions=opened.compactions, cost=opened.cost,
                                        window=opened.window))
        self.post_message(SessionsListed(self.store.sessions(self.cwd)))
        if session_id:  # after the first paint: it reads every tool.end event of the session
            self.post_message(ToolDetailsLoaded(session_id, self.store.tool_details(session_id)))
        if session_id and not opened.complete:
            self.post_message(HistoryLoaded(session_id, self.store.messages(session_id)))

    @work(thread=True, exclusive=True, group="extensions")
    def load_extensions(self) -> None:
        """Find skills and load plugins (their code runs here, off the event loop)."""
        skills, problems = discover_skills(self.cwd)
        plugins = load_plugins(self.cwd, config=self.config)
        self.post_message(ExtensionsLoaded(skills, plugins, problems + plugins.problems))

    def on_extensions_loaded(self, message: ExtensionsLoaded) -> None:
        self.skills, self.plugins = message.skills, message.plugins
        self.plugins.attach(self.bus)
        self.add_plugin_commands()
        for problem in message.problems:
            self.notify(problem, title="Skipped", severity="error", timeout=10)
        for problem in self.permissions.unknown_tools([*BUILTIN_TOOL_NAMES, *self.plugins.tools]):
            self.notify(problem, title="Permissions", severity="warning", timeout=15)
        if not self.busy:
            self.agent = None  # built again with the skills and plugin tools
        self._extensions_ready.set()
        self.estimate_context()

    def _poll_sessions(self) -> None:
        if not self.busy:  # during a turn every stored message refreshes the list anyway
            self.refresh_sessions()

    @work(thread=True, exclusive=True, group="store-list")
    def refresh_sessions(self) -> None:
        self.post_message(SessionsListed(self.store.sessions(self.cwd)))

    def on_session_opened(self, message: SessionOpened) -> None:
        self.session_id = message.session_id
        self.conversation = message.messages
        self.compactions = message.compactions
        self._learnt_window = message.window
        if self.agent is not None:  # the summary, cache key and window of the session now open
            self.agent.compaction = compaction_of(self.compactions)
            self.agent.cache_key = self.session_id
            self.agent.narrow_window(self._learnt_window)
        if message.complete:
            self._history_ready.set()
        else:
            self._history_ready.clear()
        chat = self.query_one(ChatView)
        chat.load(self.conversation, self.compactions)  # clears what was shown; later additions go below it
        if problem := self._setup_problem():
            chat.add_notice(SETUP_HELP if needs_key(self.config) else problem, "warning")
        self.query_one(ToolActivity).load([m for m in message.messages if m is not None])
        status = self.query_one(StatusBar)
        status.session_id = message.session_id or ""
        status.input_tokens, status.output_tokens = message.tokens
        status.cost = message.cost
        status.cache_share = None
        if message.window and (not status.context_window or message.window < status.context_window):
            status.context_window = message.window
        if message.session_id:
            self.query_one(SessionTree).set_compactions(message.session_id, self.compactions)
        if message.complete:
            # After the first paint: the estimate imports the backend and compaction modules.
            self.call_after_refresh(self.estimate_context)

    def on_tool_details_loaded(self, message: ToolDetailsLoaded) -> None:
        if message.session_id == self.session_id:
            self.query_one(ToolActivity).set_details(message.details)

    def on_history_loaded(self, message: HistoryLoaded) -> None:
        if message.session_id != self.session_id or self._history_ready.is_set():
            return
        self.conversation[:] = message.messages  # in place: the chat holds this same list
        self._history_ready.set()
        self.query_one(ChatView).older_messages_ready()
        self.estimate_context()

    def on_sessions_listed(self, message: SessionsListed) -> None:
        for tree in self.query(SessionTree):  # none once the app is closing
            tree.set_sessions(message.sessions, self.session_id)

    def _refuse_while_busy(self) -> bool:
        if self.busy:
            self.notify("A turn is running: press Esc to interrupt it first.", severity="warning")
        return self.busy

    @on(SessionTree.Opened)
    def _open_from_tree(self, message: SessionTree.Opened) -> None:
        if message.session_id != self.session_id and not self._refuse_while_busy():
            self.open_session(message.session_id)
        self.query_one(Composer).focus()

    @on(SessionTree.NewRequested)
    def _new_from_tree(self) -> None:
        self.action_new_session()
        self.query_one(Composer).focus()

    @on(SessionTree.RenameRequested)
    async def _rename_from_tree(self, message: SessionTree.RenameRequested) -> None:
        await asyncio.to_thread(self.store.rename, message.session_id, message.title)
        self.refresh_sessions()

    @on(SessionTree.DeleteRequested)
    async def _delete_from_tree(self, message: SessionTree.DeleteRequested) -> None:
        current = message.session_id == self.session_id
        if current and self._refuse_while_busy():
            return
        await asyncio.to_thread(self.store.delete, message.session_id)
        if current:
            self.post_message(SessionOpened(None, []))
        self.notify("Session deleted: hidden from the list (its events stay in the store).")
        self.refresh_sessions()

    def action_toggle_tree(self) -> None:
        """Ctrl+T: to the sessions pane, and back to where the focus was (the composer at first)."""
        tree = self.query_one(SessionTree)
        if tree.has_focus:
            back = self._before_tree if self._before_tree is not None and self._before_tree.is_attached else None
            (back or self.query_one(Composer)).focus()
        else:
            self._before_tree = self.focused
            tree.focus()

    @on(ChatView.ForkRequested)
    def _fork_from_chat(self, message: ChatView.ForkRequested) -> None:
        # A prompt forks before itself, to be edited and resent (a sibling branch); an answer
        # forks after itself, to continue from there differently.
        at = message.index if message.role == "user" else message.index + 1
        self.fork_session(at, message.text if message.role == "user" else "")

    @work(exclusive=True, group="fork")
    async def fork_session(self, at: int | None, prompt: str = "", undo: bool = False) -> None:
        """Branch the current session at ``at`` (None: all its messages) and open the branch
        (``undo``: the fork undoes a compaction made at ``at``; say so)."""
        if self.session_id is None:
            self.notify("Nothing to fork yet: send a message first.", severity="warning")
            return
        if self._refuse_while_busy():
            return
        try:
            # In this directory, as headless --fork does: the sessions pane lists this directory's.
            branch = await asyncio.to_thread(self.store.fork, self.session_id, at, cwd=self.cwd)
        except ScoutError as e:
            self.notify(str(e), severity="error")
            return
        if at is not None and branch.fork_at != at:
            self.notify(f"Forked at message {branch.fork_at} instead of {at}, so no tool call is left without its "
                        "result.", severity="warning")
        self.open_session(branch.id)
        composer = self.query_one(Composer)
        if prompt:
            composer.load_text(prompt)
            composer.move_cursor(composer.document.end)
        composer.focus()
        if undo:
            self.notify(f"Compaction undone: a new branch shares the first {branch.fork_at} messages, "
                        "without that summary. The compacted branch stays in the sessions pane (Ctrl+T).")
        else:
            self.notify("Forked: a new branch in the sessions pane (Ctrl+T).")

    @work(exclusive=True, group="rename")
    async def rename_session(self, title: str) -> None:
        if self.session_id is None:
            self.notify("No session to rename yet: send a message first.", severity="warning")
            return
        await asyncio.to_thread(self.store.rename, self.session_id, title)
        self.refresh_sessions()

    def action_new_session(self) -> None:
        if self.busy:
            self.notify("A turn is running: press Esc to interrupt it first.", severity="warning")
            return
        self.post_message(SessionOpened(None, []))
        self.refresh_sessions()
        self.query_one(Composer).focus()

    # -- turns --------------------------------------------------------------------------------

    @on(Composer.Submitted)
    def _submitted(self, message: Composer.Submitted) -> None:
        if self.run_command(message.text):
            return
        text = literal(message.text) or message.text  # "//text" sends "/text"
        problem = self._setup_problem()
        if problem:
            self.chat.add_user(text)
            self.chat.add_notice(f"Not sent: {problem}", "error")
            return
        if self.busy:
            self._queued.append(text)
            self.notify("Queued: it will be sent when the current turn ends (Esc interrupts).")
            return
        self.run_turn(text)

    def _setup_problem(self) -> str:
        """Why no turn can run with this configuration ("" when one can)."""
        try:
            check_provider(self.config)
        except ScoutError as e:
            return f"{e}. Set `provider` in scout.toml or pass --provider."
        if needs_key(self.config) and self.config.provider not in self.plugins.providers:
            return "no API key is configured; see how to set one up above."
        return ""

    # -- compaction: strategy, context use, what the model sees --------------------------------

    def _ensure_agent(self) -> Agent:
        if self.agent is None:
            self.agent = build_agent(self.config, self.cwd, skills=self.skills, plugins=self.plugins,
                                     permissions=self.permissions, approve=self.approve, info=self.model_info,
                                     compaction=compaction_of(self.compactions), cache_key=self.session_id)
            self.agent.narrow_window(self._learnt_window)
            self.agent.strategies = self.strategies
        return self.agent

    # -- permissions ----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Shift+Tab is the mode key on the main screen only; a dialog keeps it for its fields.
        if action == "cycle_mode":
            return not isinstance(self.screen, ModalScreen)
        return True

    def action_cycle_mode(self) -> None:
        """Shift+Tab: the next permission mode (ask → auto-edit → yolo → ask), for this run."""
        self.set_permission_mode(self.permissions.next_mode())

    def set_permission_mode(self, mode: str) -> None:
        """Use permission ``mode`` from the next tool call on (the running turn included)."""
        self.permissions.mode = mode
        self.query_one(StatusBar).permission_mode = mode
        what = {"ask": "edits and bash ask first", "auto-edit": "edits in this folder run; bash asks",
                "yolo": "nothing asks (deny rules still hold)"}[mode]
        self.notify(f"Permission mode {mode}: {what}.", timeout=3)

    async def approve(self, request: PermissionRequest) -> Approval:
        """Ask the person about one tool call with the approval prompt; wait for the answer."""
        answered: asyncio.Future[Approval] = asyncio.get_running_loop().create_future()
        screen = ApprovalScreen(request)

        def done(answer: Approval | None) -> None:
            if not answered.done():
                answered.set_result(answer or Approval("stop"))

        await self.push_screen(screen, done)
        try:
            return await answered
        except asyncio.CancelledError:  # the turn was cancelled while the prompt was up
            if screen.is_current:
                screen.dismiss(None)
            raise

    @on(ToolActivity.KillRequested)
    def _kill_tool_call(self, message: ToolActivity.KillRequested) -> None:
        if self.agent is None or not self.agent.kill(message.tool_use_id):
            self.notify("That call is not running.", severity="warning", timeout=3)

    def action_interrupt(self) -> None:
        """Esc: cancel the running turn; the worker closes it validly (see ``run_turn``)."""
        if self.busy:
            self.workers.cancel_group(self, "agent")

    @work(exclusive=True, group="agent", exit_on_error=False)
    async def run_turn(self, text: str) -> None:
        """Run one user turn in the background; events go to the widgets and the store."""
        self.busy = True
        try:
            await self._history_ready.wait()  # a long session's older messages may still be loading
            await self._extensions_ready.wait()  # plugin tools and skills belong in the first request
            await self._model_ready.wait()  # the window and prices belong in the first request too
            if self.session_id is None:
                self.session_id = await asyncio.to_thread(self.store.create_session, self.cwd)
                self.query_one(StatusBar).session_id = self.session_id
            agent = self._ensure_agent()
            agent.cache_key = self.session_id
            try:
                async for event in agent.run(self.conversation, text):
                    await self.deliver(event)
            except asyncio.CancelledError:
                for event in agent.interrupt():
                    await self.deliver(event)
                raise
        except ScoutError as e:
            self.query_one(ChatView).add_notice(str(e), "error")
        finally:
            self.busy = False
            self.refresh_sessions()
            self.estimate_context()
            if self._queued:
                self.call_later(self.run_turn, self._queued.pop(0))

