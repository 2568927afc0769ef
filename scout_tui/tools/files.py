"""The file tools: ``read`` (numbered lines, like ``cat -n``), ``write`` and ``edit`` (exact replace).

Also the small argument checks and the text/binary test that the search tools share.
"""

from __future__ import annotations

import asyncio
import errno
import os
import re
import stat
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scout_tui.core.diffs import unified_diff
from scout_tui.tools.base import (Tool, ToolContext, ToolError, boolean, integer, missing_argument, object_schema,
                                  string)

DEFAULT_READ_LINES = 2000
MAX_LINE_CHARS = 2000  # one minified line must not fill the context window
SNIFF_BYTES = 8192  # a NUL in the first 8 KB marks a binary file (what git and grep use)
BOM = b"\xef\xbb\xbf"
_PATH = "File path, relative to the working directory or absolute."  # read, write, edit

_REQUIRED = object()


# ----------------------------------------------------------------------------- arguments


def str_arg(input: dict[str, Any], key: str, default: Any = _REQUIRED) -> Any:
    """``input[key]`` as a str; ``default`` when absent (or ``ToolError`` if it is required)."""
    if key not in input or input[key] is None:
        if default is _REQUIRED:
            raise ToolError(missing_argument(key, input))
        return default
    value = input[key]
    if not isinstance(value, str):
        raise ToolError(f"argument {key!r} must be a string, got {type(value).__name__}")
    return value


def int_arg(input: dict[str, Any], key: str, default: int, *, minimum: int = 1) -> int:
    """``input[key]`` as an int ≥ ``minimum`` (``12.0`` is accepted as 12); ``ToolError`` otherwise."""
    value = input.get(key)
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"argument {key!r} must be an integer, got {value!r:.50}")
    if value < minimum:
        raise ToolError(f"argument {key!r} must be at least {minimum}, got {value}")
    return value


def bool_arg(input: dict[str, Any], key: str, default: bool = False) -> bool:
    """``input[key]`` as a bool; ``ToolError`` for anything but true/false."""
    value = input.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ToolError(f"argument {key!r} must be true or false, got {value!r:.50}")
    return value


# ----------------------------------------------------------------------------- text files


def looks_binary(head: bytes) -> bool:
    """Whether the first bytes of a file (up to ``SNIFF_BYTES``) mark it as binary: a NUL byte."""
    return b"\0" in head[:SNIFF_BYTES]


FILE_STAMPS: ContextVar[dict[str, tuple[int, int]] | None] = ContextVar("file_stamps", default=None)
"""For the session running a tool call (the tool runner sets it): each file's real path and its
``(st_mtime_ns, st_size)`` when the session last read or wrote it. None: nothing is tracked."""


def _remember(target: Path, fd: int) -> None:
    """Note how file ``target`` (open as ``fd``) looks now, as this session has seen it."""
    stamps = FILE_STAMPS.get()
    if stamps is not None:
        status = os.fstat(fd)
        stamps[os.path.realpath(target)] = (status.st_mtime_ns, status.st_size)


def _unchanged_since_seen(target: Path, path: str, *, must_have_seen: bool = False) -> None:
    """``ToolError`` when ``target`` changed on disk since this session last read or wrote it
    (a person edited it meanwhile): changing it now would lose their change. With
    ``must_have_seen`` (``write``, which replaces every byte), also when this session has not
    read it at all (a resumed session's reads are an earlier run's: the file may have changed)."""
    stamps = FILE_STAMPS.get()
    seen = stamps.get(os.path.realpath(target)) if stamps is not None else None
    if seen is None:
        if must_have_seen and stamps is not None:
            raise ToolError(f"{path} exists and you have not read it in this session; read it first, then write "
                            "what it should hold (or use edit to change part of it)")
        return
    try:
        status = target.stat()
    except OSError:
        return  # gone or unusable: the write or edit says so itself
    if (status.st_mtime_ns, status.st_size) != seen:
        raise ToolError(f"{path} changed on disk since you last read or wrote it (a person or a command changed it); "
                        "read it again, then make your change to what it holds now")


