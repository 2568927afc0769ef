"""MCP servers running for the life of the app: each one's session lives in one task on a thread
of its own (``scout-mcp``, an asyncio loop), so the SDK's anyio context managers stay open, and
tool calls and prompts from any other loop go there and back (``asyncio.run_coroutine_threadsafe``).

The SDK is the official ``mcp`` package, line 1.x: it uses httpx and httpx-sse, which scout-tui
already depends on, and supports Python 3.10+; the 2.x line brings httpx2 and opentelemetry.
It is imported when the first server starts, never at start-up.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from scout_tui import compat
from scout_tui.mcp.config import ServerConfig

_log = logging.getLogger("scout_tui.mcp")
STATES = ("starting", "ready", "failed", "stopped")
STDERR_TAIL_BYTES = 2000
STDERR_TAIL_LINES = 8
CLOSE_TIMEOUT = 5.0
"""Seconds ``McpClient.close`` waits for the servers to end (a stdio server gets its stdin
closed, then SIGTERM, then SIGKILL: ``mcp.stdio``)."""
EXIT_GRACE = 2.0
"""Seconds a stdio server has to exit once its stdin is closed (the SDK's wait), when it owes
no answer; one still busy with a call (timed out, stopped) is ended at once."""
REQUEST_TIMEOUT = 408
"""The code of the SDK's ``McpError`` for a request that got no answer in time (``httpx.codes``)."""


class McpUnavailable(Exception):
    """A call to a server that is not running (failed, crashed, stopped, still starting)."""


@dataclass
class ServerStatus:
    """What ``/mcp`` shows of one server: its ``state`` (one of ``STATES``), the ``tools`` and
    ``prompts`` it offered (the SDK's ``Tool`` and ``Prompt`` objects), whether it offers
    ``resources``, and for a failed one the ``error`` and the last lines of its stderr
    (``stderr_tail``, a stdio server's only)."""

    config: ServerConfig
    state: str = "starting"
    tools: list[Any] = field(default_factory=list)
    prompts: list[Any] = field(default_factory=list)
    resources: bool = False
    error: str = ""
    stderr_tail: str = ""

    @property
    def name(self) -> str:
        return self.config.name

    def why(self) -> str:
        """"failed: <error>; stderr: <tail>" for a failed server, else its state."""
        if self.state != "failed":
            return self.state
        tail = f"; its stderr ended with:\n{self.stderr_tail}" if self.stderr_tail else ""
        return f"failed: {self.error}{tail}"


class McpClient:
    """The configured MCP servers, started by ``start`` and ended by ``close``.

    ``env``: the environment a stdio server starts with (each server's own ``env`` over it; the
    caller leaves API keys out); ``cwd``: where it starts. ``on_change(status)`` is called on the
    ``scout-mcp`` thread whenever a server's state changes: keep it quick and thread-safe
    (Textual's ``post_message`` is).
    """

    def __init__(self, servers: list[ServerConfig], *, cwd: Path, env: Mapping[str, str] | None = None,
                 on_change: Callable[[ServerStatus], None] | None = None) -> None:
        self.cwd = Path(cwd)
        self.env = dict(os.environ if env is None else env)
        self.on_change = on_change or (lambda status: None)
        self.servers = {s.name: ServerStatus(s) for s in servers}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._tasks: dict[str, concurrent.futures.Future] = {}
        self._runners: dict[str, _Runner] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start every server in the background (the thread first); returns at once. Once."""
        with self._lock:
            if self._loop is not None:
                return
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="scout-mcp")
            self._thread.start()
        for status in self.servers.values():
            self.launch(status.config)

    def launch(self, config: ServerConfig) -> None:
        """Start server ``config`` (one trusted since ``start``, or one to try again) unless it
        is starting or ready."""
        assert self._loop is not None, "start() first"
        current = self.servers.get(config.name)
        if current is not None and current.state == "ready" and config.name in self._tasks:
            return
        status = self.servers[config.name] = ServerStatus(config)
        runner = self._runners[config.name] = _Runner(status, self)
        self._tasks[config.name] = asyncio.run_coroutine_threadsafe(runner.serve(), self._loop)

    async def wait_started(self, timeout: float | None = None) -> list[str]:
        """Wait (on any loop) until no server is still starting, or ``timeout`` seconds (None:
        as long as that takes); returns the names of the servers still starting."""
        waits = [asyncio.wrap_future(asyncio.run_coroutine_threadsafe(r.started.wait(), self._loop))
                 for r in list(self._runners.values()) if not r.started.is_set()] if self._loop else []
        if waits:
            _, pending = await asyncio.wait(waits, timeout=timeout)
            for wait in pending:
                wait.cancel()
        return [s.name for s in self.servers.values() if s.state == "starting"]

    async def restart(self, server: str) -> None:
        """End server ``server`` (whatever its state; its calls fail) and start it again; returns
        once it is starting. Runs from any loop.

        Raises:
            KeyError: no server of that name.
        """
        status = self.servers[server]
        assert self._loop is not None, "start() first"
        task = self._tasks.pop(server, None)
        if task is not None:
            await self._there(self._end(server, task, why="restarted"))
        self.launch(status.config)

    def status(self) -> list[ServerStatus]:
        """Every server's status, in configuration order."""
        return list(self.servers.values())

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any],
                        progress: Callable[[float, float | None, str | None], None] | None = None) -> Any:
        """Call ``tool`` of ``server`` with ``arguments``; returns the SDK's ``CallToolResult``.
        Cancelling the awaiting task cancels the call on the server's loop. Runs from any loop.
        ``progress(progress, total, message)`` gets the server's progress notifications for the
        call, on the ``scout-mcp`` thread.

        Raises:
            McpUnavailable: the server is not ready (``ServerStatus.why`` says why).
            mcp.shared.exceptions.McpError: the server answered with an error, timed out
                (``tool_timeout``) or its connection closed.
        """
        runner = self._ready(server)
        return await self._there(runner.call_tool(tool, arguments, progress))

    async def get_prompt(self, server: str, prompt: str, arguments: dict[str, str]) -> Any:
        """The SDK's ``GetPromptResult`` of ``prompt`` of ``server``. Raises as ``call_tool``."""
        runner = self._ready(server)
        return await self._there(runner.answer(runner.session.get_prompt(prompt, arguments)))

    async def list_resources(self, server: str) -> list[Any]:
        """Every resource ``server`` lists (the SDK's ``Resource`` objects: ``uri``, ``name``,
        ``description``, ``mimeType``). Raises as ``call_tool``."""
        runner = self._ready(server)
        return await self._there(runner.answer(_all(runner.session.list_resources, "resources")))

    async def read_resource(self, server: str, uri: str) -> Any:
        """The SDK's ``ReadResourceResult`` (``contents``: text or blob parts) of ``uri`` on
        ``server``. Raises as ``call_tool``; pydantic's ValidationError for a malformed URI."""
        from pydantic import AnyUrl

        runner = self._ready(server)
        return await self._there(runner.answer(runner.session.read_resource(AnyUrl(uri))))

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """End every server (at most ``timeout`` seconds in all), then the thread. Blocks: call
        it from a thread or at exit. Idempotent."""
        loop = self._loop
        if loop is None or not loop.is_running():
            return
        try:
            asyncio.run_coroutine_threadsafe(self._close_all(timeout), loop).result(timeout + 1)
        except (concurrent.futures.TimeoutError, RuntimeError):
            pass  # a server that would not end dies with the process (its stdin is closed)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(1.0)

    async def _close_all(self, timeout: float) -> None:
        ends = [self._end(name, task, timeout) for name, task in self._tasks.items()]
        await asyncio.gather(*ends)

    async def _end(self, name: str, task: concurrent.futures.Future, timeout: float = CLOSE_TIMEOUT,
                   why: str = "stopped") -> None:
        """End server ``name``'s runner (on the ``scout-mcp`` loop): a ready one is asked to
        stop, one still starting (it may never answer) is cancelled at once. Its calls still
        waiting fail at once, saying it was ``why`` ("restarted", "stopped") before answering."""
        runner = self._runners[name]
        runner.why_stopped = why
        waiting = asyncio.wrap_future(task)
        if runner.status.state == "starting":
            task.cancel()
        runner.stop.set()
        _, pending = await asyncio.wait([waiting], timeout=timeout)
        for left in pending:
            left.cancel()

    def _ready(self, server: str) -> _Runner:
        runner = self._runners.get(server)
        if runner is None or runner.status.state != "ready" or runner.session is None:
            status = self.servers.get(server)
            raise McpUnavailable(f"MCP server {server!r} is not running ("
                                 f"{status.why() if status else 'not configured'})")
        return runner

    async def tools_settled(self) -> None:
        """Wait until no server's tool list is being read again: a server that sent
        ``notifications/tools/list_changed`` before a call's answer has its new list in
        ``status().tools`` once this returns (the notification is read before the answer)."""
        async def settled() -> None:
            while pending := [task for runner in self._runners.values() for task in runner.relisting]:
                await asyncio.gather(*pending, return_exceptions=True)

        if self._loop is not None and self._loop.is_running() and self._runners:
            await self._there(settled())

    async def _there(self, coro: Any) -> Any:
        assert self._loop is not None
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    def _changed(self, status: ServerStatus) -> None:
        try:
            self.on_change(status)
        except Exception:  # a front end's handler must not end a server
            pass


