"""The MCP servers a run may start: ``[mcp.servers.NAME]`` tables of the scout.toml files and the
``mcpServers`` of a project's ``.mcp.json`` (the shape Claude Code and other agents read), checked
with file and line, and which of the project's servers the person trusted (``trust.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from scout_tui.config.files import CONFIG_FILE, ConfigFile, in_project, json_line
from scout_tui.core.errors import ScoutError
from scout_tui.mcp.hidden import arg_secrets, header_secrets, shown_args, shown_url, url_secrets
from scout_tui.config.tomlpos import where
from scout_tui.config.trust import PluginFile, check_entry, lazy_trusted, read_trusted

MCP_JSON = ".mcp.json"
TOML_KEYS = ("type", "command", "args", "env", "url", "headers", "startup_timeout", "tool_timeout")
JSON_KEYS = ("type", "command", "args", "env", "url", "headers")
HTTP_TYPES = ("http", "streamable-http", "streamableHttp")
STARTUP_TIMEOUT = 30.0
"""Seconds a server has to start, answer ``initialize`` and list its tools."""
STARTUP_WAIT = 5.0
"""Seconds a first request waits for servers still starting (``[mcp] startup_wait``); it then
goes on without them, and they join a later request once ready."""
TOOL_TIMEOUT = 600.0
"""Seconds a tool call may take before it fails (the person can stop it earlier with Esc)."""
NAME = re.compile(r"[A-Za-z0-9_-]+\Z")

UNTRUSTED_SERVER = ("not started: it is new or changed since you trusted it; read it, then run "
                    "`scout-tui trust` (or /trust) to start it")


@dataclass(frozen=True)
class ServerConfig:
    """One configured MCP server.

    Attributes:
        name: its name in the config (letters, digits, ``_``, ``-``), as in ``mcp__NAME__TOOL``.
        transport: ``"stdio"`` (``command`` with ``args`` and ``env``), ``"http"`` (streamable
            HTTP at ``url`` with ``headers``) or ``"sse"`` (the older HTTP+SSE transport, for a
            server that offers nothing else: ``"type": "sse"``).
        origin: "<file>:<line>" of its definition.
        startup_timeout, tool_timeout: seconds.
        trust: for a project's server (``.mcp.json``, or the project's own scout.toml), its trust
            entry (``trust.check_entry``); None for the person's own servers, always trusted.
        problem: why it cannot start although its shape is right (an unset ``${VAR}``), or "".
    """

    name: str
    transport: str
    origin: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict, repr=False)
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    startup_timeout: float = STARTUP_TIMEOUT
    tool_timeout: float = TOOL_TIMEOUT
    trust: PluginFile | None = field(default=None, repr=False)
    problem: str = ""

    @property
    def trusted(self) -> bool:
        return self.trust is None or self.trust.trusted

    @property
    def secrets(self) -> list[str]:
        """Values never to show: every header value and each of its words (tokens, as often as
        not: ``hidden.header_secrets``), the URL's query values and password, the arguments that
        hold a credential (``hidden.arg_secrets``), and the env values that name or look like a
        credential (``looks_secret``). A folder or a setting in env stays readable in the
        server's stderr, where it is what explains a failure."""
        return list(dict.fromkeys([*(v for k, v in self.env.items() if looks_secret(k, v)),
                                   *header_secrets(self.headers.values()), *url_secrets(self.url),
                                   *arg_secrets(self.args)]))

    def describe(self) -> str:
        """"stdio: npx -y server", "http: https://host/mcp" or "sse: …" (never env or header values;
        query values and credential arguments read ``[redacted]``: ``hidden.shown_args``)."""
        if self.transport == "stdio":
            return "stdio: " + " ".join([self.command or "(no command)", *shown_args(self.args)])
        return f"{self.transport}: {self.shown_url}"

    @property
    def shown_url(self) -> str:
        """``url`` with its query values and password read ``[redacted]`` (``hidden.shown_url``)."""
        return shown_url(self.url)


@dataclass
class McpSettings:
    """``servers`` by name (a later file's server replaces an earlier one of its name) and
    ``notes`` for the front end (a project server not trusted yet, one replaced)."""

    servers: dict[str, ServerConfig] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    startup_wait: float = STARTUP_WAIT
    """Seconds a first request waits for servers still starting (``[mcp] startup_wait``)."""

    def startable(self) -> list[ServerConfig]:
        """The servers that may start: trusted ones."""
        return [s for s in self.servers.values() if s.trusted]


