"""Hooks as configured: commands run at points of a session (before a tool call, after it, when a
prompt is submitted, when the model stops…), in Claude Code's protocol
(https://docs.anthropic.com/en/docs/claude-code/hooks), read from

- ``[[hooks.EVENT]]`` tables of the scout.toml files (``matcher``, ``command``, ``timeout``; or
  Claude Code's nesting, ``hooks = [{type = "command", command = …}]``);
- a project's ``.claude/settings.json`` and ``.claude/settings.local.json`` ``hooks``, as Claude
  Code writes them (``{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
  "command": "…", "timeout": 60}]}]}``).

A project's hooks (its scout.toml, its ``.claude`` files) run only once the person trusted that
exact entry (``config.trust``, ``scout-tui trust``), as its plugins and MCP servers. A hook entry
that cannot be read stops the start (``ScoutError`` naming file and line): a misspelt guard must
not silently stop guarding.
"""

from __future__ import annotations

import difflib
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from scout_tui.config.files import CLAUDE_SETTINGS, in_project, json_line, read_claude_settings
from scout_tui.config.tomlpos import array_table_lines, where
from scout_tui.config.trust import PluginFile, check_entry, lazy_trusted, read_trusted
from scout_tui.core.errors import ScoutError

EVENTS = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SubagentStop", "SessionStart", "SessionEnd",
          "PreCompact", "Notification")
"""The hook events scout-tui fires, by Claude Code's names."""

OTHER_EVENTS = ("PermissionRequest", "PostToolUseFailure", "SubagentStart")
"""Claude Code events scout-tui does not fire: their hooks in a ``.claude`` file are listed as unused."""

MATCHED_BY = {"PreToolUse": "tool name", "PostToolUse": "tool name", "SessionStart": "source",
              "SessionEnd": "reason", "PreCompact": "trigger", "Notification": "notification type"}
"""The events whose ``matcher`` is read, and what it is matched against; the others run every hook."""

DEFAULT_TIMEOUT = 60.0
"""Seconds a hook runs before it is stopped (Claude Code's default)."""

_TOML_KEYS = ("matcher", "command", "timeout", "type", "hooks")

HOOK_UNTRUSTED = ("it is a project's, new or changed since you trusted it; read it, then run `scout-tui trust` (or "
                  "/trust) to run it")


@dataclass(frozen=True)
class HookConfig:
    """One hook command.

    Attributes:
        event: one of ``EVENTS``.
        command: a shell command line (run by ``/bin/sh -c`` in the working directory).
        matcher: a regular expression the whole tool name (or source, trigger…) must match; ""
            or "*" match everything.
        timeout: seconds before it is stopped.
        origin: "<file>:<line>" where it is configured.
        dialect: "claude" for a ``.claude`` file's hook: it is told tool names and inputs as
            Claude Code names them (``Bash``, ``file_path``); "scout" for scout.toml's.
        trust: a project's hook's trust entry (None: the person's own, always trusted).
    """

    event: str
    command: str
    matcher: str = ""
    timeout: float = DEFAULT_TIMEOUT
    origin: str = ""
    dialect: str = "scout"
    trust: PluginFile | None = field(default=None, repr=False, compare=False)

    @property
    def trusted(self) -> bool:
        return self.trust is None or self.trust.trusted

    def matches(self, *names: str) -> bool:
        """Whether ``matcher`` matches the whole of one of ``names`` (an event without a matcher,
        ``MATCHED_BY``, always matches)."""
        if self.event not in MATCHED_BY or self.matcher in ("", "*"):
            return True
        pattern = re.compile(self.matcher)
        return any(pattern.fullmatch(name) for name in names if name)


@dataclass
class HookSettings:
    """The hooks configured for a workspace, in order, and ``notes`` for the front end (a project
    a Claude Code event scout-tui does not fire, an unreadable trust file)."""

    hooks: list[HookConfig] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def said(self) -> list[str]:
        """What a front end says at start: ``notes``, and a line per project hook not trusted yet."""
        return [*self.notes, *(f"{hook.origin}: {hook.event} hook `{hook.command}` not run: {HOOK_UNTRUSTED}"
                               for hook in self.hooks if not hook.trusted)]

    def runnable(self, event: str) -> list[HookConfig]:
        """The trusted hooks of ``event``, each command once (Claude Code runs a repeated one once)."""
        seen: set[tuple[str, str]] = set()
        found = []
        for hook in self.hooks:
            if hook.event == event and hook.trusted and (hook.matcher, hook.command) not in seen:
                seen.add((hook.matcher, hook.command))
                found.append(hook)
        return found


def hook_settings(config: Any, cwd: Path) -> HookSettings:
    """The hooks of a ``Config`` run in ``cwd``: each layer's ``[[hooks.EVENT]]`` (user file, then
    project file), then ``cwd/.claude/settings.json`` and ``settings.local.json``. A project's
    hooks carry their trust state; an untrusted one has a note and does not run.

    Raises:
        ScoutError: a hook entry that cannot be read: an event name close to a known one
            (``PreTooluse``), no ``command``, a bad ``timeout`` or ``matcher`` (naming file and
            line); a ``.claude`` file that is not JSON.
    """
    settings = HookSettings()
    trust_table = lazy_trusted(settings.notes)

    for layer in config.layers:
        table = layer.table.get("hooks")
        if table is not None:
            project = in_project(layer.path, cwd)
            settings.hooks += toml_hooks(layer.path, layer.text, table, trust_table if project else None, settings.notes)
    for name in CLAUDE_SETTINGS:
        settings.hooks += json_hooks(Path(cwd) / name, trust_table, settings.notes)
    return settings


