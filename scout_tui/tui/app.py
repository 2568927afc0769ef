"""The Textual app: it starts on the main screen (``main_screen.py``), holds the person's
``session.Session`` and the features that make the TUI (each a module of this package, given the
app: ``turns``, ``queue``, ``sessions``, ``side_panes``, ``mcp_servers``…), routes the Textual
messages and actions it receives to them, and runs start-up: the first frame first, then
everything that frame does not show (``start_background``).

A turn runs in a worker (``Turns.run_turn``) as ``async for event in session.turn(content)``,
each event recorded by the session (the store written off the event loop), then shown
(``Delivery.shown`` → ``show.show`` → the widgets).
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import threading
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from textual import events, on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.command import CommandPalette
from textual.screen import ModalScreen, Screen
from textual.widgets import TextArea

from scout_tui import stop_signals
from scout_tui.config import keys
from scout_tui.core import urgency
from scout_tui.tui.completion import Completion
from scout_tui.tui.delivery import AgentEvent, Delivery
from scout_tui.tui.file_changes import FileChanges
from scout_tui.tui.long_session import ContextEstimated, LongSession
from scout_tui.tui.mcp_servers import McpChanged, McpServers
from scout_tui.tui.models import Models
from scout_tui.tui.notify import Notifier
from scout_tui.tui.prompt_queue import PromptQueue
from scout_tui.tui.search import search_command
from scout_tui.tui.sessions import (CheckpointsLoaded, HistoryLoaded, Sessions, SessionOpened, SessionsListed,
                                    ToolDetailsLoaded)
from scout_tui.tui.side_panes import SidePanes
from scout_tui.tui.slash_commands import SlashCommands
from scout_tui.tui.themes import Themes
from scout_tui.tui.turn_keys import TurnKeys
from scout_tui.tui.turns import Turns
from scout_tui.tui.extensions import Extensions, ExtensionsLoaded
from scout_tui.tui.permission_modes import PermissionModes
from scout_tui.session.commands import Commands
from scout_tui.session.session import Session
from scout_tui.session.completion import Choice
from scout_tui.tui.input_first import FlushNotice, TypedKeys, noting_input, typed
from scout_tui.tui.main_screen import MainScreen
from scout_tui.config.models import check_models_tables
from scout_tui.core.redaction import redact
from scout_tui.theming.colours import derive_variables
from scout_tui.widgets import ChatView, Composer, StatusBar
from scout_tui.widgets.footer import KeysFooter
from scout_tui.widgets.markdown_render import code_theme_of, warm_up

if TYPE_CHECKING:
    from textual.driver import Driver

    from scout_tui.core.bus import Bus, Event
    from scout_tui.config.layers import Config
    from scout_tui.extensions.md_commands import MarkdownCommand
    from scout_tui.extensions.plugins import Plugins
    from scout_tui.extensions.skills import Skill
    from scout_tui.theming.themes import ThemeSource
    from scout_tui.store.event_log import Store
    from scout_tui.tools.approvals import Approval, PermissionRequest, PlanDecision, PlanReview
    from scout_tui.widgets import SessionTree, ToolActivity
    from scout_tui.widgets.assistant_message import AssistantMessage
    from scout_tui.widgets.compaction import CompactionMarker

# Start-up paints the first frame before it imports what that frame does not show: the agent,
# backends, plugins, skills and the approval screen are imported where they are first used, the
# store, the bus and the side panes are made after the first paint (tests/test_startup.py keeps
# them out of ``import scout_tui.tui.app`` and of the first frame).


SESSIONS_POLL = 3.0
"""Seconds between re-reads of the session list, to show other processes' sessions."""


