"""The app's MCP half: servers started after the first frame and ended with the app, their state
in the chat and in ``/mcp``, their prompts as ``/mcp__SERVER__PROMPT`` commands.

A feature of ``ScoutApp`` (app.py). The servers run on their own thread (``mcp.client``); this
only draws what they report and hands prompts to the turn worker.
"""

from __future__ import annotations

import asyncio
import re
import shlex
from functools import partial
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.message import Message

from scout_tui.session.commands import Command
from scout_tui.core.text import one_line, sanitize
from scout_tui.tui.feature import Feature, feature_work

if TYPE_CHECKING:
    from scout_tui.mcp.client import McpClient, ServerStatus
    from scout_tui.mcp.config import McpSettings


@dataclass
class McpChanged(Message):
    """A server's state changed (posted from the ``scout-mcp`` thread)."""

    status: ServerStatus
    state: str


class McpServers(Feature):
    """MCP servers for ``ScoutApp``: ``start_mcp``, ``wait_for_mcp``, ``/mcp``, prompts."""

    mcp: McpClient | None = None
    mcp_settings: McpSettings | None = None
    mcp_secrets: tuple[str, ...] = ()
    """The servers' header values and credential-like env values (``ServerConfig.secrets``),
    kept off the screen like keys (``keys_withheld``)."""
    _mcp_ready: asyncio.Event | None = None
    """Set once a first request may go: every server started or failed, or one request waited
    ``[mcp] startup_wait`` seconds for them."""
    _mcp_late: set[str] = set()
    """Servers a request went on without, or restarted: the chat says when they are ready."""

    def _mcp_started_event(self) -> asyncio.Event:
        if self._mcp_ready is None:
            self._mcp_ready = asyncio.Event()
        return self._mcp_ready

    @feature_work(exclusive=True, group="mcp-start")
    async def start_mcp(self) -> None:
        """Read the configured servers (in a thread: files) and start the trusted ones on the
        ``scout-mcp`` thread; say in the chat which project servers wait for ``/trust``. The
        first request may go once none is starting (``server_changed``)."""
        ready = self._mcp_started_event()
        try:
            settings = await self._read_mcp_settings()
            for note in settings.notes:
                self.app.chat.add_notice(sanitize(note), "warning")
            if not settings.servers:
                ready.set()
                return
            client = await asyncio.to_thread(self._mcp_client, settings)
            self.app.session.mcp = client
            client.start()
            self._mcp_settled()
        except BaseException:
            ready.set()
            raise

    def _mcp_settled(self) -> None:
        """Let a first request go once no server is starting."""
        if self.app.session.mcp is None or not any(s.state == "starting" for s in self.app.session.mcp.status()):
            self._mcp_started_event().set()

    async def _read_mcp_settings(self) -> McpSettings:
        """The configured servers, read in a thread (files; ``mcp_settings`` never raises for
        what they say: a bad entry is a failing server, a bad file a note), their values hidden."""
        from scout_tui.mcp.config import mcp_settings

        settings = await asyncio.to_thread(mcp_settings, self.app.session.config, self.app.cwd)
        self.mcp_settings = settings
        self._hide_values(settings)
        return settings

    def _hide_values(self, settings: McpSettings) -> None:
        from scout_tui.config import keys

        values = [v for server in settings.servers.values() for v in server.secrets]
        self.mcp_secrets = keys.secrets(values, {}) if values else ()
        self.app.keys_withheld(self.app.secrets)

    def _mcp_client(self, settings: McpSettings) -> McpClient:
        from scout_tui.mcp.client import McpClient
        from scout_tui.session.runtime import tool_environment

        def post(status: ServerStatus) -> None:
            self.app.post_message(McpChanged(status, status.state))

        return McpClient(settings.startable(), cwd=self.app.cwd, env=tool_environment(self.app.session.config),
                         on_change=post)

    async def wait_for_mcp(self, text: str | None = None) -> None:
        """Before a turn: wait until the servers started (or failed), at most ``[mcp]
        startup_wait`` seconds, saying so when it waits; then the turn goes on without those
        still starting (the chat names them) and they join a later request once ready. Esc
        meanwhile puts prompt ``text`` back in the composer."""
        from scout_tui.mcp.config import STARTUP_WAIT
        from scout_tui.session.mcp_startup import still_starting

        ready = self._mcp_started_event()
        if ready.is_set() or not self.app.background_started:
            return
        wait = self.mcp_settings.startup_wait if self.mcp_settings is not None else STARTUP_WAIT
        starting = [s.name for s in (self.app.session.mcp.status() if self.app.session.mcp else []) if s.state == "starting"]
        if starting:
            from scout_tui.core.text import one_line

            quoted = f" “{one_line(text, 60)}”" if text and text.strip() else ""  # shown as its turn begins
            self.app.chat.add_notice(f"Your prompt{quoted} waits up to {wait:g} s for MCP server{'s' * (len(starting) > 1)} "
                                 f"{', '.join(starting)} to start (Esc puts it back in the composer).")
        try:
            await asyncio.wait_for(ready.wait(), wait)
        except asyncio.TimeoutError:
            late = [s.name for s in (self.app.session.mcp.status() if self.app.session.mcp else []) if s.state == "starting"]
            if late:
                self._mcp_late = {*self._mcp_late, *late}
                self.app.chat.add_notice(still_starting(late, wait), "warning")
            ready.set()  # later requests do not wait for them either
        except asyncio.CancelledError:
            if text is not None:
                self.app.turns.unsent(text, "stopped while waiting for the MCP servers to start")
            raise

    def server_changed(self, message: McpChanged) -> None:
        status, state = message.status, message.state
        self._mcp_settled()
        if state == "ready" and status.name in self._mcp_late:
            from scout_tui.session.mcp_startup import joined

            self._mcp_late = self._mcp_late - {status.name}
            self.app.chat.add_notice(sanitize(joined(status) or ""))
        if state == "ready":
            self.app.notify(f"MCP server {status.name}: {len(status.tools)} tool{'s' * (len(status.tools) != 1)}"
                        f"{f', {len(status.prompts)} prompt' + 's' * (len(status.prompts) != 1) if status.prompts else ''}",
                        timeout=4)
            self._add_prompt_commands(status)
            self._mcp_tools_changed(status)
        elif state == "failed":
            from scout_tui.core.redaction import redact

            tail = verbatim(redact(status.stderr_tail, self.app.chat.secrets))  # before escaping hides a secret
            shown = f"; its stderr ended with:\n\n{tail}" if tail else "."
            self.app.chat.add_notice(sanitize(f"MCP server {status.name} failed: {status.error}{shown}\n\nThe session "
                                          "goes on without it (`/mcp` lists the servers)."), "error")
            self._mcp_tools_changed(status)  # its tools go: the model would call them in vain
        elif state == "stopped" and self.app.session.mcp is not None and self.app.session.mcp.servers.get(status.name) is status:
            self._mcp_tools_changed(status)  # restarting (/mcp restart): its tools are back once it is ready

    def _mcp_tools_changed(self, status: ServerStatus) -> None:
        """Between turns, build the agent again with the servers' tools as they are now (none of
        a failed one); during a turn the session offers them before its next request
        (``Session.offer_mcp_tools``)."""
        if not self.app.busy:
            self.app.session.agent = None  # built again with the ready servers' tools

    def stop_mcp(self) -> None:
        """End every server (blocks up to ``client.CLOSE_TIMEOUT`` s: the app is closing)."""
        if self.app.session.mcp is not None:
            self.app.session.mcp.close()

    @feature_work(exclusive=True, group="mcp-trust")  # not start_mcp's group: that would cancel its wait
    async def start_trusted_servers(self) -> None:
        """After ``/trust``: read the servers again and start those trusted now."""
        settings = await self._read_mcp_settings()
        if self.app.session.mcp is None:
            self.app.session.mcp = await asyncio.to_thread(self._mcp_client, settings)
            self.app.session.mcp.start()
        running = {s.name for s in self.app.session.mcp.status() if s.state in ("starting", "ready")}
        for server in settings.startable():
            if server.name not in running:
                self.app.chat.add_notice(f"Starting MCP server {server.name}.")
                self.app.session.mcp.launch(server)

    # -- /mcp and the prompts -----------------------------------------------------------------

    def mcp_command(self, text: str = "") -> None:
        """``/mcp``: every server, its state and tools (prompts too); ``/mcp restart NAME``
        ends server NAME and starts it again."""
        words = text.split()
        if not words:
            self.app.chat.add_notice(sanitize(describe_servers(self.app.session.mcp, self.mcp_settings,
                                                           self._mcp_started_event().is_set())))
            return
        running = list(self.app.session.mcp.servers) if self.app.session.mcp is not None else []
        if words[0] != "restart" or len(words) != 2:
            self.app.chat.add_notice(sanitize(f"/mcp {text.strip()}: use /mcp, or /mcp restart NAME"), "error")
        elif words[1] not in running:
            self.app.chat.add_notice(sanitize(f"/mcp restart: no MCP server {words[1]!r} was started (started: "
                                          f"{', '.join(running) or 'none'}; `/mcp` lists them)"), "error")
        else:
            self.restart_mcp(words[1])

    @feature_work(group="mcp-restart")
    async def restart_mcp(self, name: str) -> None:
        """End MCP server ``name`` and start it again; the chat says when it is ready (or failed)."""
        self.app.chat.add_notice(sanitize(f"Restarting MCP server {name}."))
        self._mcp_late = {*self._mcp_late, name}
        if (client := self.app.session.mcp) is not None:
            await client.restart(name)

    def _add_prompt_commands(self, status: ServerStatus) -> None:
        from scout_tui.mcp.tools import tool_name

        for prompt in status.prompts:
            args = " ".join(f"{a.name.upper()}" if a.required else f"[{a.name.upper()}]" for a in prompt.arguments or [])
            self.app.commands.add(Command(
                tool_name(status.name, prompt.name), args,
                sanitize(f"MCP prompt of {status.name}: {prompt.description or prompt.name}")[:120],
                partial(self._prompt_command, status.name, prompt),
                owner=f"MCP server {status.name}"))

    def _prompt_command(self, server: str, prompt: Any, text: str) -> None:
        self.run_mcp_prompt(server, prompt, text)

    @feature_work(group="mcp-prompt")
    async def run_mcp_prompt(self, server: str, prompt: Any, text: str) -> None:
        """``/mcp__SERVER__PROMPT ARGS``: the prompt's messages, got from the server, are sent
        as the person's prompt (queued while a turn runs)."""
        from scout_tui.mcp.content import prompt_text
        from scout_tui.mcp.tools import tool_name

        try:
            arguments = prompt_arguments(prompt, text)
            result = await self.app.session.mcp.get_prompt(server, prompt.name, arguments) if self.app.session.mcp else None
        except Exception as e:  # the server's error, a bad argument, a dead server
            self.app.chat.add_notice(sanitize(f"/{tool_name(server, prompt.name)}: {e}"), "error")
            return
        if result is None:
            return
        body = prompt_text(result)
        if self.app.busy:
            self.app.queue.hold(body, steer=False)
        else:
            self.app.turns.run_turn(body)


