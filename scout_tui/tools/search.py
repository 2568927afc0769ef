"""The search tools: ``grep`` (regex over file contents) and ``glob`` (file names by pattern).

Both walk the tree in a worker thread, skipping VCS folders, dependency folders, caches and
virtualenvs, and cap what they return.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import stat
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from scout_tui.tools.base import Tool, ToolContext, ToolError, boolean, object_schema, string
from scout_tui.tools.files import bool_arg, file_status, looks_binary, str_arg
from scout_tui.tools.globs import expand_braces, glob_regex

# Never worth searching: version-control data, installed dependencies, caches. A folder holding
# a pyvenv.cfg (any virtualenv, whatever its name) is skipped too. Naming one of them as the
# `path` argument still searches it.
SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".bzr", "_darcs", ".jj", ".pijul", "CVS",
        "node_modules", "__pycache__", ".venv",
        ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox",
    }
)  # fmt: skip
MAX_GREP_MATCHES = 200
MAX_GREP_CHARS = 30_000
MAX_MATCH_LINE_CHARS = 500
"""A matching line of up to this many characters is shown whole; a longer one (minified code,
a data line) as a window around each match, so the match is never cut away."""
MATCH_CONTEXT_CHARS = 100
"""Characters of a long line shown before and after each window's matches."""
MAX_MATCH_SHOWN_CHARS = 200
"""Matches of a long line that span at most this many characters share one window; of a single
longer match, its first and last half of this are shown, the middle counted."""
MAX_WINDOWS_PER_LINE = 5
"""Windows shown for one long line; the matches after them are counted in a closing note."""
MAX_COUNTED_MATCHES = 10_000
"""Matches counted in that note at most (an empty match at every character of a 100 MB line
would otherwise be counted one by one)."""
MAX_GLOB_RESULTS = 500
WHOLE_FILE_BYTES = 4 * 1024 * 1024  # read and pre-check whole; larger files are streamed by line

T = TypeVar("T")

_WHOLE_TEXT_UNSAFE = re.compile(r"\\[AZ]")


async def _off_loop(fn: Callable[[threading.Event], T]) -> T:
    """``fn(stop)`` in a worker thread; when we are cancelled, ``stop`` is set so the walk ends."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(fn, stop)
    except asyncio.CancelledError:
        stop.set()
        raise


# ----------------------------------------------------------------------------- walking


def walk_files(base: Path, stop: threading.Event, max_depth: int | None = None) -> Iterator[Path]:
    """Regular files under ``base`` (``base`` itself if it is a file), depth first in name order.

    Leaves out ``SKIP_DIRS`` and virtualenvs below ``base``, and FIFOs, sockets and devices
    (opening a FIFO would block forever). ``max_depth`` limits how many folders deep below
    ``base`` a file may be (0: ``base`` only). Symlinks are not followed, to files or folders
    (as ripgrep does by default): a link may lead out of the workspace, where reading asks
    first. Unreadable folders are passed over. Ends early once ``stop`` is set.
    """
    if base.is_file():
        yield base
        return
    pending = [(str(base), 0)]
    while pending and not stop.is_set():
        folder, depth = pending.pop()
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except OSError:
            continue
        if depth > 0 and any(e.name == "pyvenv.cfg" for e in entries):
            continue  # a virtualenv, whatever its name: thousands of installed files
        subfolders = []
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIP_DIRS and (max_depth is None or depth < max_depth):
                        subfolders.append((entry.path, depth + 1))
                elif entry.is_file(follow_symlinks=False):
                    yield Path(entry.path)
            except OSError:
                continue
        pending.extend(reversed(subfolders))


def _shown(ctx: ToolContext, path: Path) -> str:
    """``path`` relative to the working directory when it is inside it, else absolute."""
    try:
        return path.relative_to(ctx.cwd).as_posix()
    except ValueError:
        return str(path)


def _existing(ctx: ToolContext, path: str, *, dir_only: bool) -> Path:
    """``path`` resolved: an existing folder (or, unless ``dir_only``, a regular file); else
    ``ToolError`` (a FIFO or device is refused: reading it could block for ever)."""
    base, status = file_status(ctx, path)
    if status is None:
        raise ToolError(f"no such file or directory: {path}")
    if stat.S_ISDIR(status.st_mode):
        return base
    if dir_only:
        raise ToolError(f"{path} is a file, not a directory; give the folder to search in")
    if not stat.S_ISREG(status.st_mode):
        raise ToolError(f"{path} is not a regular file (a pipe, socket or device); grep searches files")
    return base


# ----------------------------------------------------------------------------- grep


def _matching_lines(path: Path, regex: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` for each line of a text file that ``regex`` matches; binaries yield nothing."""
    with path.open("rb") as f:
        data = f.read(WHOLE_FILE_BYTES + 1)
        if looks_binary(data):
            return
        if len(data) <= WHOLE_FILE_BYTES:
            # Lines are matched without their "\r\n", so the whole-file check must see them so too.
            text = data.decode("utf-8", "replace").replace("\r\n", "\n")
            # One search over the whole file rules most files out without a per-line loop; it
            # finds a superset of the line matches, except with \A or \Z, which mean "line" here.
            if not _WHOLE_TEXT_UNSAFE.search(regex.pattern) and not regex.search(text):
                return
            lines: Iterator[str] = iter(text.removesuffix("\n").split("\n"))
        else:
            f.seek(0)
            lines = (raw.decode("utf-8", "replace").removesuffix("\n") for raw in f)
        for number, line in enumerate(lines, start=1):
            line = line.removesuffix("\r")
            if regex.search(line):
                yield number, line