def os_problem(path: str, error: OSError) -> str:
    """What an ``OSError`` met on ``path`` means, as a sentence for the model."""
    code = error.errno
    if code == errno.ELOOP:
        return f"{path} is a symbolic link loop (or a chain of too many links), so it names no file"
    if code in (errno.EACCES, errno.EPERM):
        return f"permission denied: {path}"
    if code == errno.ENOTDIR:
        return f"{path}: a folder in this path is a file"
    if code == errno.ENAMETOOLONG:
        return f"{path}: the path or one of its names is too long"
    return f"cannot use {path}: {error.strerror or error}"


def file_status(ctx: ToolContext, path: str) -> tuple[Path, os.stat_result | None]:
    """``path`` resolved against ``ctx.cwd``, with its ``stat`` (symlinks followed; None: no such
    file). Raises ``ToolError`` for a symlink loop, a folder that may not be searched, and the like."""
    target = ctx.resolve(path)
    try:
        return target, target.stat()
    except (FileNotFoundError, NotADirectoryError):  # a file where a folder should be: no such file
        return target, None
    except OSError as e:
        raise ToolError(os_problem(path, e)) from None


def existing_file(ctx: ToolContext, path: str) -> Path:
    """``path`` resolved against ``ctx.cwd``; ``ToolError`` unless it is an existing regular file."""
    target, status = file_status(ctx, path)
    if status is None:
        hint = "" if target.parent.is_dir() else f" (the folder {target.parent} does not exist either)"
        raise ToolError(f"no such file: {path}{hint}; use glob to find the right path")
    if stat.S_ISDIR(status.st_mode):
        raise ToolError(f"{path} is a directory, not a file; use glob to list the files in it")
    if not stat.S_ISREG(status.st_mode):
        # A FIFO or device: opening it could block forever or never end.
        raise ToolError(f"{path} is not a regular file (a pipe, socket or device)")
    return target


