"""The grep and glob tools, run through the built-in registry on real trees under tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scout_tui.tools import ToolContext, ToolResult, builtin_registry
from scout_tui.tools.globs import expand_braces, glob_regex
from scout_tui.tools.search import MAX_GLOB_RESULTS, MAX_GREP_MATCHES


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


async def test_grep_clips_long_matching_lines(ctx: ToolContext, tmp_path: Path) -> None:
    put(tmp_path, {"min.js": "needle" + "x" * 5000 + "\n"})
    content = (await call(ctx, "grep", pattern="needle")).content
    assert len(content) < 600 and content.endswith(" [...]")


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