def _window(line: str, start: int, end: int, shown_to: int = 0) -> str:
    """The text of ``line`` around its matches from character ``start`` to ``end`` (0-based):
    ``MATCH_CONTEXT_CHARS`` either side (before, none of what the previous window showed, up to
    ``shown_to``), ``…`` where the line goes on; a single match longer than
    ``MAX_MATCH_SHOWN_CHARS`` keeps its two ends around ``[... N characters omitted ...]``."""
    before = min(start, max(shown_to, start - MATCH_CONTEXT_CHARS))
    after = min(len(line), end + MATCH_CONTEXT_CHARS)
    if end - start > MAX_MATCH_SHOWN_CHARS:
        half = MAX_MATCH_SHOWN_CHARS // 2
        matched = f"{line[start:start + half]}[... {end - start - 2 * half} characters omitted ...]{line[end - half:end]}"
    else:
        matched = line[start:end]
    return f"{'…' if before else ''}{line[before:start]}{matched}{line[end:after]}{'…' if after < len(line) else ''}"


def _line_entries(where: str, number: int, line: str, regex: re.Pattern[str]) -> list[tuple[str, bool]]:
    """What grep shows of matching line ``number`` of file ``where``: entries, each with whether
    it shows matches (True) or is a note (False).

    A line of at most ``MAX_MATCH_LINE_CHARS`` characters is one entry, ``"where:number: line"``.
    A longer one is an entry per window (``_window``), ``"where:number:column: …text…"``, the
    column (1-based, in characters) that of the window's first match; matches spanning at most
    ``MAX_MATCH_SHOWN_CHARS`` share a window, and no text is shown in two windows. After
    ``MAX_WINDOWS_PER_LINE`` windows, a note counts the matches left (up to
    ``MAX_COUNTED_MATCHES``) and gives the column of the next.
    """
    if len(line) <= MAX_MATCH_LINE_CHARS:
        return [(f"{where}:{number}: {line}", True)]
    windows: list[list[int]] = []  # [start of the first match, end of the last]
    matches = regex.finditer(line)
    for match in matches:
        start, end = match.span()
        if windows and end - windows[-1][0] <= MAX_MATCH_SHOWN_CHARS:
            windows[-1][1] = end
        elif len(windows) < MAX_WINDOWS_PER_LINE:
            windows.append([start, end])
        else:
            left = 1 + sum(1 for _ in itertools.islice(matches, MAX_COUNTED_MATCHES - 1))
            count = f"over {left}" if next(matches, None) is not None else str(left)
            note = (
                f"{where}:{number}: [... {count} more matches in this line, the next at column {start + 1}; "
                f"narrow the pattern, or read {where} with offset={number} column={start + 1}]"
            )
            break
    else:
        note = ""
    entries, shown_to = [], 0
    for start, end in windows:
        entries.append((f"{where}:{number}:{start + 1}: {_window(line, start, end, shown_to)}", True))
        shown_to = min(len(line), end + MATCH_CONTEXT_CHARS)
    return entries + ([(note, False)] if note else [])