class _Runner:
    """One server's long-lived task on the ``scout-mcp`` loop: connect, initialize, list tools
    and prompts, then hold the session open until ``stop`` or until the server's stream ends."""

    def __init__(self, status: ServerStatus, client: McpClient) -> None:
        self.status = status
        self.client = client
        self.session: Any = None
        self.stop = asyncio.Event()
        self.started = asyncio.Event()  # ready or failed
        self.broken = asyncio.Event()  # it printed what is not an MCP message before it was ready
        self.unanswered = 0  # calls sent that got no answer (running, timed out, stopped)
        self.why_stopped = "stopped"  # what a call waiting when ``stop`` is set is told
        self._waiting: dict[asyncio.Task, str] = {}  # requests awaiting an answer -> why they ended ("" yet)
        self._errlog: Any = None
        self.relisting: set[asyncio.Task] = set()  # tool lists being read again after list_changed

    async def serve(self) -> None:
        config = self.status.config
        self.client._changed(self.status)
        try:
            if config.problem:
                raise RuntimeError(config.problem)
            from contextlib import AsyncExitStack

            from mcp import ClientSession

            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                ended = asyncio.Event()
                read = _watched(read, ended)
                session = await stack.enter_async_context(
                    ClientSession(read, write, read_timeout_seconds=timedelta(seconds=config.startup_timeout),
                                  message_handler=self._on_message))
                await self._unless_broken(self._handshake(session))
                self.session = session
                self._set("ready")
                waits = [asyncio.create_task(self.stop.wait()), asyncio.create_task(ended.wait())]
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                for wait in waits:
                    wait.cancel()
                self._end_requests(self.why_stopped if self.stop.is_set() else "exited")
                if not self.stop.is_set():
                    self.session = None
                    self._fail("the server closed its connection (it exited or crashed)")
        except asyncio.CancelledError:
            self._set("stopped")
            raise
        except (Exception, BaseExceptionGroup) as exc:  # every failure is the server's state, not ours
            if self.status.state != "failed":
                self._fail(_describe(exc, config))
        finally:
            self.session = None
            if self.status.state == "ready" or self.status.state == "starting":
                self._set("stopped")
            self.started.set()
            if self._errlog is not None:
                self._errlog.close()

    async def _handshake(self, session: Any) -> None:
        """``initialize``, then the tools (and prompts, when offered) listed."""
        info = await session.initialize()
        self.status.tools = await _all(session.list_tools, "tools")
        if info.capabilities.prompts is not None:
            self.status.prompts = await _all(session.list_prompts, "prompts")
        self.status.resources = info.capabilities.resources is not None

    async def _unless_broken(self, work: Any) -> None:
        """Await ``work``, unless the server prints what is not an MCP message first: then it
        is cancelled and RuntimeError says what the server printed."""
        job = asyncio.ensure_future(work)
        broken = asyncio.ensure_future(self.broken.wait())
        try:
            await asyncio.wait([job, broken], return_when=asyncio.FIRST_COMPLETED)
        finally:
            broken.cancel()
            if not job.done():
                job.cancel()
                await asyncio.gather(job, return_exceptions=True)
        if self.broken.is_set():
            raise RuntimeError(self.status.error)
        job.result()

    def _bad_line(self, line: str) -> None:
        """A line of the server's stdout that is not JSON-RPC (``mcp.stdio``): before it is
        ready, the start fails at once, naming it (stdout is the protocol's alone; a server's
        own messages belong on stderr); later, it is logged and dropped."""
        shown = line if len(line) <= 120 else line[:119] + "…"
        if self.status.state == "starting" and not self.broken.is_set():
            self.status.error = (f"it printed something other than MCP messages on its stdout: {shown!r} "
                                 "(a server must write only JSON-RPC there; its own output belongs on stderr)")
            self.broken.set()
        else:
            _log.warning("MCP server %s printed a line that is not an MCP message: %r", self.status.name, shown)

    def grace(self) -> float:
        """Seconds this server may take to exit once its stdin is closed: none when it owes
        an answer or never became ready (it would not notice), ``EXIT_GRACE`` otherwise."""
        return EXIT_GRACE if self.unanswered == 0 and self.status.state == "ready" else 0.0

    async def answer(self, request: Any) -> Any:
        """Await ``request`` (a coroutine asking this server something, run on this loop),
        unless the server is restarted, stopped or exits first: then McpUnavailable says so at
        once (the SDK would leave it waiting until its timeout, ``tool_timeout`` for a call).

        Raises:
            McpUnavailable: "MCP server 'NAME' was restarted (stopped, exited) before answering".
            whatever ``request`` raises.
        """
        from mcp.shared.exceptions import McpError
        from mcp.types import CONNECTION_CLOSED

        task = asyncio.current_task()
        assert task is not None
        self._waiting[task] = ""
        try:
            return await request
        except asyncio.CancelledError:
            if not self._waiting.get(task):
                raise  # cancelled by whoever awaits it (the person stopped the call)
            raise McpUnavailable(self._unanswered(self._waiting[task])) from None
        except McpError as exc:
            if exc.error.code != CONNECTION_CLOSED:
                raise
            raise McpUnavailable(self._unanswered(self._waiting.get(task) or self.why_stopped
                                                  if self.stop.is_set() else "exited")) from None
        finally:
            self._waiting.pop(task, None)

    def _end_requests(self, why: str) -> None:
        """End every request still waiting for this server's answer, as ``why`` says (``answer``)."""
        for task in self._waiting:
            if not self._waiting[task]:
                self._waiting[task] = why
                task.cancel()

    def _unanswered(self, why: str) -> str:
        """"MCP server 'NAME' exited before answering" (its stderr's last lines, when exited)."""
        text = f"MCP server {self.status.name!r} was {why} before answering" if why != "exited" else (
            f"MCP server {self.status.name!r} exited before answering")
        tail = self._stderr_tail() if why == "exited" else ""
        return f"{text}; its stderr ended with:\n{tail}" if tail else text

    async def call_tool(self, tool: str, arguments: dict[str, Any],
                        progress: Callable[[float, float | None, str | None], None] | None = None) -> Any:
        """``tools/call`` on this loop; when cancelled or given no answer within
        ``tool_timeout``, the server is told (``notifications/cancelled``, as the spec asks)
        so it can stop the work too."""
        from mcp.shared.exceptions import McpError

        session = self.session
        request_id = compat.next_request_id(session)  # the id send_request takes before its first await
        timeout = self.status.config.tool_timeout
        self.unanswered += 1
        try:
            result = await self.answer(session.call_tool(
                tool, arguments, read_timeout_seconds=timedelta(seconds=timeout),
                progress_callback=_progress(progress) if progress else None))
        except McpUnavailable:
            raise  # the server is going: nobody to tell
        except McpError as exc:
            if exc.error.code == REQUEST_TIMEOUT:
                await _cancel(session, request_id, f"no answer within {timeout:g} s (the client's tool_timeout)")
            else:
                self.unanswered -= 1
            raise
        except asyncio.CancelledError:
            await asyncio.shield(_cancel(session, request_id, "the user stopped the call"))
            raise
        self.unanswered -= 1
        return result

    async def _on_message(self, message: Any) -> None:
        """The server's notifications: a changed tool list is read again (``on_change`` says so)."""
        from mcp import types

        if isinstance(message, types.ServerNotification) and isinstance(message.root, types.ToolListChangedNotification):
            relist = asyncio.get_running_loop().create_task(self._list_tools_again())
            self.relisting.add(relist)  # before the answers that follow it are read: ``McpClient.tools_settled``
            relist.add_done_callback(self.relisting.discard)

    async def _list_tools_again(self) -> None:
        session = self.session
        if session is None:
            return
        try:
            self.status.tools = await _all(session.list_tools, "tools")
        except Exception:  # the server went away meanwhile: its runner says so
            return
        if self.status.state == "ready":
            self.client._changed(self.status)

    def _transport(self) -> Any:
        config = self.status.config
        if config.transport == "stdio":
            from scout_tui.mcp.stdio import stdio_transport

            self._errlog = tempfile.TemporaryFile()  # the server's stderr; its tail is shown when it fails
            return stdio_transport(config.command, list(config.args), env={**self.client.env, **config.env},
                                   cwd=self.client.cwd, errlog=self._errlog, on_bad_line=self._bad_line,
                                   grace=self.grace)
        if config.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(config.url, headers=config.headers or None, timeout=30)
        return _http(config)

    def _set(self, state: str) -> None:
        self.status.state = state
        if state != "starting":
            self.started.set()
        self.client._changed(self.status)

    def _fail(self, error: str) -> None:
        self.status.error = error
        self.status.stderr_tail = self._stderr_tail()
        self._set("failed")

    def _stderr_tail(self) -> str:
        """The last lines of the server's stderr, read without moving the offset the server
        writes at (the file description is shared)."""
        if self._errlog is None or self._errlog.closed:
            return ""
        fd = self._errlog.fileno()
        size = os.fstat(fd).st_size
        data = os.pread(fd, STDERR_TAIL_BYTES, max(0, size - STDERR_TAIL_BYTES))
        lines = [" ".join(line.split()) for line in data.decode("utf-8", "replace").splitlines()]
        lines = [line for line in lines if line]
        return "\n".join(lines[-STDERR_TAIL_LINES:])


