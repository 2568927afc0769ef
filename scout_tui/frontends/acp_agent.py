"""``scout-tui acp``: scout-tui as an Agent Client Protocol agent on stdin/stdout, for editors (Zed,
JetBrains, Toad): the same agent, store and sessions as the TUI and ``-p``.

Methods (ACP protocol version 1, https://agentclientprotocol.com/protocol/overview, as the
``agent-client-protocol`` package implements it): ``initialize``, ``session/new``,
``session/load`` (the stored branch replayed as updates), ``session/list``, ``session/prompt``
(streamed ``session/update``s, ``session/request_permission`` for what would ask),
``session/cancel`` (as Esc), ``session/set_mode`` (the permission modes),
``session/set_config_option`` (the model), and the unstable ``session/fork``, ``session/resume``
and ``session/close``. Each opened session is told its slash commands (``acp_commands``: ``/compact``,
``/undo``, ``/redo``, ``/cost``, the plugins'), which a prompt of that text runs. A session starts
the MCP servers of scout.toml and ``.mcp.json`` and those the client passes (stdio and HTTP), as
``-p`` does. stdout carries only the protocol: anything else written there goes to stderr, as do
the logs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Awaitable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast

from acp import PROTOCOL_VERSION, RequestError, run_agent, stdio_streams
from acp.helpers import update_agent_message_text
from acp.schema import (AgentCapabilities, AgentPlanUpdate, AvailableCommandsUpdate, ClientCapabilities,
                        CloseSessionResponse, CurrentModeUpdate, ForkSessionResponse, Implementation, InitializeResponse, ListSessionsResponse,
                        LoadSessionResponse, McpCapabilities, NewSessionResponse, PromptCapabilities, PromptResponse,
                        ResumeSessionResponse, SessionCapabilities, SessionCloseCapabilities,
                        SessionForkCapabilities, SessionListCapabilities, SessionModeState,
                        SessionResumeCapabilities, SetSessionConfigOptionResponse, SetSessionModeResponse,
                        StopReason)

from scout_tui import stop_signals, __version__
from scout_tui.config import keys
from scout_tui.frontends.acp_commands import advertised, stopped
from scout_tui.frontends.acp_plan import plan_decision, plan_request, plan_update
from scout_tui.session.slash import command_prompt, session_commands
from scout_tui.frontends.acp_inputs import embedded_files, prompt_text, server_configs
from scout_tui.frontends.acp_updates import (LiveUpdates, Update, approval, info_update, listed, model_option, notice_update,
                                   permission_request, replay, session_modes, stop_reason)
from scout_tui.engine.agent import Agent
from scout_tui.core.bus import Error, TurnEnd
from scout_tui.config.layers import load_config, resumed_config
from scout_tui.core.errors import ScoutError
from scout_tui.session.commands import Commands, Parsed, literal
from scout_tui.session.mentions import prompt_content
from scout_tui.session.providers import configured_models
from scout_tui.session.runtime import model_metadata_asking_the_server, model_name
from scout_tui.session.session import Session
from scout_tui.session.starting import open_session
from scout_tui.store.opening import OpenedSession, read_session
from scout_tui.store.event_log import Store
from scout_tui.tools.approvals import Approval, PermissionRequest, PlanDecision, PlanReview
from scout_tui.core.redaction import redact
from scout_tui.tools.permissions import MODES

log = logging.getLogger("scout_tui.acp")

def cannot_ask(request: PermissionRequest, exc: RequestError) -> Approval:
    """The answer to a permission request the ACP client failed to ask (it does not implement
    ``session/request_permission``: -32601, or it answered another error): denied, saying so,
    so that the model does not read a failure of the tool itself."""
    why = "it does not support permission requests" if exc.code == -32601 else f"it answered: {exc}"
    log.warning("denied %s: the ACP client could not ask (%s)", request.tool, why)
    return Approval("deny", f"this call needs the user's approval (because {request.reason}), and the editor "
                    f"(ACP client) cannot ask for it: {why}. The call was denied. Tell the user what you wanted to "
                    f"do and that {request.how_to_allow()}", by="acp-client")


def _error(e: ScoutError | str, code: int = -32603) -> RequestError:
    """A JSON-RPC error carrying ``e``'s message (any known key redacted) to the client."""
    return RequestError(code, redact(str(e), tuple(keys.secrets())))