def open_regular(target: Path, path: str, flags: int = os.O_RDONLY) -> int:
    """A file descriptor for ``target`` opened with ``flags``; ``ToolError`` when it is not a
    regular file by the time it is opened, or cannot be opened.

    Opened non-blocking, so a FIFO put in a file's place after it was checked is refused at
    once rather than waited on for ever (a regular file ignores the flag).
    """
    try:
        # 0o666 less the umask, as any editor creates a file (os.open's default, 0o777, would
        # make every new file executable: a written git hook would run at once).
        fd = os.open(target, flags | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    except OSError as e:
        if e.errno == errno.ENXIO:  # a FIFO opened for writing with no reader
            raise ToolError(f"{path} is not a regular file (a pipe, socket or device)") from None
        if e.errno == errno.EISDIR:
            raise ToolError(f"{path} is a directory, not a file") from None
        raise ToolError(os_problem(path, e)) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolError(f"{path} is not a regular file (a pipe, socket or device)")
    os.set_blocking(fd, True)
    return fd


def read_regular(target: Path, path: str) -> bytes:
    """All bytes of regular file ``target``; ``ToolError`` as ``open_regular`` raises it."""
    with os.fdopen(open_regular(target, path), "rb") as f:
        try:
            return f.read()
        except OSError as e:
            raise ToolError(os_problem(path, e)) from None


def _decode_text(path: str, data: bytes, first_line: int = 1) -> str:
    """``data`` (starting at line ``first_line`` of ``path``) as UTF-8 text.

    Raises ``ToolError`` naming the line of the first invalid byte.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = first_line + data.count(b"\n", 0, e.start)
        raise ToolError(
            f"{path} is not UTF-8 text (invalid byte at line {line}): it is binary or in another "
            "encoding; bash with `file` or `iconv` can tell or convert"
        ) from None


def _split_line(raw: bytes) -> bytes:
    """A line read in binary mode without its ``\\n`` or ``\\r\\n``."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
    return raw


def _clip(line: str, number: int, column: int = 1) -> str:
    """Line ``number``'s text from character ``column`` (1-based), at most ``MAX_LINE_CHARS``
    characters of it: marked ``"[from column C] "`` when it starts past the first, and
    ``" [... N more characters in this line; use offset=L column=C to read on]"`` when cut."""
    end = column - 1 + MAX_LINE_CHARS
    shown = line[column - 1 : end]
    if column > 1:
        shown = f"[from column {column}] {shown}"
    if len(line) > end:
        shown += f" [... {len(line) - end} more characters in this line; use offset={number} column={end + 1} to read on]"
    return shown


# ----------------------------------------------------------------------------- read


def _read(ctx: ToolContext, path: str, offset: int, limit: int, column: int = 1) -> str:
    target = existing_file(ctx, path)
    try:
        with os.fdopen(open_regular(target, path), "rb") as f:
            _remember(target, f.fileno())
            head = f.read(SNIFF_BYTES)
            if not head:
                return f"{path} is empty (0 bytes)."
            if looks_binary(head):
                raise ToolError(f"{path} is a binary file (it contains NUL bytes); read only shows text files")
            f.seek(0)
            # Stream the lines: a large log is counted, never held in memory whole.
            shown: list[str] = []
            total = 0
            for total, raw in enumerate(f, start=1):
                if offset <= total < offset + limit:
                    text = _decode_text(path, _split_line(raw), total)
                    if total == offset and column > max(len(text), 1):
                        raise ToolError(f"column {column} is past the end of line {offset} of {path}, "
                                        f"which has {len(text)} characters")
                    shown.append(f"{total:>6}\t{_clip(text, total, column if total == offset else 1)}")
    except OSError as e:
        raise ToolError(os_problem(path, e)) from None
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {path}, which has {total} lines")
    out = "\n".join(shown)
    after = total - (offset + len(shown) - 1)
    if after > 0:
        out += f"\n... {after} more lines; use offset={offset + len(shown)} to read on"
    return out


async def run_read(input: dict[str, Any], ctx: ToolContext) -> str:
    """Lines ``offset`` .. ``offset+limit-1`` (1-based) of a UTF-8 text file, numbered like ``cat -n``.

    Output lines are ``f"{n:>6}\\t{text}"``; line ``offset`` starts at character ``column``
    (1-based, default 1), to page along a long line. A line of more than ``MAX_LINE_CHARS``
    characters from there is cut, saying the offset and column to read on from (``_clip``);
    a trailing ``... N more lines; use offset=M`` says what was left out. Raises ``ToolError``
    for a missing file, a directory, a binary (NUL in the first 8 KB) or non-UTF-8 file, an
    ``offset`` past the end, or a ``column`` past the end of line ``offset``.
    """
    path = str_arg(input, "path")
    offset = int_arg(input, "offset", 1)
    limit = int_arg(input, "limit", DEFAULT_READ_LINES)
    column = int_arg(input, "column", 1)
    return await asyncio.to_thread(_read, ctx, path, offset, limit, column)


READ = Tool(
    name="read",
    description=(
        "Read a UTF-8 text file. Returns its lines numbered like `cat -n` (line number, a tab, "
        f"then the text). Reads up to {DEFAULT_READ_LINES} lines from the start by default; for "
        "long files pass offset (1-based line number to start at) and limit (number of lines). "
        f"A line longer than {MAX_LINE_CHARS} characters is cut, and the cut says the offset "
        "and column to pass to read on along it. Binary files are refused. The line-number "
        "prefix and the [from column N] and [... more characters ...] marks are not part of the "
        "file: leave them out when you edit."
    ),
    input_schema=object_schema(
        path=string(_PATH),
        offset=integer("1-based line number to start reading at.", minimum=1),
        limit=integer(f"Maximum lines to return (default {DEFAULT_READ_LINES}).", minimum=1),
        column=integer(
            "1-based character in the line at offset to start at (default 1): pages along a long "
            f"line, {MAX_LINE_CHARS} characters a call; later lines start at their first.",
            minimum=1,
        ),
        required=["path"],
    ),
    run=run_read,
    read_only=True,
)


# ----------------------------------------------------------------------------- write


def _count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _write(ctx: ToolContext, path: str, content: str) -> str:
    target, existed = _writable(ctx, path)
    data = content.encode("utf-8")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ToolError(f"cannot create the folders for {path}: a file is in the way") from None
    except NotADirectoryError:
        raise ToolError(f"cannot create {path}: a parent of it is a file, not a folder") from None
    except OSError as e:
        raise ToolError(os_problem(path, e)) from None
    # Writing in place (not write-then-rename) keeps the file's permissions, e.g. an exec bit.
    _write_regular(target, path, data)
    verb = "Overwrote" if existed else "Created"
    lines = _count_lines(content)
    return f"{verb} {path} ({len(data)} bytes, {lines} line{'s' if lines != 1 else ''})."


async def run_write(input: dict[str, Any], ctx: ToolContext) -> str:
    """Write ``content`` (UTF-8, newlines as given) to ``path``, creating parent folders.

    Returns ``"Created|Overwrote {path} ({bytes} bytes, {lines} lines)."``; raises ``ToolError``
    when the path is a directory or not writable.
    """
    path = str_arg(input, "path")
    content = str_arg(input, "content")
    return await asyncio.to_thread(_write, ctx, path, content)


MAX_PREVIEW_BYTES = 4_000_000
"""A file larger than this gets no diff before a write replaces it, only its size."""


def _writable(ctx: ToolContext, path: str) -> tuple[Path, bool]:
    """``path`` resolved, and whether it exists; ``ToolError`` when it is a directory, an
    existing non-regular file (writing a FIFO would block until something reads it; a device
    is no file to replace), a symlink loop or otherwise unusable."""
    target, status = file_status(ctx, path)
    if status is not None and stat.S_ISDIR(status.st_mode):
        raise ToolError(f"{path} is a directory; give a file path")
    if status is not None and not stat.S_ISREG(status.st_mode):
        raise ToolError(f"{path} is not a regular file (a pipe, socket or device); write only replaces files")
    if status is not None:
        _unchanged_since_seen(target, path, must_have_seen=True)
    return target, status is not None


def _write_regular(target: Path, path: str, data: bytes) -> None:
    """Replace the contents of ``target`` with ``data`` in place, creating it if needed;
    ``ToolError`` when it is not a regular file or cannot be written."""
    fd = open_regular(target, path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(fd, "wb") as f:
        try:
            f.write(data)
            f.flush()
        except OSError as e:
            raise ToolError(os_problem(path, e)) from None
        _remember(target, f.fileno())


def _write_before(ctx: ToolContext, path: str) -> str | None:
    """The text ``path`` holds now (None: no such file); ``ToolError`` if it cannot be replaced."""
    target, existed = _writable(ctx, path)
    if not existed:
        return None
    try:
        size = target.stat().st_size
    except OSError as e:
        raise ToolError(os_problem(path, e)) from None
    if size > MAX_PREVIEW_BYTES:
        return f"(the file now holds {size:,} bytes: too large to show what changes)\n"
    data = read_regular(target, path)
    if looks_binary(data):
        return f"(binary file, {len(data):,} bytes)\n"
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n")


async def preview_write(input: dict[str, Any], ctx: ToolContext) -> str:
    """The unified diff ``run_write`` would make: from the file's current text, or from
    ``/dev/null`` for a new file. Raises ``ToolError`` for bad arguments or a directory."""
    path = str_arg(input, "path")
    content = str_arg(input, "content")
    before = await asyncio.to_thread(_write_before, ctx, path)
    return unified_diff(path, before or "", content.replace("\r\n", "\n"), created=before is None)


WRITE = Tool(
    name="write",
    description=(
        "Write a file with the given content, replacing it entirely if it exists and creating "
        "missing parent folders. Prefer edit for changing part of an existing file; read a file "
        "before overwriting it."
    ),
    input_schema=object_schema(
        path=string(_PATH),
        content=string("The complete new content of the file."),
        required=["path", "content"],
    ),
    run=run_write,
    preview=preview_write,
)


# ----------------------------------------------------------------------------- edit

_LINE_NUMBER_PREFIX = re.compile(r"^\s*\d+\t", re.MULTILINE)


def _fuzzy_hint(text: str, old: str) -> str:
    """Why ``old`` may have failed to match: read's line numbers, or whitespace differences."""
    if _LINE_NUMBER_PREFIX.match(old):
        return " old_string seems to start with a line-number prefix from read; leave the prefix out."
    wanted = [line.strip() for line in old.strip("\n").split("\n")]
    have = [line.strip() for line in text.split("\n")]
    for i in range(len(have) - len(wanted) + 1):
        if have[i : i + len(wanted)] == wanted:
            end = i + len(wanted)
            where = f"line {i + 1}" if end == i + 1 else f"lines {i + 1}-{end}"
            return (
                f" It does match {where} if whitespace is ignored: check indentation (tabs vs spaces) "
                "and trailing spaces, and copy the exact text from read."
            )
    return " Read the file again and copy the exact text, including whitespace and indentation."


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


@dataclass(slots=True)
class _EditPlan:
    """An edit worked out but not written: the file's text before and after (in ``\n`` form)."""

    target: Path
    before: str
    after: str
    count: int
    first_line: int
    bom: bool
    crlf: bool


def _plan_edit(ctx: ToolContext, path: str, old: str, new: str, replace_all: bool) -> _EditPlan:
    target = existing_file(ctx, path)
    _unchanged_since_seen(target, path)
    data = read_regular(target, path)
    if looks_binary(data):
        raise ToolError(f"{path} is a binary file; edit only changes text files")
    bom = data.startswith(BOM)
    text = _decode_text(path, data[len(BOM) :] if bom else data)

    # A CRLF file is matched and edited in "\n" form (the model writes "\n") and written back
    # as CRLF; a file mixing both styles is matched exactly as it is.
    crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")
    if crlf:
        text = text.replace("\r\n", "\n")
        old = old.replace("\r\n", "\n")
        new = new.replace("\r\n", "\n")

    count = text.count(old)
    if count == 0:
        raise ToolError(f"old_string was not found in {path}.{_fuzzy_hint(text, old)}")
    if count > 1 and not replace_all:
        lines: list[str] = []
        start = 0
        while (start := text.find(old, start)) != -1 and len(lines) < 10:
            lines.append(str(_line_of(text, start)))
            start += len(old)
        raise ToolError(
            f"old_string matches {count} times in {path} (at lines {', '.join(lines)}"
            f"{', …' if count > len(lines) else ''}). Add surrounding lines to old_string to make "
            f"it unique, or set replace_all to true to replace all {count}."
        )
    after = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    return _EditPlan(target, text, after, count if replace_all else 1, _line_of(text, text.find(old)), bom, crlf)


def _edit(ctx: ToolContext, path: str, old: str, new: str, replace_all: bool) -> str:
    plan = _plan_edit(ctx, path, old, new, replace_all)
    result = plan.after.replace("\n", "\r\n") if plan.crlf else plan.after
    _write_regular(plan.target, path, (BOM if plan.bom else b"") + result.encode("utf-8"))
    done = plan.count
    return f"Edited {path}: {done} replacement{'s' if done != 1 else ''} (first at line {plan.first_line})."


def _edit_args(input: dict[str, Any]) -> tuple[str, str, str, bool]:
    path = str_arg(input, "path")
    old = str_arg(input, "old_string")
    new = str_arg(input, "new_string")
    replace_all = bool_arg(input, "replace_all")
    if old == "":
        raise ToolError("old_string is empty; to create a file or replace all of it, use write")
    if old == new:
        raise ToolError("old_string and new_string are identical, so there is nothing to change")
    return path, old, new, replace_all


async def run_edit(input: dict[str, Any], ctx: ToolContext) -> str:
    """Replace exact ``old_string`` with ``new_string`` in a UTF-8 text file.

    Keeps the file's encoding details: a UTF-8 byte-order mark and CRLF line endings survive.
    Returns ``"Edited {path}: N replacement(s) (first at line L)."``. Raises ``ToolError`` when
    the strings are equal or ``old_string`` is empty, not found (with a whitespace hint), or
    found more than once without ``replace_all``.
    """
    return await asyncio.to_thread(_edit, ctx, *_edit_args(input))


async def preview_edit(input: dict[str, Any], ctx: ToolContext) -> str:
    """The unified diff ``run_edit`` would make (``a/PATH``, ``b/PATH`` headers); raises the
    ``ToolError`` it would raise."""
    path, old, new, replace_all = _edit_args(input)
    plan = await asyncio.to_thread(_plan_edit, ctx, path, old, new, replace_all)
    return unified_diff(path, plan.before, plan.after)


EDIT = Tool(
    name="edit",
    description=(
        "Replace an exact piece of text in a file. old_string must match the file exactly, "
        "including whitespace and indentation (copy it from read output, without the line-number "
        "prefix), and must occur exactly once unless replace_all is true; include a few "
        "surrounding lines to make it unique. Line endings (CRLF) and encoding are preserved."
    ),
    input_schema=object_schema(
        path=string(_PATH),
        old_string=string("The exact text to replace."),
        new_string=string("The text to put in its place (must differ)."),
        replace_all=boolean("Replace every occurrence (default false)."),
        required=["path", "old_string", "new_string"],
    ),
    run=run_edit,
    preview=preview_edit,
)