def project_hook_trust(cwd: Path) -> tuple[list[PluginFile], list[str]]:
    """Each hook of the project in ``cwd`` (``./scout.toml``'s ``[hooks]``, ``./.claude/settings*.json``)
    as a trust entry with its state, and the problems met, for ``scout-tui trust`` and ``/trust``.
    Never raises."""
    from scout_tui.config.files import CONFIG_FILE
    from scout_tui.config.layers import read_text
    import tomllib

    trusted, problem = read_trusted()
    problems = [problem] if problem else []
    hooks: list[HookConfig] = []
    path = Path(cwd) / CONFIG_FILE
    try:
        if path.is_file():
            text = read_text(path)
            table = tomllib.loads(text).get("hooks")
            if table is not None:
                hooks += toml_hooks(path, text, table, lambda: trusted, [])
        for name in CLAUDE_SETTINGS:
            hooks += json_hooks(Path(cwd) / name, lambda: trusted, [])
    except (OSError, tomllib.TOMLDecodeError, ScoutError) as exc:
        problems.append(str(exc))
    return [hook.trust for hook in hooks if hook.trust is not None], problems


def is_hook_entry(entry: PluginFile) -> bool:
    """Whether trust entry ``entry`` is a hook's (``project_hook_trust``)."""
    return "#hooks." in entry.key


def reread_hooks(session: Any) -> str:
    """Read ``session``'s hooks again (in a thread: files), so that ones trusted since run from the
    next event on (no agent yet: they are read with it). Returns "" or, for a hook entry now
    unreadable, its error (the hooks in force stay)."""
    if session.hooks is None:
        return ""
    try:
        session.hooks.settings = session.hook_settings = hook_settings(session.config, session.cwd)
    except ScoutError as exc:
        return f"{exc} (the hooks read before stay in force)"
    return ""


def toml_hooks(path: Path, text: str, table: Any, trust: Callable[[], dict[str, str]] | None,
               notes: list[str]) -> list[HookConfig]:
    """The hooks of one scout.toml's ``hooks`` table (``trust``: the trusted table, for a project's
    file; None for the person's own). Raises ``ScoutError`` as ``hook_settings``."""
    if not isinstance(table, dict):
        raise ScoutError(f"{where(path, text, ('hooks',))}: hooks must be a table of events, each a list of hooks "
                         "([[hooks.PreToolUse]] with matcher and command)")
    hooks = []
    for event, entries in table.items():
        at_event = where(path, text, ("hooks", event), table=("hooks",))
        if not _known_event(event, at_event, notes):
            continue
        lines = array_table_lines(text, ("hooks", event))
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise ScoutError(f"{at_event}: hooks.{event} must be a list of tables ([[hooks.{event}]] with "
                             "matcher and command)")
        for n, entry in enumerate(entries):
            origin = f"{path}:{lines[n]}" if n < len(lines) else at_event
            for key in entry:
                if key not in _TOML_KEYS:
                    raise ScoutError(f"{origin}: unknown key {key!r} in a {event} hook (known: matcher, command, "
                                     "timeout)")
            hooks += _entry(event, entry, origin, "scout", path, trust, notes)
    return hooks


def json_hooks(path: Path, trust: Callable[[], dict[str, str]], notes: list[str]) -> list[HookConfig]:
    """The hooks of a ``.claude/settings*.json`` at ``path`` (none when it does not exist or has no
    ``hooks``), each with its trust entry. Raises ``ScoutError`` as ``hook_settings``."""
    read = read_claude_settings(path)
    if read is None:
        return []
    text, document = read
    table = document.get("hooks") if isinstance(document, dict) else None
    if table is None:
        return []
    if not isinstance(table, dict):
        raise ScoutError(f"{path}:{json_line(text, ('hooks',))}: hooks must be an object of events")
    hooks = []
    for event, groups in table.items():
        at_event = f"{path}:{json_line(text, ('hooks', event))}"
        if not _known_event(event, at_event, notes):
            continue
        if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
            raise ScoutError(f"{at_event}: hooks.{event} must be a list of {{\"matcher\", \"hooks\"}} objects")
        for group in groups:
            hooks += _entry(event, group, at_event, "claude", path, trust, notes)
    return hooks


def _known_event(event: str, where: str, notes: list[str]) -> bool:
    """Whether hooks of ``event`` are read: one of ``EVENTS``; a Claude Code event scout-tui does not
    fire, or a name unlike any, is a note (False); a name close to a known one stops the start."""
    if event in EVENTS:
        return True
    close = difflib.get_close_matches(event, EVENTS, n=1, cutoff=0.8)
    if close:
        raise ScoutError(f"{where}: unknown hook event {event!r}; did you mean {close[0]!r}? scout-tui stops here: "
                         "a misspelt hook would not run")
    what = "an event scout-tui does not fire" if event in OTHER_EVENTS else f"unknown (known: {', '.join(EVENTS)})"
    notes.append(f"{where}: hooks of {event!r} are not run: {what}")
    return False