def mcp_settings(config: Any, cwd: Path, environ: Mapping[str, str] | None = None) -> McpSettings:
    """The MCP servers of a ``Config`` run in ``cwd``: ``config.layers``' ``[mcp.servers.NAME]``
    (user file < project file), then ``cwd/.mcp.json``'s ``mcpServers`` (a name the scout.toml
    files define keeps theirs). A project's servers (``.mcp.json``, or the project's own
    scout.toml: ``config.in_project``) carry their trust state; an untrusted one has a note.

    Never raises for what the files say: a server whose entry is wrong (an unknown key in
    scout.toml, a value of the wrong type, neither or both of ``command`` and ``url``) is kept
    with that error as its ``problem`` (it fails, naming file and line; the others start), and
    a file that cannot be read at all (``.mcp.json`` not JSON, ``[mcp]`` not a table) is a note.
    """
    environ = os.environ if environ is None else environ
    settings = McpSettings()
    trust_table = lazy_trusted(settings.notes)

    for layer in config.layers:
        project = in_project(layer.path, cwd)
        try:
            found = _toml_servers(layer, environ, trust_table if project else None)
            settings.startup_wait = _startup_wait(layer, settings.startup_wait, settings.notes)
        except ScoutError as exc:  # the [mcp] table itself: its servers are left out, the others start
            settings.notes.append(f"MCP servers of this file not started: {exc}")
            found = []
        for server in found:
            settings.servers[server.name] = server
    path = Path(cwd) / MCP_JSON
    try:
        found = json_servers(path, environ, trust_table)
    except ScoutError as exc:  # a project's broken file must not take the person's own servers with it
        settings.notes.append(f"MCP servers of this file not started: {exc}")
        found = []
    for server in found:
        if server.name in settings.servers:
            settings.notes.append(f"{server.origin}: MCP server {server.name!r} is not used: "
                                  f"{settings.servers[server.name].origin} defines one of that name")
            continue
        settings.servers[server.name] = server
    for server in settings.servers.values():
        if not server.trusted:
            settings.notes.append(f"{server.origin}: MCP server {server.name!r} {UNTRUSTED_SERVER}")
    return settings


def project_server_trust(cwd: Path) -> tuple[list[PluginFile], list[str]]:
    """Each MCP server of the project in ``cwd`` (``./scout.toml``'s ``[mcp.servers]``,
    ``./.mcp.json``'s ``mcpServers``) as a trust entry with its state, and the problems met (a
    file that does not parse or check, an unreadable trust file), for ``scout-tui trust`` and
    ``/trust``. Never raises."""
    trusted, problem = read_trusted()
    problems = [problem] if problem else []
    entries: list[PluginFile] = []
    toml_path = Path(cwd) / CONFIG_FILE
    try:
        if toml_path.is_file():
            text = toml_path.read_text(encoding="utf-8")
            layer = ConfigFile(toml_path, text, tomllib.loads(text))
            entries += [s.trust for s in _toml_servers(layer, os.environ, lambda: trusted) if s.trust]
        entries += [s.trust for s in json_servers(Path(cwd) / MCP_JSON, os.environ, lambda: trusted) if s.trust]
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ScoutError) as exc:
        problems.append(str(exc))
    return entries, problems


def _toml_servers(layer: ConfigFile, environ: Any, trust: Any) -> list[ServerConfig]:
    table = layer.table.get("mcp")
    if table is None:
        return []
    path, text = layer.path, layer.text

    def at(*key: str) -> str:
        return where(path, text, ("mcp", *key), table=("mcp",))

    if not isinstance(table, dict):
        raise ScoutError(f"{at()}: [mcp] must be a table, with servers in [mcp.servers.NAME]")
    for unknown in sorted(set(table) - {"servers", "startup_wait"}):
        raise ScoutError(f"{at(unknown)}: unknown key {unknown!r} in [mcp] (known: startup_wait; servers go in "
                         "[mcp.servers.NAME])")
    servers = table.get("servers", {})
    if not isinstance(servers, dict):
        raise ScoutError(f"{at('servers')}: mcp.servers must be a table of servers ([mcp.servers.NAME])")
    return [_checked(name, entry, lambda *key, name=name: at("servers", name, *key), TOML_KEYS,
                     f"[mcp.servers.{name}]", environ, trust, path)
            for name, entry in servers.items()]