def _grep(ctx: ToolContext, regex: re.Pattern[str], base: Path, include: str | None, stop: threading.Event) -> tuple[list[str], str]:
    """Result entries (``_line_entries``) and a note saying why the search stopped early (or "")."""
    include_re = glob_regex(include) if include else None
    out: list[str] = []
    matches = chars = 0
    for file in walk_files(base, stop):
        if include_re is not None:
            # A pattern without "/" names files anywhere (like rg --glob); with "/", paths below `path`.
            name = file.name if file == base or "/" not in (include or "") else file.relative_to(base).as_posix()
            if not include_re.match(name):
                continue
        try:
            for number, line in _matching_lines(file, regex):
                for entry, shows_matches in _line_entries(_shown(ctx, file), number, line, regex):
                    if shows_matches and matches >= MAX_GREP_MATCHES:
                        return out, f"[stopped at {MAX_GREP_MATCHES} matches; narrow the pattern, path or include]"
                    if chars + len(entry) > MAX_GREP_CHARS:
                        return out, f"[stopped at {MAX_GREP_CHARS} characters of results; narrow the pattern, path or include]"
                    out.append(entry)
                    chars += len(entry) + 1
                    matches += shows_matches
        except OSError:
            continue  # unreadable, or vanished mid-walk: not the model's problem
    return out, ""


async def run_grep(input: dict[str, Any], ctx: ToolContext) -> str:
    """Lines matching a Python regex, as ``"path:line: text"`` (path relative to ``ctx.cwd``);
    a line longer than ``MAX_MATCH_LINE_CHARS`` as windows around its matches,
    ``"path:line:column: …text…"`` (``_line_entries``).

    Searches ``path`` (a file, or a folder walked in name order), only files whose name matches
    ``include`` when given. Stops at ``MAX_GREP_MATCHES`` matches (lines, or windows of long
    lines) or ``MAX_GREP_CHARS`` characters and says so. No match is a plain result, not an
    error. Raises ``ToolError`` for an invalid regex, include pattern or path.
    """
    pattern = str_arg(input, "pattern")
    path = str_arg(input, "path", ".")
    include = str_arg(input, "include", None) or None
    flags = re.MULTILINE | (re.IGNORECASE if bool_arg(input, "ignore_case") else 0)
    try:
        regex = re.compile(pattern, flags)
    except re.error as e:
        raise ToolError(
            f"invalid regular expression {pattern!r}: {e} (Python re syntax; escape literal "
            "characters such as ( ) [ { . * + ? | with a backslash)"
        ) from None
    if include:
        try:
            glob_regex(include)
        except re.error as e:
            raise ToolError(f"invalid include pattern {include!r}: {e}") from None
    base = _existing(ctx, path, dir_only=False)
    found, note = await _off_loop(lambda stop: _grep(ctx, regex, base, include, stop))
    if not found:
        where = f"{path} (files matching {include})" if include else path
        return f"No matches for {pattern!r} in {where}."
    return "\n".join(found + ([note] if note else []))


