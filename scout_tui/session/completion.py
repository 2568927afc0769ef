"""What the composer completes at its cursor: a slash command's name, or a path after ``@``.

Pure text logic (no widget): ``token_at`` finds the word being completed, ``complete`` says
how the text reads once a choice is taken. The composer asks after every edit or cursor move;
the app finds the choices (``Commands``, ``workspace_files``) and shows them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OPENING = "([{\"'`"
"""Characters that may stand between the whitespace and the ``@`` of a mention: ``(@a.py)``
(``mentions`` reads them so too)."""

_COMMAND_NAME = re.compile(r"[A-Za-z][\w-]*\Z|\Z")


@dataclass(frozen=True)
class Token:
    """The word being completed: ``kind`` "command" (``/name`` opening the prompt) or "file"
    (``@path`` anywhere), ``query`` (the typed part after ``/`` or ``@``, up to the cursor)
    and where the whole word lies: ``row``, columns ``start`` (at the ``/`` or ``@``) to ``end``
    (exclusive), in the composer's document."""

    kind: str
    query: str
    row: int
    start: int
    end: int


@dataclass(frozen=True)
class Choice:
    """One line of the completion list: ``value`` replaces the token (``/fork``,
    ``@src/app.py``), ``label`` is shown (``/fork [N]``), ``help`` beside it (may be ""),
    ``then`` is what follows the value ("" or a space) and ``runs`` says whether Enter sends the
    prompt at once (a command whose arguments are all optional)."""

    value: str
    label: str
    help: str = ""
    then: str = " "
    runs: bool = False


def token_at(line: str, row: int, column: int) -> Token | None:
    """The token around column ``column`` of ``line`` (row ``row`` of the document), or None.

    A command is completed only on the first row, while the cursor is in the first word of a
    line starting with one ``/`` (``//text`` is a literal prompt); a path after an ``@`` that
    starts the line or follows whitespace or an opening bracket or quote (``mentions``' rule).
    """
    if row == 0 and line.startswith("/") and not line.startswith("//"):
        word_end = len(line.split(None, 1)[0]) if line.strip() else len(line)
        if 0 < column <= word_end and _COMMAND_NAME.match(line[1:column]):
            return Token("command", line[1:column], row, 0, word_end)
    start = column
    while start > 0 and not line[start - 1].isspace():
        start -= 1
    while start < column and line[start] in OPENING:  # "(@src/app.py)"
        start += 1
    if line[start:start + 1] != "@" or start == column:
        return None
    end = column
    while end < len(line) and not line[end].isspace():
        end += 1
    return Token("file", line[start + 1:column].lstrip('"'), row, start, end)


def complete(line: str, token: Token, choice: Choice) -> tuple[str, int]:
    """``line`` with ``token`` replaced by ``choice``, and the cursor's column after it (a space
    is added only when none follows already)."""
    after = line[token.end:]
    there = bool(choice.then) and after.startswith(choice.then)  # the space is there already: step over it
    text = line[:token.start] + choice.value + ("" if there else choice.then)
    return text + after, len(text) + (len(choice.then) if there else 0)


def file_choice(path: str) -> Choice:
    """The choice for workspace path ``path`` (a folder ends in ``/`` and is not followed by a
    space: completing goes on inside it). A path with whitespace is quoted, as ``mentions``
    reads it (``@"my notes.txt"``), and completing ends there."""
    if any(c.isspace() for c in path):
        return Choice(f'@"{path}"', path, "")
    return Choice(f"@{path}", path, "", then="" if path.endswith("/") else " ")
