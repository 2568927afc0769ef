"""A bash command split into the parts a permission rule must each allow.

``git status && rm -rf x`` is two commands; ``echo $(id) > out.txt`` is ``echo $(id)``, ``id``
and a write to ``out.txt``. The command is parsed with tree-sitter-bash (the grammar editors
use), so quoting, substitutions, heredocs and control flow are read as bash reads them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# Targets that write or read nothing anyone keeps.
HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_UNQUOTED_SPECIAL = re.compile(r"[$`*?\[{~]")


@dataclass(frozen=True, slots=True)
class Part:
    """One thing a command does. ``tool`` is ``"bash"`` (a simple command, its text as
    written), ``"write"`` or ``"read"`` (a redirection target, as written). ``subject`` is None
    when it cannot be known before running (a target built from ``$VAR`` or a glob)."""

    tool: str
    subject: str | None


@lru_cache(maxsize=1)
def _parser() -> Any:
    # Imported on first use: the grammar costs a few ms that start-up need not pay.
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


def split_command(command: str) -> list[Part] | None:
    """The parts of ``command`` in source order, or None when bash would not parse it.

    Parts: every simple command anywhere (also inside ``$(...)``, backticks, ``<(...)``,
    pipelines, lists, subshells, loops, conditionals and function bodies), every assignment
    or ``export``/``declare`` standing alone, and every redirection to or from a file (except
    ``/dev/null`` and the standard streams). A command's text includes its arguments and any
    substitutions in them; the substituted commands are parts of their own as well. After a
    ``cd``, relative redirection targets are unknown (subject None).
    """
    source = command.encode("utf-8")
    tree = _parser().parse(source)
    if tree.root_node.has_error:
        return None
    parts: list[Part] = []
    _walk(tree.root_node, parts)
    if any(p.tool == "bash" and (p.subject or "").split(maxsplit=1)[:1] in (["cd"], ["pushd"], ["popd"]) for p in parts):
        # After a cd, a relative target names a file somewhere else: it cannot be known here.
        parts = [Part(p.tool, None) if p.tool != "bash" and p.subject and not p.subject.startswith("/") else p
                 for p in parts]
    return parts


def _text(node: Any) -> str:
    return node.text.decode("utf-8", errors="replace")


def _walk(node: Any, parts: list[Part]) -> None:
    kind = node.type
    if kind == "command":
        parts.append(Part("bash", _text(node)))
    elif kind in ("declaration_command", "unset_command"):
        parts.append(Part("bash", _text(node)))
    elif kind == "variable_assignment" and node.parent is not None and node.parent.type not in (
        "command", "declaration_command"
    ):
        # `PATH=.:$PATH; git status` changes what the next part runs.
        parts.append(Part("bash", _text(node)))
    elif kind == "file_redirect":
        part = _redirect(node)
        if part is not None:
            parts.append(part)
    for child in node.children:
        _walk(child, parts)


def _redirect(node: Any) -> Part | None:
    """The file a ``file_redirect`` node writes or reads; None for fd duplication (``2>&1``)."""
    op = next((c.type for c in node.children if c.type != "file_descriptor" and not c.is_named), None)
    destination = node.children[-1] if node.children else None
    if destination is None or op is None:
        return Part("write", None)
    if op in (">&", "<&", ">&-", "<&-") and (destination.type == "number" or _text(destination) == "-"):
        return None
    tool = "read" if op in ("<", "<&") else "write"  # anything else that names a file may write it
    target = _literal(destination)
    if target in HARMLESS_TARGETS:
        return None
    return Part(tool, target)


def _literal(node: Any) -> str | None:
    """The value of a word or quoted string with nothing to expand, else None."""
    text = _text(node)
    if node.type == "word":
        return None if _UNQUOTED_SPECIAL.search(text) or "\\" in text else text
    if node.type == "raw_string":
        return text[1:-1]
    if node.type == "string":
        if any(child.is_named and child.type != "string_content" for child in node.children):
            return None  # "$HOME/x" or "$(cmd)"
        return text[1:-1] if "\\" not in text else None
    return None
