"""One person's session, whatever shows it (the TUI, ``-p``, ``acp``): the store it writes to, its
id, the conversation as stored, the agent, the plugins' bus, the MCP servers and the tools they
offer, and THE turn loop (``Session.turn``), the one place in scout-tui that runs ``agent.run``.

Textual-free, and cheap to make: the engine is imported when the agent is built, so the TUI can
hold one from its first frame (``tests/test_startup.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncGenerator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scout_tui.config.layers import Config
    from scout_tui.config.models import ModelInfo
    from scout_tui.core.bus import Bus, Event, ModelSwitch
    from scout_tui.engine.agent import Agent
    from scout_tui.engine.summary import Compaction
    from scout_tui.extensions.agents import AgentDefinition
    from scout_tui.extensions.hook_config import HookSettings
    from scout_tui.extensions.hooks import Hooks
    from scout_tui.extensions.plugins import Plugins
    from scout_tui.session.memory import Memory
    from scout_tui.session.planning import FreshContext
    from scout_tui.tools.approvals import PlanReviewer
    from scout_tui.mcp.client import McpClient
    from scout_tui.mcp.config import ServerConfig
    from scout_tui.store.event_log import Store
    from scout_tui.checkpoints.restores import Restore
    from scout_tui.store.opening import OpenedSession


def setup_problem(config: Config, plugins: Plugins | None = None) -> str:
    """Why no turn can run with ``config`` ("" when one can): an unknown provider (naming where
    it was set and how to choose another), or no API key for a provider's hosted URL (naming the
    variable, and the ways to give one or, at start-up, to use a local server). A plugin's provider decides for
    itself whether it needs a key. The one check the TUI, ``-p`` and ``acp`` make."""
    from scout_tui.core.errors import ScoutError
    from scout_tui.session.runtime import check_provider, key_problem

    try:
        check_provider(config)
    except ScoutError as e:
        return f"{config.where('provider')}: {e}. Set `provider` in scout.toml or pass --provider."
    if plugins is not None and config.provider in plugins.providers:
        return ""
    problem = key_problem(config)
    if problem and "model switch" not in config.sources.get("provider", ""):  # else: start again, it says
        problem += "; or pass --api-key, or use a local server (--provider openai --base-url http://localhost:11434/v1)"
    return problem


class NotCompacted(Exception):
    """``/compact`` has nothing worth doing, or a plugin vetoed it: the message says which."""


class Session:
    """A session: ``id`` (None until its first turn stores it), ``messages`` (the conversation
    as the store holds it; None for an older message not read yet), ``config`` (the model in
    use), ``agent`` (built by ``ensure_agent``), ``bus`` (the plugins' handlers), ``mcp`` (the
    running MCP servers, or None).

    Args:
        store: the store, or a function giving it (made on first use).
        cwd: the working directory.
        config: the configuration in use.
        opened: the session read (``store.opening``); default a new one.
        bus: the plugins' bus (default: a new one, on first use).
        agent_options: ``runtime.build_agent``'s keyword arguments (skills, plugins,
            permissions, approve, info…), for the agent built lazily.
    """

    def __init__(self, store: Store | Callable[[], Store], cwd: Path, config: Config, *,
                 opened: OpenedSession | None = None, bus: Bus | None = None, mcp: McpClient | None = None,
                 **agent_options: Any) -> None:
        self._store = store
        self.cwd = cwd
        self.config = config
        self.id: str | None = None
        self.opened: OpenedSession | None = None
        """As read: ``info.fork_at`` of a fork, ``since`` of a long one (``open``)."""
        self.messages: list[Any] = []
        self.compactions: list[dict] = []
        """``Store.compactions``: the summaries in force, oldest first (the last one is sent)."""
        self.cost: float | None = None  # dollars, None: nothing priced
        self.subagent_cost = 0.0
        """Dollars this session's subagents spent (their child sessions', and theirs'), kept live."""
        self.depth = 1
        """1 for the person's own agent; a subagent's session is one deeper than its parent's."""
        self.agents: list[AgentDefinition] | None = None
        """The agents a ``task`` call may name (None: read with the agent, ``discover_agents``)."""
        self.agent_problems: list[str] = []
        """The agent files that could not be read, each naming its file and line."""
        self._bus = bus
        self.mcp = mcp
        self.agent: Agent | None = None
        if opened is not None:
            self.open(opened)
        self.agent_options = agent_options
        self.strategies: str | None = None
        """The prompt strategies chosen for this session ("a,b", ``/strategy``); None: the configured ones."""
        self._agent_lock = threading.Lock()
        self.closing: list[Event] = []
        """The events that closed the last interrupted turn (``interrupt_events``)."""
        self.fresh_context: FreshContext | None = None
        """A plan approved to run in a fresh context, set by ``exit_plan``; the turn goes on in a new branch."""
        self.mode_before_plan = "ask"
        """The permission mode ``plan`` was entered from: where "run the plan here" goes back to."""
        self.hook_settings: HookSettings | None = None
        """The hooks configured (read with the agent; a subagent's session has its parent's)."""
        self.hooks: Hooks | None = None
        """The hooks, ready to fire once the agent is built (``session_hooks``)."""
        self.hooks_started = False
        """The ``SessionStart`` hooks ran (before this session's first prompt)."""
        self.recording: Event | None = None
        """The event being given to the bus by ``record`` (a front end that also listens on the
        bus for plugins' events shows this one itself)."""
        self.memory: Memory | None = None
        """The memory files the agent's system prompt carries (read with the agent; ``refresh_memory``)."""

    # -- what it holds ---------------------------------------------------------------------

    @property
    def store(self) -> Store:
        if callable(self._store):
            self._store = self._store()
        return self._store

    @property
    def bus(self) -> Bus:
        if self._bus is None:
            from scout_tui.core.bus import Bus

            self._bus = Bus()
        return self._bus

    @bus.setter
    def bus(self, bus: Bus) -> None:
        self._bus = bus

    def open(self, opened: OpenedSession, messages: list[dict | None] | None = None) -> None:
        """Run ``opened`` (``store.opening``) from now: its id, its conversation (``messages``:
        all of it with None for older messages not read yet, filled in place later; default
        ``opened.messages``), its summaries and cost; its ``SessionStart`` hooks run before its
        first prompt. An agent built already goes on with its summary and cache key (the TUI
        opens another session in the same run)."""
        self.id, self.opened = opened.id, opened
        self.hooks_started = False  # its SessionStart hooks run before its first prompt
        self.messages = messages if messages is not None else list(opened.messages)
        self.compactions = list(opened.compactions)
        self.cost = opened.cost
        self.subagent_cost = opened.subagent_cost
        if self.agent is not None:
            self.agent.window.compaction = self.compaction()
            self.agent.cache_key = self.id

    def ensure_agent(self) -> Agent:
        """The agent, built with ``runtime.build_agent(config, cwd, **agent_options)`` on first
        use (imports the engine: from a thread in the TUI), with the summary in force, the
        session's cache key and prompt strategies, the memory files (``memory.load_memory``), the
        ``task`` tool (``subagents.subagent_tools``), the hooks (``session_hooks.attach_hooks``) and, in plan
        mode, ``exit_plan``. Called from an event loop and from threads (the
        TUI's context estimate): a lock keeps two callers from each building one, where the
        second would replace the agent a turn is running."""
        with self._agent_lock:
            if self.agent is None:
                from scout_tui.session.memory import load_memory
                from scout_tui.session.runtime import build_agent
                from scout_tui.session.subagents import subagent_tools

                options = {k: v for k, v in self.agent_options.items() if k != "review_plan"}
                if self.memory is None:  # else as read before (the welcome's): a turn reads it again if changed
                    self.memory = load_memory(self.cwd)
                agent = build_agent(self.config, self.cwd, compaction=self.compaction(), cache_key=self.id,
                                    mcp=self.mcp, extra_tools=subagent_tools(self), memory=self.memory, **options)
                agent.window.strategies = self.strategies
                from scout_tui.session.session_hooks import attach_hooks

                attach_hooks(self, agent)  # a bad hook entry stops here, before the agent is in use
                self.agent = agent
                self._offer_exit_plan()
            return self.agent

    @property
    def review_plan(self) -> PlanReviewer | None:
        """Shows the person a plan from ``exit_plan`` (the agent option ``review_plan``: the TUI's
        dialog, ACP's permission request; None: nobody can approve one, ``-p``)."""
        return self.agent_options.get("review_plan")

    def _offer_exit_plan(self) -> None:
        from scout_tui.session.planning import offer_exit_plan

        offer_exit_plan(self)

    def compaction(self) -> Compaction | None:
        """The summary in force: the last of ``compactions`` (None when there is none)."""
        from scout_tui.engine.summary import Compaction

        return Compaction.from_event(self.compactions[-1]) if self.compactions else None

    def agent_notes(self) -> list[str]:
        """What a run says once its agent is built: the permission rules' notes and the rules
        that name unknown tools (``Policy.notes``, ``Policy.unknown_tools``), the agent files'
        problems, the memory files' imports refused (``MemoryFile.problems``) and the hooks'
        (``HookSettings.said``)."""
        agent = self.ensure_agent()
        memory = [problem for file in (self.memory.files if self.memory else ()) for problem in file.problems]
        hooks = self.hook_settings.said() if self.hook_settings is not None and self.depth == 1 else []
        if agent.permissions is None:
            return [*self.agent_problems, *memory, *hooks]
        return [*agent.permissions.notes, *agent.permissions.unknown_tools(agent.tools.tools), *self.agent_problems,
                *memory, *hooks]

    # -- the permission mode -----------------------------------------------------------------

    def set_permission_mode(self, mode: str) -> str:
        """Use permission ``mode`` (``tools.permissions.MODES``) from the next tool call on (the
        running turn's included); entering ``plan`` remembers the mode to go back to when a plan
        is approved (``mode_before_plan``). Returns the mode.

        Raises:
            ScoutError: an unknown mode.
        """
        from scout_tui.core.errors import ScoutError
        from scout_tui.tools.permissions import MODES

        if mode not in MODES:
            raise ScoutError(f"unknown permission mode {mode!r} (known: {', '.join(MODES)})")
        policy = self.agent.permissions if self.agent is not None else self.agent_options.get("permissions")
        if policy is None:
            policy = self.ensure_agent().permissions
        assert policy is not None  # build_agent always makes one
        if mode == "plan" and policy.mode != "plan":
            self.mode_before_plan = policy.mode
        policy.mode = mode
        self._offer_exit_plan()
        return mode

    # -- the turn ----------------------------------------------------------------------------

    async def turn(self, content: list[dict] | None) -> AsyncGenerator[Event, None]:
        """Run one turn of ``content`` (None: send the conversation again, ``/retry``) and yield
        each of its events once it is recorded (``record``). The session is stored when its first
        turn starts. Before every model request the MCP servers' tools are offered as they are
        then (``offer_mcp_tools``). Cancelled (Esc, Ctrl+C, ``session/cancel``, a signal): the
        turn is closed validly (``Agent.interrupt``) and what it changed checkpointed, both
        recorded (a second cancel does not stop that) and kept for the front end to show
        (``interrupt_events``), then CancelledError goes on. A memory file written since the
        last turn (``/memory``, ``/init``, an editor) is in its system prompt (``refresh_memory``). A front end whose own code between
        two events may be cancelled iterates in ``contextlib.aclosing``: closing the iterator
        closes the turn the same way. A prompt goes through the hooks first
        (``session_hooks.submitted``): one a hook blocks ends the turn with the notice saying why."""
        from scout_tui.session.session_hooks import submitted

        agent = self.ensure_agent()
        agent.cache_key = await self.stored()
        await self.refresh_memory()
        self.closing = []
        if content is not None:
            content, notices = await submitted(self, content)
            for notice in notices:
                await self.record(notice)
                yield notice
            if content is None:
                return
        await self.offer_mcp_tools()
        self.fresh_context = None
        try:
            async with contextlib.aclosing(self._run(agent, content)) as stream_:
                async for event in stream_:
                    yield event
            if self.fresh_context is not None:  # a plan approved to run in a fresh context: a new branch
                from scout_tui.session.planning import open_fresh_branch

                branched, content = await open_fresh_branch(self, self.fresh_context)
                self.fresh_context = None
                await self.record(branched)
                yield branched
                agent.cache_key = self.id
                async with contextlib.aclosing(self._run(agent, content)) as stream_:
                    async for event in stream_:
                        yield event
        except (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit, BrokenPipeError):
            closing = asyncio.ensure_future(self._close_interrupted(agent))
            while not closing.done():  # a second cancel (the connection closing) waits for it too
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(closing)
            closing.result()
            raise
        await self.index_turn()

    async def index_turn(self) -> None:
        """Make the messages this turn stored searchable now (``Store.index_some``, in a thread),
        so a search right after a turn does not wait for them. A store that cannot be written
        now leaves them to a later catch-up (the next turn's, or a search's, which says how many
        it could not index)."""
        import sqlite3

        from scout_tui.core.errors import ScoutError

        with contextlib.suppress(sqlite3.Error, ScoutError):
            await asyncio.to_thread(self.store.index_some)

    async def refresh_memory(self) -> bool:
        """Read the memory files again when one was written, created or removed since the agent's
        system prompt took them (``Memory.changed``, in a thread), and send the new text from the
        next request on (``memory.with_memory``). Returns whether the system prompt changed."""
        from scout_tui.session.memory import load_memory, with_memory

        old, agent = self.memory, self.agent
        if old is None or agent is None or not await asyncio.to_thread(old.changed):
            return False
        new = await asyncio.to_thread(load_memory, old.cwd, old.home)
        agent.window.use_system(with_memory(agent.window.system, old, new))
        self.memory = new
        return True

    async def _run(self, agent: Agent, content: list[dict] | None) -> AsyncGenerator[Event, None]:
        """THE place that runs ``agent.run``: each event recorded, then yielded; the MCP tools
        offered again before each request; the ``PreCompact`` hooks before a summary is written;
        when the model ends the turn, the ``Stop`` hooks, whose block sends their feedback to the
        model and runs on (``session_hooks.stop_feedback``)."""
        from scout_tui.core.bus import BeforeCompact, MessageUser, TurnEnd
        from scout_tui.session.session_hooks import before_compact, late_notices, stop_feedback

        continues = 0
        while True:
            stop = ""
            async with contextlib.aclosing(agent.run(self.messages, content)) as stream_:
                async for event in stream_:
                    if isinstance(event, MessageUser):  # the next request follows it: the tools as they are now
                        await self.offer_mcp_tools()
                    await self.record(event)
                    yield event
                    if isinstance(event, BeforeCompact):
                        for notice in await before_compact(self, event):
                            await self.record(notice)
                            yield notice
                    elif isinstance(event, TurnEnd):
                        stop = event.stop_reason
            feedback, notices = await stop_feedback(self, stop, continues)
            for notice in [*notices, *late_notices(self)]:
                await self.record(notice)
                yield notice
            if feedback is None:
                return
            continues += 1
            content = [{"type": "text", "text": feedback}]

    async def _close_interrupted(self, agent: Agent) -> None:
        for event in agent.interrupt():
            await self.record(event)
            self.closing.append(event)
        for event in await agent.checkpoint_interrupted():  # what ran before the interrupt can be undone
            await self.record(event)
            self.closing.append(event)

    async def stored(self) -> str:
        """The session's id, storing it first if it is new (in a thread)."""
        if self.id is None:
            self.id = await asyncio.to_thread(self.store.create_session, self.cwd)
        return self.id

    async def record(self, event: Event) -> bool:
        """Give ``event`` to the plugins (the bus), the store (in a thread: the caller's loop never
        waits on disk) and the conversation (``added_message``, ``mark_refused``), in that order:
        a failed write leaves the conversation as the store has it. Returns whether it added a
        message to the conversation."""
        from scout_tui.core.bus import MessageAssistant, SubagentEvent, added_message, mark_refused

        self.recording = event
        try:
            self.bus.emit(event)
        finally:
            self.recording = None
        message = added_message(event)
        if event.stored and self.id:
            await asyncio.to_thread(self.store.append, self.id, event)
        if message is not None:
            self.messages.append(message)
        mark_refused(self.messages, event)
        if event.type == "session.compacted":  # /compact's, or the agent's own: in force from now on
            self.compactions = [*self.compactions, event.data]
        if (cost := getattr(event, "cost", None)) is not None and message is not None:
            self.cost = (self.cost or 0.0) + cost
        elif isinstance(event, SubagentEvent):
            inner = event.innermost
            if isinstance(inner, MessageAssistant) and inner.cost is not None:
                self.subagent_cost += inner.cost
        return message is not None

    def steer(self, content: list[dict]) -> None:
        """Send ``content`` with the running turn's next request (``Agent.steer``)."""
        self.ensure_agent().steer(content)

    def interrupt_events(self) -> list[Event]:
        """The events that closed the last interrupted turn, taken."""
        events, self.closing = self.closing, []
        return events

    # -- checkpoints -------------------------------------------------------------------------

    async def restore_files(self, plan: Restore) -> Event:
        """Write ``plan``'s files back as its checkpoint has them (``/undo``, ``/redo``, a rewind;
        ``checkpoints.restores``), in a thread, and record it; returns the ``checkpoint.restore``
        event recorded.

        Raises:
            ScoutError: checkpoints are off, or the files cannot be written back.
        """
        from scout_tui.core.bus import CheckpointRestore
        from scout_tui.core.errors import ScoutError
        from scout_tui.session.runtime import checkpoint_store

        store = checkpoint_store(self.config, self.cwd)
        if store is None:
            raise ScoutError('Checkpoints are off (checkpoints = "off").')
        await asyncio.to_thread(store.restore, plan.tree, plan.paths)
        event = CheckpointRestore(plan.turn, plan.tree, plan.paths, plan.redo)
        await self.record(event)
        return event

    # -- the model ---------------------------------------------------------------------------

    def switch_model(self, config: Config, info: ModelInfo, *, calibration: dict | None = None) -> ModelSwitch:
        """Send the next requests with ``config`` (``Config.for_provider``) and its model's
        metadata ``info`` (``runtime.model_metadata_asking_the_server``): the agent's backend
        switched (``runtime.switch_agent``, ``calibration`` as there), or without an agent yet,
        the one built next uses them. Returns the ``session.model`` event for the caller to
        ``record`` (so that the session reopens with it) or only show. Call it on the loop the
        turns run on.

        Raises:
            ScoutError: an unknown provider, or a bad ``[models."ID"]`` table.
        """
        from scout_tui.core.bus import ModelSwitch
        from scout_tui.session.runtime import check_provider, model_name, switch_agent

        if self.agent is not None:
            event = switch_agent(self.agent, config, info, calibration=calibration)
        else:
            check_provider(config)
            event = ModelSwitch(config.provider, model_name(config))
        self.agent_options["info"] = info  # the model in use's: an agent built later, and /cost's prices
        self.config = config
        return event

    # -- MCP servers -------------------------------------------------------------------------

    async def start_mcp(self, warn: Callable[[str], None], extra: Sequence[ServerConfig] = ()) -> None:
        """Start the configured MCP servers (and ``extra``, an ACP client's), waiting up to
        ``[mcp] startup_wait`` seconds (``mcp_startup.start_mcp``); what changes later (a server
        ready, one failed) is said through ``warn``."""
        from scout_tui.session.mcp_startup import say_changes, start_mcp

        self.mcp = await start_mcp(self.config, self.cwd, warn, extra)
        if self.mcp is not None:
            say_changes(self.mcp, warn)

    async def offer_mcp_tools(self) -> None:
        """Make the agent's MCP tools those of the servers as they are now (``mcp.tools.offer_tools``):
        a tool list a server changed (once it is read again, ``McpClient.tools_settled``) and a
        server that became ready join, a failed one's tools leave. Called before every request."""
        if self.mcp is None or self.agent is None:
            return
        from scout_tui.mcp.tools import offer_tools

        await self.mcp.tools_settled()
        offer_tools(self.agent.tools, self.mcp)

    # -- the end -----------------------------------------------------------------------------

    async def close(self) -> None:
        """Fire the ``SessionEnd`` hooks, then end the MCP servers (in a thread: up to
        ``client.CLOSE_TIMEOUT`` s) and the backend."""
        from scout_tui.session.session_hooks import session_ended

        await session_ended(self)
        if self.mcp is not None:
            await asyncio.to_thread(self.mcp.close)
        await self.close_backend()

    async def close_backend(self) -> None:
        """Close the agent's connections to the model (a subagent's, whose MCP servers are its parent's)."""
        if self.agent is not None:
            from scout_tui.backends import offloop

            await offloop.aclose(self.agent.backend)
