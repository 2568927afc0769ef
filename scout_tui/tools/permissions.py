"""The permission policy: whether a tool call runs, asks the person first, or is denied.

Modes (``ask``, ``auto-edit``, ``yolo``), ``[permissions] allow/deny`` rules such as
``"bash:git status*"`` or ``"edit:src/**"`` (deny wins), rules allowed for the session from the
approval prompt, and the workspace boundary: a path outside it always asks (but in ``yolo``).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Literal

from scout_tui.errors import ScoutError
from scout_tui.tools.search import glob_regex
from scout_tui.tools.shell_parts import Part, split_command

MODES = ("ask", "auto-edit", "yolo")
"""In order of Shift+Tab: ``ask`` (reads run, changes ask), ``auto-edit`` (edits inside the
workspace run, bash asks), ``yolo`` (nothing asks; deny rules still hold)."""

EDIT_TOOLS = frozenset({"write", "edit"})
"""Tools whose calls ``auto-edit`` lets through inside the workspace."""

PATH_KEY = "path"
"""The argument naming a file or folder, in the built-in tools (and plugin tools that follow them)."""

_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]+\Z")

Verdict = Literal["allow", "ask", "deny"]


@dataclass(frozen=True, slots=True)
class Rule:
    """``tool:pattern`` from config (``origin`` "path:line") or from the session (origin "session").

    For bash, ``pattern`` matches one command of a compound command, whitespace squeezed:
    ``*`` is any text, and a pattern ending in `` *`` also matches what is before it alone
    (``git status *`` matches ``git status``). For other tools it is a glob over the path
    relative to the workspace (``*`` within a folder, ``**`` across folders, ``{a,b}``), or
    over the absolute path when it starts with ``/`` or ``~``. An empty pattern matches
    every call of the tool.
    """

    tool: str
    pattern: str
    origin: str = "session"

    @property
    def text(self) -> str:
        return f"{self.tool}:{self.pattern}" if self.pattern else self.tool

    def matches(self, tool: str, subject: str | None) -> bool:
        if tool != self.tool:
            return False
        if not self.pattern:
            return True
        if subject is None:
            return False
        if tool == "bash":
            return _command_regex(self.pattern).fullmatch(" ".join(subject.split())) is not None
        pattern = self.pattern
        if pattern.startswith("~"):
            pattern = str(Path(pattern).expanduser())
        if pattern.startswith("/") != subject.startswith("/"):
            return False
        return _path_regex(pattern.lstrip("/")).match(subject.lstrip("/")) is not None


_path_regex = lru_cache(maxsize=512)(glob_regex)


def parse_rule(text: str, origin: str = "session") -> Rule:
    """``"tool"`` or ``"tool:pattern"`` as a Rule. Raises ScoutError naming ``origin``."""
    if not isinstance(text, str) or not text.strip():
        raise ScoutError(f"{origin}: a permission rule must be a non-empty string like \"bash:git status*\", got {text!r}")
    tool, _, pattern = text.strip().partition(":")
    tool = tool.strip()
    if not _TOOL_NAME.match(tool):
        raise ScoutError(f"{origin}: permission rule {text!r} must start with a tool name (bash, edit, write, read…)")
    return Rule(tool, pattern.strip(), origin)


@lru_cache(maxsize=512)
def _command_regex(pattern: str) -> re.Pattern[str]:
    pattern = " ".join(pattern.split())
    if pattern.endswith(" *"):
        body = ".*".join(re.escape(piece) for piece in pattern[:-2].split("*"))
        return re.compile(f"{body}(?: .*)?", re.DOTALL)
    return re.compile(".*".join(re.escape(piece) for piece in pattern.split("*")), re.DOTALL)


@dataclass(frozen=True, slots=True)
class Check:
    """The policy's answer for one call.

    ``verdict``: run it, ask first, or refuse. ``reason``: why, for the person and the model.
    ``suggestions``: the rules "allow for the session" would add (empty when that is not
    offered: a path outside the workspace, or a part that cannot be known before running).
    ``outside``: paths of the call outside the workspace.
    """

    verdict: Verdict
    reason: str = ""
    suggestions: tuple[str, ...] = ()
    outside: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    """A tool call waiting for the person's answer.

    ``id``, ``tool``, ``input``: the call. ``reason``: why it asks. ``suggestions``: the rules
    "allow for the session" adds (empty: not offered). ``diff``: the unified diff of an edit or
    write (None for other tools). ``mode``: the permission mode when it asked.
    """

    id: str
    tool: str
    input: dict
    reason: str
    suggestions: tuple[str, ...] = ()
    diff: str | None = None
    mode: str = "ask"


@dataclass(frozen=True, slots=True)
class Approval:
    """The answer to a ``PermissionRequest``.

    ``action``: ``allow`` (this call), ``allow_session`` (this call, and the request's
    suggested rules from now on), ``deny`` (the model reads why and goes on), ``stop`` (deny,
    and end the turn). ``reason``: what the person said, for the model. ``by``: ``user``, or
    who answered instead (``headless``, ``policy``).
    """

    action: Literal["allow", "allow_session", "deny", "stop"]
    reason: str = ""
    by: str = "user"

    def model_text(self) -> str:
        """What the model reads instead of the tool's result, for a denial."""
        if self.by != "user":
            return f"Not run: {self.reason}."
        if self.action == "stop":
            return "The user denied this tool call and stopped the turn. Wait for their next message."
        said = f" They said: {self.reason}" if self.reason else ""
        return f"The user denied this tool call.{said} Do not run it again as it is."


