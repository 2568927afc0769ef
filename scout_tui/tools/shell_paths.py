"""The paths a bash command names in its arguments, resolved as bash would resolve them, for
the permission check of a command that runs without a sandbox: an allow rule such as
``bash:git diff *`` must not cover ``git diff --output=$HOME/.bashrc``.

A guard rail, not a sandbox: a program may compute a path no argument shows. What is read is
every argument of every simple command (also in substitutions, ``sh -c`` scripts, lists and
loops), and in each: the whole word, an option's value (``--output=P``, ``-oP``), a ``key=P``
(``dd of=P``), and any ``/…``, ``~/…``, ``./…`` or ``../…`` inside it (``python -c
"open('/etc/x', 'w')"``). ``~``, ``$HOME``, ``$PWD``, ``..`` and symlinks are resolved; a glob
stands for its folder; ``cd`` and ``pushd`` with a literal folder move the base of later
relative paths.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from scout_tui.tools.shell_parts import HARMLESS_TARGETS, SHELLS, _parser, _text

_EMBEDDED = re.compile(r"""(?<![\w.~/:$-])(?:~|\.\.?)?/[^\s'"`,;()<>|&]*""")
_GLOB = re.compile(r"[*?\[{]")
_SPECIAL_PARAMETERS = frozenset("?#$!-")  # $? $# $$ $! $-: numbers and flags, never a path
_KNOWN_VARIABLES = ("HOME", "PWD")


@dataclass(frozen=True, slots=True)
class Named:
    """A path an argument names: ``path`` resolved and absolute (None: only known when the
    command runs, ``$VAR`` or ``$(…)``, so it may be any path), and ``command``, the name of the
    command whose argument it is (``cd`` for the folder a ``cd`` moves to)."""

    path: str | None
    command: str


def named_paths(command: str, cwd: Path, environ: Mapping[str, str] | None = None) -> list[Named]:
    """Every path ``command``'s arguments may name (see the module docstring), in source order,
    without repeats. ``cwd`` is where the command starts; ``environ`` gives ``HOME`` (default
    ``os.environ``). A command bash would not parse gives one ``Named(None, "")``."""
    tree = _parser().parse(command.encode("utf-8"))
    if tree.root_node.has_error:
        return [Named(None, "")]
    environ = os.environ if environ is None else environ
    walk = _Walk(os.path.realpath(cwd), {"HOME": environ.get("HOME", os.path.expanduser("~")), "PWD": str(cwd)})
    walk.node(tree.root_node)
    return list(dict.fromkeys(walk.found))


def paths_outside(command: str, cwd: Path, workspace: Path, environ: Mapping[str, str] | None = None) -> list[str | None]:
    """The paths ``command`` names outside ``workspace`` (``named_paths`` but ``/dev/null`` and
    the standard streams), with None for each that cannot be known before it runs."""
    inside = os.path.realpath(workspace).rstrip("/") + "/"
    return list(dict.fromkeys(n.path for n in named_paths(command, cwd, environ) if n.path is None or (
        not (n.path + "/").startswith(inside) and n.path not in HARMLESS_TARGETS)))


class _Walk:
    """One pass over a parse tree: ``found`` collects what ``named_paths`` returns; ``cwd``
    (None: unknown after a ``cd`` to a computed folder) is where relative paths start."""

    def __init__(self, cwd: str, variables: dict[str, str]) -> None:
        self.cwd: str | None = cwd
        self.variables = variables
        self.found: list[Named] = []
        self.name = ""  # the command whose arguments are being read

    def node(self, node: Any) -> None:
        if node.type == "command":
            self.command(node)
        for child in node.children:
            self.node(child)

    def command(self, node: Any) -> None:
        name_node = next((c for c in node.children if c.type == "command_name"), None)
        name = _text(name_node).lstrip("\\").rsplit("/", 1)[-1] if name_node is not None else ""
        args = [c for c in node.children if c.type not in ("command_name", "file_redirect", "variable_assignment",
                                                              "herestring_redirect")]
        values = [self.value(a) for a in args]
        self.name = name
        for assignment in (c for c in node.children if c.type == "variable_assignment"):
            value = self.value(assignment.children[-1]) if len(assignment.children) == 3 else ""
            self.check(value, options=False)
        if name in ("cd", "pushd", "popd"):
            self.change_folder(name, values)
            return
        for value in values:
            self.check(value)
        if name == "git" and (config := _git_config_written(values, self.variables["HOME"])):
            self.check(config)  # `git config k v` writes a file no argument names
        if name in SHELLS or name == "eval":
            self.script(name, args, values)

    def change_folder(self, name: str, values: list[str | None]) -> None:
        """``cd DIR``: later relative paths start in DIR (unknown when DIR is)."""
        targets = [v for v in values if v is None or not v.startswith("-")]
        if name == "popd" or (targets and targets[0] is None):
            self.cwd = None
            return
        target = targets[0] if targets else self.variables["HOME"]
        if target is None:
            self.cwd = None
            return
        self.check(target)
        self.cwd = self.resolve(target)

    def script(self, name: str, args: list[Any], values: list[str | None]) -> None:
        """The commands of ``sh -c SCRIPT`` or ``eval SCRIPT``, from the current folder."""
        if name == "eval":
            scripts = values
        else:
            flag = next((i for i, a in enumerate(args) if re.fullmatch(r"-[a-zA-Z]*c[a-zA-Z]*", _text(a))), None)
            scripts = values[flag + 1 : flag + 2] if flag is not None else []
        if not scripts:
            return
        if any(s is None for s in scripts):
            self.found.append(Named(None, name))
            return
        tree = _parser().parse(" ".join(s for s in scripts if s is not None).encode("utf-8"))
        if tree.root_node.has_error:
            self.found.append(Named(None, name))
            return
        self.node(tree.root_node)

    def check(self, value: str | None, *, options: bool = True) -> None:
        """Record the paths ``value`` (an argument after quote removal and expansion) may name."""
        if value is None:
            self.found.append(Named(None, self.name))
            return
        for candidate in _candidates(value, options):
            self.found.append(Named(self.resolve(candidate), self.name))

    def resolve(self, text: str) -> str | None:
        """``text`` as an absolute path with ``~``, ``..`` and symlinks resolved; a glob stands
        for its folder. None: relative, after a ``cd`` to a folder not known."""
        glob = _GLOB.search(text)
        if glob:
            text = text[: glob.start()].rpartition("/")[0] + "/" if "/" in text[: glob.start()] else ""
        text = os.path.expanduser(text) if text.startswith("~") else text
        if not os.path.isabs(text) and self.cwd is None:
            return None
        joined = os.path.join(self.cwd or "/", text)
        try:
            if "/" not in text and text not in (".", "..") and not os.path.islink(joined):
                return joined  # a plain name in a resolved folder: one lstat instead of realpath's walk
            return os.path.realpath(joined)
        except (OSError, ValueError):  # a NUL byte, a name too long: nothing bash could open either
            return None

    def value(self, node: Any) -> str | None:
        """A word's value after quote removal and expansion; None when it depends on what
        cannot be known here (a variable other than HOME and PWD, a substitution)."""
        kind = node.type
        text = _text(node)
        if kind == "word":
            if "$" in text or "`" in text:
                return None
            return re.sub(r"\\(.)", r"\1", text)
        if kind == "number":
            return text
        if kind == "raw_string":
            return text[1:-1]
        if kind in ("string", "concatenation"):
            pieces = [self.value(c) if c.is_named and c.type != "string_content" else
                      (_text(c) if c.type == "string_content" else "") for c in node.children]
            return None if any(p is None for p in pieces) else "".join(p for p in pieces if p is not None)
        if kind in ("simple_expansion", "expansion"):
            name = next((_text(c) for c in node.children if c.type in ("variable_name", "special_variable_name")), "")
            if name in _SPECIAL_PARAMETERS:
                return "0"
            plain = text in (f"${name}", f"${{{name}}}")
            return self.variables.get(name) if plain and name in _KNOWN_VARIABLES else None
        return None


_GIT_CONFIG_WRITES = frozenset({"--add", "--unset", "--unset-all", "--replace-all", "--rename-section",
                                "--remove-section", "--edit", "-e", "set", "unset", "edit", "rename-section",
                                "remove-section"})


def _git_config_written(values: list[str | None], home: str) -> str | None:
    """The file a ``git config`` command writes (git-config(1)), given the words after ``git``:
    ``~/.gitconfig`` with ``--global``, ``/etc/gitconfig`` with ``--system``, else the
    repository's ``.git/config``; None when it only reads (``--get``, ``--list``, one key
    alone) or is not ``git config`` (``--file F`` names its file as an argument already)."""
    words = [w for w in values if w is not None]
    options_with_value = {"-C", "-c", "--git-dir", "--work-tree", "--namespace"}
    at = 0
    while at < len(words) and words[at].startswith("-"):
        at += 2 if words[at] in options_with_value else 1
    if at >= len(words) or words[at] != "config":
        return None
    rest = words[at + 1 :]
    positional = [w for w in rest if not w.startswith("-")]
    if not (set(rest) & _GIT_CONFIG_WRITES or len(positional) >= 2):
        return None
    if "--global" in rest:
        return os.path.join(home, ".gitconfig")
    return "/etc/gitconfig" if "--system" in rest else ".git/config"


def _candidates(value: str, options: bool) -> list[str]:
    """The strings in an argument that may name a path: itself, an option's or a ``key=``'s
    value, and any path written inside it."""
    found = [value]
    if options and value.startswith("-"):
        if "=" in value:
            found.append(value.split("=", 1)[1])
        elif not value.startswith("--") and len(value) > 2 and re.match(r"[~./]", value[2:]):
            found.append(value[2:])  # -o/path, -o../x
    elif "=" in value:
        found.append(value.split("=", 1)[1])
    found += _EMBEDDED.findall(value)
    return [f for f in dict.fromkeys(found) if f]