def _entry(event: str, entry: dict, origin: str, dialect: str, path: Path,
           trust: Callable[[], dict[str, str]] | None, notes: list[str]) -> list[HookConfig]:
    """The hooks of one entry: flat (``command``) or Claude Code's group (``hooks``: a list of
    ``{"type": "command", "command", "timeout"}``) under one ``matcher``; one of another type
    (Claude Code's ``"prompt"`` hooks, which ask a model) is a note, not run."""
    matcher = entry.get("matcher", "")
    if not isinstance(matcher, str):
        raise ScoutError(f"{origin}: a {event} hook's matcher must be a string (a regular expression), got {matcher!r}")
    try:
        re.compile(matcher)
    except re.error as exc:
        raise ScoutError(f"{origin}: a {event} hook's matcher {matcher!r} is not a regular expression: {exc}") from None
    if "hooks" in entry:
        inner = entry["hooks"]
        if not isinstance(inner, list) or not all(isinstance(h, dict) for h in inner):
            raise ScoutError(f"{origin}: a {event} entry's hooks must be a list of {{type, command}} objects")
        commands = [h for h in inner if h.get("type", "command") == "command"]
        notes += [f"{origin}: a {event} hook of type {h.get('type')!r} is not run: scout-tui runs command hooks"
                  for h in inner if h.get("type", "command") != "command"]
    else:
        commands = [entry]
    found = []
    for hook in commands:
        command, timeout = hook.get("command"), hook.get("timeout", DEFAULT_TIMEOUT)
        if not isinstance(command, str) or not command.strip():
            raise ScoutError(f"{origin}: a {event} hook needs a command (a shell command line)")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < 86_400:
            raise ScoutError(f"{origin}: a {event} hook's timeout must be a number of seconds above 0, got {timeout!r}")
        entry_trust = None
        if trust is not None:
            source = json.dumps({"event": event, "matcher": matcher, "command": command, "timeout": timeout},
                                sort_keys=True).encode() + _scripts(command, path)
            entry_trust = check_entry(path, f"hooks.{event}.{command}", source, trust(),
                                      f"{event} hook `{command}` ({origin})")
        found.append(HookConfig(event, command, matcher, float(timeout), origin, dialect, entry_trust))
    return found


def _scripts(command: str, path: Path) -> bytes:
    """The content of each file of the project that hook ``command`` (configured in ``path``)
    names, ``$CLAUDE_PROJECT_DIR/.claude/hooks/guard.py`` or ``.agents/hooks/guard.sh``: part of
    what is trusted, so that a script changed since (by a pull) is asked about again. Each as
    ``"\\n--- NAME\\n"`` and its bytes; b"" when it names none."""
    root = (path.parent.parent if path.parent.name == ".claude" else path.parent).resolve()
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    found = b""
    for word in dict.fromkeys(words):
        for variable in ("CLAUDE_PROJECT_DIR", "SCOUT_PROJECT_DIR"):
            word = word.replace("${%s}" % variable, str(root)).replace("$" + variable, str(root))
        if "$" in word or not word or len(word) > 4096:
            continue
        file = (root / word).resolve()
        try:
            if file.is_relative_to(root) and file != root and file.is_file():
                found += f"\n--- {file.relative_to(root)}\n".encode() + file.read_bytes()
        except OSError:
            continue
    return found


def describe_hooks(settings: HookSettings) -> str:
    """``/hooks`` as Markdown: each configured hook by event, with its matcher, command, timeout,
    where it is configured and whether it runs; then the notes."""
    if not settings.hooks:
        lines = ["No hooks configured. Add `[[hooks.PreToolUse]]` (matcher, command, timeout) to scout.toml, or "
                 "use a project's `.claude/settings.json` hooks; events: " + ", ".join(EVENTS) + "."]
    else:
        lines = [f"**Hooks** ({len(settings.hooks)}):", ""]
        for event in EVENTS:
            for hook in (h for h in settings.hooks if h.event == event):
                matcher = f" `{hook.matcher}`" if hook.event in MATCHED_BY and hook.matcher not in ("", "*") else ""
                state = "" if hook.trusted else " — **not run: not trusted** (`/trust`)"
                lines.append(f"- **{event}**{matcher}: `{hook.command}` ({hook.timeout:g} s) · {hook.origin}{state}")
    lines += [f"- {note}" for note in settings.notes]
    return "\n".join(lines)


def hooks_report(config: Any, cwd: Path) -> str:
    """``/hooks``: the hooks of ``config`` in ``cwd`` read now (``hook_settings``) and described
    (``describe_hooks``), or the error of an entry that cannot be read."""
    try:
        return describe_hooks(hook_settings(config, cwd))
    except ScoutError as exc:
        return f"The hooks cannot be read: {exc}. No request is sent until it is fixed."
