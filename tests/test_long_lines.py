"""grep and read on very long lines (minified code): grep's columns lead read to the match, and
following read's own hints along a line reaches every character of it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scout_tui.tools import ToolContext, ToolResult, builtin_registry
from scout_tui.tools.files import MAX_LINE_CHARS
from scout_tui.tools.search import MAX_WINDOWS_PER_LINE

UNICODE = "const é=\"𝄞\";日本\t"  # one, two, three and four bytes a character in UTF-8
READ_ENTRY = re.compile(
    r"(?P<number> *\d+)\t(?:\[from column (?P<column>\d+)\] )?(?P<text>.*?)"
    r"(?: \[\.\.\. \d+ more characters in this line; use offset=(?P<offset>\d+) column=(?P<next>\d+) to read on\])?",
    re.DOTALL,
)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path)


async def call(ctx: ToolContext, name: str, **arguments: object) -> ToolResult:
    result = await builtin_registry().call(name, arguments, ctx)
    assert not result.is_error, result.content
    return result


async def test_following_reads_hints_along_a_long_line_reaches_every_character(ctx: ToolContext, tmp_path: Path) -> None:
    line = (UNICODE * 10_000)[:100_000]
    (tmp_path / "min.js").write_bytes(b"first\n" + line.encode() + b"\r\nlast\n")
    pieces, column, calls = [], 1, 0
    while column is not None:
        content = (await call(ctx, "read", path="min.js", offset=2, limit=1, column=column)).content
        calls += 1
        entry = READ_ENTRY.fullmatch(content.split("\n")[0])
        assert entry and entry["number"].strip() == "2"
        assert int(entry["column"] or 1) == column
        pieces.append(entry["text"])
        column = int(entry["next"]) if entry["next"] else None
        assert entry["offset"] in (None, "2")
    assert "".join(pieces) == line
    assert calls == -(-len(line) // MAX_LINE_CHARS)


async def test_reading_at_greps_column_starts_at_the_match(ctx: ToolContext, tmp_path: Path) -> None:
    line = UNICODE * 3_000 + "needle(1, 2)" + UNICODE * 3_000
    (tmp_path / "min.js").write_text("x\n" + line + "\n")
    found = (await call(ctx, "grep", pattern=r"needle\(")).content
    where, number, column = re.match(r"(.+?):(\d+):(\d+): ", found).groups()
    read = (await call(ctx, "read", path=where, offset=int(number), column=int(column), limit=1)).content
    assert read.startswith(f"     2\t[from column {column}] needle(1, 2)")


async def test_reading_at_the_column_greps_note_gives_starts_at_the_next_match(ctx: ToolContext, tmp_path: Path) -> None:
    line = "".join(f"{UNICODE * 100}hit{i}" for i in range(MAX_WINDOWS_PER_LINE + 3))
    (tmp_path / "min.js").write_text(line)
    note = (await call(ctx, "grep", pattern=r"hit\d")).content.split("\n")[-1]
    offset, column = re.search(r"read min\.js with offset=(\d+) column=(\d+)\]$", note).groups()
    read = (await call(ctx, "read", path="min.js", offset=int(offset), column=int(column))).content
    assert read.startswith(f"     1\t[from column {column}] hit{MAX_WINDOWS_PER_LINE}")