async def _cancel(session: Any, request_id: Any, reason: str) -> None:
    """Tell the server request ``request_id`` is cancelled (``notifications/cancelled``)."""
    from mcp import types

    notice = types.CancelledNotification(params=types.CancelledNotificationParams(requestId=request_id, reason=reason))
    try:
        await session.send_notification(types.ClientNotification(notice))
    except Exception:  # the server may be gone already
        pass


def _progress(report: Callable[[float, float | None, str | None], None]) -> Callable[..., Any]:
    """``report`` as the SDK's ``progress_callback`` (a coroutine function); its failure is
    not the call's."""
    async def callback(progress: float, total: float | None, message: str | None) -> None:
        try:
            report(progress, total, message)
        except Exception:  # a front end's handler must not fail the call
            _log.exception("showing an MCP progress notification failed")

    return callback


def _http(config: ServerConfig) -> Any:
    """The SDK's ``streamable_http_client`` for ``config.url`` with its headers (an httpx
    client closed with it), yielding ``(read, write)``."""
    from contextlib import asynccontextmanager

    import httpx
    from mcp.client.streamable_http import streamable_http_client

    @asynccontextmanager
    async def two():
        # The SDK's defaults: 30 s to connect and write, 300 s to read (a stream may stay open).
        async with httpx.AsyncClient(headers=config.headers or None, timeout=httpx.Timeout(30, read=300)) as http:
            async with streamable_http_client(config.url, http_client=http) as (read, write, _):
                yield read, write

    return two()


