"""``/status``: what a session runs with, as Markdown, the same in the TUI, ``-p`` and ``acp``:
the model and provider, where the API key comes from (never the key), the context window, the
sandbox, the permission mode, the MCP servers, the memory files read, the session and its store.

Each fact is one function, which ``scout-tui doctor`` (frontends/doctor.py) uses too.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from scout_tui.core.errors import ScoutError

if TYPE_CHECKING:
    from scout_tui.config.layers import Config
    from scout_tui.config.models import ModelInfo
    from scout_tui.engine.agent import Agent
    from scout_tui.mcp.client import McpClient
    from scout_tui.mcp.config import McpSettings
    from scout_tui.session.session import Session
    from scout_tui.tools.permissions import Policy
    from scout_tui.tools.sandbox import SandboxSettings


def from_where(where: str) -> str:
    """A setting's origin as said after its value: "default", or "from <where>" (``Config.where``)."""
    return "default" if where == "default" else f"from {where}"


def model_source(config: Config) -> str:
    """Where the model in use (``runtime.model_name``) was chosen: "from /p/scout.toml:2",
    "default: the first of the profile's models" or "default: the provider's"."""
    if config.model:
        return from_where(config.where("model"))
    if config.profile.models:
        return "default: the first of the profile's models"
    return "default: the provider's"


def key_source(config: Config) -> str:
    """Where the API key comes from ("set, from env ANTHROPIC_API_KEY (the key itself is never
    shown)", a config file's path and line, a flag), or how to set one; never the key."""
    from scout_tui.session.runtime import how_to_set_key

    source = config.sources.get("api_key")
    if config.api_key and source:
        return f"set, {from_where(config.where('api_key'))} (the key itself is never shown)"
    how = how_to_set_key(config)
    if config.base_url:
        return f"none (a server of your own at base_url may need none; if it does: {how})"
    return f"none: {how}"


def without_password(url: str) -> str:
    """``url`` with the password of any ``user:password@`` part replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def window_line(config: Config, info: ModelInfo | None, agent: Agent | None = None) -> str:
    """The context window, where its size comes from, and the token estimate's calibration
    (``calibration.window_text``): the running agent's (a window an overflow error named in this
    run included) when there is one, else ``info``'s and what earlier runs calibrated (read
    from disk: call it off the UI's event loop)."""
    from scout_tui.config.calibration import read_learnt, window_text

    if agent is not None:
        window = agent.window.context_window
        source = (info.window_source if info is not None and info.context_window == window
                  else "named by the server's overflow error in this run")
        return window_text(window, source, agent.window.estimator.ratio, agent.window.estimator.samples)
    from scout_tui.session.runtime import learnt_key

    learnt = read_learnt(learnt_key(config))
    return window_text(info.context_window if info else None, info.window_source if info else "",
                       learnt.ratio, learnt.samples)


def sandbox_line(settings: SandboxSettings | None) -> str:
    """The sandbox asked for and whether commands run in it (``sandbox.in_force``; the first
    call runs bwrap once: call it off the UI's event loop)."""
    from scout_tui.tools import sandbox

    if settings is None or settings.mode == "off":
        return "off: commands run unsandboxed"
    if sandbox.in_force(settings) == settings.mode:
        network = "network on" if settings.network else "no network"
        return f"{settings.mode}, active ({network})"
    why = sandbox.unavailable_reason() or "bwrap cannot run here"
    return f"{settings.mode} asked for, not active: {why}; commands run unsandboxed"


def mode_line(config: Config, policy: Policy | None) -> str:
    """The permission mode in force and where it was chosen (or that it changed this session)."""
    if policy is None:
        return f"{config.permission_mode} ({from_where(config.where('permission_mode'))})"
    if policy.mode == config.permission_mode:
        how = from_where(config.where("permission_mode"))
    elif config.permission_mode == "yolo":
        how = "a project's scout.toml cannot set yolo"
    else:
        how = "changed in this session"
    return f"{policy.mode} ({how})"


