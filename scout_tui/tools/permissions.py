"""The permission policy: whether a tool call runs, asks the person first, or is denied.

Modes (``ask``, ``auto-edit``, ``yolo``), ``[permissions] allow/deny`` rules such as
``"bash:git status*"`` or ``"edit:src/**"`` (deny wins), rules allowed for the session from the
approval prompt, and the workspace boundary: a path outside it always asks (but in ``yolo``).
"""

from __future__ import annotations

import dataclasses
import os
import re
import stat
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Literal

from scout_tui.config.layers import PERMISSION_MODES, user_config_dir
from scout_tui.core.errors import ScoutError
from scout_tui.tools.globs import glob_regex
from scout_tui.tools.read_only_commands import read_only_parts
from scout_tui.tools.shell_parts import HARMLESS_TARGETS, Part, split_command
from scout_tui.tools.session_rules import WRAPPERS, command_name, session_rule
from scout_tui.tools.shell_paths import Named, named_paths

MODES = PERMISSION_MODES
"""In order of Shift+Tab: ``ask`` (reads run, changes ask), ``auto-edit`` (edits inside the
workspace run, bash asks), ``yolo`` (nothing asks; deny rules still hold), ``plan`` (only
read-only calls run; the rest are refused without running, and the model is told to plan)."""

PLAN_REFUSAL = ("plan mode is on: only read-only tools run, so nothing was changed. Explore with read, grep "
                "and glob, then propose your plan with exit_plan for the user to approve (a subagent: answer "
                "with what you found)")
"""Why a call that may change things is refused in ``plan`` mode (the model reads it). A read-only
tool runs as in ``ask`` mode, and so does a command ``read_only_commands.read_only_parts`` passes."""

EDIT_TOOLS = frozenset({"write", "edit"})
"""Tools whose calls ``auto-edit`` lets through inside the workspace."""

BUILTIN_TOOL_NAMES = frozenset({"bash", "read", "write", "edit", "grep", "glob", "skill"})

CLAUDE_TOOLS = {"Read": "read", "Write": "write", "Edit": "edit", "MultiEdit": "edit", "Bash": "bash",
                "Grep": "grep", "Glob": "glob", "LS": "glob", "Task": "task"}
"""Claude Code's tool names (https://docs.anthropic.com/en/docs/claude-code/settings#tools-available-to-claude)
as scout-tui's: for the rules, agent files, commands and hooks written for Claude Code."""

PATH_KEY = "path"
"""The argument naming a file or folder, in the built-in tools (and plugin tools that follow them)."""

_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]+\Z")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # what a terminal acts on instead of showing

PROTECTED = ("scout.toml", ".scout/**", ".agents/**", ".git/**", ".gitmodules")
"""Paths in the workspace whose change always asks (but in ``yolo``): scout's own settings,
plugins and skills, and git's config and hooks, which hold commands that run later. Without
this, an edit allowed in ``auto-edit`` could raise its own permissions."""

Verdict = Literal["allow", "ask", "deny"]

OUTSIDE_SANDBOX = "outside_sandbox"
"""The bash argument by which the model asks to run one command outside the sandbox (after the
sandbox blocked it): such a call always asks, in every mode."""

Sandboxing = Literal["active", "off", "none"]
"""Whether commands run in the OS sandbox: ``active``; ``off`` (the person turned it off, or no
sandbox was configured); ``none`` (wanted, but none is available here: no bwrap, or macOS)."""


def following(mode: str) -> str:
    """The mode after ``mode`` in ``MODES``, wrapping: what Shift+Tab switches to."""
    return MODES[(MODES.index(mode) + 1) % len(MODES)]


