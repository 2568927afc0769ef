"""MCP servers' resources for the model: ``list_mcp_resources`` and ``read_mcp_resource``, as
Claude Code's ``ListMcpResourcesTool`` and ``ReadMcpResourceTool``, offered while a ready server
declares the ``resources`` capability.

Shapes: ``resources/list`` and ``resources/read``
(https://modelcontextprotocol.io/specification/2025-06-18/server/resources): a resource has a
``uri``, ``name``, optional ``description`` and ``mimeType``; a read gives ``contents``, each
with ``text`` or a base64 ``blob``.
"""

from __future__ import annotations

from typing import Any

from scout_tui.mcp.client import McpClient, McpUnavailable
from scout_tui.mcp.content import resource_text
from scout_tui.tools.base import Tool, ToolContext, ToolError, ToolResult

LIST_TOOL = "list_mcp_resources"
READ_TOOL = "read_mcp_resource"
RESOURCE_TOOLS = (LIST_TOOL, READ_TOOL)


def resource_tools(client: McpClient) -> list[Tool]:
    """The two read-only tools over ``client``'s ready servers that offer resources."""
    async def list_run(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult(await list_text(client, input.get("server")))

    async def read_run(input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult(await read_text(client, str(input["server"]), str(input["uri"])))

    list_schema = {"type": "object", "properties": {
        "server": {"type": "string", "description": "Only this MCP server's resources (default: every server's)."}}}
    read_schema = {"type": "object", "required": ["server", "uri"], "properties": {
        "server": {"type": "string", "description": "The MCP server that lists the resource."},
        "uri": {"type": "string", "description": "The resource's URI, as list_mcp_resources gives it."}}}
    return [
        Tool(LIST_TOOL, "List the resources (files, documents, records) the connected MCP servers offer: "
             "each one's server, URI, name, type and description.", list_schema, list_run, read_only=True),
        Tool(READ_TOOL, "Read one resource of an MCP server by its URI (from list_mcp_resources).",
             read_schema, read_run, read_only=True),
    ]


def _servers(client: McpClient, server: str | None) -> list[str]:
    offering = [s.name for s in client.status() if s.state == "ready" and s.resources]
    if server is None:
        return offering
    if server not in offering:
        raise ToolError(f"no MCP server {server!r} offers resources (servers that do: "
                        f"{', '.join(offering) or 'none'})")
    return [server]


async def list_text(client: McpClient, server: str | None = None) -> str:
    """Each resource of ``server`` (None: of every ready server offering resources) as a line
    "SERVER URI (NAME, MIME): DESCRIPTION"; a server whose list fails is a line saying why.

    Raises:
        ToolError: ``server`` is not a ready server offering resources.
    """
    lines: list[str] = []
    for name in _servers(client, server):
        try:
            resources = await client.list_resources(name)
        except Exception as exc:  # the server's error, or it went away: the others are still listed
            lines.append(f"{name}: cannot list its resources: {str(exc) or type(exc).__name__}")
            continue
        for resource in resources:
            kind = ", ".join(part for part in (resource.name, resource.mimeType) if part)
            about = f": {' '.join(resource.description.split())}" if resource.description else ""
            lines.append(f"{name} {resource.uri}{f' ({kind})' if kind else ''}{about}")
    return "\n".join(lines) or "(no resources)"


async def read_text(client: McpClient, server: str, uri: str) -> str:
    """The contents of resource ``uri`` of ``server``: a single text as it is, else each part
    headed by its URI, a binary one as a placeholder with its type and size (``content.resource_text``).

    Raises:
        ToolError: ``server`` does not offer resources, is not running, or answered an error.
    """

    _servers(client, server)
    try:
        result = await client.read_resource(server, uri)
    except McpUnavailable as exc:
        raise ToolError(str(exc)) from None
    except Exception as exc:  # the server's error (an unknown URI), a malformed URI
        raise ToolError(f"MCP server {server!r} could not read {uri}: {str(exc) or type(exc).__name__}") from None
    if len(result.contents) == 1 and getattr(result.contents[0], "text", None) is not None:
        return result.contents[0].text
    return "\n\n".join(resource_text(part) for part in result.contents) or "(empty)"
