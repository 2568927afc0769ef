"""Cutting growing markdown where a top-level block starts, so a long answer renders in pieces
that look like the whole. Pure string functions: no Textual, no Rich.

Fences are read per CommonMark 0.31 section 4.5 (https://spec.commonmark.org/0.31.2/#fenced-code-blocks),
lists closely enough to sections 5.2-5.3 (https://spec.commonmark.org/0.31.2/#list-items) to
number an ordered list's items in a piece as they are numbered in the whole (``_Lists``).
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
_ORDERED = re.compile(r"(\d{1,9})([.)])(?=[ \t\n]|$)")  # an ordered list marker (§5.2), at a line's first non-space
_ANY_ORDERED = re.compile(r"^ {0,3}\d{1,9}[.)]", re.MULTILINE)  # text with none has no numbers to keep
_BULLET = re.compile(r"[-*+](?=[ \t]|$)")
_BREAK = re.compile(r"(?:\*[ \t]*){3,}$|(?:-[ \t]*){3,}$|(?:_[ \t]*){3,}$")  # a thematic break (§4.1)
_NOT_TEXT = re.compile(r"#{1,6}(?:[ \t]|$)|[>|<]")  # a heading, quote, table or HTML line (roughly)


_CLOSED = 1 << 30
"""``_Lists.content`` of an empty item that a blank line ended: no line is inside it."""


def _indent(line: str) -> int:
    """Columns of spaces ``line`` starts with (its tabs expanded first, where they count)."""
    return len(line) - len(line.lstrip(" "))


def _is_text(text: str) -> bool:
    """Whether a line, from its first non-space ``text``, can be paragraph text: not a heading,
    quote, table, HTML or thematic break line (roughly)."""
    first = text[:1]
    if first in ("#", ">", "|", "<"):
        return not _NOT_TEXT.match(text)
    return first not in ("-", "*", "_") or not _BREAK.match(text)


def _opens_paragraph(content: str) -> bool:
    """Whether a list item whose first line goes on with ``content`` (after its marker) starts
    with paragraph text, which a next, less indented line can continue lazily."""
    text = content.lstrip(" ")
    return bool(text.strip()) and len(content) - len(text) < 5 and _is_text(text)


def _content_column(line: str, marker_end: int) -> int:
    """Where the content of the list item on ``line`` starts (tabs expanded), its marker
    ending at column ``marker_end``: after 1 to 4 spaces, else 1 (§5.2, rule 2 and 3)."""
    spaces = _indent(line[marker_end:])
    return marker_end + (spaces if 1 <= spaces <= 4 and line[marker_end:].strip() else 1)


class _Lists:
    """The top-level list open at each line of markdown read line by line, for numbering an
    ordered list item cut off from the items before it as the whole numbers it: "1. 1. 1."
    means 1, 2, 3, and a list means its first item's number, counting up (§5.3).

    Read as markdown-it reads them (tests/test_markdown_cut.py checks pieces against it),
    but for what answers seldom hold: HTML blocks, lists inside block quotes, tabs.
    """

    __slots__ = ("marker", "next", "content", "empty", "paragraph", "quote")

    def __init__(self) -> None:
        self.marker = ""
        """The open list's delimiter ("." or ")") or bullet ("-", "*", "+"); "" outside lists."""
        self.next = 0
        """The number the open ordered list's next item means."""
        self.content = 0
        """The column where the content of the open list's current item starts."""
        self.empty = False
        """The open list's current item has no content yet."""
        self.paragraph = False
        """The last line read was paragraph text: the next may continue it ("lazily")."""
        self.quote = False
        """The lines since the last blank line are a block quote (markdown-it lets any list
        item end a quote's paragraph, as if it were not one)."""

    def blank(self) -> None:
        """A blank line: no paragraph or block quote goes on past it, nor an empty item (§5.2:
        an item begins with at most one blank line; after two, markdown-it ends the list)."""
        self.paragraph = self.quote = False
        if self.marker and self.empty:
            if self.content == _CLOSED:
                self.marker = ""
            self.content = _CLOSED

    def read(self, line: str, fence: re.Match[str] | None) -> int | None:
        """Read a non-blank line outside code fences (``fence``: it opens one, whose content
        and closing line are not read). Returns the number it means when it is an item of a
        top-level ordered list, else None."""
        if fence:  # less indented than the open item's content, it ends the list
            if self.marker and _indent(line.expandtabs(4)) < self.content:
                self.marker = ""
            self.paragraph = self.quote = self.empty = False
            return None
        if "\t" in line:
            line = line.expandtabs(4)
        indent = _indent(line)
        if self.marker and indent >= self.content:  # inside the open item: nested blocks, more text
            self.paragraph, self.empty = True, False
            return None
        text = line[indent:]
        item = None
        if indent < 4 and text[0] in "0123456789":
            item = _ORDERED.match(text)
        elif indent < 4 and text[0] in "-*+" and not _BREAK.match(text):
            item = _BULLET.match(text)
        if item is not None:
            ordered = item.re is _ORDERED
            marker = item[2] if ordered else item[0]
            number = int(item[1]) if ordered else 0
            after = text[item.end():]
            empty = not after.strip()
            if marker == self.marker:
                number = self.next
            elif not self.marker and self.paragraph and (empty or (ordered and number != 1)):
                return None  # it cannot interrupt a paragraph (§5.2): more paragraph text
            self.marker, self.next = marker, number + 1
            self.content = _content_column(line, indent + item.end())
            self.paragraph, self.quote, self.empty = _opens_paragraph(after), False, empty
            return number if ordered else None
        text_line = _is_text(text)
        if self.marker and self.paragraph and text_line:
            return None  # a lazy line of the open item's paragraph
        self.marker = ""
        self.quote = text[0] == ">" or self.quote and text_line
        self.paragraph = text_line and not self.quote and (indent < 4 or self.paragraph)
        return None