GREP = Tool(
    name="grep",
    description=(
        "Search file contents with a regular expression (Python re syntax; one line at a time). "
        "Returns matching lines as `path:line: text`, paths relative to the working directory. "
        f"A line longer than {MAX_MATCH_LINE_CHARS} characters is shown as a window around each "
        "match instead, `path:line:column: …text…` (column: the match's 1-based character in "
        "the line; … marks where the line goes on); read with offset=line and column shows more. "
        "Searches path (a folder or one file; default the working directory), skipping .git, "
        "node_modules, __pycache__, virtualenvs and binary files. Narrow it with include, a "
        f"file-name glob such as *.py or *.{{ts,tsx}}. Stops after {MAX_GREP_MATCHES} matches."
    ),
    input_schema=object_schema(
        pattern=string("Regular expression (Python re) to search for."),
        path=string("Folder or file to search (default: the working directory)."),
        include=string("Only search files whose name matches this glob, e.g. *.py."),
        ignore_case=boolean("Match without regard to case (default false)."),
        required=["pattern"],
    ),
    run=run_grep,
    read_only=True,
)


# ----------------------------------------------------------------------------- glob


def _glob(ctx: ToolContext, pattern: str, base: Path, stop: threading.Event) -> list[tuple[float, str]]:
    regex = glob_regex(pattern)
    alternatives = expand_braces(pattern)
    # Without "**", a pattern names files a fixed number of folders deep: walk no deeper.
    max_depth = None if "**" in pattern else max(p.count("/") for p in alternatives)
    found: list[tuple[float, str]] = []
    for file in walk_files(base, stop, max_depth):
        if regex.match(file.relative_to(base).as_posix()):
            try:
                mtime = file.stat().st_mtime
            except OSError:
                continue
            found.append((mtime, _shown(ctx, file)))
    return found


async def run_glob(input: dict[str, Any], ctx: ToolContext) -> str:
    """Files under ``path`` whose relative path matches glob ``pattern``, newest-modified first.

    One path per line, relative to ``ctx.cwd``; ties sorted by name. Capped at
    ``MAX_GLOB_RESULTS`` with a closing note; no match is a plain result. Raises ``ToolError``
    for an absolute or invalid pattern, or a missing ``path``.
    """
    pattern = str_arg(input, "pattern").strip()
    path = str_arg(input, "path", ".")
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if not pattern:
        raise ToolError("argument 'pattern' is empty; try **/*.py")
    if pattern.startswith("/") or pattern.startswith("~"):
        raise ToolError(f"pattern {pattern!r} must be relative; pass the folder as path and a pattern like **/*.py")
    if ".." in pattern.split("/"):
        raise ToolError(f"pattern {pattern!r} may not contain '..'; pass the folder as path instead")
    try:
        glob_regex(pattern)
    except re.error as e:
        raise ToolError(f"invalid glob pattern {pattern!r}: {e}") from None
    base = _existing(ctx, path, dir_only=True)
    found = await _off_loop(lambda stop: _glob(ctx, pattern, base, stop))
    if not found:
        hint = "" if "/" in pattern else " (this pattern only looks in the folder itself; use **/ to look in subfolders)"
        return f"No files match {pattern!r} in {path}{hint}."
    found.sort(key=lambda item: (-item[0], item[1]))
    shown = [name for _, name in found[:MAX_GLOB_RESULTS]]
    if len(found) > MAX_GLOB_RESULTS:
        shown.append(f"[showing {MAX_GLOB_RESULTS} of {len(found)} matching files, newest first; narrow the pattern or path]")
    return "\n".join(shown)


GLOB = Tool(
    name="glob",
    description=(
        "Find files by name pattern. Returns matching file paths relative to the working "
        "directory, most recently modified first. `*` and `?` match within one folder name, "
        "`**/` matches any number of folders, `{a,b}` either alternative: `**/*.py` finds "
        "Python files at any depth, `*.md` only in the folder itself, `src/**/test_*.py` tests "
        "under src. path sets the folder to search (default: the working directory). Skips "
        f".git, node_modules, __pycache__ and virtualenvs. At most {MAX_GLOB_RESULTS} results."
    ),
    input_schema=object_schema(
        pattern=string("Glob such as **/*.py, relative to path."),
        path=string("Folder to search in (default: the working directory)."),
        required=["pattern"],
    ),
    run=run_glob,
    read_only=True,
)
