"""MCP servers for a session without a screen (``-p``, the ACP agent): started before the first
request, waited for at most ``[mcp] startup_wait`` seconds; those still starting join a later
request once ready (the session offers the tools as they are before each request), and each
server becoming ready or failing is said (``say_changes``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scout_tui.mcp.client import McpClient, ServerStatus
    from scout_tui.mcp.config import ServerConfig


async def start_mcp(config: Any, cwd: Path, warn: Callable[[str], None],
                    extra: Sequence[ServerConfig] = ()) -> McpClient | None:
    """The configured MCP servers (``mcp.config.mcp_settings``) of ``config`` run in ``cwd``,
    and ``extra`` ones (an ACP client's), started and waited for up to ``[mcp] startup_wait``
    seconds; a project's server not trusted yet, one that failed (a bad entry too, naming its
    file and line), one still starting (``still_starting``) and a file that cannot be read are
    said through ``warn``, their secret values redacted. None when no server is configured.
    """
    from scout_tui.mcp.config import mcp_settings
    from scout_tui.session.runtime import tool_environment

    settings = mcp_settings(config, cwd)
    for note in settings.notes:
        warn(note)
    if not settings.servers and not extra:
        return None
    from scout_tui.mcp.client import McpClient

    client = McpClient([*settings.startable(), *extra], cwd=cwd, env=tool_environment(config))
    client.start()
    late = await client.wait_started(settings.startup_wait)
    say = redacting(client, warn)
    for status in client.status():
        if status.state == "failed":
            say(f"MCP server {status.name} {status.why()}")
    if late:
        say(still_starting(late, settings.startup_wait))
    return client


def still_starting(names: Sequence[str], waited: float) -> str:
    """What a front end says of servers not ready when a first request goes: their names and
    that their tools join later."""
    which = f"MCP server{'s' * (len(names) > 1)} {', '.join(names)}"
    return (f"{which} {'are' if len(names) > 1 else 'is'} still starting after {waited:g} s: this request goes on "
            f"without {'their' if len(names) > 1 else 'its'} tools, which join a later request once ready "
            "(`[mcp] startup_wait` sets the wait)")


def joined(status: ServerStatus) -> str | None:
    """What a front end says when a server's state changes after the first request: it is
    ready and its tools join, or it failed and why; None for another state."""
    from scout_tui.mcp.tools import needs_task

    if status.state == "ready":
        count = len([tool for tool in status.tools if not needs_task(tool)])
        return (f"MCP server {status.name} is ready: its {count} tool{'s' * (count != 1)} "
                f"join{'s' * (count == 1)} the next request")
    if status.state == "failed":
        return f"MCP server {status.name} {status.why()}"
    return None


def say_changes(client: McpClient, warn: Callable[[str], None]) -> None:
    """From now on, say through ``warn`` (redacted, ``redacting``) when one of ``client``'s servers
    becomes ready or fails (``joined``); a ready server's tool list read again is not said (the
    session offers the tools as they are before every request). Call it on the loop the session
    runs on; ``warn`` is called there."""
    loop = asyncio.get_running_loop()
    say = redacting(client, warn)
    seen = {status.name: status.state for status in client.status()}

    def changed(status: ServerStatus) -> None:  # on the loop of the session
        if seen.get(status.name) != status.state:
            seen[status.name] = status.state
            if (text := joined(status)) is not None:
                say(text)

    def on_change(status: ServerStatus) -> None:  # on the scout-mcp thread
        loop.call_soon_threadsafe(changed, status)

    client.on_change = on_change


def redacting(client: McpClient, warn: Callable[[str], None]) -> Callable[[str], None]:
    """``warn`` with the servers' secret values (``ServerConfig.secrets``) and the known API keys
    replaced by ``[redacted]``."""
    from scout_tui.config import keys
    from scout_tui.core.redaction import redact

    hidden = keys.secrets([v for status in client.status() for v in status.config.secrets], {})
    return lambda text: warn(redact(text, hidden))
