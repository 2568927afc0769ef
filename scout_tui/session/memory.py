"""Memory files: the person's own ``~/.agents/AGENTS.md`` and every ``AGENTS.md`` from the
repository's root down to the working directory (``CLAUDE.md`` where a folder has none), their
``@path`` imports inlined, within one budget; the system prompt's last section (``Memory``).

The layout and the import rules are Claude Code's memory files' (code.claude.com/docs/en/memory:
``@path/to/file`` relative to the importing file, ``~/`` for the home folder, never inside a
code span or block, at most 5 hops deep), with AGENTS.md (agents.md) the name read first.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it.token import Token

MEMORY_BUDGET = 20_000
"""Characters of memory files (their imports inlined) the system prompt carries, all files together."""
IMPORT_DEPTH = 5
"""How many hops of ``@path`` imports are followed (Claude Code's limit)."""
NAMES = ("AGENTS.md", "CLAUDE.md")
"""A folder's memory file: the first of these it has."""
USER_FILES = (Path(".agents") / "AGENTS.md", Path(".claude") / "CLAUDE.md")
"""The person's own memory file, under the home folder: the first of these that exists."""

_IMPORT = re.compile(r"(?:^|(?<=\s))@(\S+)")
_TRAILING = ".,;:!?)]}'\""


@dataclass(frozen=True)
class MemoryFile:
    """One memory file as the system prompt carries it.

    Attributes:
        path: the file (absolute).
        user: the person's own (``~/.agents/AGENTS.md``, else ``~/.claude/CLAUDE.md``), else a
            project folder's.
        text: what the system prompt carries: its text with its imports inlined, cut to what
            was left of ``MEMORY_BUDGET`` ("" when none was).
        length: the characters of that text before the cut.
        imports: the files its ``@path`` imports inlined (nested ones too), in order.
        problems: imports refused, each naming the file and line that asked.
    """

    path: Path
    user: bool
    text: str
    length: int
    imports: tuple[Path, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def clipped(self) -> bool:
        """Whether the budget cut it (or left it out: ``text`` is then "")."""
        return len(self.text) < self.length


@dataclass(frozen=True)
class Memory:
    """The memory files of ``cwd`` as read at one moment, and what to look at to know whether
    they changed since (``changed``).

    Attributes:
        files: general first, nearest last (``memory_files``).
        stamps: ``(path, mtime_ns, size)`` of every place a memory file is or could be, and of
            every file imported; ``(path, None, None)`` where there is none.
    """

    cwd: Path
    home: Path
    files: tuple[MemoryFile, ...]
    stamps: tuple[tuple[str, int | None, int | None], ...] = field(repr=False)

    def changed(self) -> bool:
        """Whether a memory file was written, created or removed since this was read (a few
        ``stat`` calls: off the UI's event loop)."""
        return _stamps([Path(path) for path, _, _ in self.stamps]) != self.stamps

    @property
    def prompt_text(self) -> str:
        """The system prompt's section (``memory_section``); "" when there is no memory file."""
        return memory_section(self.files)


def repository_root(cwd: Path) -> Path | None:
    """The top folder of the git repository holding ``cwd``: the nearest folder, ``cwd``
    included, with a ``.git`` folder or file (a worktree's, a submodule's); None outside one.
    Reads the file system only (``git rev-parse --show-toplevel`` finds the same)."""
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return None


def memory_places(cwd: Path, home: Path) -> list[tuple[tuple[Path, ...], bool]]:
    """Where memory files are looked for, in the order the system prompt carries them, as
    ``(candidates, user)``: the person's own (``USER_FILES`` under ``home``), then each folder
    from the repository root down to ``cwd`` (only ``cwd`` outside a repository) with ``NAMES``;
    of each place's candidates the first that exists is read."""
    root = repository_root(cwd)
    below = cwd.relative_to(root) if root is not None else Path(".")
    folders = [(root or cwd) / folder for folder in (*reversed(below.parents), below)]
    return [(tuple(home / name for name in USER_FILES), True),
            *((tuple(folder / name for name in NAMES), False) for folder in dict.fromkeys(folders))]


def load_memory(cwd: Path, home: Path | None = None, *, budget: int = MEMORY_BUDGET) -> Memory:
    """Read the memory files of ``cwd`` (``home`` defaults to ``Path.home()``): the person's
    own file, then one per folder from the repository root down to ``cwd`` (its ``AGENTS.md``,
    else its ``CLAUDE.md``), each with its ``@path`` imports inlined after the paragraph that
    names them (``expand``). ``budget`` characters in all: the nearest files are served first,
    so a long general file is what gets cut. Reads files: call it off the UI's event loop.
    Never raises for a file: one that cannot be read says so in its text."""
    home = Path.home() if home is None else home
    cwd = cwd.resolve()
    root = repository_root(cwd) or cwd
    places = memory_places(cwd, home)
    watched = [path for candidates, _ in places for path in candidates]
    expanded: list[MemoryFile] = []
    read: set[Path] = set()
    for candidates, user in places:
        path = next((path for path in candidates if path.is_file()), None)
        if path is None or path.resolve() in read:  # the home folder may be the repository's too
            continue
        read.add(path.resolve())
        text, imports, problems = expand(path, home if user else root)
        watched += imports
        expanded.append(MemoryFile(path, user, text, len(text), tuple(imports), tuple(problems)))
    left = budget
    files: list[MemoryFile] = []
    for file in reversed(expanded):  # the nearest first: a general file is what the budget cuts
        files.append(replace(file, text=file.text[:left]))
        left = max(0, left - file.length)
    return Memory(cwd, home, tuple(reversed(files)), _stamps(watched))


def memory_files(cwd: Path, home: Path | None = None) -> list[MemoryFile]:
    """THE memory files loaded into the system prompt for a session in ``cwd`` (``load_memory``:
    general first, nearest last), each with its path, what its imports read, and whether the
    budget cut it: what the welcome, ``/status`` and ``/memory`` say. Reads files: off the UI's
    event loop."""
    return list(load_memory(cwd, home).files)


def expand(path: Path, boundary: Path, depth: int = 0, chain: tuple[Path, ...] = ()) -> tuple[str, list[Path], list[str]]:
    """The text of memory file ``path`` with its ``@path`` imports inlined: after each paragraph
    (list item, heading) naming ``@some/file``, that file's text (expanded the same way) in
    ``<import path="…">`` tags. An import is a whitespace-led ``@`` word outside code spans and
    code blocks, relative to the importing file's folder (``~/`` the home folder, or absolute);
    a word naming no file is left as it is (``@alice``, ``@types/node``). Refused, with a note in the text and in
    the problems: a file outside ``boundary`` (the repository for a project's file, the home
    folder for the person's), one already being imported (a cycle), one more than
    ``IMPORT_DEPTH`` hops deep.

    Returns:
        (text, the files imported in order, the problems: "FILE:LINE: …").

    Source: Claude Code's memory imports (code.claude.com/docs/en/memory#import-additional-files).
    """
    text = _read(path)
    chain = (*chain, path.resolve())
    imports: list[Path] = []
    problems: list[str] = []
    lines = text.splitlines(keepends=True)
    after: dict[int, list[str]] = {}
    for line, end, word in _import_words(text):
        target = _target(word, path.parent)
        if target is None:  # "@alice", "@types/node": words, as Claude Code leaves them
            continue
        note = None
        resolved = target.resolve()
        if not resolved.is_relative_to(boundary.resolve()):
            note = f"import of {resolved} refused: outside {boundary}"
        elif resolved in chain:
            note = f"import of {resolved} refused: a cycle ({' -> '.join(p.name for p in (*chain, resolved))})"
        elif depth >= IMPORT_DEPTH:
            note = f"import of {resolved} not followed: imports nest at most {IMPORT_DEPTH} deep"
        if note is not None:
            problems.append(f"{path}:{line + 1}: {note}")
            after.setdefault(end, []).append(f"[{note}]\n")
            continue
        inner, nested, inner_problems = expand(resolved, boundary, depth + 1, chain)
        imports += [resolved, *nested]
        problems += inner_problems
        after.setdefault(end, []).append(f'<import path="{resolved}">\n{inner.rstrip()}\n</import>\n')
    if not after:
        return text, imports, problems
    out: list[str] = []
    for number, content in enumerate(lines):
        out.append(content)
        if number in after:
            out += ["" if content.endswith("\n") else "\n", *after.pop(number)]
    for rest in after.values():  # past the last line (a file without a final newline)
        out += ["\n", *rest]
    return "".join(out), imports, problems


def memory_section(files: tuple[MemoryFile, ...] | list[MemoryFile]) -> str:
    """The system prompt's memory section: a line saying what follows, then each file in
    ``<memory path="…">`` tags, general first; a cut file ends with "[... clipped at N characters
    of FILE …]", a file left out wholly is named so. "" when there is none."""
    if not files:
        return ""
    parts = ["Memory files: instructions from AGENTS.md files (CLAUDE.md where a folder has none), the user's "
             "own first, then the repository's from its root down to the working directory. Follow them; where "
             "they disagree, the nearer folder's win."]
    for file in files:
        whose = ' scope="user"' if file.user else ""
        cut = ""
        if file.clipped:
            cut = (f"\n[... clipped at {len(file.text):,} characters of {file.path} ({file.length:,}): memory files "
                   f"get {MEMORY_BUDGET:,} characters in all; read the file for the rest]")
        parts.append(f'<memory path="{file.path}"{whose}>\n{file.text.rstrip()}{cut}\n</memory>')
    return "\n\n".join(parts)


def with_memory(system: str, old: Memory, new: Memory) -> str:
    """``system`` (a system prompt ending with ``old``'s section, as ``prompt.system_prompt``
    writes it) ending with ``new``'s instead."""
    tail = f"\n\n{old.prompt_text}" if old.prompt_text else ""
    head = system[: len(system) - len(tail)] if tail and system.endswith(tail) else system
    return f"{head}\n\n{new.prompt_text}" if new.prompt_text else head


def nearest_file(memory: Memory, *, user: bool = False) -> Path:
    """The file ``/memory`` opens: the deepest project memory file loaded, else ``AGENTS.md`` in
    the working directory; with ``user``, the person's own file loaded, else
    ``~/.agents/AGENTS.md``. It may not exist yet: the editor creates it."""
    loaded = [file.path for file in memory.files if file.user == user]
    return loaded[-1] if loaded else (memory.home / USER_FILES[0] if user else memory.cwd / NAMES[0])


# -- reading -------------------------------------------------------------------------------------


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        return f"[{path} could not be read: {e.strerror or e}]"


def _stamps(paths: list[Path]) -> tuple[tuple[str, int | None, int | None], ...]:
    stamps: list[tuple[str, int | None, int | None]] = []
    for path in dict.fromkeys(paths):
        try:
            stat = path.stat()
        except OSError:
            stamps.append((str(path), None, None))
        else:
            stamps.append((str(path), stat.st_mtime_ns, stat.st_size))
    return tuple(stamps)


def _target(word: str, folder: Path) -> Path | None:
    """The file an ``@word`` names (relative to ``folder``; ``~/`` the home folder), trailing
    punctuation tried without; None when it names no file."""
    for candidate in dict.fromkeys((word, word.rstrip(_TRAILING))):
        if not candidate:
            continue
        path = Path(os.path.expanduser(candidate)) if candidate.startswith("~/") else folder / candidate
        if path.is_file():
            return path
    return None


def _import_words(text: str) -> Iterator[tuple[int, int, str]]:
    """``(line, block_end, word)`` of each ``@word`` in ``text`` outside code (markdown-it's
    text tokens: code spans, fenced and indented code blocks and HTML are not text), with the
    last line of the paragraph (list item, heading) holding it; lines from 0."""
    if "@" not in text:
        return  # most files: no parse
    from markdown_it import MarkdownIt

    for token in MarkdownIt("commonmark").parse(text):
        if token.type != "inline" or token.map is None:
            continue
        for offset, content in _text_lines(token):
            for match in _IMPORT.finditer(content):
                yield token.map[0] + offset, token.map[1] - 1, match.group(1)


def _text_lines(token: Token) -> Iterator[tuple[int, str]]:
    """The plain text of an inline token, by line offset within its block (code spans left out)."""
    offset = 0
    for child in token.children or ():
        if child.type in ("softbreak", "hardbreak"):
            offset += 1
        elif child.type == "text":
            yield offset, child.content


# -- /init -----------------------------------------------------------------------------------------

INIT_PROMPT = """\
Please look through this repository (or, from a subfolder, its part here) and write {path}: the instructions that coding agents (scout, \
Claude Code, Codex…) read before working here.

Look before you write: the README, the build files (pyproject.toml, package.json, Makefile, Cargo.toml, \
go.mod…), the CI configuration, the linters' and formatters' settings, the tests and how they are run, and \
any agent instructions already here (AGENTS.md, CLAUDE.md, .cursorrules, .cursor/rules/, \
.github/copilot-instructions.md).

Write down:
1. The commands to build, lint, format and test, and how to run a single test.
2. The architecture in brief: the big picture that takes reading several files to see (the main parts and \
how data flows between them), not a list of files anyone can see.
3. The conventions this code follows that a newcomer would get wrong (naming, errors, tests, commits), as \
found here.

If {name} exists already, improve it: keep what is right, correct what is stale, add what is missing. If a \
CLAUDE.md or another agent's rules exist, carry over what matters. Be brief: no generic advice ("write \
tests", "handle errors"), nothing you did not find in the repository, no invented sections. Write the file \
with the write or edit tool."""


def init_prompt(cwd: Path, notes: str = "") -> str:
    """``/init``'s prompt: asks the model to write (or improve) ``cwd/AGENTS.md`` (the working
    directory's: the workspace the permission policy lets it write in; from a subfolder of a
    repository, that part's file, read after the root's) after reading the build, test and lint
    set-up, the layout and the conventions; ``notes`` (what the person typed after ``/init``)
    follow it. After Claude Code's ``/init``."""
    text = INIT_PROMPT.format(path=cwd / NAMES[0], name=NAMES[0])
    return f"{text}\n\nAlso: {notes.strip()}" if notes.strip() else text
