"""Whether a bash command only reads: what plan mode lets run (``permissions.Policy`` in ``plan``).

An allow list, failing closed: every part of the command (``shell_parts.split_command``: each
simple command, substitutions and ``sh -c`` scripts included, and each redirection) must be a
program known to change nothing, with no option that makes it write or run another program,
and no redirection may write a file. A command that does not parse, a program named by a
variable, an assignment, ``sed``, ``awk``, ``xargs``, interpreters and anything unknown are
not read-only. The OS sandbox, read-only in plan mode where it is available, is the second wall.
"""

from __future__ import annotations

import shlex

from scout_tui.tools.session_rules import command_name
from scout_tui.tools.shell_parts import Part, split_command

READERS = frozenset({
    "cat", "head", "tail", "wc", "ls", "pwd", "grep", "egrep", "fgrep", "rg", "file", "stat", "tree", "du", "df",
    "which", "type", "echo", "printf", "diff", "cmp", "cut", "tr", "nl", "basename", "dirname", "realpath",
    "readlink", "date", "whoami", "uname", "id", "hostname", "true", "false", "od", "hexdump", "md5sum",
    "sha1sum", "sha256sum", "sha512sum", "cksum", "column", "seq", "jq", "sort", "uniq", "find", "git", "test", "[",
})
"""Programs that read (each with the checks of ``_options_read_only`` where an option writes)."""

GIT_READERS = frozenset({
    "status", "log", "diff", "show", "blame", "grep", "ls-files", "ls-tree", "rev-parse", "describe", "shortlog",
    "rev-list", "cat-file", "show-ref", "merge-base", "branch", "tag", "remote", "stash", "reflog",
})
"""git subcommands that read (``branch``, ``tag``, ``remote``, ``stash``, ``reflog``: their listing forms only)."""

_FIND_ACTIONS = frozenset({"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"})
_LISTING = {"branch": {"-a", "-r", "-v", "-vv", "--all", "--remotes", "--list", "--show-current", "--verbose",
                       "--contains", "--merged", "--no-merged", "--sort", "--format", "--color", "--no-color"},
            "tag": {"-l", "--list", "-n", "--contains", "--sort", "--format", "--points-at", "--merged", "--no-merged"},
            "remote": {"-v", "--verbose", "show", "get-url"},
            "stash": {"list", "show"},
            "reflog": {"show"}}


def read_only_command(command: str) -> bool:
    """Whether bash ``command`` only reads (see the module's docstring). Never raises."""
    return read_only_parts(split_command(command))


def read_only_parts(parts: list[Part] | None) -> bool:
    """Whether a command split into ``parts`` (``shell_parts.split_command``; None: it does not
    parse) only reads."""
    return parts is not None and bool(parts) and all(_part_reads(part) for part in parts)


def _part_reads(part: Part) -> bool:
    if part.tool == "read":
        return True
    if part.tool != "bash" or part.subject is None:
        return False  # a redirection that writes, or a part that cannot be known before it runs
    try:
        words = shlex.split(part.subject, comments=False)
    except ValueError:
        return False
    if not words or any(c in words[0] for c in "$`=(") or words[0].startswith("\\"):
        return False  # a program named at run time, an assignment, a subshell's text
    name = command_name(words[0])
    return name in READERS and words[0] in (name, f"/bin/{name}", f"/usr/bin/{name}") and _options_read_only(name, words[1:])


def _options_read_only(name: str, args: list[str]) -> bool:
    """Whether ``name`` with ``args`` writes nothing and runs nothing else."""
    if name == "find":
        return not any(a in _FIND_ACTIONS for a in args)
    if name == "sort":
        return not any(a == "-o" or a.startswith(("--output", "-o")) for a in args)
    if name == "uniq":
        return len([a for a in args if not a.startswith("-")]) <= 1  # `uniq IN OUT` writes OUT
    if name == "git":
        return _git_reads(args)
    return True


def _git_reads(args: list[str]) -> bool:
    rest = list(args)
    while rest and rest[0].startswith("-"):  # global options before the subcommand
        option = rest.pop(0)
        if option == "-C" and rest:
            rest.pop(0)
        elif option not in ("--no-pager", "-P", "--no-optional-locks"):
            return False  # -c sets config (a pager, an editor: a program that runs), and others unknown
    if not rest or rest[0] not in GIT_READERS:
        return False
    sub, options = rest[0], rest[1:]
    if any(o.startswith(("--output", "--ext-diff", "-O", "--open-files-in-pager", "--exec")) for o in options):
        return False
    listing = _LISTING.get(sub)
    if listing is None:
        return True
    if sub in ("stash", "reflog", "remote"):
        return options[0] in listing if options else sub != "stash"  # `git stash` alone stashes
    named = [o for o in options if not o.startswith("-")]
    lists = {"-l", "--list", "--contains", "--merged", "--no-merged", "--points-at"}
    return (all(o.split("=", 1)[0] in listing for o in options if o.startswith("-"))
            and (not named or any(o.split("=", 1)[0] in lists for o in options)))  # `git tag v1` makes one