@dataclass(frozen=True, slots=True)
class Rule:
    """``tool:pattern`` from config (``origin`` "path:line") or from the session (origin "session").

    For bash, ``pattern`` matches one command of a compound command, whitespace squeezed:
    ``*`` is any text, and a pattern ending in `` *`` also matches what is before it alone
    (``git status *`` matches ``git status``). For other tools it is a glob over the path
    relative to the workspace (``*`` within a folder, ``**`` across folders, ``{a,b}``), or
    over the absolute path when it starts with ``/`` or ``~``. An empty pattern matches
    every call of the tool. A rule for ``mcp__SERVER`` matches every tool of that MCP server
    (``mcp__SERVER__TOOL``).
    """

    tool: str
    pattern: str
    origin: str = "session"

    @property
    def text(self) -> str:
        return f"{self.tool}:{self.pattern}" if self.pattern else self.tool

    def matches(self, tool: str, subject: str | None) -> bool:
        if tool != self.tool and not (self.tool.startswith("mcp__") and "__" not in self.tool[5:]
                                      and tool.startswith(self.tool + "__")):
            return False  # ``mcp__SERVER`` is every tool of that MCP server
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


_CLAUDE_FORM = re.compile(r"(?P<tool>[A-Za-z0-9_.-]+)\((?P<pattern>.*)\)\Z", re.DOTALL)


def rule_text(text: str) -> str:
    """A rule as ``permissions.parse_rule`` reads it (``tool:pattern``), from scout-tui's form
    or Claude Code's (``Bash(git commit:*)``, ``Edit(src/**)``, ``Read``, ``MultiEdit``): Claude Code's
    tool names as scout-tui's (``CLAUDE_TOOLS``; another built-in name in lower case), and its prefix
    mark ``:*`` as `` *``."""
    text = " ".join(text.split())
    match = _CLAUDE_FORM.fullmatch(text)
    if match is None:
        tool, colon, pattern = text.partition(":")
        if not colon and (tool in CLAUDE_TOOLS or tool.lower() in BUILTIN_TOOL_NAMES and tool != tool.lower()):
            return CLAUDE_TOOLS.get(tool, tool.lower())  # "Read", "LS": every call of the tool
        return text
    tool, pattern = match["tool"], match["pattern"].strip()
    tool = CLAUDE_TOOLS.get(tool, tool.lower() if tool.lower() in BUILTIN_TOOL_NAMES else tool)
    if pattern.endswith(":*"):
        pattern = pattern[:-2].rstrip() + " *"
    return f"{tool}:{pattern}" if pattern else tool