def server_states(client: McpClient | None, settings: McpSettings | None) -> dict[str, str]:
    """Each MCP server's name and state: a running one's (``client.STATES``), "not trusted" for a
    project's server not trusted yet, else "stopped". Without ``settings``, the running ones."""
    running = {s.name: s.state for s in (client.status() if client else [])}
    if settings is None:
        return running
    return {name: running.get(name) or ("not trusted" if not server.trusted else "stopped")
            for name, server in settings.servers.items()}


def memory_files_read(session: Session) -> list[tuple[Path, bool]]:
    """The memory files (``AGENTS.md``, ``CLAUDE.md``…) ``session``'s system prompt carries, in
    its order, each with whether the budget cut it: as the session read them, else read now."""
    from scout_tui.session.memory import memory_files

    files = session.memory.files if session.memory is not None else memory_files(session.cwd)
    return [(Path(f.path), bool(f.clipped)) for f in files]


def hooks_line(session: Session) -> str:
    """How many hooks the session has and how many wait for trust ("none configured" without)."""
    settings = session.hook_settings
    if settings is None or not settings.hooks:
        return "none configured" if settings is not None else "read when the first prompt is sent"
    waiting = sum(not hook.trusted for hook in settings.hooks)
    return f"{len(settings.hooks)}" + (f" ({waiting} not trusted yet: `/trust`)" if waiting else "") + "; `/hooks` lists them"


def status_report(session: Session, *, policy: Policy | None, sandbox: SandboxSettings | None,
                  info: ModelInfo | None, mcp: McpSettings | None) -> str:
    """``/status``'s Markdown for ``session`` with the permission ``policy``, ``sandbox``
    settings, model ``info`` and MCP ``settings`` its front end holds. Reads the disk and may run
    bwrap once: call it in a thread."""
    from scout_tui.session.runtime import model_name

    config = session.config
    provider = f"{config.provider} ({from_where(config.where('provider'))})"
    if config.base_url:
        provider += f", at {without_password(config.base_url)} ({from_where(config.where('base_url'))})"
    memory = memory_files_read(session)
    states = server_states(session.mcp, mcp)
    servers = ", ".join(f"{name} ({state})" for name, state in states.items()) or "none configured"
    if session.id is None:
        stored = f"new, stored with its first prompt in `{session.store.path}`"
    else:
        stored = f"`{session.id}` in `{session.store.path}`"
    rows = [
        ("Model", f"`{model_name(config)}` ({model_source(config)})"),
        ("Provider", provider),
        ("API key", key_source(config)),
        ("Context window", window_line(config, info, session.agent)),
        ("Sandbox", sandbox_line(sandbox)),
        ("Permission mode", f"{mode_line(config, policy)}; the rules: `/permissions`"),
        ("MCP servers", servers + ("; `/mcp` shows their tools" if states else "")),
        ("Memory files", ", ".join(f"`{path}`" + (" (cut: the memory budget)" if cut else "") for path, cut in memory)
         or "none read"),
        ("Hooks", hooks_line(session)),
        ("Session", stored),
        ("Directory", f"`{session.cwd}`"),
    ]
    return "**Status**\n\n" + "\n".join(f"- **{name}**: {value}" for name, value in rows)


async def session_status(session: Session) -> str:
    """``/status`` for a front end without the TUI (``-p``, ``acp``): ``status_report`` with the
    agent's policy and sandbox, the model info the session was opened with and the configured
    MCP servers, in a thread."""
    from scout_tui.mcp.config import mcp_settings

    agent = session.agent
    policy = agent.permissions if agent is not None else session.agent_options.get("permissions")
    sandbox = agent.sandbox if agent is not None else session.agent_options.get("sandbox")

    def report() -> str:
        try:
            settings = mcp_settings(session.config, session.cwd)
        except ScoutError:  # said where the servers start; the running ones are still listed
            settings = None
        return status_report(session, policy=policy, sandbox=sandbox, info=session.agent_options.get("info"),
                             mcp=settings)

    return await asyncio.to_thread(report)
