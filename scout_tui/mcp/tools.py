"""MCP servers' tools as ``Tool`` objects named ``mcp__SERVER__TOOL``, their results as
``ToolResult``s, and their prompts as slash-command text.

Result content (https://modelcontextprotocol.io/specification/2025-06-18/server/tools#tool-result):
text as it is; an image or audio as a placeholder with its mime type and size; an embedded
resource's text, or a placeholder for its blob; a resource link as its URI; ``structuredContent``
as JSON when no text block already holds it; ``isError`` as the result's ``is_error``.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from typing import Any

from scout_tui.mcp.client import McpClient, McpUnavailable, ServerStatus
from scout_tui.mcp.content import tool_result
from scout_tui.mcp.resources import RESOURCE_TOOLS, resource_tools
from scout_tui.tools.base import Registry, Tool, ToolContext, ToolResult

PREFIX = "mcp__"
MAX_NAME = 64
"""The providers' limit on a tool's name: Anthropic and OpenAI take ``^[a-zA-Z0-9_-]{1,64}$``."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """``mcp__SERVER__TOOL`` within the providers' tool-name rules: characters other than
    letters, digits, ``_`` and ``-`` become ``_``; a name over 64 characters keeps its first 55
    and a hash of the whole (so two long names stay apart)."""
    name = f"{PREFIX}{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"
    if len(name) <= MAX_NAME:
        return name
    return f"{name[:MAX_NAME - 9]}_{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def server_of(name: str) -> str | None:
    """The server part of an ``mcp__SERVER__TOOL`` name (None for another tool's name)."""
    if not name.startswith(PREFIX):
        return None
    server, sep, _ = name[len(PREFIX):].partition("__")
    return server if sep else None


def mcp_tools(client: McpClient) -> list[Tool]:
    """A ``Tool`` for each tool of each ready server (``read_only`` when the server's
    annotations say ``readOnlyHint``), but those that need task augmentation
    (``needs_task``); and, when a ready server offers resources, ``list_mcp_resources`` and
    ``read_mcp_resource`` (``mcp.resources``). A call goes through ``client``."""
    tools = []
    for status in client.status():
        if status.state != "ready":
            continue
        for spec in status.tools:
            if not needs_task(spec):
                tools.append(_adapter(client, status, spec))
    if any(s.state == "ready" and s.resources for s in client.status()):
        tools += resource_tools(client)
    return tools


def needs_task(spec: Any) -> bool:
    """Whether an MCP tool can only be called as a task (``execution.taskSupport`` is
    ``"required"``, spec 2025-11-25, "Tasks"): scout-tui calls tools directly, so it does not
    offer such a tool (every call would fail with -32601)."""
    execution = getattr(spec, "execution", None)
    return getattr(execution, "taskSupport", None) == "required"


def offer_tools(registry: Registry, client: McpClient) -> None:
    """Make ``registry``'s MCP tools those ``mcp_tools(client)`` gives now: a server that
    became ready joins the next request, one that failed or restarts leaves it. Call it on the
    loop the agent runs on."""
    for name in [n for n in registry.tools if server_of(n) is not None or n in RESOURCE_TOOLS]:
        del registry.tools[name]
    for tool in mcp_tools(client):
        registry.add(tool)


def _adapter(client: McpClient, status: ServerStatus, spec: Any) -> Tool:
    server, remote = status.name, spec.name
    schema = dict(spec.inputSchema or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    description = (spec.description or spec.title or f"The tool {remote!r}").strip()
    annotations = getattr(spec, "annotations", None)
    read_only = bool(annotations is not None and annotations.readOnlyHint)

    async def run(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await call(client, server, remote, input, ctx)

    return Tool(tool_name(server, remote), f"{description}\n\n(From the MCP server {server!r}.)", schema, run,
                read_only=read_only)


async def call(client: McpClient, server: str, tool: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Run one call; every failure is an error result naming the server. The person stopping
    the call (``ctx.stop``) cancels it on the server's side too. The server's progress
    notifications go to ``ctx.on_output`` as lines (``progress_line``), as a command's output."""
    loop = asyncio.get_running_loop()

    def progress(done: float, total: float | None, message: str | None) -> None:  # on the scout-mcp thread
        loop.call_soon_threadsafe(ctx.on_output, progress_line(done, total, message) + "\n")

    work = asyncio.ensure_future(client.call_tool(server, tool, arguments, progress))
    stop = asyncio.ensure_future(ctx.stop.wait())
    try:
        await asyncio.wait([work, stop], return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not work.done():
            work.cancel()
            await asyncio.gather(work, return_exceptions=True)
        stop.cancel()
    if not work.done() or work.cancelled():
        return ToolResult(f"[stopped by the user: the MCP server {server!r} was told to stop]", True)
    try:
        result = work.result()
    except McpUnavailable as exc:
        return ToolResult(str(exc), True)
    except Exception as exc:  # the SDK's McpError, a closed connection, a validation error
        status = client.servers.get(server)
        if status is not None and status.state == "failed":
            return ToolResult(f"MCP server {server!r} {status.why()}", True)
        return ToolResult(f"MCP server {server!r}: {tool} failed: {_failure(exc, client, server)}", True)
    return tool_result(result)


def _failure(exc: Exception, client: McpClient, server: str) -> str:
    """Why a call failed, in words: a timeout names ``tool_timeout``."""
    from scout_tui.mcp.client import REQUEST_TIMEOUT

    error = getattr(exc, "error", None)
    status = client.servers.get(server)
    if getattr(error, "code", None) == REQUEST_TIMEOUT and status is not None:
        return (f"no answer within {status.config.tool_timeout:g} s (its tool_timeout); the server was told to "
                "stop the call")
    return str(exc) or type(exc).__name__


def progress_line(progress: float, total: float | None, message: str | None) -> str:
    """One progress notification as a line: "progress 3/10: message" (``total`` unknown:
    "progress 3"; spec: https://modelcontextprotocol.io/specification/2025-06-18/basic/utilities/progress)."""
    def number(value: float) -> str:
        return f"{value:g}"

    done = f"{number(progress)}/{number(total)}" if total else number(progress)
    return f"progress {done}{f': {message}' if message else ''}"
