"""``scout-tui doctor``: what a run in this directory would use (versions, config files, provider
and model, where the API key comes from, the sandbox in force and why, the permission rules), as
plain lines a person can read and paste into a bug report. Never a key, nor any part of one.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator, Mapping

from scout_tui import __version__
from scout_tui.config import keys
from scout_tui.backends import PROVIDERS
from scout_tui.config.layers import CONFIG_FILE, Config, load_config, user_config_dir
from scout_tui.core.errors import ScoutError
from scout_tui.config.models import check_models_tables
from scout_tui.session.runtime import model_name
from scout_tui.session.status import from_where, key_source, model_source, window_line, without_password
from scout_tui.config.tomlpos import where
from scout_tui.tools import sandbox
from scout_tui.tools.sandbox_after import missing_protected
from scout_tui.tools.sandbox_config import sandbox_from_config
from scout_tui.core.redaction import redact
from scout_tui.tools.permission_config import policy_from_config


def report(cwd: Path, flags: Mapping[str, Any] | None = None) -> Iterator[str]:
    """The doctor's lines for a run in ``cwd`` with the command line's ``flags`` (``load_config``'s:
    setting -> value, None for a flag not given), each without its newline, in the order to print:
    versions and platform and whether bwrap works here (none of which needs the configuration),
    then the sections ``config``, ``model``, ``sandbox``, ``permissions`` and ``mcp servers``.

    Every line has the configured keys (every profile's), the profiles' header values and the
    values of every provider key variable (``keys.secrets``) replaced by ``[redacted]``: none
    should hold one (a key is described by its source only, headers by their names), but a
    report is made to be pasted.

    Raises:
        ScoutError: a bad config file, ``[sandbox]``, ``[permissions]``, ``[models."ID"]``, ``[mcp]``
            or ``.mcp.json`` (naming the file and line), after the lines that could be made without it.
    """
    configured: list[str] = []
    for line in _report(Path(cwd).resolve(), configured, flags):
        yield redact(line, keys.secrets(configured))


def _report(cwd: Path, configured: list[str], flags: Mapping[str, Any] | None) -> Iterator[str]:
    """``report``'s lines; appends the configured key to ``secrets`` once it is known."""
    yield "scout-tui doctor"
    yield _row("scout-tui", __version__)
    yield _row("python", f"{platform.python_version()} ({sys.executable})")
    yield _row("platform", f"{platform.platform()} ({sys.platform})")
    yield _row("directory", str(cwd))
    yield _row("bwrap", _bwrap_line())

    places = [user_config_dir() / CONFIG_FILE, cwd / CONFIG_FILE]  # where load_config looks, in its order
    yield ""
    yield "config (later files win)"
    try:
        config = load_config(cwd, flags=flags)
        check_models_tables(config)
    except ScoutError:
        for path in places:
            yield _row("found" if path.is_file() else "not found", str(path))
        raise
    configured.extend(config.provider_keys())
    configured.extend(v for profile in config.profiles.values() for v in profile.headers.values() if len(v) >= 8)
    read = {layer.path.resolve() for layer in config.layers}
    for layer in config.layers:
        yield _row("read", str(layer.path))
    for path in places:
        if path.resolve() not in read:
            yield _row("not found", str(path))
    for note in config.notes:
        yield _row("note", note)

    yield ""
    yield "model"
    yield from _model(config)

    settings = sandbox_from_config(config, cwd)
    yield ""
    yield "sandbox"
    yield from _sandbox(config, cwd, settings)

    policy = policy_from_config(config, cwd)
    yield ""
    yield "permissions"
    mode_from = (_source(config.where("permission_mode")) if policy.mode == config.permission_mode
                 else "default: the project's setting is not used, see the note")
    yield _row("mode", f"{policy.mode} ({mode_from})")
    for kind, rules in (("allow", policy.allow), ("deny", policy.deny)):
        for rule in rules:
            yield _row(kind, f"{rule.text} ({_source(rule.origin)})")
        if not rules:
            yield _row(kind, "no rules")
    for note in policy.notes:
        yield _row("note", note)

    from scout_tui.mcp.config import mcp_settings

    servers = mcp_settings(config, cwd)
    configured += [value for server in servers.servers.values() for value in server.secrets]
    yield ""
    yield "mcp servers (started after the first frame; header and env values never shown)"
    for name, server in servers.servers.items():
        trust = "" if server.trusted else "; a project's, not trusted yet: `scout-tui trust`"
        yield _row(name, f"{server.describe()} ({_source(server.origin)}{trust})")
    if not servers.servers:
        yield _row("none", "no [mcp.servers.NAME] in scout.toml, no .mcp.json here")


def _model(config: Config) -> Iterator[str]:
    profile = config.profile
    backend: Any = PROVIDERS.get(profile.kind)
    known = f" (not built in: a plugin must provide it; built in: {', '.join(sorted(PROVIDERS))})" if backend is None else ""
    yield _row("provider", f"{config.provider} ({_source(config.where('provider'))}){known}")
    if profile.origin != "built-in":
        yield _row("profile", f"kind {profile.kind} ([providers.{config.provider}] from {profile.origin})")
    if profile.headers:  # their names only: values may be secrets
        yield _row("headers", ", ".join(sorted(profile.headers)) + " (values never shown)")
    others = sorted(name for name in config.profiles if name != config.provider)
    if others:
        yield _row("profiles", ", ".join(others) + " (the other profiles a session may switch to)")
    yield _row("model", f"{model_name(config)} ({model_source(config)})")
    if config.base_url:
        yield _row("base_url", f"{without_password(config.base_url)} ({_source(config.where('base_url'))})")
    else:
        yield _row("base_url", f"{getattr(backend, 'default_base_url', '') or '?'} (default: the provider's)")
    yield _row("api_key", key_source(config))
    yield _row("window", _window(config))
    present = sorted(name for name in keys.key_variables() if name in keys.environment())
    yield _row("withheld", "tools never see " + (", ".join(present) if present else "any provider key variable "
               f"({len(keys.key_variables())} known: {', '.join(keys.OWN_VARIABLES)} and those of models.dev)"))


def _window(config: Config) -> str:
    """The model's context window on its server (asking a server of one's own, as a run does)
    and what earlier runs calibrated of the token estimate (``status.window_line``)."""
    import asyncio

    from scout_tui.session.runtime import model_metadata_asking_the_server

    return window_line(config, asyncio.run(model_metadata_asking_the_server(config)))


def _sandbox(config: Config, cwd: Path, settings: sandbox.SandboxSettings) -> Iterator[str]:
    mode_from = _table_source(config, "mode", settings.mode)
    yield _row("requested", f"{settings.mode} ({_source(mode_from)})")
    mode = sandbox.in_force(settings)
    if mode != "off":
        yield _row("in force", mode)
    else:
        why = (f"sandbox.mode = \"off\" in {mode_from}" if settings.mode == "off"
               else sandbox.unavailable_reason() or "bwrap cannot run here")
        yield _row("in force", f"off: {why}; commands run unsandboxed")
    if mode == "off":
        yield _row("writable", "whatever your user can write (no sandbox)")
    elif mode == "read-only":
        yield _row("writable", "only /tmp, private to each command (the workspace is read-only)")
    else:
        places = [f"{cwd} (the workspace)", "/tmp (private to each command)", *map(str, settings.writable)]
        yield _row("writable", ", ".join(places))
    if settings.network:
        network = "on"
    elif mode == "off" and not sandbox.wraps(settings):
        network = "off requested, but not enforced: commands run unsandboxed"
    elif mode == "off":
        network = "off (a network namespace alone: bwrap keeps commands off the network, loopback included)"
    else:
        network = "off (no network, loopback included)"
    yield _row("network", f"{network} ({_source(_table_source(config, 'network', settings.network))})")
    if mode == "workspace-write":
        yield from _protected(cwd, settings)
    if mode != "off":
        sockets, folders = sandbox.hidden_paths(cwd)
        hidden = [f"{path} (socket)" for path in sockets] + [f"{path} (emptied)" for path in folders]
        yield _row("hidden", ", ".join(hidden) if hidden else "nothing here to hide (no known sockets, no config folder)")
        yield _row("sockets", sandbox.unix_sockets())
    for note in settings.notes:
        yield _row("note", note)


def _protected(cwd: Path, settings: sandbox.SandboxSettings) -> Iterator[str]:
    """The ``read-only`` row (the protected paths that exist) and an ``unguarded`` row naming
    those a command could still create, since the sandbox only protects what exists."""
    protected = sandbox.protected_paths(cwd, settings)
    yield _row("read-only", ", ".join(map(str, protected)) + " (what runs outside the sandbox later)" if protected
               else "none: no .git, .agents, .scout nor scout.toml here")
    if settings.mode != "workspace-write":
        return
    moved = [path.relative_to(cwd.resolve()).as_posix() for path in missing_protected(cwd, settings)]
    if moved:
        yield _row("moved", f"{', '.join(moved)} aside if a sandboxed command creates them (code and settings "
                   "scout-tui or git would run later: the write and edit tools ask instead, but in yolo)")
    git = ".git/hooks" if (cwd / ".git").is_dir() else ".git"
    if not os.path.lexists(cwd / git):
        yield _row("unguarded", f"{git} (not there, so a sandboxed command could create it)")


def _table_source(config: Config, key: str, value: Any) -> str:
    """"<path>:<line>" of the last config file whose ``[sandbox] key`` is ``value`` (the one in
    force: a value a project file may not set was not used), or "default"."""
    for layer in reversed(config.layers):
        table = layer.table.get("sandbox")
        if isinstance(table, dict) and table.get(key) == value and type(table.get(key)) is type(value):
            return where(layer.path, layer.text, ("sandbox", key))
    return "default"


def _bwrap_line() -> str:
    """Where bwrap is, its version, and whether it can build a sandbox here (or why not)."""
    path = sandbox.bwrap_path()
    reason = sandbox.unavailable_reason()
    if path is None:
        return f"not available: {reason}"
    where = f"{path} ({_bwrap_version(path)})"
    return f"{where}: can create a sandbox here" if reason is None else f"{where}: not available: {reason}"


def _bwrap_version(path: str) -> str:
    """``bwrap --version``'s first line ("bubblewrap 0.8.0"), or "version unknown"."""
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=sandbox.PROBE_TIMEOUT)
    except (OSError, subprocess.SubprocessError):
        return "version unknown"
    said = done.stdout.strip().splitlines()
    return said[0] if done.returncode == 0 and said else "version unknown"


_source = from_where


def _row(label: str, value: str) -> str:
    return f"  {label:<10} {value}"
