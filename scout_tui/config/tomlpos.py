"""Where a setting is in a TOML file, for errors that say "<file>:<line>: ...".

tomllib gives values without positions, so the text is scanned: [table] headers, dotted keys and
inline tables followed as TOML defines them (https://toml.io/en/v1.0.0). Only lines that begin
outside a value are read as keys or headers: a ``key =`` inside a multi-line string
(``\"\"\"…\"\"\"``, ``'''…'''``), a multi-line array or a comment is text, not a key.

``where`` is the one function that answers "<file>:<line>" for a setting; ``key_line`` is the line
number behind it.
"""

from __future__ import annotations

import os
import re
import tomllib
from typing import Any

_KEY = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*"|'[^'\n]*')"""
_DOTTED = rf"{_KEY}(?:\s*\.\s*{_KEY})*"
_HEADER = re.compile(rf"^\s*\[\[?\s*({_DOTTED})\s*\]\]?\s*(?:#.*)?$")
_ASSIGN = re.compile(rf"^\s*({_DOTTED})\s*=")
# What changes whether the next line begins inside a value: strings (multi-line ones first, a
# closing run may take up to two more quotes: TOML allows '"""a""""'), comments, brackets, newlines.
_TOKENS = re.compile(r'"""(?:\\[\s\S]|[^\\])*?(?:"{3,5}|\Z)|\'\'\'[\s\S]*?(?:\'{3,5}|\Z)'
                     r'|"(?:\\.|[^"\\\n])*"?|\'[^\'\n]*\'?|#[^\n]*|[\[\]{}]|\n')


def where(path: str | os.PathLike[str], text: str, keys: tuple[str, ...], *,
          table: tuple[str, ...] | None = None, line: int | None = None) -> str:
    """"<path>:<line>" of the TOML key ``keys`` (("sandbox", "network")) in ``text``, the file at ``path``.

    When the text does not show ``keys`` (a required key left out), the line of ``table`` (an
    enclosing table, e.g. ("sandbox",)) stands in, then ``line``; with neither, it is "<path>" alone.
    This is the one place a setting's file and line are put together.
    """
    found = key_line(text, keys) or (key_line(text, table) if table is not None else None) or line
    return f"{os.fspath(path)}:{found}" if found else os.fspath(path)


def key_line(text: str, path: tuple[str, ...]) -> int | None:
    """The 1-based line that sets the TOML key ``path`` (("models", "my-local", "input")), or None.

    Follows [table] headers and dotted keys; a table set by a header is found on that header
    (``[permissions]`` for ("permissions",)); a key inside an inline table is found on the line
    that assigns the table (TOML keeps an inline table on one line). A table made only by its
    subtables or dotted keys (``[providers.local]`` for ("providers",)) is found on the first of
    them. A key that is not in the text (a default) is None; so is text inside a multi-line
    string or array, however much it looks like a key.
    """
    table: tuple[str, ...] = ()
    first_inside: int | None = None
    lines = text.splitlines()
    for number in _key_lines(text):
        if number > len(lines):
            break
        line = lines[number - 1]
        header, assign = _HEADER.match(line), _ASSIGN.match(line)
        try:
            if header:
                table = _key_path(header[1])
                full = table
                if table == path:
                    return number
            elif assign:
                full = table + _key_path(assign[1])
                if full == path or (path[: len(full)] == full and path[-1] in line[assign.end() :]):
                    return number
            else:
                continue
        except tomllib.TOMLDecodeError:  # not a key after all (the file is not TOML there)
            continue
        if first_inside is None and full[: len(path)] == path:
            first_inside = number
    return first_inside


def array_table_lines(text: str, path: tuple[str, ...]) -> list[int]:
    """The 1-based line of each ``[[path]]`` header in ``text``, in order: entry N of an array of
    tables (``[[hooks.PreToolUse]]``) is on the Nth. Empty when the array is written inline."""
    found = []
    lines = text.splitlines()
    for number in _key_lines(text):
        if number > len(lines):
            break
        line = lines[number - 1]
        header = _HEADER.match(line)
        if header and line.lstrip().startswith("[["):
            try:
                if _key_path(header[1]) == path:
                    found.append(number)
            except tomllib.TOMLDecodeError:
                continue
    return found


def _key_lines(text: str) -> list[int]:
    """The 1-based numbers of the lines of ``text`` that begin outside any value: not inside a
    multi-line string, array or inline table. Only these can hold a key or a [table] header."""
    starts = [1]
    depth = 0
    line = 1
    for token in _TOKENS.finditer(text):
        kind = token[0]
        if kind == "\n":
            line += 1
            if depth == 0:
                starts.append(line)
        elif kind in "[{":
            depth += 1
        elif kind in "]}":
            depth = max(depth - 1, 0)
        else:  # a string (multi-line ones span lines) or a comment
            line += kind.count("\n")  # the line the string closes on begins inside it
    return starts


def _key_path(dotted: str) -> tuple[str, ...]:
    """The parts of a TOML dotted key: 'models."my-local".input' -> ("models", "my-local", "input")."""
    parts: list[str] = []
    table: Any = tomllib.loads(f"{dotted} = 0")
    while isinstance(table, dict):
        ((key, table),) = table.items()
        parts.append(key)
    return tuple(parts)