@dataclass
class _Session:
    """One open session (``session.Session``: the agent, the conversation, the turn loop), with
    what ACP adds: the updates of its events, the prompt running, the notes to tell the client."""

    session: Session
    live: LiveUpdates
    commands: Commands
    turn: asyncio.Task | None = None
    notes: list[str] = field(default_factory=list)  # what the client is told at its next prompt
    acp_id: str = ""
    """The id the client knows it by: the session's as opened (a plan run in a fresh context goes on
    in a new branch of the store under the same ACP session)."""

    @property
    def id(self) -> str:
        assert self.session.id is not None  # stored when opened
        return self.acp_id or self.session.id

    @property
    def cwd(self) -> Path:
        return self.session.cwd

    @property
    def agent(self) -> Agent:
        return self.session.ensure_agent()

    def options(self) -> list:
        """The session's config options (``acp_updates.model_option``): its model."""
        config = self.session.config
        return [model_option(configured_models(config), (config.provider, model_name(config)))]

    def modes(self) -> SessionModeState:
        return session_modes(self.agent.permissions.mode if self.agent.permissions is not None else "yolo")


class ScoutAcpAgent:
    """The ACP ``Agent`` side (``acp.interfaces.Agent``): sessions by id, each a scout-tui agent
    built as ``-p`` builds one (``frontend``, ``runtime.build_agent``) and stored in ``store``.

    ``flags`` are the command line's settings (``config.load_config``'s ``flags``), applied to
    every session's config.
    """

    def __init__(self, flags: dict[str, Any], store: Store | None = None) -> None:
        self.flags = flags
        self.store = store or Store()
        self.client: Any = None  # the AgentSideConnection: session_update, request_permission
        self.sessions: dict[str, _Session] = {}
        self._later: set[asyncio.Task] = set()  # updates sent once the request is answered

    def on_connect(self, conn: Any) -> None:
        self.client = conn

    # -- lifecycle ---------------------------------------------------------------------------

    async def initialize(self, protocol_version: int, client_capabilities: ClientCapabilities | None = None,
                         client_info: Implementation | None = None, **kwargs: Any) -> InitializeResponse:
        """Version 1 whatever the client asks (the only one there is; a client that cannot speak
        it disconnects, as the spec says), and what this agent offers."""
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=False, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(), fork=SessionForkCapabilities(),
                    resume=SessionResumeCapabilities(), close=SessionCloseCapabilities()),
            ),
            agent_info=Implementation(name="scout-tui", title="scout-tui", version=__version__),
        )

    async def new_session(self, cwd: str, additional_directories: list[str] | None = None,
                          mcp_servers: list | None = None, **kwargs: Any) -> NewSessionResponse:
        """A new scout-tui session in ``cwd`` (stored now, so the TUI's session tree lists it)."""
        session = await self._open(cwd, OpenedSession(), mcp_servers)
        self._after_answer(session.id, advertised(session.commands))
        return NewSessionResponse(session_id=session.id, modes=session.modes(), config_options=session.options())

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list | None = None,
                           additional_directories: list[str] | None = None, **kwargs: Any) -> LoadSessionResponse:
        """Open a stored session and replay its branch (its ancestors' shared messages too) as
        updates (``acp_updates.replay``) before answering, as the spec asks.

        Raises:
            RequestError: no such session, or it is running a prompt here.
        """
        session = await self._resume(cwd, session_id, mcp_servers)
        for update in replay(self.store.messages(session.id), self.store.tool_details(session.id), session.cwd):
            await self._send(session.id, update)
        self._after_answer(session.id, advertised(session.commands))
        return LoadSessionResponse(modes=session.modes(), config_options=session.options())

    async def resume_session(self, session_id: str, cwd: str, additional_directories: list[str] | None = None,
                             mcp_servers: list | None = None, **kwargs: Any) -> ResumeSessionResponse:
        """Open a stored session without replaying it (the client still shows it)."""
        session = await self._resume(cwd, session_id, mcp_servers)
        self._after_answer(session.id, advertised(session.commands))
        return ResumeSessionResponse(modes=session.modes(), config_options=session.options())

    async def fork_session(self, session_id: str, cwd: str, additional_directories: list[str] | None = None,
                           mcp_servers: list | None = None, **kwargs: Any) -> ForkSessionResponse:
        """A new branch sharing all of the session's messages (``Store.fork``), opened in ``cwd``."""
        try:
            info = self.store.fork(self.store.find(session_id).id, None, cwd=cwd)
        except ScoutError as e:
            raise _error(e, -32602) from None
        session = await self._open(cwd, read_session(self.store, info), mcp_servers)
        self._after_answer(session.id, advertised(session.commands))
        return ForkSessionResponse(session_id=session.id, modes=session.modes(), config_options=session.options())

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **kwargs: Any) -> ListSessionsResponse:
        """The sessions of ``cwd`` (None: of every folder), newest first, not deleted; one page.
        A subagent's session is left out: an editor's history is of the conversations its person had."""
        return ListSessionsResponse(sessions=[listed(s) for s in self.store.sessions(cwd) if s.kind != "subagent"])

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        """No authentication: ``initialize`` offers no method (the provider's key is scout-tui's own
        configuration), so there is nothing to answer."""
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """No extension methods: JSON-RPC's "method not found" (-32601)."""
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Extension notifications are ignored, as the protocol allows."""

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        """Stop the session's turn (closed validly, as by ``cancel``) and forget it here."""
        session = self.sessions.pop(session_id, None)
        if session is not None:
            await self._stop(session)
        return CloseSessionResponse()

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        """Use permission mode ``mode_id`` from the next tool call on (the running turn's too), as Shift+Tab."""
        session = self._session(session_id)
        if mode_id not in MODES or session.agent.permissions is None:
            raise _error(f"unknown mode {mode_id!r} (known: {', '.join(MODES)})", -32602)
        session.session.set_permission_mode(mode_id)
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool,
                                **kwargs: Any) -> SetSessionConfigOptionResponse:
        """``model`` = ``PROFILE/MODEL``: the session's next requests go to that model, as ``/model``
        does (``runtime.switch_agent``; the switch is stored, so the session reopens with it).

        Raises:
            RequestError: another option, a value not ``PROFILE/MODEL``, or an unknown provider.
        """
        session = self._session(session_id)
        provider, _, model = str(value).partition("/")
        if config_id != "model" or not provider or not model:
            raise _error(f"unknown option {config_id}={value!r} (known: model=PROFILE/MODEL)", -32602)
        try:
            config = session.session.config.for_provider(provider, model)
            event = session.session.switch_model(config, await model_metadata_asking_the_server(config))
        except ScoutError as e:
            raise _error(e, -32602) from None
        await session.session.record(event)
        return SetSessionConfigOptionResponse(config_options=session.options())

    # -- a turn ------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list, **kwargs: Any) -> PromptResponse:
        """Run one turn, streaming its updates, then a ``session_info_update`` with the session's
        title (its first prompt's line, as the TUI's tree shows it); answer the turn's ACP stop
        reason (``cancelled`` after a ``session/cancel``). A failed request (a refused key, a
        server error) is a JSON-RPC error with its message; the turn is stored either way.

        Raises:
            RequestError: the session is not open, a prompt already runs in it, the prompt has no
                text, or the request failed.
        """
        session = self._session(session_id)
        if session.turn is not None and not session.turn.done():
            raise _error("a prompt is already running in this session", -32600)
        text, notes = prompt_text(prompt, session.cwd)
        if not text.strip():
            raise _error(f"the prompt has no text to send ({'; '.join(notes) or 'it is empty'})", -32602)
        mode = session.modes().current_mode_id
        if (parsed := session.commands.parse(text)) is not None and (planned := await command_prompt(session.session, parsed)):
            text = planned  # /plan PROMPT: plan mode, then the prompt; /init, a markdown command: its prompt
            if (now := session.modes().current_mode_id) != mode:
                await self._send(session.id, CurrentModeUpdate(session_update="current_mode_update", current_mode_id=now))
        if (parsed := session.commands.parse(text)) is not None and parsed.command is not None:
            await self._tell(session)
            session.turn = asyncio.create_task(self._command(session, parsed))
        else:  # a prompt for the model, an unknown /word too; //text sends /text, as in the TUI
            content, more = prompt_content(literal(text) or text, session.cwd, session.agent.permissions,  # @path
                                           attached=embedded_files(prompt, session.cwd))  # mentions, as in the app
            for note in (*notes, *more):
                log.warning("%s", note)
            await self._tell(session)
            session.turn = asyncio.create_task(self._turn(session, content))
        reason, failure = await session.turn
        if (task := asyncio.current_task()) is not None and task.cancelling():
            raise asyncio.CancelledError  # the connection is closing (the turn is closed): no answer to send
        await self._tell(session)  # a server that became ready or failed meanwhile
        if (info := self.store.session(session.session.id or session.id)) is not None:  # the first prompt's line
            await self._send(session.id, info_update(info))
        if failure is not None:
            raise _error(failure)
        return PromptResponse(stop_reason=reason)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """Stop the session's running turn as Esc does: the partial answer is kept, calls that
        did not finish get an "interrupted" result, and its ``session/prompt`` answers
        ``cancelled``."""
        session = self.sessions.get(session_id)
        if session is not None and session.turn is not None:
            session.turn.cancel()

    async def _turn(self, session: _Session, content: list[dict]) -> tuple[StopReason, str | None]:
        reason: StopReason = "end_turn"
        failure: str | None = None
        try:
            async with contextlib.aclosing(session.session.turn(content)) as events:
                async for event in events:
                    await self._send_all(session.id, session.live.updates(event))
                    if isinstance(event, TurnEnd):
                        reason = stop_reason(event.stop_reason)
                    elif isinstance(event, Error):
                        failure = event.message
        except asyncio.CancelledError:  # the session closed the turn validly
            closing = session.session.interrupt_events()
            await self._send_all(session.id, [update for event in closing for update in session.live.updates(event)])
            return "cancelled", None
        return reason, failure

    async def _command(self, session: _Session, parsed: Parsed) -> tuple[StopReason, str | None]:
        """Run a slash command as the prompt's turn (``acp_commands``): what it did is the agent's
        message; ``cancelled`` after a ``session/cancel``; a ScoutError (a failed summary request,
        git, a plugin's error) is the prompt's failure."""
        assert parsed.command is not None
        mode = session.modes().current_mode_id
        try:  # acp_commands' handlers are async functions giving Markdown
            said = await cast(Awaitable[str], parsed.command.run(parsed.args))
            if session.modes().current_mode_id != mode:  # /plan: the client's menu follows
                await self._send(session.id, CurrentModeUpdate(session_update="current_mode_update",
                                                               current_mode_id=session.modes().current_mode_id))
        except asyncio.CancelledError:
            await self._send(session.id, update_agent_message_text(stopped(parsed.command.name)))
            return "cancelled", None
        except ScoutError as e:
            return "end_turn", str(e)
        if said:
            await self._send(session.id, update_agent_message_text(said))
        return "end_turn", None

    def _after_answer(self, session_id: str, update: AvailableCommandsUpdate) -> None:
        """Send ``update`` once the request being handled is answered: a client knows a new
        session only from the answer (Zed drops the updates of a session it does not know). The
        answer is queued for the wire as the handler returns, before this task first runs."""
        task = asyncio.create_task(self._send(session_id, update))
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    async def _tell(self, session: _Session) -> None:
        """Send the session's notes (``notice_update``), once each."""
        while session.notes:
            await self._send(session.id, notice_update(session.notes.pop(0)))

    async def _send_all(self, session_id: str, updates: list[Update]) -> None:
        for update in updates:
            await self._send(session_id, update)

    async def _send(self, session_id: str,
                    update: Update | AvailableCommandsUpdate | AgentPlanUpdate | CurrentModeUpdate) -> None:
        try:
            await self.client.session_update(session_id=session_id, update=update)
        except ConnectionError:
            pass  # the client went away: what happened is stored all the same

    async def _ask(self, session_id: str, cwd: Path, request: PermissionRequest) -> Approval:
        """A call the policy would ask about, asked through ``session/request_permission``
        (``acp_updates.permission_request``; its diff comes redacted, as the TUI's does)."""
        call, options = permission_request(request, cwd)
        try:
            answer = await self.client.request_permission(session_id=session_id, tool_call=call, options=options)
        except RequestError as exc:  # a client without session/request_permission (-32601), or its own error
            return cannot_ask(request, exc)
        return approval(getattr(answer.outcome, "option_id", None))

    async def _review_plan(self, session_id: str, review: PlanReview) -> PlanDecision:
        """A plan from ``exit_plan``: sent as the session's plan (``acp_plan.plan_update``), then
        asked about through ``session/request_permission``; a client that cannot ask leaves it
        unapproved (``stop``: the turn ends with the plan as its answer)."""
        await self._send(session_id, plan_update(review.plan))
        call, options = plan_request(review)
        try:
            answer = await self.client.request_permission(session_id=session_id, tool_call=call, options=options)
        except RequestError:
            return PlanDecision("stop")
        decision = plan_decision(getattr(answer.outcome, "option_id", None))
        if decision.action != "keep":  # the mode plan mode was entered from: the client's menu follows
            await self._send(session_id, CurrentModeUpdate(session_update="current_mode_update",
                                                           current_mode_id=review.mode))
        return decision

    # -- sessions ------------------------------------------------------------------------------

    def _session(self, session_id: str) -> _Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise _error(f"no open session {session_id}: session/new or session/load it first", -32602)
        return session

    async def _resume(self, cwd: str, session_id: str, mcp_servers: list | None) -> _Session:
        if (open_ := self.sessions.get(session_id)) is not None:
            if open_.turn is not None and not open_.turn.done():
                raise _error(f"session {session_id} is running a prompt", -32600)
            return open_
        try:
            opened = read_session(self.store, self.store.find(session_id))
        except ScoutError as e:
            raise _error(e, -32602) from None
        return await self._open(cwd, opened, mcp_servers)

    async def _open(self, cwd: str, opened: OpenedSession, servers: list | None) -> _Session:
        """Open ``opened`` (a new session: ``OpenedSession()``) in ``cwd`` as ``-p`` does
        (``session.open_session``), store a new session, and keep it open by its id."""
        where = Path(cwd)
        if not where.is_absolute() or not where.is_dir():
            raise _error(f"cwd {cwd!r} is not an absolute path to a folder", -32602)
        extra, notes = server_configs(list(servers or ()))
        for note in notes:
            log.warning("%s", note)
        told: list[str] = []

        def tell(text: str) -> None:  # logged, and told the client at its next prompt
            log.warning("%s", text)
            told.append(text)

        try:
            config = load_config(where, flags=self.flags)
            if opened.id is not None:  # it goes on with the model it last switched to
                config = resumed_config(config, self.store.model_switch(opened.id))
            # Only the MCP servers' news is told the client; the rest is logged.
            session = await open_session(config, where, store=self.store, warn=partial(log.warning, "%s"),
                                         opened=opened, extra_mcp=extra, mcp_warn=tell,
                                         on_notice=lambda e: log.warning("%s", e.data.get("text", "")))
        except ScoutError as e:
            raise _error(e) from None
        session_id = await session.stored()
        session.ensure_agent().approve = partial(self._ask, session_id, where)
        session.agent_options["review_plan"] = partial(self._review_plan, session_id)
        self.sessions[session_id] = _Session(session, LiveUpdates(where, opened.cost), session_commands(session, partial(log.warning, "%s")),
                                             notes=told, acp_id=session_id)
        return self.sessions[session_id]

    async def _stop(self, session: _Session) -> None:
        """Stop the session's turn (closed validly), its MCP servers and its backend."""
        if session.turn is not None and not session.turn.done():
            session.turn.cancel()
            await asyncio.gather(session.turn, return_exceptions=True)
        await session.session.close()

    async def aclose(self) -> None:
        """Stop every running turn (closed validly in the store), close the backends and the store."""
        for session in list(self.sessions.values()):
            await self._stop(session)
        self.sessions.clear()
        self.store.close()


