"""The rule "allow for the session" adds for a call: as narrow as what was asked.

For a command it is the command's prefix, as Claude Code's "don't ask again" saves
``Bash(git commit:*)``: the program with its subcommand (``git commit *``), the script a runner
or interpreter runs (``npm run test *``, ``python3 -m pytest *``, ``python3 script.py *``), and
the exact command where no prefix is safe (``python3 -c CODE``, ``bash -c SCRIPT``, ``sudo …``).
"""

from __future__ import annotations

import re

from scout_tui.tools.shell_parts import SHELLS, Part

SUBCOMMAND_TOOLS = frozenset({
    "apt", "apt-get", "brew", "bun", "bundle", "cargo", "conda", "deno", "docker", "dotnet", "gh", "git", "go",
    "gradle", "helm", "just", "kubectl", "make", "mvn", "npm", "pip", "pip3", "pipenv", "pnpm", "poetry",
    "rustup", "systemctl", "terraform", "uv", "yarn",
})
"""Commands whose second word names what they do: the rule keeps both words (``git status *``)."""

RUNNERS = frozenset({"run", "exec", "x", "dlx", "run-script"})
"""Subcommands of ``SUBCOMMAND_TOOLS`` that run the program or script named next (``npm run
test``, ``uv run pytest``, ``bundle exec rspec``): the rule keeps that name too."""

RUNNER_TOOLS = frozenset({"npx", "uvx", "bunx", "pipx"})
"""Commands that run the program named next (``npx jest``): the rule keeps that name."""

INTERPRETERS = SHELLS | frozenset({"node", "perl", "php", "ruby", "lua", "Rscript", "tsx", "ts-node"})
"""Programs that run a script or module named by their arguments: allowing the program alone
would allow any code. ``python``, ``python3`` and ``python3.12`` count too (``_interpreter``)."""

WRAPPERS = frozenset({"builtin", "command", "doas", "env", "eval", "exec", "nice", "nohup", "source", "sudo",
                      "time", "timeout", "xargs", "."})
"""Commands that run their arguments as a command: the rule is the exact command, and a deny
rule sees through them (``permissions``)."""

EXACT_ONLY = frozenset({
    "rm", "rmdir", "unlink", "shred", "truncate", "dd", "mv", "cp", "ln", "install", "rsync", "tee", "patch",
    "chmod", "chown", "chgrp", "chattr", "kill", "pkill", "killall", "sed", "awk", "gawk", "find", "xdg-open",
    "curl", "wget", "ssh", "scp", "sftp", "nc", "ncat", "socat", "telnet", "ftp", "mkfs", "mount", "umount",
    "crontab", "shutdown", "reboot",
})
"""Programs whose name alone says nothing of the harm a call may do: allowing ``rm *`` allows
every deletion, ``sed *`` every in-place edit, ``find *`` every ``-delete`` or ``-exec``,
``curl *`` sending anything anywhere. The rule is the exact command."""

_PLAIN = re.compile(r"[\w.@+/:-]+")  # a word with nothing to expand or quote
_SUBCOMMAND = re.compile(r"[A-Za-z][\w:.-]*")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=[\w.@+/:,-]*")


def session_rule(part: Part) -> str | None:
    """The rule (``"tool:pattern"``, ``permissions.parse_rule``'s form) that allows ``part`` from
    now on: for a command (tool ``bash``, text as written) ``bash:PREFIX *`` where ``PREFIX`` is
    ``command_prefix``, or ``bash:COMMAND`` (exactly this command) when it has none; for a
    file, its exact path; for a tool without a path, the tool. None when no rule can allow
    just this: an exact command holding ``*``, which a rule reads as "any text"."""
    if part.tool != "bash":
        return f"{part.tool}:{part.subject}" if part.subject else part.tool
    words = (part.subject or "").split()
    if prefix := command_prefix(words):
        return f"bash:{' '.join(prefix)} *"
    exact = " ".join(words)
    return f"bash:{exact}" if exact and "*" not in exact else None


def command_prefix(words: list[str]) -> list[str] | None:
    """The first words of a command (split at whitespace) that say what it runs, or None when
    only the exact command is safe to allow.

    Leading assignments stay as written (``FOO=1 make test`` → ``FOO=1 make test``). Then:
    a wrapper (``WRAPPERS``) → None; an interpreter → its ``-m MODULE`` (and that module's own
    prefix) or its script file, None for ``-c``/``-e`` code, other options or none; a
    ``SUBCOMMAND_TOOLS`` program → it and its subcommand, and for a runner subcommand
    (``RUNNERS``) the prefix of what it runs; a ``RUNNER_TOOLS`` program → it and the prefix of
    what it runs; a program that deletes, overwrites or sends (``EXACT_ONLY``) → None; any other
    program → its name. None also when a word of the prefix is not
    plain (quotes, ``$``, globs) or an expected name is missing or an option.
    """
    assignments = []
    while words and _ASSIGNMENT.fullmatch(words[0]):
        assignments.append(words[0])
        words = words[1:]
    prefix = _program_prefix(words)
    if prefix is None or not all(_PLAIN.fullmatch(word) for word in prefix):
        return None
    return assignments + prefix


def _program_prefix(words: list[str]) -> list[str] | None:
    if not words:
        return None
    program, rest = words[0], words[1:]
    name = command_name(program)
    if name in WRAPPERS or name in EXACT_ONLY:
        return None
    if _interpreter(name):
        if not rest:
            return None  # a REPL, or a script on stdin
        if rest[0] == "-m" and len(rest) > 1:
            inner = _program_prefix(rest[1:])
            return None if inner is None else [program, "-m", *inner]
        return None if rest[0].startswith("-") else [program, rest[0]]
    if name in RUNNER_TOOLS:
        inner = _program_prefix(rest) if rest and not rest[0].startswith("-") else None
        return None if inner is None else [program, *inner]
    if name in SUBCOMMAND_TOOLS:
        if not rest or not _SUBCOMMAND.fullmatch(rest[0]):
            return None  # `make` alone, or `git -C dir …`: the subcommand is not known
        if rest[0] in RUNNERS:
            inner = _program_prefix(rest[1:]) if len(rest) > 1 and not rest[1].startswith("-") else None
            return None if inner is None else [program, rest[0], *inner]
        return [program, rest[0]]
    return [program]


def command_name(word: str) -> str:
    """The name of the program a command's first word runs: ``\\rm`` and ``/bin/rm`` are ``rm``."""
    return word.lstrip("\\").rsplit("/", 1)[-1]


def _interpreter(name: str) -> bool:
    return name in INTERPRETERS or re.fullmatch(r"python[0-9.]*", name) is not None
