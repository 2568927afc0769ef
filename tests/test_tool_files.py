"""The read, write and edit tools, run through the built-in registry on real files."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from scout_tui.core.diffs import diff_lines, unified_diff
from scout_tui.tools import ToolContext, ToolError, ToolResult, builtin_registry
from scout_tui.tools.files import MAX_LINE_CHARS, WRITE


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path)


async def call(ctx: ToolContext, name: str, **arguments: object) -> ToolResult:
    return await builtin_registry().call(name, arguments, ctx)


# ----------------------------------------------------------------------------- read


async def test_read_numbers_lines_like_cat_n(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n\tbeta\ngamma")
    result = await call(ctx, "read", path="a.txt")
    assert result == ToolResult("     1\talpha\n     2\t\tbeta\n     3\tgamma")


async def test_read_offset_and_limit_say_how_many_lines_remain(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "ten.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = await call(ctx, "read", path="ten.txt", offset=3, limit=2)
    assert result.content == "     3\tline 3\n     4\tline 4\n... 6 more lines; use offset=5 to read on"


async def test_read_default_limit_is_2000_lines(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x\n" * 2500)
    lines = (await call(ctx, "read", path="big.txt")).content.split("\n")
    assert lines[-2] == "  2000\tx"
    assert lines[-1] == "... 500 more lines; use offset=2001 to read on"


async def test_read_offset_past_the_end_is_an_error(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "short.txt").write_text("one\ntwo\n")
    result = await call(ctx, "read", path="short.txt", offset=5)
    assert result.is_error and "offset 5 is past the end of short.txt, which has 2 lines" in result.content


async def test_read_cuts_a_long_line_saying_which_column_to_read_on_from(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "min.js").write_text("y" * (MAX_LINE_CHARS + 500))
    content = (await call(ctx, "read", path="min.js")).content
    assert content == (
        f"     1\t{'y' * MAX_LINE_CHARS} [... 500 more characters in this line; "
        f"use offset=1 column={MAX_LINE_CHARS + 1} to read on]"
    )


async def test_read_column_pages_along_a_long_line(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "min.js").write_text("a" * MAX_LINE_CHARS + "b" * MAX_LINE_CHARS + "c" * 10)
    second = (await call(ctx, "read", path="min.js", column=MAX_LINE_CHARS + 1)).content
    assert second == (
        f"     1\t[from column {MAX_LINE_CHARS + 1}] {'b' * MAX_LINE_CHARS} [... 10 more characters in this line; "
        f"use offset=1 column={2 * MAX_LINE_CHARS + 1} to read on]"
    )
    last = (await call(ctx, "read", path="min.js", column=2 * MAX_LINE_CHARS + 1)).content
    assert last == f"     1\t[from column {2 * MAX_LINE_CHARS + 1}] cccccccccc"


async def test_read_column_applies_to_the_line_at_offset_only(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("zero\n0123456789\nnext line\n")
    content = (await call(ctx, "read", path="a.txt", offset=2, column=4)).content
    assert content == "     2\t[from column 4] 3456789\n     3\tnext line"


async def test_read_column_counts_characters_not_bytes(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "u.txt").write_text("é𝄞日x\n")
    assert (await call(ctx, "read", path="u.txt", column=4)).content == "     1\t[from column 4] x"


async def test_read_column_past_the_end_of_the_line_is_an_error(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("short\n" + "x" * 3000 + "\r\n")
    result = await call(ctx, "read", path="a.txt", column=6)
    assert result.is_error
    assert result.content == "read: column 6 is past the end of line 1 of a.txt, which has 5 characters"
    result = await call(ctx, "read", path="a.txt", offset=2, column=3001)
    assert result.content == "read: column 3001 is past the end of line 2 of a.txt, which has 3000 characters"


async def test_read_column_1_of_an_empty_line_is_the_empty_line(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n\nthree\n")
    assert (await call(ctx, "read", path="a.txt", offset=2, column=1, limit=1)).content == (
        "     2\t\n... 1 more lines; use offset=3 to read on"
    )


async def test_read_drops_crlf_line_endings(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    assert (await call(ctx, "read", path="dos.txt")).content == "     1\tone\n     2\ttwo"


async def test_read_refuses_a_file_with_nul_bytes(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    result = await call(ctx, "read", path="img.png")
    assert result.is_error and "img.png is a binary file" in result.content


async def test_read_refuses_text_that_is_not_utf8(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "latin1.txt").write_bytes("ok\ncaf\xe9\n".encode("latin-1"))
    result = await call(ctx, "read", path="latin1.txt")
    assert result.is_error and "not UTF-8 text (invalid byte at line 2)" in result.content


async def test_read_empty_file_says_so(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "empty.txt").touch()
    assert await call(ctx, "read", path="empty.txt") == ToolResult("empty.txt is empty (0 bytes).")


async def test_read_missing_file_is_a_clear_error(ctx: ToolContext) -> None:
    result = await call(ctx, "read", path="nope/missing.txt")
    assert result.is_error
    assert result.content.startswith("read: no such file: nope/missing.txt")
    assert "does not exist either" in result.content


async def test_read_directory_is_a_clear_error(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    result = await call(ctx, "read", path="src")
    assert result.is_error and "src is a directory" in result.content


async def test_read_refuses_a_fifo_instead_of_blocking(ctx: ToolContext, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    result = await call(ctx, "read", path="pipe")
    assert result.is_error and "pipe is not a regular file" in result.content


async def test_read_resolves_paths_against_the_context_directory(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f.txt").write_text("inside\n")
    result = await call(ToolContext(cwd=tmp_path / "sub"), "read", path="f.txt")
    assert result.content == "     1\tinside"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "missing required argument 'path' (got: nothing)"),
        ({"file_path": "a.txt"}, "missing required argument 'path' (got: file_path)"),
        ({"path": "a.txt", "offset": 0}, "'offset' must be at least 1"),
        ({"path": "a.txt", "limit": "ten"}, "'limit' must be an integer"),
        ({"path": "a.txt", "column": 0}, "'column' must be at least 1, got 0"),
        ({"path": "a.txt", "column": 2.5}, "'column' must be an integer, got 2.5"),
    ],
)
async def test_read_bad_arguments_are_error_results(ctx: ToolContext, tmp_path: Path, arguments: dict, message: str) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    result = await builtin_registry().call("read", arguments, ctx)
    assert result.is_error and message in result.content


# ----------------------------------------------------------------------------- write


async def test_write_creates_parent_folders(ctx: ToolContext, tmp_path: Path) -> None:
    result = await call(ctx, "write", path="deep/er/new.py", content="print('é')\nx = 1\n")
    assert result == ToolResult("Created deep/er/new.py (18 bytes, 2 lines).")
    assert (tmp_path / "deep/er/new.py").read_bytes() == "print('é')\nx = 1\n".encode()


async def test_write_overwrites_and_says_so_keeping_the_mode(ctx: ToolContext, tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("old\n")
    script.chmod(0o755)
    result = await call(ctx, "write", path="run.sh", content="#!/bin/sh\necho hi")
    assert result.content == "Overwrote run.sh (17 bytes, 2 lines)."
    assert script.read_text() == "#!/bin/sh\necho hi"
    assert script.stat().st_mode & 0o777 == 0o755


async def test_write_to_a_directory_is_an_error(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    result = await call(ctx, "write", path="d", content="x")
    assert result.is_error and "d is a directory" in result.content


async def test_write_under_a_file_is_an_error(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    result = await call(ctx, "write", path="f/g.txt", content="x")
    assert result.is_error and "write: cannot create" in result.content


# ----------------------------------------------------------------------------- edit


async def test_edit_replaces_a_unique_match(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("a = 1\nb = 2\nc = 3\n")
    result = await call(ctx, "edit", path="m.py", old_string="b = 2", new_string="b = 20")
    assert result == ToolResult("Edited m.py: 1 replacement (first at line 2).")
    assert (tmp_path / "m.py").read_text() == "a = 1\nb = 20\nc = 3\n"


async def test_edit_not_found_hints_at_indentation(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f():\n\treturn 1\n")
    result = await call(ctx, "edit", path="m.py", old_string="def f():\n    return 1", new_string="x")
    assert result.is_error
    assert "old_string was not found in m.py" in result.content
    assert "match lines 1-2 if whitespace is ignored" in result.content


async def test_edit_not_found_spots_a_line_number_prefix(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    result = await call(ctx, "edit", path="m.py", old_string="     1\tx = 1", new_string="x = 2")
    assert result.is_error and "line-number prefix" in result.content


async def test_edit_ambiguous_match_names_count_and_lines_and_changes_nothing(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 0\ny = 1\nx = 0\n")
    result = await call(ctx, "edit", path="m.py", old_string="x = 0", new_string="x = 9")
    assert result.is_error
    assert "matches 2 times in m.py (at lines 1, 3)" in result.content
    assert "replace_all" in result.content
    assert (tmp_path / "m.py").read_text() == "x = 0\ny = 1\nx = 0\n"


async def test_edit_replace_all_counts_replacements(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 0\ny = 1\nx = 0\nx = 0\n")
    result = await call(ctx, "edit", path="m.py", old_string="x = 0", new_string="x = 9", replace_all=True)
    assert result.content == "Edited m.py: 3 replacements (first at line 1)."
    assert (tmp_path / "m.py").read_text() == "x = 9\ny = 1\nx = 9\nx = 9\n"


async def test_edit_keeps_crlf_line_endings(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "dos.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = await call(ctx, "edit", path="dos.txt", old_string="one\ntwo", new_string="one\n1.5\ntwo")
    assert not result.is_error
    assert (tmp_path / "dos.txt").read_bytes() == b"one\r\n1.5\r\ntwo\r\nthree\r\n"


async def test_edit_keeps_a_utf8_byte_order_mark(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbfname = caf\xc3\xa9\n")
    await call(ctx, "edit", path="bom.txt", old_string="café", new_string="thé")
    assert (tmp_path / "bom.txt").read_bytes() == b"\xef\xbb\xbfname = th\xc3\xa9\n"


async def test_edit_identical_strings_is_an_error(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x\n")
    result = await call(ctx, "edit", path="m.py", old_string="x", new_string="x")
    assert result.is_error and "identical" in result.content


async def test_edit_empty_old_string_points_to_write(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x\n")
    result = await call(ctx, "edit", path="m.py", old_string="", new_string="y")
    assert result.is_error and "use write" in result.content


async def test_edit_missing_file_is_an_error(ctx: ToolContext) -> None:
    result = await call(ctx, "edit", path="gone.py", old_string="a", new_string="b")
    assert result.is_error and "no such file: gone.py" in result.content


async def test_edit_refuses_non_utf8_files(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "l1.txt").write_bytes(b"caf\xe9\n")
    result = await call(ctx, "edit", path="l1.txt", old_string="caf", new_string="tea")
    assert result.is_error and "not UTF-8" in result.content
    assert (tmp_path / "l1.txt").read_bytes() == b"caf\xe9\n"


async def test_write_refuses_a_fifo_instead_of_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    ctx = ToolContext(cwd=tmp_path)
    result = await asyncio.wait_for(call(ctx, "write", path="pipe", content="x"), 60)  # a hang guard
    assert result.is_error and "not a regular file" in result.content
    with pytest.raises(ToolError, match="not a regular file"):
        await asyncio.wait_for(WRITE.preview({"path": "pipe", "content": "x"}, ctx), 60)


def test_a_diff_splits_lines_only_at_newlines():
    diff = unified_diff("f.txt", "a\rb\nc\n", "a\rb\nC\n")
    assert "No newline" not in diff
    assert diff.split("\n")[3:] == [" a\rb", "-c", "+C", ""]


def test_diff_lines_tells_headers_from_changed_lines_by_the_hunk_counts():
    diff = unified_diff("q.sql", "-- note\nselect 1;\n", "++ added\nselect 1;")
    kinds = diff_lines(diff)
    assert kinds == [
        ("file", "--- a/q.sql"), ("file", "+++ b/q.sql"), ("hunk", "@@ -1,2 +1,2 @@"),
        ("remove", "--- note"), ("remove", "-select 1;"), ("add", "+++ added"), ("add", "+select 1;"),
        ("note", "\\ No newline at end of file"),
    ]


async def test_a_new_file_is_written_without_execute_permission(tmp_path) -> None:
    # os.open's default mode is 0o777: every file write created was executable (a hook ran at once).
    import os
    import stat

    from scout_tui.tools import ToolContext, builtin_registry

    old = os.umask(0o022)
    try:
        result = await builtin_registry().call("write", {"path": "hook.sh", "content": "echo x\n"}, ToolContext(tmp_path))
    finally:
        os.umask(old)
    assert not result.is_error
    assert stat.S_IMODE((tmp_path / "hook.sh").stat().st_mode) == 0o644