async def _protocol_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """stdin and stdout as the protocol's streams; from here on whatever else writes to file
    descriptor 1 (a plugin's print, a library) lands on stderr, not in the JSON-RPC stream."""
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    saved, sys.stdout = sys.stdout, protocol_out
    try:
        return await stdio_streams(limit=50 * 1024 * 1024)
    finally:
        sys.stdout = saved


async def serve(flags: dict[str, Any]) -> int:
    """Answer ACP requests on stdin/stdout until the client closes stdin (or SIGTERM, SIGHUP);
    running turns are then closed validly. Returns the exit code, 0."""
    agent = ScoutAcpAgent(flags)
    reader, writer = await _protocol_streams()
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None  # serve runs in a task (asyncio.run)
    handled = stop_signals()
    for signum in handled:
        loop.add_signal_handler(signum, main.cancel)
    try:
        await run_agent(agent, writer, reader, use_unstable_protocol=True)
    except asyncio.CancelledError:
        pass  # a signal: stop as at the end of stdin
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)
        await agent.aclose()
    return 0


def acp_command(argv: list[str]) -> int:
    """``scout-tui acp [--provider P] [--model M] [--base-url URL] [--permission-mode MODE]``."""
    parser = argparse.ArgumentParser(
        prog="scout-tui acp",
        description="Run scout-tui as an Agent Client Protocol agent on stdin/stdout, for an editor (Zed, "
                    "JetBrains, Toad) to start. Sessions are the TUI's: a session begun in the editor shows in "
                    "the sessions pane. Logs go to stderr.",
    )
    parser.add_argument("--provider", help="a provider profile (as for scout-tui)")
    parser.add_argument("--model", help="model id")
    parser.add_argument("--base-url", help="API root of the provider")
    parser.add_argument("--max-turns", type=int, help="model calls allowed per prompt")
    parser.add_argument("--permission-mode", choices=MODES, help="the sessions' first mode (the editor may switch it)")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="scout-tui acp: %(message)s")
    flags = {"provider": args.provider, "model": args.model, "base_url": args.base_url, "max_turns": args.max_turns,
             "permission_mode": args.permission_mode}
    return asyncio.run(serve(flags))
