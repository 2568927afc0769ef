"""A bash command split into the parts a permission rule must each allow.

``git status && rm -rf x`` is two commands; ``echo $(id) > out.txt`` is ``echo $(id)``, ``id``
and a write to ``out.txt``. The command is parsed with tree-sitter-bash (the grammar editors
use), so quoting, substitutions, heredocs and control flow are read as bash reads them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator

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
    pipelines, lists, subshells, loops, conditionals and function bodies), the commands of a
    literal ``sh -c SCRIPT`` or ``eval SCRIPT``, every ``[[ ... ]]`` and ``(( ... ))``, every
    assignment or ``export``/``declare`` standing alone, and every redirection to or from a
    file (except ``/dev/null`` and the standard streams). A here-document expanding what
    cannot be read before it runs is a part of unknown subject. A command's text includes its arguments and any
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


SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
"""Commands whose ``-c SCRIPT`` argument is itself split into parts."""


def _walk(node: Any, parts: list[Part]) -> None:
    kind = node.type
    if kind == "command":
        parts.append(Part("bash", _text(node)))
        parts.extend(_script_parts(node))
    elif kind in ("declaration_command", "unset_command", "test_command"):
        # `[[ -v 'a[$(cmd)]' ]]` runs cmd: bash evaluates array subscripts in some strings.
        parts.append(Part("bash", _text(node)))
    elif kind == "compound_statement" and node.children and node.children[0].type == "((":
        parts.append(Part("bash", _text(node)))
    elif kind == "heredoc_redirect" and _expands_unseen(node):
        parts.append(Part("bash", None))
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


def _script_parts(command: Any) -> list[Part]:
    """The parts of the script a command runs: ``sh -c 'SCRIPT'`` or ``eval 'SCRIPT'``, when
    its text is literal (a script built at run time is a part of unknown subject)."""
    words = [c for c in command.children if c.type not in ("variable_assignment", "file_redirect")]
    if not words or words[0].type != "command_name":
        return []
    name = _text(words[0]).lstrip("\\").rsplit("/", 1)[-1]
    args = words[1:]
    if name == "eval":
        script_nodes = args
    elif name in SHELLS:
        flag = next((i for i, a in enumerate(args) if re.fullmatch(r"-[a-zA-Z]*c[a-zA-Z]*", _text(a))), None)
        script_nodes = args[flag + 1 : flag + 2] if flag is not None else []
    else:
        return []
    if not script_nodes:
        return []
    values = [_literal(n) for n in script_nodes]
    if any(v is None for v in values):
        return [Part("bash", None)]
    inner = split_command(" ".join(v for v in values if v is not None))
    return [Part("bash", None)] if inner is None else inner


def _expands_unseen(heredoc: Any) -> bool:
    """Whether an unquoted here-document's body expands something the parse did not show as a
    command substitution (backticks, ``${...}``, ``$[...]``, a ``$(`` tree-sitter left as text)."""
    start = next((c for c in heredoc.children if c.type == "heredoc_start"), None)
    body = next((c for c in heredoc.children if c.type == "heredoc_body"), None)
    if start is None or body is None or any(q in _text(start) for q in "'\"\\"):
        return False  # <<'EOF': nothing in the body expands
    text = _text(body)
    if "`" in text or "${" in text or "$[" in text:
        return True
    seen = {c.start_byte - body.start_byte for c in _descendants(body) if c.type == "command_substitution"}
    raw = body.text
    return any(i not in seen for i in _find_all(raw, b"$("))


def _descendants(node: Any) -> Iterator[Any]:
    for child in node.children:
        yield child
        yield from _descendants(child)


def _find_all(data: bytes, needle: bytes) -> Iterator[int]:
    i = data.find(needle)
    while i != -1:
        yield i
        i = data.find(needle, i + 1)


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