Approver = Callable[[PermissionRequest], Awaitable[Approval]]
"""Asks the person about a call (the TUI's approval prompt; headless answers by itself)."""


@dataclass
class Policy:
    """The rules in force for one workspace. ``mode`` may change at any time (Shift+Tab).

    Args:
        mode: one of ``MODES``.
        allow, deny: rules from config.
        workspace: the folder tools may change freely (after resolving ``..`` and symlinks).
    """

    mode: str = "ask"
    allow: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)
    workspace: Path = field(default_factory=Path.cwd)
    session: list[Rule] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ScoutError(f"unknown permission mode {self.mode!r} (known: {', '.join(MODES)})")
        self.workspace = self.workspace.resolve()

    def next_mode(self) -> str:
        """Switch to the mode after this one in ``MODES`` (wrapping) and return it."""
        self.mode = MODES[(MODES.index(self.mode) + 1) % len(MODES)]
        return self.mode

    def allow_for_session(self, rules: Iterable[str]) -> None:
        """Add rules (``"tool:pattern"``) that allow matching calls until the app closes."""
        for text in rules:
            rule = parse_rule(text)
            if rule not in self.session:
                self.session.append(rule)

    def check(self, tool: str, input: Any, cwd: Path, *, read_only: bool = False) -> Check:
        """Whether tool ``tool`` may run with arguments ``input`` (a dict) from folder ``cwd``.

        ``read_only`` is the tool's own flag: such calls inside the workspace never ask. A
        bash command is checked part by part (``shell_parts.split_command``): any part a deny
        rule matches denies it, and it runs without asking only if every part is allowed.
        """
        parts = self._parts(tool, input if isinstance(input, dict) else {}, cwd)
        for part in parts or ():
            if rule := self._first(self.deny, part):
                return Check("deny", f"denied by the rule {rule.text!r} ({rule.origin})")
        if tool == "bash" and isinstance(input, dict) and isinstance(input.get("command"), str):
            whole = Part("bash", input["command"])
            if rule := self._first(self.deny, whole):
                return Check("deny", f"denied by the rule {rule.text!r} ({rule.origin})")
        if self.mode == "yolo":
            return Check("allow", "permission mode yolo")
        if parts is None:
            return Check("ask", "bash could not parse this command, so no rule can allow it")
        outside = tuple(p.subject for p in parts if p.subject and p.subject.startswith("/") and p.tool != "bash")
        waiting = [p for p in parts if not self._runs_freely(p, tool, read_only)]
        if not waiting:
            return Check("allow", "allowed")
        if outside:
            return Check("ask", f"outside the workspace: {', '.join(outside)}", (), outside)
        unknown = [p for p in waiting if p.subject is None]
        if unknown:
            what = "a file named by a variable or a pattern" if unknown[0].tool != "bash" else "a command"
            return Check("ask", f"it uses {what} that cannot be known before it runs")
        return Check("ask", self._why(tool, waiting), tuple(dict.fromkeys(_suggest(p) for p in waiting)))

    # -- parts --------------------------------------------------------------------------------

    def _parts(self, tool: str, input: dict, cwd: Path) -> list[Part] | None:
        """What the call touches: for bash its commands and redirection targets (None: it does
        not parse), else the tool with its path (subject "" when it has none)."""
        if tool == "bash":
            command = input.get("command")
            parts = split_command(command) if isinstance(command, str) else []
            if parts is None:
                return None
            return [Part(p.tool, self._where(cwd, p.subject)) if p.tool != "bash" and p.subject else p
                    for p in parts]
        path = input.get(PATH_KEY)
        if tool in ("grep", "glob") and path is None:
            path = "."
        return [Part(tool, self._where(cwd, path) if isinstance(path, str) else "")]

    def _where(self, cwd: Path, path: str) -> str:
        """``path`` as rules see it: relative to the workspace (posix), else absolute."""
        target = (cwd / Path(path).expanduser()).resolve()
        if target.is_relative_to(self.workspace):
            return target.relative_to(self.workspace).as_posix()
        return target.as_posix()

    def _runs_freely(self, part: Part, tool: str, read_only: bool) -> bool:
        outside = part.tool != "bash" and (part.subject or "").startswith("/")
        if outside or part.subject is None:
            return False
        if part.tool == tool and read_only or part.tool == "read":
            return True
        if self.mode == "auto-edit" and part.tool in EDIT_TOOLS:
            return True
        return self._first(self.allow, part) is not None or self._first(self.session, part) is not None

    @staticmethod
    def _first(rules: list[Rule], part: Part) -> Rule | None:
        return next((r for r in rules if r.matches(part.tool, part.subject)), None)

    def _why(self, tool: str, waiting: list[Part]) -> str:
        if tool == "bash":
            if self.mode == "auto-edit":
                return "bash asks in auto-edit mode unless an allow rule matches every command"
            return "bash asks in ask mode unless an allow rule matches every command"
        return f"{tool} asks in {self.mode} mode"


