"""The grep and glob tools, run through the built-in registry on real trees under tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scout_tui.tools import ToolContext, ToolResult, builtin_registry
from scout_tui.tools.globs import expand_braces, glob_regex
from scout_tui.tools.search import (
    MATCH_CONTEXT_CHARS,
    MAX_GLOB_RESULTS,
    MAX_GREP_MATCHES,
    MAX_MATCH_LINE_CHARS,
    MAX_MATCH_SHOWN_CHARS,
    MAX_WINDOWS_PER_LINE,
)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path)


async def call(ctx: ToolContext, name: str, **arguments: object) -> ToolResult:
    return await builtin_registry().call(name, arguments, ctx)


def put(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


SKIPPED_TREE = {
    "src/app.py": "needle = 1\n",
    ".git/config": "needle\n",
    ".hg/store": "needle\n",
    "node_modules/lib/index.js": "needle\n",
    "src/__pycache__/app.py": "needle\n",
    ".venv/lib/site.py": "needle\n",
    "env/pyvenv.cfg": "home = /usr\n",
    "env/lib/thing.py": "needle\n",
}


# ----------------------------------------------------------------------------- grep


async def test_grep_reports_path_line_and_text_relative_to_cwd(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"pkg/a.py": "import os\ndef main():\n    pass\n", "b.txt": "nothing\n"})
    result = await call(ctx, "grep", pattern=r"def \w+")
    assert result == ToolResult("pkg/a.py:2: def main():")


async def test_grep_skips_vcs_dependency_cache_and_virtualenv_folders(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, SKIPPED_TREE)
    assert (await call(ctx, "grep", pattern="needle")).content == "src/app.py:1: needle = 1"


async def test_grep_searches_a_skipped_folder_when_named_as_path(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, SKIPPED_TREE)
    result = await call(ctx, "grep", pattern="needle", path="node_modules")
    assert result.content == "node_modules/lib/index.js:1: needle"


async def test_grep_include_limits_files_by_name_glob(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"a.py": "hit\n", "b.ts": "hit\n", "c.tsx": "hit\n", "deep/d.py": "hit\n"})
    assert (await call(ctx, "grep", pattern="hit", include="*.py")).content == "a.py:1: hit\ndeep/d.py:1: hit"
    assert (await call(ctx, "grep", pattern="hit", include="*.{ts,tsx}")).content == "b.ts:1: hit\nc.tsx:1: hit"


async def test_grep_ignore_case(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"a.txt": "Hello\nhello\nHELLO\n"})
    assert (await call(ctx, "grep", pattern="hello")).content == "a.txt:2: hello"
    assert len((await call(ctx, "grep", pattern="hello", ignore_case=True)).content.splitlines()) == 3


async def test_grep_skips_binary_files(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"blob.bin": b"needle\0\x01", "text.txt": "needle\n"})
    assert (await call(ctx, "grep", pattern="needle")).content == "text.txt:1: needle"


async def test_grep_passes_over_fifos_instead_of_blocking_on_them(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"a.txt": "needle\n"})
    os.mkfifo(tmp_path / "pipe")
    assert (await call(ctx, "grep", pattern="needle")).content == "a.txt:1: needle"


async def test_grep_one_file_as_path_with_crlf_lines(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"dos.txt": b"a\r\nend here\r\n", "other.txt": "end here\n"})
    assert (await call(ctx, "grep", pattern="here$", path="dos.txt")).content == "dos.txt:2: end here"


async def test_grep_anchors_match_each_line(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"a.txt": "x\nstart here\nend\n"})
    assert (await call(ctx, "grep", pattern=r"\Astart")).content == "a.txt:2: start here"
    assert (await call(ctx, "grep", pattern=r"^end$")).content == "a.txt:3: end"


async def test_grep_stops_at_the_match_cap_and_says_so(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"many.txt": "match\n" * (MAX_GREP_MATCHES + 50)})
    lines = (await call(ctx, "grep", pattern="match")).content.splitlines()
    assert len(lines) == MAX_GREP_MATCHES + 1
    assert lines[-1] == f"[stopped at {MAX_GREP_MATCHES} matches; narrow the pattern, path or include]"


async def test_grep_stops_at_the_character_cap_and_says_so(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"wide.txt": ("match " + "w" * 400 + "\n") * 100})
    content = (await call(ctx, "grep", pattern="match")).content
    assert len(content) < 31_000
    assert content.endswith("characters of results; narrow the pattern, path or include]")


async def test_grep_shows_a_line_of_max_match_line_chars_whole(ctx: ToolContext, tmp_path: Path) -> None:
    line = "needle" + "x" * (MAX_MATCH_LINE_CHARS - 6)
    put(tmp_path, {"a.txt": line + "\n"})
    assert (await call(ctx, "grep", pattern="needle")).content == f"a.txt:1: {line}"


async def test_grep_shows_a_window_around_a_match_deep_in_a_long_line(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"min.js": "a" * 50_000 + "needle" + "b" * 50_000 + "\n"})
    content = (await call(ctx, "grep", pattern="needle")).content
    assert content == f"min.js:1:50001: …{'a' * MATCH_CONTEXT_CHARS}needle{'b' * MATCH_CONTEXT_CHARS}…"


async def test_grep_window_at_the_start_or_end_of_a_long_line_has_no_cut_mark_there(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"min.js": "needle" + "x" * 1000 + "\n" + "y" * 1000 + "needle\n"})
    content = (await call(ctx, "grep", pattern="needle")).content
    assert content.split("\n") == [
        f"min.js:1:1: needle{'x' * MATCH_CONTEXT_CHARS}…",
        f"min.js:2:1001: …{'y' * MATCH_CONTEXT_CHARS}needle",
    ]


async def test_grep_shows_each_far_apart_match_of_a_long_line_in_its_own_window(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"min.js": ("." * 1000 + "hit") * 3 + "\n"})
    lines = (await call(ctx, "grep", pattern="hit")).content.split("\n")
    assert [line.split(": ")[0] for line in lines] == ["min.js:1:1001", "min.js:1:2004", "min.js:1:3007"]
    assert all(line.count("hit") == 1 for line in lines)


async def test_grep_close_matches_of_a_long_line_share_one_window(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"min.js": "." * 1000 + "hit-one,hit-two" + "." * 1000 + "\n"})
    content = (await call(ctx, "grep", pattern="hit")).content
    assert content == f"min.js:1:1001: …{'.' * MATCH_CONTEXT_CHARS}hit-one,hit-two{'.' * (MATCH_CONTEXT_CHARS - 4)}…"


async def test_grep_windows_of_a_long_line_do_not_repeat_each_others_text(ctx: ToolContext, tmp_path: Path) -> None:
    # hit at 1000 and 1150 share a window, which shows to 1253; the next window starts at 1300.
    line = "." * 1000 + "hit" + "," * 147 + "hit" + ";" * 147 + "hit" + "-" * 1000
    put(tmp_path, {"min.js": line + "\n"})
    lines = (await call(ctx, "grep", pattern="hit")).content.split("\n")
    assert lines == [
        f"min.js:1:1001: …{'.' * MATCH_CONTEXT_CHARS}hit{',' * 147}hit{';' * MATCH_CONTEXT_CHARS}…",
        f"min.js:1:1301: …{';' * 47}hit{'-' * MATCH_CONTEXT_CHARS}…",
    ]


async def test_grep_a_window_starts_at_its_match_when_the_last_one_showed_past_it(ctx: ToolContext, tmp_path: Path) -> None:
    # hit at 1000 and 1150 share a window, which shows to 1253, past the hit at 1203.
    line = "." * 1000 + "hit" + "," * 147 + "hit" + ";" * 50 + "hit" + "-" * 1000
    put(tmp_path, {"min.js": line + "\n"})
    lines = (await call(ctx, "grep", pattern="hit")).content.split("\n")
    assert lines[1] == f"min.js:1:1204: …hit{'-' * MATCH_CONTEXT_CHARS}…"


async def test_grep_shows_the_first_windows_of_a_long_line_and_counts_the_rest(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"min.js": ("." * 1000 + "hit") * 20 + "\n"})
    lines = (await call(ctx, "grep", pattern="hit")).content.split("\n")
    assert len(lines) == MAX_WINDOWS_PER_LINE + 1
    next_column = (MAX_WINDOWS_PER_LINE + 1) * 1003 - 2
    assert lines[-1] == (
        f"min.js:1: [... {20 - MAX_WINDOWS_PER_LINE} more matches in this line, the next at column {next_column}; "
        f"narrow the pattern, or read min.js with offset=1 column={next_column}]"
    )


async def test_grep_a_pattern_matching_everywhere_in_a_long_line_stays_short(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"min.js": "x" * 100_000 + "\n"})
    content = (await call(ctx, "grep", pattern="x*?")).content
    assert len(content) < MAX_WINDOWS_PER_LINE * (MAX_MATCH_LINE_CHARS + 20) + 200
    assert "[... over " in content.split("\n")[-1]


async def test_grep_a_long_match_keeps_its_ends_and_says_how_much_is_left_out(ctx: ToolContext, tmp_path: Path) -> None:
    line = "start" + "m" * 5000 + "end" + "z" * 300
    put(tmp_path, {"min.js": line + "\n"})
    content = (await call(ctx, "grep", pattern="start.*end")).content
    half = MAX_MATCH_SHOWN_CHARS // 2
    omitted = 5008 - 2 * half
    assert content == (
        f"min.js:1:1: {line[:half]}[... {omitted} characters omitted ...]{line[5008 - half:5008]}"
        f"{'z' * MATCH_CONTEXT_CHARS}…"
    )


async def test_grep_columns_of_a_long_line_count_characters_not_bytes(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"u.txt": "é" * 600 + "𝄞needle" + "ü" * 600 + "\n"})
    content = (await call(ctx, "grep", pattern="needle")).content
    assert content == f"u.txt:1:602: …{'é' * 99}𝄞needle{'ü' * MATCH_CONTEXT_CHARS}…"


async def test_grep_an_empty_match_in_a_long_line_is_shown_where_it_is(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"min.js": "a" * 1000 + "needle" + "b" * 1000 + "\n"})
    content = (await call(ctx, "grep", pattern="(?=needle)")).content
    assert content == f"min.js:1:1001: …{'a' * MATCH_CONTEXT_CHARS}needle{'b' * (MATCH_CONTEXT_CHARS - 6)}…"


async def test_grep_windows_of_long_lines_count_toward_the_match_cap(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"min.js": ("hit" + "." * 1000 + "hit\n") * MAX_GREP_MATCHES})
    lines = (await call(ctx, "grep", pattern="hit")).content.split("\n")
    assert len(lines) == MAX_GREP_MATCHES + 1
    assert lines[-1].startswith(f"[stopped at {MAX_GREP_MATCHES} matches")


async def test_grep_bad_regex_is_a_clear_error(ctx: ToolContext) -> None:
    result = await call(ctx, "grep", pattern="foo(")
    assert result.is_error
    assert result.content.startswith("grep: invalid regular expression 'foo(': missing ), unterminated subpattern")
    assert "escape literal characters" in result.content


async def test_grep_no_match_is_not_an_error(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"a.py": "x\n"})
    assert await call(ctx, "grep", pattern="zzz", include="*.py") == ToolResult(
        "No matches for 'zzz' in . (files matching *.py)."
    )


async def test_grep_missing_path_is_an_error(ctx: ToolContext) -> None:
    result = await call(ctx, "grep", pattern="x", path="nowhere")
    assert result.is_error and "no such file or directory: nowhere" in result.content


# ----------------------------------------------------------------------------- glob


async def test_glob_double_star_finds_files_at_any_depth(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"top.py": "", "a/mid.py": "", "a/b/c/low.py": "", "a/notes.md": ""})
    found = sorted((await call(ctx, "glob", pattern="**/*.py")).content.splitlines())
    assert found == ["a/b/c/low.py", "a/mid.py", "top.py"]


async def test_glob_without_double_star_stays_in_its_folder(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"top.py": "", "a/mid.py": ""})
    assert (await call(ctx, "glob", pattern="*.py")).content == "top.py"
    assert (await call(ctx, "glob", pattern="a/*.py")).content == "a/mid.py"


async def test_glob_lists_newest_first(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"old.txt": "", "new.txt": "", "mid.txt": ""})
    for age, name in enumerate(["new.txt", "mid.txt", "old.txt"]):
        os.utime(tmp_path / name, (1_700_000_000 - age * 60, 1_700_000_000 - age * 60))
    assert (await call(ctx, "glob", pattern="*.txt")).content == "new.txt\nmid.txt\nold.txt"


async def test_glob_skips_the_same_folders_as_grep(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, SKIPPED_TREE)
    assert (await call(ctx, "glob", pattern="**/*")).content == "src/app.py"


async def test_glob_path_sets_the_base_and_results_stay_relative_to_cwd(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"src/pkg/m.py": "", "other/n.py": ""})
    assert (await call(ctx, "glob", pattern="**/*.py", path="src")).content == "src/pkg/m.py"


async def test_glob_caps_results_and_says_so(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {f"f{i:04}.txt": "" for i in range(MAX_GLOB_RESULTS + 10)})
    lines = (await call(ctx, "glob", pattern="*.txt")).content.splitlines()
    assert len(lines) == MAX_GLOB_RESULTS + 1
    assert lines[-1] == f"[showing {MAX_GLOB_RESULTS} of {MAX_GLOB_RESULTS + 10} matching files, newest first; narrow the pattern or path]"


async def test_glob_no_match_is_not_an_error_and_hints_at_double_star(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"a/b.py": ""})
    result = await call(ctx, "glob", pattern="*.py")
    assert not result.is_error
    assert result.content.startswith("No files match '*.py' in .") and "use **/" in result.content


async def test_glob_absolute_pattern_is_an_error(ctx: ToolContext, tmp_path: Path) -> None:
    result = await call(ctx, "glob", pattern=f"{tmp_path}/**/*.py")
    assert result.is_error and "must be relative" in result.content


async def test_glob_path_must_be_a_folder(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"f.py": ""})
    result = await call(ctx, "glob", pattern="*", path="f.py")
    assert result.is_error and "f.py is a file, not a directory" in result.content


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("**/*.py", "a.py", True),
        ("**/*.py", "x/y/a.py", True),
        ("*.py", "x/a.py", False),
        ("src/**", "src/a/b", True),
        ("a?c", "abc", True),
        ("a?c", "a/c", False),
        ("[!.]*", ".hidden", False),
        ("[ab]*.txt", "b1.txt", True),
        ("*.{js,jsx}", "x.jsx", True),
        ("x[", "x[", True),
    ],
)
def test_glob_regex_semantics(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is matches


def test_expand_braces_nested() -> None:
    assert expand_braces("a{b,c{d,e}}") == ["ab", "acd", "ace"]


async def test_grep_does_not_follow_a_symlink_out_of_the_folder(ctx: ToolContext, tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOPSECRET=hunter2\n")
    (tmp_path / "notes.txt").symlink_to(outside / "secret.txt")
    put(tmp_path, {"real.txt": "TOPSECRET is not here\n"})
    result = await call(ctx, "grep", pattern="TOPSECRET")
    assert "real.txt" in result.content and "hunter2" not in result.content
