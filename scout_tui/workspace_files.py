"""The workspace's files for ``@`` mentions: listed once (respecting ``.gitignore``), then
ranked per keystroke by a fuzzy match of the typed text.

Listing uses the ``git`` program where the workspace is in a repository (``git ls-files
--cached --others --exclude-standard``: every rule git itself applies, nested ``.gitignore``
files, ``.git/info/exclude`` and the global excludes file); elsewhere it walks the folder
and applies each ``.gitignore`` found with ``pathspec``'s git-style matcher. Folders are
listed too, with a trailing ``/``. Paths are relative to the workspace, ``/``-separated.

Ranking is a subsequence match (the typed characters appear in order, any case), the kind
fzf and Textual's command palette use: candidates are found by one regular expression over
all paths joined (C speed on 100,000 paths), then the best ``limit`` ordered by a score that
prefers a contiguous match in the file name, then in the path, then shorter paths.
"""

from __future__ import annotations

import bisect
import itertools
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

LIST_TIMEOUT = 20.0
"""Seconds ``git ls-files`` may take before the walk is used instead."""

MAX_PATHS = 500_000
"""At most this many paths are listed (a home folder opened by mistake stays usable)."""

SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})


@dataclass
class WorkspaceFiles:
    """The listed paths of one workspace: ``paths`` (files, then folders with a trailing ``/``)
    and ``truncated`` (True when ``MAX_PATHS`` was reached)."""

    paths: list[str]
    truncated: bool = False
    _lower: str = field(default="", repr=False)
    _starts: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        lowered = [p.lower() for p in self.paths]  # lower() may change a path's length: offsets from these
        self._lower = "\n".join(lowered)
        self._starts = list(itertools.accumulate((len(p) + 1 for p in lowered[:-1]), initial=0))

    def rank(self, query: str, limit: int = 50) -> list[str]:
        """The best ``limit`` paths for ``query`` (typed after ``@``), best first.

        An empty query gives the top-level entries, folders first; a folder's path (ending in
        ``/``) its entries. Matching ignores case; a ``/`` in the query must match a ``/``.
        O(total path length) per call.
        """
        if not query or query.endswith("/"):  # the top level, or a folder's entries
            inside = self._entries(query)
            if inside or not query:
                return inside[:limit]
        q = query.lower()
        # Most queries name the start of a file or folder name: those paths, shortest first,
        # when there are enough of them (found at C speed; no per-path Python for a short query).
        named = re.compile(re.escape(q) + r"[^/\n]*/?(?=\n|\Z)")  # a lookbehind would lose re's literal search
        firsts = self._paths_at(named, lambda start: start == 0 or self._lower[start - 1] in "/\n")
        if len(firsts) >= limit:
            return sorted(firsts, key=lambda p: (len(p), p))[:limit]
        scored = [(-score(q, path.lower()), len(path), path) for path in self._paths_at(subsequence(q))]
        scored.sort()
        return [path for _, _, path in scored[:limit]]

    def _entries(self, folder: str) -> list[str]:
        """The entries right inside ``folder`` ("" for the top, else ending in ``/``; any case),
        folders first, by name."""
        start, lowered = len(folder), folder.lower()
        inside = [p for p in self.paths if p.lower().startswith(lowered) and len(p) > start
                  and "/" not in p[start:].rstrip("/")]
        return sorted(inside, key=lambda p: (not p.endswith("/"), p.lower()))

    def _paths_at(self, pattern: re.Pattern[str], where: Callable[[int], bool] | None = None) -> list[str]:
        """The paths in which ``pattern`` matches (each once, in listing order), at a start
        offset ``where`` accepts (None: any)."""
        found, last = [], -1
        for match in pattern.finditer(self._lower):
            if where is not None and not where(match.start()):
                continue
            n = bisect.bisect_right(self._starts, match.start()) - 1
            if n != last:
                found.append(self.paths[n])
                last = n
        return found


def subsequence(query: str) -> re.Pattern[str]:
    """A pattern matching ``query``'s characters in order within one line, written so that it
    never backtracks: each gap excludes the character after it (``a[^b\\n]*b``)."""
    parts = [re.escape(query[0])]
    parts += [f"[^{re.escape(c)}\\n]*{re.escape(c)}" for c in query[1:]]
    return re.compile("".join(parts))


def score(query: str, path: str) -> int:
    """How well lower-case ``query`` matches lower-case ``path`` (higher is better): a
    contiguous match in the last part (the name) scores most, at its start more, then a
    contiguous match anywhere, then a bare subsequence; a match ending the path (an exact
    name) adds a little."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if name.startswith(query):
        value = 400
    elif query in name:
        value = 300
    elif query in path:
        value = 200
    else:
        value = 100
    if path.rstrip("/").endswith(query):
        value += 50
    return value


def list_files(root: Path) -> WorkspaceFiles:
    """The files and folders under ``root`` not ignored by ``.gitignore``.

    Raises nothing: an unreadable folder is skipped; without ``git`` or a repository the
    folder is walked.
    """
    files = _git_files(root)
    if files is None:
        files = _walk(root)
    truncated = len(files) > MAX_PATHS
    files = files[:MAX_PATHS]
    folders = sorted({f"{parent}/" for path in files for parent in _parents(path)})
    return WorkspaceFiles(files + folders, truncated)


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: n + 1]) for n in range(len(parts))]


def _git_files(root: Path) -> list[str] | None:
    try:
        done = subprocess.run(
            ["git", "-c", "core.quotePath=off", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=root, capture_output=True, timeout=LIST_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None  # not a repository
    paths = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    return sorted({p for p in paths if p and "\n" not in p})


def _walk(root: Path) -> list[str]:
    import pathspec  # only for folders outside a git repository

    found: list[str] = []
    specs: list[tuple[str, pathspec.PathSpec]] = []  # (folder prefix, its .gitignore)
    for folder, dirs, names in os.walk(root):
        rel = os.path.relpath(folder, root).replace(os.sep, "/")
        rel = "" if rel == "." else rel + "/"
        specs = [(prefix, spec) for prefix, spec in specs if rel.startswith(prefix)]
        if ".gitignore" in names:
            try:
                text = Path(folder, ".gitignore").read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
            specs.append((rel, pathspec.GitIgnoreSpec.from_lines(text.splitlines())))

        def ignored(path: str) -> bool:
            return any(spec.match_file(path[len(prefix):]) for prefix, spec in specs)

        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not ignored(f"{rel}{d}/"))
        found += [f"{rel}{n}" for n in sorted(names) if "\n" not in n and not ignored(f"{rel}{n}")]
        if len(found) > MAX_PATHS:
            break
    return found
