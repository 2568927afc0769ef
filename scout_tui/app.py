"""The Textual app: chat, tool activity and session tree panes, composer, status bar.

The model call and the tools run in a Textual worker (``run_turn``); the agent's events come
back to the widgets as ``AgentEvent`` messages and are stored off the event loop (``app_events.py``).
"""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer

from scout_tui import sessions
from scout_tui.agent import Agent
from scout_tui.app_events import AgentEvent, AgentEventsMixin
from scout_tui.app_long import LongSessionMixin, compaction_of
from scout_tui.backends.base import Request
from scout_tui.bus import Bus
from scout_tui.cache_report import PromptRecord, explain
from scout_tui.config import Config
from scout_tui.errors import ScoutError
from scout_tui.compaction import strategy_names
from scout_tui.models import check_models_tables
from scout_tui.plugins import Plugins, load_plugins
from scout_tui.runtime import SETUP_HELP, build_agent, check_provider, model_name, needs_key
from scout_tui.skills import Skill, describe_skills, discover_skills
from scout_tui.store import Store
from scout_tui.app_themes import ThemesMixin
from scout_tui.themes import ThemeChoice, ThemeSource, describe_source
from scout_tui.tools.permissions import BUILTIN_TOOL_NAMES, MODES, Approval, PermissionRequest, policy_from_config
from scout_tui.widgets import ChatView, Composer, PromptView, SessionTree, StatusBar, ToolActivity
from scout_tui.widgets.approval import ApprovalScreen

HELP = """\
**Keys**: Enter send · Shift+Enter / Ctrl+J newline · Up recall · Esc interrupt · Ctrl+N new session ·
Ctrl+T sessions pane and back · Ctrl+O what the model sees · Shift+Tab permission mode (ask → auto-edit →
yolo) · Ctrl+P command palette · Ctrl+Q quit

**Approval prompt**: `y` allow once · `a` allow the shown rule for the session · `n` deny (type a reason for
the model, Enter) · Esc deny and stop the turn

**In the tool pane** (Tab to it): Enter shows a call's output and diff · `x` stops a running call · `o` opens
the saved full output of a cut result

**In the chat** (Tab to it): Up/Down or j/k select a message · `f` forks there (on your prompt: a
new branch before it, with the prompt ready to edit; on an answer: a branch after it)

**In the sessions pane**: Enter open · `n` new · `r` rename · `d` delete · type (or `/`) to filter

**Commands**: `/new` · `/fork [N]` branch sharing the first N messages · `/tree` · `/rename TITLE` ·
`/resume [ID]` · `/compact [FOCUS]` summarise older messages (a preview first; `u` on the marker undoes it) ·
`/cost` tokens and dollars by model and branch · `/strategy NAME[,NAME]` prompt strategy for this session ·
`/theme [NAME]` · `/skills` · `/plugins` · `/help` · `/quit`
"""


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


class ContextEstimated(Message):
    """The estimated size of the next request, in tokens."""

    def __init__(self, tokens: int) -> None:
        super().__init__()
        self.tokens = tokens


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