def _watched(read: Any, ended: asyncio.Event) -> Any:
    """``read`` (the transport's receive stream) forwarded through a stream of our own whose
    sender sets ``ended`` when the transport's stream ends: the server exited or hung up."""
    import anyio

    send, receive = anyio.create_memory_object_stream[Any](0)

    async def forward() -> None:
        try:
            async with send:
                async for item in read:
                    await send.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            pass
        finally:
            ended.set()

    asyncio.get_running_loop().create_task(forward())
    return receive


async def _all(list_page: Callable[..., Any], attribute: str) -> list[Any]:
    """Every item of a paginated list request (``list_tools``, ``list_prompts``, ``list_resources``)."""
    items: list[Any] = []
    cursor = None
    for _ in range(100):  # a server that pages for ever is cut off
        page = await list_page(cursor) if cursor else await list_page()
        items += getattr(page, attribute)
        cursor = page.nextCursor
        if not cursor:
            break
    return items


def _describe(exc: BaseException, config: ServerConfig) -> str:
    """One sentence for a server's failure, from the first leaf of an exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError) and config.transport == "stdio":
        return f"cannot run {config.command!r}: no such command"
    text = str(exc) or type(exc).__name__
    if text == "Connection closed" or type(exc).__name__ in ("BrokenResourceError", "ClosedResourceError"):
        # the second: its stdin already closed when the client wrote the first request
        return "it exited, or closed its connection, before it answered"
    if "Timed out while waiting for response" in text:
        return f"it did not answer within {config.startup_timeout:g} s"
    if type(exc).__module__.startswith("httpx"):
        return f"{config.shown_url}: {type(exc).__name__}: {text}"
    return text if type(exc).__name__ in ("McpError", "RuntimeError") else f"{type(exc).__name__}: {text}"