# Commands whose second word names what they do: "allow for the session" keeps both words.
SUBCOMMAND_TOOLS = frozenset({
    "apt", "apt-get", "brew", "bun", "cargo", "conda", "deno", "docker", "dotnet", "gh", "git", "go", "gradle",
    "helm", "just", "kubectl", "make", "mvn", "npm", "npx", "pip", "pip3", "pnpm", "poetry", "rustup",
    "systemctl", "terraform", "uv", "yarn",
})


def _suggest(part: Part) -> str:
    """The session rule that would allow ``part``: a command's name (``ls *``), with its
    subcommand for tools like git (``git status *``); the exact path of a file."""
    if part.tool != "bash":
        return f"{part.tool}:{part.subject}"
    words = (part.subject or "").split()
    if not words or "=" in words[0]:
        return f"bash:{' '.join(words)}"
    subcommand = len(words) > 1 and words[0] in SUBCOMMAND_TOOLS and re.fullmatch(r"[A-Za-z][\w:-]*", words[1])
    return f"bash:{' '.join(words[:2] if subcommand else words[:1])} *"


def rules_from_files(files: Iterable[tuple[Path, str]], key: str) -> list[Rule]:
    """The ``[permissions] <key>`` rules of each config file ``(path, text)``, in file order,
    each with its file and line as ``origin``.

    Raises:
        ScoutError: a value that is not a list of rule strings, or a bad rule, naming the file
            and line.
    """
    rules: list[Rule] = []
    for path, text in files:
        table = tomllib.loads(text).get("permissions")
        if table is None:
            continue
        if not isinstance(table, dict):
            raise ScoutError(f"{path}:{_line(text, 'permissions')}: [permissions] must be a table")
        values = table.get(key, [])
        if not isinstance(values, list):
            raise ScoutError(f"{path}:{_line(text, key)}: permissions.{key} must be a list of rules like "
                             "[\"bash:git status*\", \"edit:src/**\"]")
        for value in values:
            origin = f"{path}:{_line(text, value if isinstance(value, str) else key)}"
            rules.append(parse_rule(value, origin))
    return rules


def _line(text: str, needle: str) -> int:
    """The first line of ``text`` holding ``needle`` as a quoted string or a key (1 if none)."""
    for number, line in enumerate(text.splitlines(), 1):
        if f'"{needle}"' in line or f"'{needle}'" in line or re.match(rf"\s*\[?{re.escape(needle)}\b", line):
            return number
    return 1


def policy_from_config(config: Any, workspace: Path) -> Policy:
    """The Policy for a ``Config``: its ``permission_mode`` and the allow and deny rules of
    every config file it read (user first, then project; rules add up across files).

    Raises:
        ScoutError: a bad rule or table, naming the file and line.
    """
    files = [(layer.path, layer.text) for layer in config.layers]
    return Policy(mode=config.permission_mode, allow=rules_from_files(files, "allow"),
                  deny=rules_from_files(files, "deny"), workspace=workspace)