def _numbered(piece: str, number: int) -> str:
    """``piece``, starting with an ordered list item at column 0, with that item meaning ``number``.

    The digits are replaced, zero-padded to their old width (CommonMark reads "07." as 7);
    when ``number`` needs more digits, the item's indented lines move right as many columns,
    so what was inside the item (a nested list, a code fence) stays inside it.
    """
    match = _ORDERED.match(piece)
    assert match is not None, "only an ordered list item is numbered"
    digits = str(number).zfill(len(match[1]))
    shift = len(digits) - len(match[1])
    end = piece.find("\n") + 1
    if not shift or not end:
        return digits + piece[match.end(1):]
    first = piece[:end].expandtabs(4)
    content = _content_column(first, match.end())
    paragraph = _opens_paragraph(first[match.end():])
    lines = piece[end:].split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            paragraph = False
        elif _indent(line.expandtabs(4)) >= content:
            lines[i], paragraph = " " * shift + line, True
        elif not paragraph or not _is_text(line.lstrip()) or _LIST_ITEM.match(line.lstrip()):
            break  # the item ended (a lazy line, indented less, is left where it is)
    return digits + piece[match.end(1):end] + "\n".join(lines)


def _fence_line(line: str, complete: bool) -> re.Match[str] | None:
    """A fence line per CommonMark 0.31 §4.5 (``` or ~~~ runs); an unfinished line never is."""
    if not complete or ("`" not in line and "~" not in line):
        return None
    match = _FENCE.match(line)
    if match and match.group(1)[0] == "`" and "`" in match.group(2):
        return None  # a backtick fence's info string may not contain backticks
    return match


