"""Unified diffs: making one (``before`` → ``after`` of a file, as ``diff -u`` and git write it)
and reading one back line by line with each line's kind, for the panes that colour diffs.
"""

from __future__ import annotations

import difflib
import re

MAX_DIFF_CHARS = 100_000
"""A diff longer than this is cut (at a line end), with a last line saying so."""


def _lines(text: str) -> list[str]:
    """``text`` split after each ``\\n`` only (``str.splitlines`` also splits at ``\\r``,
    form feeds and others, which would misplace "No newline at end of file")."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


_HUNK = re.compile(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def diff_lines(diff: str) -> list[tuple[str, str]]:
    """Each line of a unified diff (GNU diff's format) with its kind: ``file`` (a ``---`` or
    ``+++`` header), ``hunk`` (``@@``), ``add``, ``remove``, ``context``, or ``note`` (``\\ No
    newline…`` and any other text). Inside a hunk its counts decide, so a removed line that
    reads ``-- x`` is a removal, not a header. Lines are split at ``\\n`` only.
    """
    out: list[tuple[str, str]] = []
    old = new = 0  # lines of the current hunk still to come, on each side
    for line in diff.removesuffix("\n").split("\n") if diff else []:
        if line.startswith("\\"):
            kind = "note"
        elif old > 0 or new > 0:
            kind = {"+": "add", "-": "remove"}.get(line[:1], "context")
            old -= kind != "add"
            new -= kind != "remove"
        elif match := _HUNK.match(line):
            kind = "hunk"
            old, new = int(match[1] or 1), int(match[2] or 1)
        elif line.startswith(("--- ", "+++ ")):
            kind = "file"
        else:
            kind = "note"
        out.append((kind, line))
    return out


def unified_diff(path: str, before: str, after: str, *, created: bool = False) -> str:
    """``before`` → ``after`` as a unified diff with 3 lines of context (``difflib``, the
    format of ``diff -u`` and git: ``--- a/PATH``, ``+++ b/PATH``, ``@@`` hunks, and
    ``\\ No newline at end of file``). A new file's header is ``--- /dev/null``. At most
    ``MAX_DIFF_CHARS`` characters. Empty when nothing changes.
    """
    old, new = _lines(before), _lines(after)
    lines: list[str] = []
    for line in difflib.unified_diff(old, new, "/dev/null" if created else f"a/{path}", f"b/{path}"):
        if line.endswith("\n"):
            lines.append(line)
        else:
            lines.append(line + "\n\\ No newline at end of file\n")
    text = "".join(lines)
    if len(text) > MAX_DIFF_CHARS:
        cut = text.rfind("\n", 0, MAX_DIFF_CHARS) + 1
        text = text[:cut] + f"[... diff cut: {len(text) - cut:,} more characters]\n"
    return text