class ScoutApp(App):
    """scout-tui's full-screen app.

    Args:
        config: the layered configuration.
        cwd: the working directory (tools act here; sessions are grouped by it).
        resume: a session id (or unique prefix) to open.
        continue_: open the latest session of ``cwd``.
        store: the session store (default: the user's store under the data dir).

    Raises:
        ScoutError: a bad ``[permissions]`` rule or ``[sandbox]`` value in a config file (naming
            the file and line).
    """

    TITLE = "scout"
    CSS_PATH = MainScreen.CSS_PATH  # the main screen's (see there)
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True),
        Binding("escape", "interrupt", "Interrupt", id="agent.interrupt"),
        # Ctrl+C before the focused widget's copy (that is one of its cases) and Textual's "quit with Ctrl+Q" note
        Binding("ctrl+c", "ctrl_c", "Interrupt, clear or quit", show=False, id="app.ctrl_c", priority=True),
        Binding("alt+r", "retry", "Retry", show=False, id="agent.retry"),
        Binding("ctrl+n", "new_session", "New session", id="session.new"),
        Binding("ctrl+o", "show_prompt", "Model's view", id="prompt.show"),
        Binding("ctrl+t", "toggle_tree", "Sessions", id="session.tree"),
        Binding("shift+tab", "cycle_mode", "Mode", id="permissions.mode", priority=True),
    ]

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
        self.typed_keys = TypedKeys()  # before Textual's driver starts: it notes keys there
        self.cwd = (cwd or Path.cwd()).resolve()
        self._stop_handled: tuple[signal.Signals, ...] = ()  # the stop signals on_mount handles
        # The person's session: its config, id, conversation, agent and MCP servers (the app's
        # ``config``, ``session_id``, ``conversation``, ``agent``, ``mcp`` are its own); the
        # store is made on first use.
        self.session = Session(lambda: self.store, self.cwd, config)
        self.start_config = config
        self.server_models: dict[str, list[str] | str] = {}
        """Per provider profile, the models its server listed for ``/model`` (or why it could not), asked once."""
        self.opened_with_session = bool(resume or continue_)
        self._resume = resume
        self._continue = continue_
        self._store = store
        self._store_lock = threading.Lock()
        from scout_tui.tools.permission_config import policy_from_config
        from scout_tui.tools.sandbox_config import sandbox_from_config

        # Rules allowed for the session at the approval prompt stay until the app closes.
        self.permissions = policy_from_config(config, self.cwd)
        # The mode changes through the session before its agent is built (``Session.set_permission_mode``).
        self.session.agent_options = dict(permissions=self.permissions)
        self.sandbox = sandbox_from_config(config, self.cwd)  # a bad [sandbox] stops start-up too
        # Every known key, kept off the screen; the key variables join once load_model_info has
        # taken them out of the environment (reading their names costs more than a first frame).
        self.secrets: tuple[str, ...] = keys.secrets([config.api_key], {})
        check_models_tables(config)  # a typo in [models."ID"] stops start-up with its file and line
        self.history_ready = asyncio.Event()
        self.skills: list[Skill] = []
        self.plugins: Plugins | None = None  # loaded after the first paint (``load_extensions``)
        self.extensions_ready = asyncio.Event()  # skills and plugins are loaded
        self.model_ready = asyncio.Event()  # the model's window and prices are read
        # The features (each a module of tui/): they talk to the session and the widgets, and
        # the app routes its messages and actions to them (see "routes" below).
        self.delivery = Delivery(self)
        self.turn_keys = TurnKeys(self)
        self.queue = PromptQueue(self)
        self.models = Models(self)
        self.file_changes = FileChanges(self)
        self.sessions = Sessions(self)
        self.side_panes = SidePanes(self)
        self.long_session = LongSession(self)
        self.mcp_servers = McpServers(self)
        self.slash = SlashCommands(self)
        self.turns = Turns(self)
        self.extensions = Extensions(self)
        self.permission_modes = PermissionModes(self)
        self.notifier = Notifier(self)  # a turn ended or an approval waits while the terminal is in the background
        self.themes = Themes(self, config, self.cwd)
        self.themes.register()  # the theme files and the theme, before any CSS is parsed: see there
        self.commands = Commands(self.slash.builtin_commands())  # markdown and plugins' commands join once loaded
        self.markdown_commands: dict[str, MarkdownCommand] = {}
        """The markdown commands registered, by name (``SlashCommands.add_markdown_commands``)."""
        self.completion = Completion(self, self.commands, self.cwd)
        self.background_started = False
        # The side panes, mounted once the first frame is painted (``SidePanes.mount_side_panes``).
        self.tool_pane: ToolActivity | None = None
        self.tree_pane: SessionTree | None = None
        self.side_panes_ready = asyncio.Event()

    @property
    def store(self) -> Store:
        """The session store: the one given, else the user's (``Store()``), made on first use
        (from the event loop or a thread): a new session's first frame needs neither it nor
        sqlite."""
        with self._store_lock:
            if self._store is None:
                from scout_tui.store.event_log import Store

                self._store = Store()
            return self._store

    @cached_property
    def bus(self) -> Bus:
        """The session's bus, the UI subscribed to what plugins emit on it (``AgentEvent``; the
        session's own events are shown as it records them), made on first use (on the event
        loop): the first frame needs neither it nor the events' classes."""
        bus = self.session.bus

        def emitted(event: Event) -> None:
            if event is not self.session.recording:
                self.post_message(AgentEvent(event))

        bus.on("*", emitted)
        return bus

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """Textual's ``App.run``, with the garbage collector stopped until the first frame is
        painted (``start_background`` starts it again). Start-up allocates the objects that live
        for the whole run (modules, classes, CSS rules, widgets); collections that walk them
        again and again cost ~40 ms of CPU before the first frame and find nothing to free."""
        gc.disable()
        try:
            return super().run(*args, **kwargs)
        finally:
            gc.enable()

    @cached_property
    def main_screen(self) -> MainScreen:
        """The screen the app starts on (``get_default_screen``): the chat, the side panes, the
        composer, the status bar and the keys."""
        return MainScreen(secrets=self.secrets, command_choices=self.command_choices,
                          permission_mode=self.permissions.mode)

    def get_default_screen(self) -> Screen:
        return self.main_screen

    # -- typed keys first (``TypedKeys``) ----------------------------------------------------------

    @property
    def last_input(self) -> float | None:
        """When the person last typed a character or pasted (``TypedKeys.last_input``)."""
        return self.typed_keys.last_input

    @property
    def echo_pending(self) -> bool:
        """A typed key is not on screen yet (``TypedKeys.echo_pending``)."""
        return self.typed_keys.echo_pending

    @property
    def frame_out(self) -> FlushNotice | None:
        """What the driver's writer thread has written (``TypedKeys.frame_out``, set by the driver)."""
        return self.typed_keys.frame_out

    @frame_out.setter
    def frame_out(self, notice: FlushNotice | None) -> None:
        self.typed_keys.frame_out = notice

    def input_arrived(self) -> None:
        """A key was typed: called on the driver's input thread (``TypedKeys.input_arrived``)."""
        self.typed_keys.input_arrived()

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver for this platform, noting typed keys as its input thread reads them."""
        return noting_input(super().get_driver_class())

    async def on_event(self, event: events.Event) -> None:
        if not typed(event):
            await super().on_event(event)
            return
        keys = self.typed_keys
        keys.input_arrived()
        arrived = keys.last_input
        await super().on_event(event)
        # Through the queue of the widget the key went to, behind the key: the app's own queue
        # could run it (on the screen's next idle) before that widget had taken the key.
        (self.focused or self.screen).call_after_refresh(keys.echoed, arrived)

    # -- themes (``Themes``) --------------------------------------------------------------------

    @property
    def theme_sources(self) -> dict[str, ThemeSource]:
        """Theme name -> the file it came from (``Themes.sources``)."""
        return self.themes.sources

    def get_theme_variable_defaults(self) -> dict[str, str]:
        # scout-tui's variables for a theme that leaves some out (Textual's own leave out all),
        # derived from its colours: a light theme gets light message backgrounds.
        return derive_variables(self.current_theme)

    def watch_theme(self, name: str) -> None:
        self.themes.watch(name)

    def choose_theme(self, name: str) -> None:
        """Use theme ``name`` and save the choice for the next runs (``Themes.choose``)."""
        self.themes.choose(name)

    def search_themes(self) -> None:
        """The theme picker with its live preview (``Themes.search``)."""
        self.themes.search()

    def on_command_palette_option_highlighted(self, message: CommandPalette.OptionHighlighted) -> None:
        self.themes.option_highlighted(message)

    def on_command_palette_closed(self, message: CommandPalette.Closed) -> None:
        self.themes.palette_closed()

    def notify(self, message: str, **kwargs) -> None:
        """Textual's ``App.notify``, with every known key redacted from ``message``."""
        super().notify(redact(message, self.secrets), **kwargs)

    def keys_withheld(self, secrets: tuple[str, ...]) -> None:
        """The key variables are out of the environment: keep their values off the screen too
        (and the MCP servers' header values and credential-like env values, ``McpServers.mcp_secrets``)."""
        self.secrets = self.chat.secrets = tuple(sorted({*secrets, *self.mcp_servers.mcp_secrets}, key=len, reverse=True))

    # -- layout -----------------------------------------------------------------------------

    @property
    def chat(self) -> ChatView:
        """The main screen's chat."""
        return self.main_screen.chat

    @property
    def status(self) -> StatusBar:
        """The main screen's status bar."""
        return self.main_screen.status

    @property
    def footer(self) -> KeysFooter:
        """The main screen's keys."""
        return self.main_screen.footer

    @property
    def busy(self) -> bool:
        """A turn runs (``MainScreen.busy``, which the status bar and composer show)."""
        return self.main_screen.busy

    @busy.setter
    def busy(self, busy: bool) -> None:
        if busy != self.main_screen.busy:
            self.main_screen.busy = busy
            self.turn_keys.take_back_quit()

    def on_composer_completing(self, message: Composer.Completing) -> None:
        composer = message.control if isinstance(message.control, Composer) else self.main_screen.composer
        self.completion.completing(composer, message.token)

    def command_choices(self, query: str) -> list[Choice]:
        """The slash commands matching ``query``, best first (``Completion.command_choices``)."""
        return self.completion.command_choices(query)

    async def on_mount(self) -> None:
        # Closing the terminal (SIGHUP) or `kill` (SIGTERM) quits as Ctrl+Q does: the turn's
        # worker is cancelled, which kills the running tool's process group and closes the turn.
        loop = asyncio.get_running_loop()

        def stop(signum: int, frame: object) -> None:
            self._stop_signal(signum, loop)

        self._stop_handled = stop_signals()
        for signum in self._stop_handled:
            signal.signal(signum, stop)
        self.themes.report()
        for note in self.session.config.notes:
            self.notify(note, title="Configuration", severity="warning", timeout=15)
        for note in self.permissions.notes:
            self.notify(note, title="Permissions", severity="warning", timeout=15)
        for note in self.sandbox.notes:
            self.notify(note, title="Sandbox", severity="warning", timeout=15)
        # The main screen composes after the app's mount. Until it has, the app's queue waits
        # here: keys typed while the app started (already read by the driver) go to the composer.
        await self.main_screen.mounted.wait()
        self.fill_main_screen()

    def fill_main_screen(self) -> None:
        """The main screen is composed and mounted: show the provider and model, and the session."""
        status = self.status
        status.provider = self.session.config.provider
        status.model = self.session.config.model or ""  # the provider's default model: once the backends are imported
        self.main_screen.composer.prompt_source = self.sessions.stored_prompts  # Ctrl+R searches them
        # The first frame shows the panes and, with -c or --resume, the session's newest
        # messages; everything else starts once that is on screen (``start_background``).
        self.sessions.open_session(self._resume, latest=self._continue)

    def start_background(self) -> None:
        """Start-up's work that the first frame does not show, once that frame is painted (and,
        when a session opens with the app, its newest messages): the sandbox probe, skills and
        plugins, the model's window and prices, and the session list's polling. Runs once."""
        if self.background_started:
            return
        self.background_started = True
        # Objects alive after start-up live for the whole run: keep the collector off them, so
        # full collections during a stream stay short (see DESIGN.md, performance facts); and
        # collect again, if ``run`` stopped it for start-up.
        gc.freeze()
        gc.enable()
        # Another scout-tui (or `-p`) may write to the same store: list the sessions again now
        # and then, off the event loop (a cheap indexed query).
        self.set_interval(SESSIONS_POLL, self.sessions._poll_sessions)
        self.footer.show_keys()
        self.side_panes.mount_side_panes()
        self.show_sandbox()
        self.extensions.load()
        self.mcp_servers.start_mcp()  # MCP servers, on a thread of their own
        self.long_session.load_model_info()  # the models.dev data costs ~80 ms of CPU: in a thread
        self.warm_markdown(code_theme_of(self))
        self.turns.warn_setup()

    @work(thread=True, exclusive=True, group="warm-up")
    def warm_markdown(self, code_theme: str) -> None:
        """Markdown rendering's imports and set-up, in a thread (``markdown_render.warm_up``):
        not on the event loop when the first answer streams. Its imports wait for typed keys."""
        with urgency.yielding():
            warm_up(code_theme)

    def on_unmount(self) -> None:
        for signum in getattr(self, "_stop_handled", ()):  # none when the app never mounted
            signal.signal(signum, signal.SIG_DFL)
        self.mcp_servers.stop_mcp()

    def _stop_signal(self, signum: int, loop: asyncio.AbstractEventLoop) -> None:
        """SIGHUP or SIGTERM, in the main thread, even while the event loop is blocked: quit as
        Ctrl+Q does, exit status 128 + ``signum``.

        After SIGHUP the terminal is gone: a write to it fails with EIO, which ends Textual's
        writer thread, after which the next write blocks for ever on its full queue (seen in
        tmux: the app lived on, orphaned). So the standard streams go to /dev/null first, and if
        the app has still not ended ``stop_guard.STOP_GRACE`` seconds later, the process exits there and
        then; the store has every event written so far, and an open turn is repaired on load."""
        if signum == signal.SIGHUP:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.close(null)
        from scout_tui.core.stop_guard import start_stop_guard

        start_stop_guard(128 + signum)
        loop.call_soon_threadsafe(self.exit, None, 128 + signum)

    @work(exclusive=True, group="sandbox")
    async def show_sandbox(self) -> None:
        """Tell the status bar whether commands run sandboxed. The first ``in_force`` runs bwrap
        once (a subprocess): in a thread, off the event loop."""
        from scout_tui.tools.sandbox import in_force

        self.status.sandbox = await asyncio.to_thread(in_force, self.sandbox)

    def on_extensions_loaded(self, message: ExtensionsLoaded) -> None:
        self.extensions.loaded(message)

    # -- routes: the messages and actions the features handle ------------------------------------

    def on_agent_event(self, message: AgentEvent) -> None:
        self.delivery.plugin_event(message)

    def on_assistant_message_drawn(self, message: AssistantMessage.Drawn) -> None:
        self.delivery.answer_drawn(message)

    def action_ctrl_c(self) -> None:
        """Ctrl+C (``TurnKeys.ctrl_c``)."""
        self.turn_keys.ctrl_c()

    def action_retry(self) -> None:
        """Alt+R or ``/retry`` (``TurnKeys.retry``)."""
        self.turn_keys.retry()

    def on_text_area_changed(self, message: TextArea.Changed) -> None:
        self.turn_keys.text_changed(message)

    def on_composer_take_back_requested(self, message: Composer.TakeBackRequested) -> None:
        self.queue.take_back(message)

    def on_context_estimated(self, message: ContextEstimated) -> None:
        self.long_session.context_estimated(message)

    def action_show_prompt(self) -> None:
        """Ctrl+O (``LongSession.show_prompt``)."""
        self.long_session.show_prompt()

    def on_compaction_marker_undo_requested(self, message: CompactionMarker.UndoRequested) -> None:
        self.long_session.marker_undo(message)

    def on_session_tree_undo_compaction_requested(self, message: SessionTree.UndoCompactionRequested) -> None:
        self.long_session.tree_undo_compaction(message)

    def on_mcp_changed(self, message: McpChanged) -> None:
        self.mcp_servers.server_changed(message)

    def on_chat_view_rewind_requested(self, message: ChatView.RewindRequested) -> None:
        self.file_changes.rewind_requested(message)

    def on_chat_view_fork_requested(self, message: ChatView.ForkRequested) -> None:
        self.sessions.fork_requested(message)

    def on_session_opened(self, message: SessionOpened) -> None:
        self.sessions.opened(message)

    def on_history_loaded(self, message: HistoryLoaded) -> None:
        self.sessions.history_loaded(message)

    def on_checkpoints_loaded(self, message: CheckpointsLoaded) -> None:
        self.side_panes.checkpoints_loaded(message)

    def on_tool_details_loaded(self, message: ToolDetailsLoaded) -> None:
        self.sessions.tool_details_loaded(message)

    def on_sessions_listed(self, message: SessionsListed) -> None:
        self.sessions.sessions_listed(message)

    def on_session_tree_diff_requested(self, message: SessionTree.DiffRequested) -> None:
        self.side_panes.tree_diff_requested(message)

    def on_tool_activity_diff_requested(self, message: ToolActivity.DiffRequested) -> None:
        self.side_panes.call_diff_requested(message)

    def on_session_tree_opened(self, message: SessionTree.Opened) -> None:
        self.sessions.tree_opened(message)

    def on_session_tree_search_requested(self) -> None:
        search_command(self, "")

    def on_session_tree_new_requested(self) -> None:
        self.sessions.tree_new()

    async def on_session_tree_rename_requested(self, message: SessionTree.RenameRequested) -> None:
        await self.sessions.tree_rename(message)

    async def on_session_tree_delete_requested(self, message: SessionTree.DeleteRequested) -> None:
        await self.sessions.tree_delete(message)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self.side_panes.focus_moved()

    def action_toggle_tree(self) -> None:
        """Ctrl+T (``Sessions.toggle_tree``)."""
        self.side_panes.toggle_tree()

    def action_new_session(self) -> None:
        """Ctrl+N (``Sessions.new_session``)."""
        self.sessions.new_session()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield from self.slash.system_commands()

    @on(Composer.Submitted)
    def _submitted(self, message: Composer.Submitted) -> None:
        self.turns.submitted(message)

    def action_interrupt(self) -> None:
        """Esc (``Turns.interrupt``)."""
        self.turns.interrupt()

    # -- permissions ----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Shift+Tab is the mode key on the main screen only; a dialog keeps it for its fields.
        if action == "cycle_mode":
            return not isinstance(self.screen, ModalScreen)
        if action == "ctrl_c":
            return self.turn_keys.ctrl_c_applies()
        return True

    def action_cycle_mode(self) -> None:
        """Shift+Tab (``Permissions.cycle_mode``)."""
        self.permission_modes.cycle_mode()

    async def approve(self, request: PermissionRequest) -> Approval:
        """Ask the person about one tool call (``Permissions.approve``)."""
        return await self.permission_modes.approve(request)

    async def review_plan(self, review: PlanReview) -> PlanDecision:
        """Show the person a proposed plan and wait for their answer (``PermissionModes.review_plan``)."""
        return await self.permission_modes.review_plan(review)

    def on_tool_activity_kill_requested(self, message: ToolActivity.KillRequested) -> None:
        if self.session.agent is None or not self.session.agent.kill(message.tool_use_id):
            self.notify("That call is not running.", severity="warning", timeout=3)

    def action_scroll_chat(self, where: str) -> None:
        """PageUp, PageDown, Ctrl+Home, Ctrl+End in the composer: the chat by a page up or down
        (``page_up``, ``page_down``), to its top (``home``: older batches mount on the way) or
        to its newest message (``end``: it follows new output again)."""
        chat = self.chat
        scroll = {"page_up": chat.scroll_page_up, "page_down": chat.scroll_page_down, "home": chat.scroll_home,
                  "end": chat.scroll_end}[where]
        scroll(animate=False)