def parse_rule(text: str, origin: str = "session") -> Rule:
    """``"tool"`` or ``"tool:pattern"`` as a Rule. Raises ScoutError naming ``origin``."""
    if not isinstance(text, str) or not text.strip():
        raise ScoutError(f"{origin}: a permission rule must be a non-empty string like \"bash:git status*\", got {text!r}")
    tool, _, pattern = text.strip().partition(":")
    tool = tool.strip()
    if not _TOOL_NAME.match(tool):
        raise ScoutError(f"{origin}: permission rule {text!r} must start with a tool name (bash, edit, write, read…)")
    if tool != tool.lower() and tool.lower() in BUILTIN_TOOL_NAMES:
        raise ScoutError(f"{origin}: permission rule {text!r}: tool names are lower case, as in "
                         f"{tool.lower()}:{pattern.strip()}")
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
    ``outside``: paths of the call outside the workspace. ``sandbox``: what the prompt may offer
    about the sandbox: ``in`` (the command would run in it; "run once outside" is offered),
    ``outside`` (the model asks to run it outside), ``none`` (no sandbox is available: asking
    once per session whether commands may run unsandboxed), "" (nothing).
    """

    verdict: Verdict
    reason: str = ""
    suggestions: tuple[str, ...] = ()
    outside: tuple[str, ...] = ()
    sandbox: str = ""


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
    notes: list[str] = field(default_factory=list)
    """What a person should know about where these rules came from (shown at start-up)."""
    unsandboxed: bool = False
    """The person said, once this session, that commands may run although no sandbox is available."""
    project_rules: frozenset[Rule] = frozenset()
    """The allow rules a project's own scout.toml brings: its ``bash`` rules hold only in the
    sandbox (a cloned repository must not let commands run unasked with all of your permissions)."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ScoutError(f"unknown permission mode {self.mode!r} (known: {', '.join(MODES)})")
        self.workspace = self.workspace.resolve()

    def next_mode(self) -> str:
        """Switch to the mode after this one in ``MODES`` (``following``) and return it."""
        self.mode = following(self.mode)
        return self.mode

    def unknown_tools(self, known: Iterable[str]) -> list[str]:
        """A line for each config rule naming a tool not in ``known`` (a typo does nothing)."""
        names = {*known, "read", "write"}  # bash redirections are checked as read and write
        return [f"{r.origin}: the permission rule {r.text!r} names no tool (known: {', '.join(sorted(names))})"
                for r in (*self.allow, *self.deny)
                if r.tool not in names and not r.tool.startswith("mcp__")]  # MCP servers' tools come later

    def allow_for_session(self, rules: Iterable[str]) -> None:
        """Add rules (``"tool:pattern"``) that allow matching calls until the app closes."""
        for text in rules:
            rule = parse_rule(text)
            if rule not in self.session:
                self.session.append(rule)

    def check(self, tool: str, input: Any, cwd: Path, *, read_only: bool = False,
              sandbox: Sandboxing = "off") -> Check:
        """Whether tool ``tool`` may run with arguments ``input`` (a dict) from folder ``cwd``.

        ``read_only`` is the tool's own flag: such calls inside the workspace never ask. A
        bash command is checked part by part (``shell_parts.split_command``): any part a deny
        rule matches denies it, and it runs without asking only if every part is allowed.
        ``sandbox`` says whether commands run in the OS sandbox (``Sandboxing``). Without it, a
        command naming a path outside the workspace (``shell_paths.paths_outside``) asks
        whatever the rules say; with none available, the first command that would run unasked
        asks whether commands may run unsandboxed this session. A command the model asks to
        run ``outside_sandbox`` always asks.
        """
        check = self._check(tool, input, cwd, read_only, sandbox)
        if tool != "bash" or check.verdict == "deny":
            return check
        if sandbox == "active" and isinstance(input, dict) and input.get(OUTSIDE_SANDBOX) is True:
            return Check("ask", "the model asks to run this command outside the sandbox", sandbox="outside")
        if check.verdict == "allow" and sandbox == "none" and not self.unsandboxed:
            return Check("ask", "no sandbox is available here, so commands run with all of your permissions "
                                "(asked once per session)", sandbox="none")
        if check.verdict == "ask" and sandbox == "active":
            return dataclasses.replace(check, sandbox="in")
        return check

    def _check(self, tool: str, input: Any, cwd: Path, read_only: bool, sandbox: Sandboxing) -> Check:
        parts = self._parts(tool, input if isinstance(input, dict) else {}, cwd)
        command = input.get("command") if tool == "bash" and isinstance(input, dict) else None
        for part in [*(parts or ()), *([Part("bash", command)] if isinstance(command, str) else [])]:
            for variant in _deny_variants(part):
                if rule := self._first(self.deny, variant):
                    return Check("deny", f"denied by the rule {rule.text!r} ({rule.origin})")
        if own := self._scouts_own(parts or []):
            return Check("deny", f"{own} is scout-tui's own settings folder: it may hold your API key and says what "
                                 "runs without asking, so no tool reads or changes it")
        if self.mode == "plan" and not (read_only_parts(parts) if tool == "bash" else read_only):
            return Check("deny", PLAN_REFUSAL)  # the rest is checked as in ask mode
        if self.mode == "yolo":
            # In the sandbox the one write yolo could not be held to the workspace by it.
            if tool == "bash" and sandbox == "active" and parts and isinstance(command, str):
                named = named_paths(command, cwd) if _runs_a_writer(parts) else []
                if linked := self._hard_linked(named, parts, cwd):
                    return linked
            return Check("allow", "permission mode yolo")
        if parts is None:
            return Check("ask", "bash could not parse this command, so no rule can allow it")
        if isinstance(command, str) and _CONTROL.search(command):
            return Check("ask", "the command holds control characters (shown as \\r, \\e…), so no rule can allow it")
        if links := _hard_links(tool, input, cwd):
            return Check("ask", links)
        if isinstance(command, str):
            # In the sandbox only the hard-link check reads arguments, and only a writer's.
            named = named_paths(command, cwd) if sandbox != "active" or _runs_a_writer(parts) else []
            if why := self._named_paths_ask(named, parts, cwd, sandbox):
                return why
        outside = tuple(p.subject for p in parts if p.subject and p.subject.startswith("/") and p.tool != "bash")
        protected = tuple(p.subject for p in parts if p.subject and _writes(p, tool, read_only) and _protected(p.subject))
        waiting = [p for p in parts if not self._runs_freely(p, tool, read_only, sandbox)]
        if not waiting:
            return Check("allow", "allowed")
        if outside:
            return Check("ask", f"outside the workspace: {', '.join(outside)}", (), outside)
        if protected:
            return Check("ask", f"it changes {', '.join(protected)}, which holds scout's or git's settings or "
                                "code they run")
        unknown = [p for p in waiting if p.subject is None]
        if unknown:
            what = "a file named by a variable or a pattern" if unknown[0].tool != "bash" else "a command"
            return Check("ask", f"it uses {what} that cannot be known before it runs")
        rules = [session_rule(p) for p in waiting]
        # A part no rule can allow alone: "allow for the session" is not offered.
        offered = tuple(dict.fromkeys(r for r in rules if r)) if all(rules) else ()
        return Check("ask", self._why(tool, waiting), offered)

    # -- parts --------------------------------------------------------------------------------

    def _named_paths_ask(self, named: list[Named], parts: list[Part], cwd: Path, sandbox: Sandboxing) -> Check | None:
        """Why a command asks whatever the allow rules say, from the paths it names: a file with
        other hard links that it may write (a redirection target, an argument of a command in
        ``WRITERS``), which the sandbox cannot stop either; and without the sandbox, a path
        outside the workspace, one only known when it runs, or one in ``PROTECTED``."""
        if linked := self._hard_linked(named, parts, cwd):
            return linked
        if sandbox == "active":
            return None
        inside = str(self.workspace) + "/"
        known = tuple(dict.fromkeys(n.path for n in named if n.path and not (n.path + "/").startswith(inside)
                                    and n.path not in HARMLESS_TARGETS))
        if known:
            return Check("ask", f"outside the workspace: {', '.join(known)} (commands run unsandboxed here, so "
                                "no allow rule covers a path outside)", (), known)
        if any(n.path is None for n in named):
            return Check("ask", "it names a path that cannot be known before it runs ($VAR, $(…)), and "
                                "commands run unsandboxed here, so no allow rule covers it")
        protected = [rel for n in named if n.path and (rel := os.path.relpath(n.path, self.workspace)) != "."
                     and _protected(rel)]
        if protected:
            return Check("ask", f"it names {', '.join(dict.fromkeys(protected))}, which holds scout's or git's settings "
                                "or code they run (commands run unsandboxed here)")
        return None

    def _scouts_own(self, parts: list[Part]) -> str:
        """The path of a file tool's call inside scout-tui's own settings folder ("" when none is):
        what a ``read``, ``grep`` or ``glob`` there would show (``api_key``, or whether it matches a
        pattern, a character at a time) and a ``write`` or ``edit`` there could change (permission
        rules). The sandbox hides the folder from commands. Not when the workspace is in it."""
        folder = _real(str(user_config_dir()))
        if (str(self.workspace) + "/").startswith(folder + "/"):
            return ""
        return next((p.subject for p in parts if p.tool != "bash" and p.subject and p.subject.startswith("/")
                     and (p.subject + "/").startswith(folder + "/")), "")

    @staticmethod
    def _hard_linked(named: list[Named], parts: list[Part], cwd: Path) -> Check | None:
        """Asks when a command may write a file with other hard links: a redirection target, or
        an argument of a command in ``WRITERS`` (a write no sandbox can keep in the workspace)."""
        targets = [str(cwd / p.subject) for p in parts if p.tool == "write" and p.subject]
        targets += [n.path for n in named if n.path and n.command in WRITERS]
        linked = [t for t in dict.fromkeys(targets) if _link_count(t) > 1]
        if not linked:
            return None
        return Check("ask", f"{', '.join(linked)} has other hard links: writing it changes the same file under "
                            "its other names, which may be outside the workspace")

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
        # realpath, not Path.resolve: a symlink loop is a path like any other here (the tool
        # reports it), where resolve raises RuntimeError.
        target = Path(os.path.realpath(cwd / Path(path).expanduser()))
        if target.is_relative_to(self.workspace):
            return target.relative_to(self.workspace).as_posix()
        return target.as_posix()

    def _runs_freely(self, part: Part, tool: str, read_only: bool, sandbox: Sandboxing) -> bool:
        outside = part.tool != "bash" and (part.subject or "").startswith("/")
        if outside or part.subject is None:
            return False
        if _writes(part, tool, read_only) and _protected(part.subject):
            return False
        if part.tool == tool and read_only or part.tool == "read":
            return True
        if self.mode == "auto-edit" and part.tool in EDIT_TOOLS:
            return True
        allow = self.allow if sandbox == "active" or part.tool != "bash" else [
            r for r in self.allow if r not in self.project_rules]
        return self._first(allow, part) is not None or self._first(self.session, part) is not None

    @staticmethod
    def _first(rules: list[Rule], part: Part) -> Rule | None:
        return next((r for r in rules if r.matches(part.tool, part.subject)), None)

    def _why(self, tool: str, waiting: list[Part]) -> str:
        if tool == "bash":
            if self.mode == "auto-edit":
                return "bash asks in auto-edit mode unless an allow rule matches every command"
            return "bash asks in ask mode unless an allow rule matches every command"
        if tool.startswith("mcp__"):
            return f"{tool} asks in {self.mode} mode: its MCP server does not mark it read-only"
        return f"{tool} asks in {self.mode} mode"


