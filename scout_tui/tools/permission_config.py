"""Reading the permission rules from the configuration: the ``[permissions] allow/deny`` rules
of every config file, and a project's ``.claude/settings.json`` and ``settings.local.json``
``permissions`` as Claude Code writes them, each with its file and line, and the ``Policy`` a run
starts with.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from scout_tui.config.files import CLAUDE_SETTINGS, did_you_mean, in_project, read_claude_settings
from scout_tui.core.errors import ScoutError
from scout_tui.config.tomlpos import key_line, where
from scout_tui.tools.permissions import BUILTIN_TOOL_NAMES, Policy, Rule, parse_rule, rule_text


def rules_from_files(files: Iterable[tuple[Path, str, dict]], key: str) -> list[Rule]:
    """The ``[permissions] <key>`` rules of each config file ``(path, text, parsed table)``, in
    file order, each with its file and line as ``origin``.

    Raises:
        ScoutError: a ``[permissions]`` that is not a table or holds a key other than
            ``allow`` and ``deny`` (a typo would silently do nothing), a value that is not a
            list, a bad rule, or a deny rule whose tool is a near miss of a built-in one
            (``bsh:rm *``); each naming the file and line.
    """
    rules: list[Rule] = []
    for path, text, parsed in files:
        table = parsed.get("permissions")
        if table is None:
            continue
        lines = text.splitlines()
        if not isinstance(table, dict):
            raise ScoutError(f"{_where(path, text)}: [permissions] must be a table")
        for unknown in sorted(set(table) - {"allow", "deny"}):
            hint = did_you_mean(unknown, ("allow", "deny")) or " (known: allow, deny)"
            raise ScoutError(f"{_where(path, text, unknown)}: unknown key {unknown!r} in [permissions]{hint}")
        values = table.get(key, [])
        if not isinstance(values, list):
            raise ScoutError(f"{_where(path, text, key)}: permissions.{key} must be a list of rules like "
                             "[\"bash:git status*\", \"edit:src/**\"]")
        at = key_line(text, ("permissions", key)) or key_line(text, ("permissions",)) or 1
        for value in values:
            at = _value_line(lines, value, at)
            rule = parse_rule(value, f"{path}:{at}")
            hint = did_you_mean(rule.tool, sorted(BUILTIN_TOOL_NAMES)) if rule.tool not in BUILTIN_TOOL_NAMES else ""
            if key == "deny" and hint:  # a plugin's tool may be named otherwise; a near miss of ours is a typo
                raise ScoutError(f"{rule.origin}: the deny rule {rule.text!r} names no tool{hint} scout-tui stops "
                                 "here: a misspelt deny rule would deny nothing")
            rules.append(rule)
    return rules


def claude_rules(workspace: Path, notes: list[str]) -> tuple[list[Rule], list[Rule]]:
    """The ``(allow, deny)`` rules of ``workspace``'s ``.claude/settings.json`` and
    ``settings.local.json`` ``permissions``, as Claude Code writes them
    (https://docs.anthropic.com/en/docs/claude-code/settings#permission-settings): ``Bash(git
    status:*)``, ``Read(./.env)``, ``Edit(/src/**)`` (``/`` the project's folder, ``//`` the
    root), each with its file and line as ``origin``; an ``Edit`` rule holds for ``write`` too, as
    Claude Code's covers every tool that edits files. A rule for a tool scout-tui lacks
    (``WebFetch``) and the ``ask`` list are a line in ``notes`` (not applied).

    Raises:
        ScoutError: a file that is not JSON, ``permissions`` or a list of the wrong shape, a
            rule that is not one; each naming the file and line. A deny rule is a guard: it is
            not dropped silently.
    """
    allow: list[Rule] = []
    deny: list[Rule] = []
    for name in CLAUDE_SETTINGS:
        path = Path(workspace) / name
        read = read_claude_settings(path)
        if read is None:
            continue
        text, document = read
        table = document.get("permissions") if isinstance(document, dict) else None
        if table is None:
            continue
        lines = text.splitlines()
        if not isinstance(table, dict):
            raise ScoutError(f"{path}:{_value_line(lines, 'permissions', 1)}: permissions must be an object")
        if table.get("ask"):
            notes.append(f"{path}:{_value_line(lines, 'ask', 1)}: permissions.ask is not applied: scout-tui asks as "
                         "its mode says (/permissions)")
        for key, rules in (("allow", allow), ("deny", deny)):
            values = table.get(key, [])
            at = _value_line(lines, key, 1)
            if not isinstance(values, list):
                raise ScoutError(f"{path}:{at}: permissions.{key} must be a list of rules like \"Bash(git status:*)\"")
            for value in values:
                at = _value_line(lines, value, at)
                if not isinstance(value, str):
                    raise ScoutError(f"{path}:{at}: a permission rule must be a string like \"Bash(git status:*)\", "
                                     f"got {value!r}")
                rule = parse_rule(_claude_paths(rule_text(value)), f"{path}:{at}")
                if rule.tool not in BUILTIN_TOOL_NAMES and not rule.tool.startswith("mcp__"):
                    notes.append(f"{rule.origin}: the {key} rule {value!r} is not applied: scout-tui has no tool "
                                 f"{rule.tool!r}")
                    continue
                rules.append(rule)
                if rule.tool == "edit" and value.strip().startswith("Edit"):  # Claude Code's Edit covers every write
                    rules.append(Rule("write", rule.pattern, rule.origin))
    return allow, deny


def _claude_paths(text: str) -> str:
    """A file rule's pattern as scout-tui reads it: Claude Code's ``./x`` and ``/x`` (the
    project's folder) as ``x``, its ``//x`` (the root) as ``/x``; a bash rule as it is."""
    tool, colon, pattern = text.partition(":")
    if not colon or tool == "bash":
        return text
    if pattern.startswith("//"):
        pattern = pattern[1:]
    elif pattern.startswith(("./", "/")):
        pattern = pattern.removeprefix(".").lstrip("/")
    return f"{tool}:{pattern}"


def _where(path: Path, text: str, *keys: str) -> str:
    """"<path>:<line>" of ``permissions.<keys>``, else of the line opening or assigning the
    ``permissions`` table; line 1 if the text shows neither."""
    return where(path, text, ("permissions", *keys), table=("permissions",), line=1)


def _value_line(lines: list[str], value: Any, start: int) -> int:
    """The first line from ``start`` on that holds ``value`` as TOML writes it (``start`` if none)."""
    if isinstance(value, str):
        candidates = [json.dumps(value, ensure_ascii=False), f"'{value}'"]
    else:
        candidates = [str(value).lower() if isinstance(value, bool) else str(value)]
    for number in range(start, len(lines) + 1):
        if any(c in lines[number - 1] for c in candidates):
            return number
    return start


def policy_from_config(config: Any, workspace: Path) -> Policy:
    """The Policy for a ``Config``: its ``permission_mode`` and the allow and deny rules of
    every config file it read (user first, then project), then of the project's ``.claude``
    settings (``claude_rules``); rules add up across files.

    A project's own ``scout.toml`` (one inside ``workspace``) cannot set ``yolo``: the mode
    falls back to ``ask``. That, and any allow rules a project file brings, is said in
    ``Policy.notes`` for the front end to show.

    Raises:
        ScoutError: a bad rule or table, naming the file and line (``claude_rules``'s too).
    """
    files = [(layer.path, layer.text, layer.table) for layer in config.layers]
    notes: list[str] = []
    allow, deny = claude_rules(workspace, notes)
    policy = Policy(mode=config.permission_mode, allow=[*rules_from_files(files, "allow"), *allow],
                    deny=[*rules_from_files(files, "deny"), *deny], workspace=workspace)
    policy.notes += notes
    source = config.sources.get("permission_mode", "")
    if policy.mode == "yolo" and in_project(source, policy.workspace):
        policy.mode = "ask"
        policy.notes.append(f"{source}: permission_mode = \"yolo\" is not used from a project's scout.toml (a "
                            "repository cannot turn off its own approval prompts); set it in "
                            "~/.config/scout/scout.toml, SCOUT_PERMISSION_MODE or --permission-mode. Mode: ask.")
    project = [r for r in policy.allow if in_project(r.origin.rsplit(":", 1)[0], policy.workspace)]
    policy.project_rules = frozenset(project)
    if project:
        where = project[0].origin.rsplit(":", 1)[0]
        bash = " (its bash rules only while commands run in the sandbox)" if any(r.tool == "bash" for r in project) else ""
        policy.notes.append(f"{where} lets these run without asking{bash}: {', '.join(r.text for r in project)}")
    return policy