def prompt_arguments(prompt: Any, text: str) -> dict[str, str]:
    """The arguments of an MCP ``prompt`` from the text typed after its command (shell quoting):
    ``name=value`` words for the names the prompt declares, the other words in the order of
    the arguments not named that way, the last of them taking the words left over.

    Raises:
        ValueError: a required argument is missing, a ``name=value`` word names no argument
            of the prompt, or words are left for a prompt without arguments.
    """
    declared = [a.name for a in prompt.arguments or []]
    arguments: dict[str, str] = {}
    positional: list[str] = []
    for word in shlex.split(text) if text.strip() else []:
        name, eq, value = word.partition("=")
        if eq and name in declared:
            arguments[name] = value
        elif eq and name.isidentifier() and declared:  # a misspelt name, not a value with "=" in it
            raise ValueError(f"no argument {name!r} (arguments: {' '.join(declared)})")
        else:
            positional.append(word)
    open_names = [name for name in declared if name not in arguments]
    if positional and not open_names:
        raise ValueError(f"no argument is left for {' '.join(positional)!r} (arguments: {' '.join(declared) or 'none'})")
    for name, word in zip(open_names, positional):
        arguments[name] = word
    if len(positional) > len(open_names):
        arguments[open_names[-1]] = " ".join(positional[len(open_names) - 1:])
    missing = [a.name for a in prompt.arguments or [] if a.required and a.name not in arguments]
    if missing:
        raise ValueError(f"missing {', '.join(missing)} (usage: NAME=VALUE, or the values in order: "
                         f"{' '.join(declared)})")
    return arguments


