"""What an ACP client sends, in scout-tui's terms: a ``session/prompt``'s content blocks as a prompt, and
the MCP servers of ``session/new`` as ``mcp.config.ServerConfig``s. Nothing is read but paths resolved.

Shapes: the ACP schema (https://agentclientprotocol.com/protocol/schema: ``ContentBlock``,
``McpServer``), as the ``agent-client-protocol`` package's ``acp.schema`` models them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from scout_tui.mcp.config import NAME, ServerConfig


def prompt_text(prompt: list[Any], cwd: Path) -> tuple[str, list[str]]:
    """A ``session/prompt``'s content blocks as scout-tui's prompt text, and notes on what was
    left out. Text blocks as they are; a ``resource_link`` to a file inside ``cwd`` as an
    ``@path`` mention (attached as the TUI attaches one, ``mentions.prompt_content``), another
    by its URI; an embedded text ``resource`` in a fence headed by its URI. Images, audio and
    binary resources are left out (``initialize`` does not offer them), each with a note."""
    parts: list[str] = []
    notes: list[str] = []
    root = cwd.resolve()
    for block in prompt:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            uri = block.uri
            path = _file_path(uri)
            if path is not None and path.resolve().is_relative_to(root) and " " not in str(path):
                parts.append(f"@{path.resolve().relative_to(root)}")
            else:
                parts.append(uri)
        elif kind == "resource" and isinstance(getattr(block.resource, "text", None), str):
            parts.append(f"{block.resource.uri}:\n```\n{block.resource.text}\n```")
        else:
            notes.append(f"a {kind} block is not supported: left out of the prompt")
    return "\n\n".join(parts), notes


def embedded_files(prompt: list[Any], cwd: Path) -> set[Path]:
    """The files inside ``cwd`` whose text a ``session/prompt`` embeds (``resource`` blocks
    with a ``file://`` URI): the client attached them (Toad's ``@NOTES.md``), so the ``@path``
    mention of one in the text is not attached a second time (``mentions.prompt_content``)."""
    root = cwd.resolve()
    files = set()
    for block in prompt:
        if getattr(block, "type", None) == "resource" and isinstance(getattr(block.resource, "text", None), str):
            path = _file_path(str(block.resource.uri))
            if path is not None and path.resolve().is_relative_to(root):
                files.add(path.resolve())
    return files


def _file_path(uri: str) -> Path | None:
    """The path of a ``file://`` URI (RFC 8089), None for another scheme."""
    return Path(unquote(urlsplit(uri).path)) if uri.startswith("file://") else None


def server_configs(servers: list[Any]) -> tuple[list[ServerConfig], list[str]]:
    """A ``session/new``'s ``mcpServers`` (stdio: ``name, command, args, env``; ``http``: ``name,
    url, headers``) as servers scout-tui starts beside its own, trusted as the person's own
    (the editor's user configured them); and notes on those left out (SSE, which scout-tui's
    MCP client does not speak). A name that is not ``[A-Za-z0-9_-]+`` has the rest made ``_``."""
    out: list[ServerConfig] = []
    notes: list[str] = []
    for server in servers:
        name = server.name if NAME.match(server.name) else re.sub(r"[^A-Za-z0-9_-]", "_", server.name) or "server"
        kind = getattr(server, "type", None)
        if kind == "http":
            out.append(ServerConfig(name, "http", "the ACP client", url=server.url,
                                    headers={h.name: h.value for h in server.headers}))
        elif kind is None and getattr(server, "command", None):
            out.append(ServerConfig(name, "stdio", "the ACP client", command=server.command, args=tuple(server.args),
                                    env={e.name: e.value for e in server.env}))
        else:
            notes.append(f"MCP server {server.name} from the ACP client left out: {kind} servers are not supported")
    return out, notes