WRITERS = frozenset({"cp", "dd", "install", "mv", "patch", "perl", "rsync", "sed", "tee", "truncate"})
"""Commands that may write the files their arguments name (for the hard-link check)."""


_real = lru_cache(maxsize=8)(os.path.realpath)


def _runs_a_writer(parts: list[Part]) -> bool:
    """Whether a command's parts run one of ``WRITERS`` (by name, wrappers and paths aside)."""
    return any(p.tool == "bash" and p.subject and any(command_name(w) in WRITERS for w in p.subject.split())
               for p in parts)


def _link_count(path: str) -> int:
    """How many names a regular file has (0: not a regular file, or not there)."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return 0
    return status.st_nlink if stat.S_ISREG(status.st_mode) else 0


def _hard_links(tool: str, input: Any, cwd: Path) -> str:
    """Why a ``write`` or ``edit`` of a file with more than one hard link asks ("" when it is not
    one): the same file has other names, perhaps outside the workspace, and changes under them too."""
    path = input.get(PATH_KEY) if tool in EDIT_TOOLS and isinstance(input, dict) else None
    links = _link_count(os.path.join(cwd, os.path.expanduser(path))) if isinstance(path, str) else 0
    if links < 2:
        return ""  # also no such file, or one the tool will report on
    return (f"{path} has {links} hard links: changing it changes the same file under its other "
            "names, which may be outside the workspace")


def _writes(part: Part, tool: str, read_only: bool) -> bool:
    """Whether ``part`` changes the file it names (a read-only tool's or a ``<`` part does not)."""
    if part.tool == "bash" or part.tool == "read":
        return False
    return not (part.tool == tool and read_only)


def _protected(subject: str) -> bool:
    """Whether ``subject`` (relative to the workspace) is in ``PROTECTED``, or is a folder that
    holds what is (``.git`` itself: removing or moving it changes ``.git/config``)."""
    if subject.startswith("/"):
        return False
    return any(_path_regex(p).match(subject) or _path_regex(p).match(f"{subject}/") for p in PROTECTED)


def _deny_variants(part: Part) -> list[Part]:
    """``part``, and for a command also its forms a deny rule should catch: without leading
    assignments, a backslash or a folder before the name (``\\rm``, ``/bin/rm``), and without
    wrappers such as ``command``, ``env``, ``sudo`` or ``xargs`` (any later word may be the
    command they run).

    A guard rail, not a sandbox: ``find -delete`` or a script file still gets past ``rm *``.
    """
    if part.tool != "bash" or not part.subject:
        return [part]
    variants = [part.subject]
    words = part.subject.split()
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", words[0]):
        words = words[1:]
    if words:
        variants.append(" ".join([command_name(words[0]), *words[1:]]))
        if command_name(words[0]) in WRAPPERS:
            # Which later word is the wrapped command depends on the wrapper's options: try each.
            variants += [" ".join([command_name(words[i]), *words[i + 1 :]]) for i in range(1, len(words))]
    return [Part("bash", v) for v in dict.fromkeys(variants)]
