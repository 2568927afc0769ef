"""Where a key is set in a TOML file: its 1-based line, for errors that say "<file>:<line>: ...".

tomllib gives values without positions, so the text is scanned: [table] headers, dotted keys and
inline tables followed as TOML defines them (https://toml.io/en/v1.0.0).
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

_KEY = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*"|'[^'\n]*')"""
_DOTTED = rf"{_KEY}(?:\s*\.\s*{_KEY})*"
_HEADER = re.compile(rf"^\s*\[\[?\s*({_DOTTED})\s*\]\]?\s*(?:#.*)?$")
_ASSIGN = re.compile(rf"^\s*({_DOTTED})\s*=")


def key_line(text: str, path: tuple[str, ...]) -> int | None:
    """The 1-based line that sets the TOML key ``path`` (("models", "my-local", "input")), or None.

    Follows [table] headers and dotted keys; a table set by a header is found on that header
    (``[permissions]`` for ("permissions",)); a key inside an inline table is found on the line
    that assigns the table (TOML keeps an inline table on one line). A table made only by its
    subtables or dotted keys (``[providers.local]`` for ("providers",)) is found on the first of
    them. A key that is not in the text (a default) is None.
    """
    table: tuple[str, ...] = ()
    first_inside: int | None = None
    for number, line in enumerate(text.splitlines(), 1):
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
        except tomllib.TOMLDecodeError:  # a line of a multi-line string that looks like a key
            continue
        if first_inside is None and full[: len(path)] == path:
            first_inside = number
    return first_inside


def _key_path(dotted: str) -> tuple[str, ...]:
    """The parts of a TOML dotted key: 'models."my-local".input' -> ("models", "my-local", "input")."""
    parts: list[str] = []
    table: Any = tomllib.loads(f"{dotted} = 0")
    while isinstance(table, dict):
        ((key, table),) = table.items()
        parts.append(key)
    return tuple(parts)