def _closes(match: re.Match[str] | None, marker: str) -> bool:
    return match is not None and match.group(1)[0] == marker[0] and len(match.group(1)) >= len(marker) \
        and not match.group(2).strip()


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
    pass) grows with the fence. An ordered list cut between items goes on counting in the next
    chunk (its first item's number rewritten, ``_numbered``). ``rest`` is the text after the
    last cut (with a reopened fence line in front, if cut inside one).
    """
    chunks: list[str] = []
    start, prefix = 0, ""  # the current chunk is prefix + source[start:...]
    number: int | None = None  # what the current chunk's first line, a list item, is numbered in the whole
    fence: tuple[str, str] | None = None  # (opening line, marker) while inside a fence
    fence_start = 0  # where the fence's part in the current chunk starts
    previous_blank = False
    lists = _Lists() if _ANY_ORDERED.search(source) else None

    def piece(end: int) -> str:
        text = prefix + source[start:end]
        return text if number is None else _numbered(text, number)

    for pos, end, line, complete, match in _scan(source):
        blank = not line.strip()
        if fence is not None:
            if _closes(match, fence[1]):
                fence = None
            elif complete and pos - fence_start >= size:
                chunks.append(piece(pos) + fence[1] + "\n")
                start, prefix, fence_start, number = pos, fence[0], pos, None
        elif blank:
            if lists is not None:
                lists.blank()
        else:
            length = pos - start + len(prefix)
            meant = lists.read(line, match) if lists is not None else None
            # A new block after a blank line; or, in a block with no blank line for 2 x size
            # (a tight list, a huge paragraph), any plain line start.
            if line[0] not in " \t|" and length >= (size if previous_blank else 2 * size):
                chunks.append(piece(pos))
                start, prefix, number = pos, "", _misnumbered(line, meant)
            if match:
                fence, fence_start = (line + "\n", match.group(1)), pos
        previous_blank = blank
    return chunks, piece(len(source))


def _misnumbered(line: str, meant: int | None) -> int | None:
    """The number ``line``, an ordered list item, means (``meant``) when it shows another, else None."""
    if meant is None:
        return None
    match = _ORDERED.match(line)
    return meant if match is None or int(match[1]) != meant else None


def last_cut(source: str, limit: int = LIVE_CHARS) -> tuple[str, str]:
    """Cut growing markdown ``source`` where its last top-level block starts: ``(head, rest)``.

    ``head`` holds finished blocks only; ``rest`` is the block still being written (its look
    may change as text arrives). When that block is longer than ``limit`` it is cut too: a
    code fence at its last complete line (``head`` gets a closing fence line, ``rest`` the
    opening line again); a tight list before its last item; a long paragraph at a line start.
    An ordered list item at the start of ``rest`` is numbered as in ``source`` (``_numbered``).
    ``("", source)`` when there is no cut point.
    """
    boundary = 0
    item = line_cut = 0  # last list item / plain line start after a non-blank line, outside fences
    numbers: dict[int, int] = {}  # line start -> number, for list items numbered otherwise than they read
    fence: tuple[int, int, str] | None = None  # (line start, line end, marker) of an open fence
    previous_blank = True
    total = len(source)
    lists = _Lists() if _ANY_ORDERED.search(source) else None
    for pos, end, line, complete, match in _scan(source):
        blank = not line.strip()
        if fence is not None:
            if _closes(match, fence[2]):
                fence = None
        elif blank:
            if lists is not None:
                lists.blank()
        else:
            meant = lists.read(line, match) if lists is not None else None
            if line[0] not in " \t|":
                if (number := _misnumbered(line, meant)) is not None:
                    numbers[pos] = number
                if previous_blank:
                    boundary = pos
                else:
                    line_cut = pos
                    if _LIST_ITEM.match(line):
                        item = pos
            if match:
                fence = (pos, end, match.group(1))
        previous_blank = blank

    def cut(at: int) -> tuple[str, str]:
        rest = source[at:]
        return source[:at], rest if at not in numbers else _numbered(rest, numbers[at])

    if fence is not None:
        start, line_end, marker = fence
        last_line = source.rfind("\n", 0, total - 1) + 1
        if total - start > limit and last_line > line_end + 1:
            return source[:last_line] + marker + "\n", source[start : line_end + 1] + source[last_line:]
        return cut(boundary)
    if total - boundary > limit:
        at = item if item > boundary else line_cut
        if at > boundary:
            return cut(at)
    return cut(boundary)