def _startup_wait(layer: ConfigFile, current: float, notes: list[str]) -> float:
    """``[mcp] startup_wait`` of ``layer`` (seconds, 0 or more), or ``current`` when it has
    none; a bad value is a note naming its file and line, and ``current`` stays."""
    table = layer.table.get("mcp")
    if not isinstance(table, dict) or "startup_wait" not in table:
        return current
    value = table["startup_wait"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        notes.append(f"{where(layer.path, layer.text, ('mcp', 'startup_wait'))}: [mcp] startup_wait must be a number "
                     "of seconds (0 or more), got "
                     f"{value!r}; using {current:g}")
        return current
    return float(value)


def json_servers(path: Path, environ: Any, trust: Any) -> list[ServerConfig]:
    """The ``mcpServers`` of the ``.mcp.json`` at ``path`` (none when it does not exist), each
    with its trust entry from ``trust()`` (the trusted table). Raises ``ScoutError`` as
    ``mcp_settings``."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise ScoutError(f"{path}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScoutError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
    if not isinstance(document, dict) or not isinstance(document.get("mcpServers", {}), dict):
        raise ScoutError(f"{path}:1: expected {{\"mcpServers\": {{NAME: {{\"command\": …}} or {{\"url\": …}}}}}}")

    def at(name: str, *key: str) -> str:
        return f"{path}:{json_line(text, ('mcpServers', name, *key))}"

    # Other agents share the file and add keys of their own ("disabled", "autoApprove", ...): those
    # are left alone, and a server another agent has disabled is not started here either.
    return [_checked(name, {k: v for k, v in entry.items() if k in JSON_KEYS} if isinstance(entry, dict) else entry,
                     lambda *key, name=name: at(name, *key), JSON_KEYS, f"mcpServers.{name}", environ, trust,
                     path, expand=True)
            for name, entry in document.get("mcpServers", {}).items()
            if not (isinstance(entry, dict) and entry.get("disabled") is True)]


def _checked(name: str, entry: Any, where: Any, *args: Any, **kwargs: Any) -> ServerConfig:
    """``_server``, or, for an entry it refuses, a server that fails with that error (naming
    its file and line) while the others start."""
    try:
        return _server(name, entry, where, *args, **kwargs)
    except ScoutError as exc:
        return ServerConfig(name, "stdio", where(), problem=str(exc))


def _server(name: str, entry: Any, where: Any, known: tuple[str, ...], what: str, environ: Any, trust: Any,
            path: Path, *, expand: bool = False) -> ServerConfig:
    if not NAME.fullmatch(name) or "__" in name:
        raise ScoutError(f"{where()}: MCP server name {name!r}: use letters, digits, '_' or '-' (not '__', which "
                         "separates the server from the tool in mcp__SERVER__TOOL)")
    if not isinstance(entry, dict):
        raise ScoutError(f"{where()}: {what} must be a table with a command or a url")
    for unknown in sorted(set(entry) - set(known)):
        raise ScoutError(f"{where(unknown)}: unknown key {unknown!r} in {what} (known: {', '.join(known)})")
    if ("command" in entry) == ("url" in entry):
        raise ScoutError(f"{where()}: {what} needs either a command (stdio) or a url (streamable HTTP)")
    kind = entry.get("type", "stdio" if "command" in entry else "http")
    if kind not in ("stdio", "sse", *HTTP_TYPES):
        raise ScoutError(f"{where('type')}: {what}.type must be \"stdio\", \"http\" or \"sse\", got {kind!r}")
    if (kind == "stdio") != ("command" in entry):
        raise ScoutError(f"{where('type')}: {what}.type {kind!r} does not go with "
                         f"{'a url' if 'url' in entry else 'a command'}")
    problems: list[str] = []

    def text(key: str, value: Any) -> str:
        if not isinstance(value, str) or not value:
            raise ScoutError(f"{where(key)}: {what}.{key} must be a non-empty string, got {value!r}")
        return _expand(value, environ, problems, where(key)) if expand else value

    def strings(key: str) -> tuple[str, ...]:
        value = entry.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ScoutError(f"{where(key)}: {what}.{key} must be a list of strings")
        return tuple(_expand(v, environ, problems, where(key)) if expand else v for v in value)

    def table(key: str) -> dict[str, str]:
        value = entry.get(key, {})
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise ScoutError(f"{where(key)}: {what}.{key} must be a table of strings")
        return {k: _expand(v, environ, problems, where(key, k)) if expand else v for k, v in value.items()}

    def seconds(key: str, default: float) -> float:
        value = entry.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
            raise ScoutError(f"{where(key)}: {what}.{key} must be a positive number of seconds, got {value!r}")
        return float(value)

    stdio = "command" in entry
    server = ServerConfig(
        name, "stdio" if stdio else "sse" if kind == "sse" else "http", where(),
        command=text("command", entry["command"]) if stdio else "",
        args=strings("args") if stdio else (),
        env=table("env") if stdio else {},
        url=text("url", entry["url"]) if not stdio else "",
        headers=table("headers") if not stdio else {},
        startup_timeout=seconds("startup_timeout", STARTUP_TIMEOUT),
        tool_timeout=seconds("tool_timeout", TOOL_TIMEOUT),
        problem="; ".join(dict.fromkeys(problems)),
    )
    for key in ("args", "env") if not stdio else ("headers",):
        if key in entry:
            raise ScoutError(f"{where(key)}: {what}.{key} is for {'stdio' if key != 'headers' else 'HTTP'} servers")
    if trust is None:
        return server
    source = json.dumps({name: _hiding_credentials(entry)}, indent=2, sort_keys=True).encode()
    cannot = f": it cannot start: {server.problem}" if server.problem else ""
    entry_trust = check_entry(path, f"mcpServers.{name}", source, trust(),
                              label=f"MCP server {name} ({server.describe()[:60]}) in {path}{cannot}")
    return replace(server, trust=entry_trust)


_CREDENTIAL = re.compile(r"auth|key|token|secret|cookie|pass|session|signature|credential|dsn|url",
                         re.IGNORECASE)


def looks_secret(name: str, value: str) -> bool:
    """Whether an env or header entry may hold a credential: its name says so (``*_TOKEN``,
    ``API_KEY``, ``DATABASE_URL``...), or its value reads like one (20 characters or more with
    no space or slash: a token, not a path or a sentence)."""
    return bool(_CREDENTIAL.search(name)) or (len(value) >= 20 and not re.search(r"[\s/]", value))


def _hiding_credentials(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` with each header or env value whose name says it holds a credential, and each
    credential in its url or args (``hidden.url_secrets``, ``hidden.arg_secrets``), replaced by
    a hash of it: what trust is asked for and shown never holds a token, and a new token still
    changes what was trusted."""
    def hashed(value: str) -> str:
        return f"[hidden, sha256 {hashlib.sha256(value.encode()).hexdigest()[:12]}]"

    def without(text: str, secrets: list[str]) -> str:
        for secret in sorted(secrets, key=len, reverse=True):
            text = text.replace(secret, hashed(secret)) if "${" not in secret else text
        return text

    shown = dict(entry)
    for key in ("headers", "env"):
        if isinstance(shown.get(key), dict):
            shown[key] = {k: hashed(str(v)) if looks_secret(k, str(v)) and "${" not in str(v) else v
                          for k, v in shown[key].items()}
    if isinstance(shown.get("url"), str):
        shown["url"] = without(shown["url"], url_secrets(shown["url"]))
    if isinstance(shown.get("args"), list) and all(isinstance(a, str) for a in shown["args"]):
        hidden = set(arg_secrets(shown["args"]))
        shown["args"] = [without(a, [h for h in hidden if h in a]) for a in shown["args"]]
    return shown


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _expand(value: str, environ: Any, problems: list[str], where: str) -> str:
    """``${VAR}`` and ``${VAR:-default}`` replaced from ``environ`` (as Claude Code reads
    ``.mcp.json``); an unset one without a default adds "WHERE: ${VAR} is not set" to
    ``problems`` (``where``: the value's "<file>:<line>") and reads as ""."""
    def one(match: re.Match[str]) -> str:
        name, default = match[1], match[2]
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        problems.append(f"{where}: ${{{name}}} is not set")
        return ""

    return _VARIABLE.sub(one, value)