class ScoutApp(AgentEventsMixin, LongSessionMixin, ThemesMixin, App):
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
        text = message.text.strip()
        if text.startswith("/") and self._command(text):
            return
        problem = self._setup_problem()
        if problem:
            chat = self.query_one(ChatView)
            chat.add_user(message.text)
            chat.add_notice(f"Not sent: {problem}", "error")
            return
        if self.busy:
            self._queued.append(message.text)
            self.notify("Queued: it will be sent when the current turn ends (Esc interrupts).")
            return
        self.run_turn(message.text)

    def _setup_problem(self) -> str:
        """Why no turn can run with this configuration ("" when one can)."""
        try:
            check_provider(self.config)
        except ScoutError as e:
            return f"{e}. Set `provider` in scout.toml or pass --provider."
        if needs_key(self.config) and self.config.provider not in self.plugins.providers:
            return "no API key is configured; see how to set one up above."
        return ""

    def _command(self, text: str) -> bool:
        """Run a slash command; False when ``text`` is not one (it is then sent as a prompt)."""
        name = text.split()[0]
        if name == "/new":
            self.action_new_session()
        elif name in ("/quit", "/exit"):
            self.exit()
        elif name == "/fork":
            arg = text.split(maxsplit=1)[1].strip() if len(text.split()) > 1 else ""
            if arg and not arg.isdigit():
                self.query_one(ChatView).add_notice("Use `/fork` (all messages) or `/fork N` (the first N).", "error")
            else:
                self.fork_session(int(arg) if arg else None)
        elif name == "/tree":
            self.query_one(SessionTree).focus()
        elif name == "/rename":
            title = text.split(maxsplit=1)[1].strip() if len(text.split()) > 1 else ""
            if title:
                self.rename_session(title)
            else:
                self.query_one(ChatView).add_notice("Use `/rename TITLE`.", "error")
        elif name == "/resume":
            ref = text.split(maxsplit=1)[1].strip() if len(text.split()) > 1 else ""
            if ref and not self._refuse_while_busy():
                self.open_session(ref)
            elif not ref:
                self.query_one(SessionTree).focus()
        elif name == "/strategy":
            self.set_strategy(text.split(maxsplit=1)[1] if len(text.split()) > 1 else "")
        elif name == "/theme":
            arg = text.split(maxsplit=1)[1].strip() if len(text.split()) > 1 else ""
            if arg:
                self.choose_theme(arg)
            else:
                self.search_themes()
        elif name == "/compact":
            if not self._refuse_while_busy():
                self.compact_session(text.split(maxsplit=1)[1].strip() if len(text.split()) > 1 else "")
        elif name == "/cost":
            self.show_cost()
        elif name == "/skills":
            self.query_one(ChatView).add_notice(describe_skills(self.skills))
        elif name == "/plugins":
            self.query_one(ChatView).add_notice(self.plugins.describe())
        elif name[1:] in self.plugins.commands:
            self.run_plugin_command(name[1:], text.split(maxsplit=1)[1] if len(text.split()) > 1 else "")
        elif name == "/help":
            self.query_one(ChatView).add_notice(HELP)
        else:
            return False
        return True

    # -- compaction: strategy, context use, what the model sees --------------------------------

    def _ensure_agent(self) -> Agent:
        if self.agent is None:
            self.agent = build_agent(self.config, self.cwd, skills=self.skills, plugins=self.plugins,
                                     permissions=self.permissions, approve=self.approve, info=self.model_info,
                                     compaction=compaction_of(self.compactions), cache_key=self.session_id)
            self.agent.narrow_window(self._learnt_window)
            self.agent.strategies = self.strategies
        return self.agent

    def set_strategy(self, names: str) -> None:
        """Use the prompt strategies ``names`` ("a,b") for this session; a bad name is reported."""
        wanted = [n.strip() for n in names.split(",") if n.strip()]
        known = strategy_names()
        unknown = [n for n in wanted if n not in known]
        if not wanted or unknown:
            what = f"Unknown strategy {unknown[0]!r}. " if unknown else ""
            self.query_one(ChatView).add_notice(f"{what}Use `/strategy NAME[,NAME]` with: {', '.join(known)}.", "error")
            return
        self.strategies = ",".join(wanted)
        if self.agent is not None:  # a new agent takes self.strategies when it is built
            self.agent.strategies = self.strategies
        self.notify(f"Prompt strategy for this session: {self.strategies}")
        self.estimate_context()

    @work(thread=True, exclusive=True, group="estimate")
    def estimate_context(self) -> None:
        """Estimate the next request's size off the event loop and show it in the status bar."""
        history = self.conversation
        if not self._history_ready.is_set() or (history and history[0] is None):
            return  # estimated again once the whole conversation is read
        if not self._model_ready.is_set():
            return  # estimated again once the model's window is known
        try:
            agent = self._ensure_agent()
            compacted = agent.preview(history)
        except (ScoutError, ValueError):
            return  # the chat already says what is wrong with the configuration
        self.post_message(ContextEstimated(agent.context_tokens(compacted)))

    def on_context_estimated(self, message: ContextEstimated) -> None:
        for status in self.query(StatusBar):  # none once the app is closing
            status.context_used = message.tokens

    def action_show_prompt(self) -> None:
        """Ctrl+O: the stored history beside what the next model call would send."""
        if isinstance(self.screen, PromptView):
            self.screen.dismiss(None)
            return
        self._open_prompt_view()

    @work(thread=True, exclusive=True, group="estimate")
    def _open_prompt_view(self) -> None:
        history = list(self.conversation)
        if not self._history_ready.is_set() or (history and history[0] is None):
            self.call_from_thread(self.notify, "Still reading this session's older messages; try again in a moment.")
            return
        try:
            agent = self._ensure_agent()
            compacted = agent.preview(history)
        except (ScoutError, ValueError) as e:
            self.call_from_thread(self.notify, str(e), severity="error")
            return
        budget = (f"; the token budget cut {compacted.budget_cut} results and dropped {compacted.budget_dropped} calls"
                  if compacted.budget_cut or compacted.budget_dropped else "")
        summary_note = (f" A summary stands for messages 0–{agent.compaction.at - 1}."
                        if agent.compaction is not None else "")
        summary = (
            f"Strategy {', '.join(compacted.strategies) or 'none'}: {compacted.truncated} tool calls truncated, "
            f"{compacted.dropped} dropped{budget}; about {compacted.tokens_before:,} tokens stored, "
            f"{compacted.tokens_after:,} sent (+{agent.overhead_tokens():,} for the system prompt and tools)."
            f"{summary_note} The store keeps everything. Esc closes.\n{self._cache_note(agent, compacted)}"
        )
        self.call_from_thread(self.push_screen, PromptView(history, compacted.messages, compacted.marks, summary))

    def _cache_note(self, agent: Agent, compacted) -> str:
        """Prompt cache: whether the next request can reuse the previous one, and if not, why."""
        if agent.last_prompt is None:
            return "Prompt cache: no request sent yet in this run."
        request = Request(model=agent.backend.model, messages=compacted.messages, system=agent.system,
                          tools=agent.tools.specs())
        why = explain(agent.last_prompt, PromptRecord.of(request, compacted, agent.compaction))
        share = self.query_one(StatusBar).cache_share
        last = f" (the last request read {share:.0%} of its prompt from the cache)" if share is not None else ""
        return f"Prompt cache: {why}{last}." if why else (
            f"Prompt cache: the next request begins with the whole previous one, so the cache can reuse it{last}.")

    def get_system_commands(self, screen: Screen):
        yield from super().get_system_commands(screen)
        yield SystemCommand("New session", "Start a new conversation in this directory", self.action_new_session)
        yield SystemCommand("Fork session", "A new branch sharing every message of this session so far",
                            lambda: self.fork_session(None))
        yield SystemCommand("Sessions", "Focus the session tree: open, rename, delete, filter (Ctrl+T)",
                            lambda: self.query_one(SessionTree).focus())
        yield SystemCommand("Resume a session", "Pick a session of this directory in the tree",
                            lambda: self.query_one(SessionTree).focus())
        yield SystemCommand("Rename session", "Give this session a new title", self._ask_rename)
        yield SystemCommand("Skills", "The skills found in ~/.agents/skills and ./.agents/skills",
                            lambda: self._command("/skills"))
        yield SystemCommand("Plugins", "The plugins loaded from ~/.agents/plugins and ./.agents/plugins",
                            lambda: self._command("/plugins"))
        for name, (_, owner) in self.plugins.commands.items():
            yield SystemCommand(f"/{name}", f"Plugin command ({owner})",
                                lambda name=name: self.run_plugin_command(name, ""))
        for mode in MODES:
            yield SystemCommand(f"Permission mode: {mode}", "What runs without asking (Shift+Tab cycles)",
                                lambda mode=mode: self.set_permission_mode(mode))
        yield SystemCommand("What the model sees", "The compacted prompt of the next call beside the stored history",
                            self.action_show_prompt)
        yield SystemCommand("Compact conversation", "Summarise the older messages (a preview first; undo from the marker)",
                            lambda: self._command("/compact"))
        yield SystemCommand("Cost", "Tokens and dollars by model, cache read and write, and branch (/cost)",
                            lambda: self._command("/cost"))
        for name in strategy_names():
            yield SystemCommand(f"Prompt strategy: {name}", "Use this prompt strategy for this session",
                                lambda name=name: self.set_strategy(name))
        for name in sorted(self.theme_sources):  # found by typing "theme" or a name; highlighting previews
            yield SystemCommand(f"Theme: {name}", describe_source(name, self.theme_sources),
                                ThemeChoice(name, self.choose_theme), discover=False)

    @work(thread=True, group="plugin-command")
    def run_plugin_command(self, name: str, args: str) -> None:
        """A plugin's slash command, in a thread (plugin code may be slow); its text goes to the chat."""
        try:
            text = self.plugins.run_command(name, args)
        except ScoutError as e:
            self.call_from_thread(self.query_one(ChatView).add_notice, str(e), "error")
            return
        if text:
            self.call_from_thread(self.query_one(ChatView).add_notice, text)

    def _ask_rename(self) -> None:
        from scout_tui.widgets.dialogs import PromptScreen

        def done(title: str | None) -> None:
            if title:
                self.rename_session(title)

        self.push_screen(PromptScreen("Rename this session", ""), done)

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