def _first_line(text: str | None, width: int = 80) -> str:
    """A description's first line, cut to ``width`` with "…" (never mid-word unsaid)."""
    return one_line(text or "", width)


_MARKDOWN = re.compile(r"[\\`*_~<>()|]|^\s*(?:[#+=-]|\d+[.)])")


def verbatim(text: str) -> str:
    """Markdown that shows each line of ``text`` as it is, one under the other (its markdown
    characters escaped, CommonMark hard breaks between lines): a server's stderr in a notice,
    without a code block's blank lines and indentation around it."""
    lines = [_MARKDOWN.sub(lambda m: "".join("\\" + c if not c.isspace() and not c.isdigit() else c
                                             for c in m[0]), line) for line in text.splitlines()]
    return "\\\n".join(lines)


def describe_servers(client: McpClient | None, settings: McpSettings | None, started: bool) -> str:
    """``/mcp``'s Markdown: each server with its state, how it runs, its tools and prompts; a
    failed one's error and stderr tail; a project server not trusted yet."""
    if settings is None:
        return "MCP servers are still being read." if not started else "No MCP servers are configured."
    if not settings.servers:
        return ("No MCP servers are configured: add `[mcp.servers.NAME]` to scout.toml (a `command` and `args`, or a "
                "`url`), or a project's `.mcp.json`.")
    from scout_tui.mcp.resources import LIST_TOOL, READ_TOOL
    from scout_tui.mcp.tools import needs_task, tool_name

    from scout_tui.session.status import server_states

    running = {s.name: s for s in (client.status() if client else [])}
    states = server_states(client, settings)
    lines = ["**MCP servers**", ""]
    for name, server in settings.servers.items():
        status = running.get(name)
        state = states[name]
        lines.append(f"- **{name}** · {state} · {server.describe()} · {server.origin}")
        if status is None and not server.trusted:
            lines.append("  - a project's server: not started until you trust it (`/trust`)")
        if status is not None and status.state == "failed":
            lines.append(f"  - {status.error}")
            if status.stderr_tail:
                lines.append("  - stderr: " + " ⏎ ".join(status.stderr_tail.splitlines()[-4:]))
        for tool in status.tools if status and status.state == "ready" else []:
            ro = " (read-only)" if tool.annotations is not None and tool.annotations.readOnlyHint else ""
            if needs_task(tool):
                ro = " (not offered to the model: it runs only as an MCP task, which scout-tui does not support)"
            lines.append(f"  - `{tool_name(name, tool.name)}`{ro}: {_first_line(tool.description)}")
        if status is not None and status.state == "ready" and status.resources:
            lines.append(f"  - resources: the model lists them with `{LIST_TOOL}` and reads one with `{READ_TOOL}`")
        for prompt in status.prompts if status and status.state == "ready" else []:
            args = " ".join(a.name.upper() if a.required else f"[{a.name.upper()}]" for a in prompt.arguments or [])
            lines.append(f"  - prompt `/{tool_name(name, prompt.name)}{' ' + args if args else ''}`: "
                         f"{_first_line(prompt.description)}")
    return "\n".join(lines)
