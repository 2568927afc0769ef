"""Cutting growing markdown where a top-level block starts, so a long answer renders in pieces
that look like the whole. Pure string functions: no Textual, no Rich.

Fences are read per CommonMark 0.31 section 4.5 (https://spec.commonmark.org/0.31.2/#fenced-code-blocks).
"""

from __future__ import annotations

import re
from typing import Iterator

CHUNK_CHARS = 4_000
"""Size of a finished chunk (``split_markdown``): whole blocks; code fences are cut at this size."""

LIVE_CHARS = 2_000
"""A live block longer than this is cut (``last_cut``): a fence is closed and reopened, a tight
list or a long paragraph is cut at a line start, so re-rendering the live block stays cheap."""

_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)")
_LIST_ITEM = re.compile(r"(?:[-*+]|\d{1,9}[.)])[ \t]")


def _fence_line(line: str, complete: bool) -> re.Match[str] | None:
    """A fence line per CommonMark 0.31 §4.5 (``` or ~~~ runs); an unfinished line never is."""
    if not complete or ("`" not in line and "~" not in line):
        return None
    match = _FENCE.match(line)
    if match and match.group(1)[0] == "`" and "`" in match.group(2):
        return None  # a backtick fence's info string may not contain backticks
    return match


def _closes(match: re.Match[str] | None, marker: str) -> bool:
    return bool(match) and match.group(1)[0] == marker[0] and len(match.group(1)) >= len(marker) and not match.group(2).strip()  # type: ignore[union-attr]


def _scan(source: str) -> Iterator[tuple[int, int, str, bool, re.Match[str] | None]]:
    """Each line of ``source``: ``(start, end, text, complete, fence match)``; the last may lack
    its newline (``complete`` False: then a fence line does not count yet, see ``_fence_line``)."""
    pos, total = 0, len(source)
    while pos < total:
        end = source.find("\n", pos)
        complete = end >= 0
        if not complete:
            end = total
        line = source[pos:end]
        yield pos, end, line, complete, _fence_line(line, complete)
        pos = end + 1


def split_markdown(source: str, size: int = CHUNK_CHARS) -> tuple[list[str], str]:
    """Cut markdown ``source`` into chunks of at least ``size`` characters: ``(chunks, rest)``.

    A cut falls where a non-indented, non-blank line follows a blank line outside any code
    fence (a new top-level block), so rendering the chunks one after another looks like
    rendering ``source``; a block with no blank line in ``2 * size`` characters is cut at a
    line start (a tight list between items, a paragraph between lines). A code fence longer
    than ``size`` is closed and reopened in the next chunk, so no chunk (and no highlighting
    pass) grows with the fence. ``rest`` is the
    text after the last cut (with a reopened fence line in front, if cut inside one).
    """
    chunks: list[str] = []
    start, prefix = 0, ""  # the current chunk is prefix + source[start:...]
    fence: tuple[str, str] | None = None  # (opening line, marker) while inside a fence
    fence_start = 0  # where the fence's part in the current chunk starts
    previous_blank = False
    for pos, end, line, complete, match in _scan(source):
        blank = not line.strip()
        if fence is not None:
            if _closes(match, fence[1]):
                fence = None
            elif complete and pos - fence_start >= size:
                chunks.append(prefix + source[start:pos] + fence[1] + "\n")
                start, prefix, fence_start = pos, fence[0], pos
        elif not blank:
            length = pos - start + len(prefix)
            # A new block after a blank line; or, in a block with no blank line for 2 x size
            # (a tight list, a huge paragraph), any plain line start.
            if line[0] not in " \t|" and length >= (size if previous_blank else 2 * size):
                chunks.append(prefix + source[start:pos])
                start, prefix = pos, ""
            if match:
                fence, fence_start = (line + "\n", match.group(1)), pos
        previous_blank = blank
    return chunks, prefix + source[start:]


def last_cut(source: str, limit: int = LIVE_CHARS) -> tuple[str, str]:
    """Cut growing markdown ``source`` where its last top-level block starts: ``(head, rest)``.

    ``head`` holds finished blocks only; ``rest`` is the block still being written (its look
    may change as text arrives). When that block is longer than ``limit`` it is cut too: a
    code fence at its last complete line (``head`` gets a closing fence line, ``rest`` the
    opening line again); a tight list before its last item; a long paragraph at a line start.
    ``("", source)`` when there is no cut point.
    """
    boundary = 0
    item = line_cut = 0  # last list item / plain line start after a non-blank line, outside fences
    fence: tuple[int, int, str] | None = None  # (line start, line end, marker) of an open fence
    previous_blank = True
    total = len(source)
    for pos, end, line, complete, match in _scan(source):
        blank = not line.strip()
        if fence is not None:
            if _closes(match, fence[2]):
                fence = None
        elif not blank:
            if line[0] not in " \t|":
                if previous_blank:
                    boundary = pos
                else:
                    line_cut = pos
                    if _LIST_ITEM.match(line):
                        item = pos
            if match:
                fence = (pos, end, match.group(1))
        previous_blank = blank
    if fence is not None:
        start, line_end, marker = fence
        last_line = source.rfind("\n", 0, total - 1) + 1
        if total - start > limit and last_line > line_end + 1:
            return source[:last_line] + marker + "\n", source[start : line_end + 1] + source[last_line:]
        return source[:boundary], source[boundary:]
    if total - boundary > limit:
        cut = item if item > boundary else line_cut
        if cut > boundary:
            return source[:cut], source[cut:]
    return source[:boundary], source[boundary:]
