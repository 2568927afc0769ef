"""The workspace's files for ``@`` mentions: listed once (respecting ``.gitignore``), then
ranked per keystroke by a fuzzy match of the typed text.

Listing uses the ``git`` program where the workspace is in a repository (``git ls-files
--cached --others --exclude-standard``: every rule git itself applies, nested ``.gitignore``
files, ``.git/info/exclude`` and the global excludes file); elsewhere it walks the folder
and applies each ``.gitignore`` found with ``pathspec``'s git-style matcher. Folders are
listed too, with a trailing ``/``. Paths are relative to the workspace, ``/``-separated.

Ranking is fuzzy, the kind fzf and Textual's command palette use: a name starting with the
typed text first, then the text anywhere in a path, then its characters in order (a
subsequence), shorter paths first in each tier; each tier is found by one regular expression
over all paths joined (C speed on 100,000 paths).
"""

from __future__ import annotations

import bisect
import itertools
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

LIST_TIMEOUT = 20.0
"""Seconds ``git ls-files`` may take before the walk is used instead."""

MAX_PATHS = 500_000
"""At most this many paths are listed (a home folder opened by mistake stays usable)."""

SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})

TIER_CAP = 5_000
"""Matches read per ranking tier: beyond it a short query's tier is ordered by what was read."""


def _offsets(lines: list[str]) -> list[int]:
    """Where each of ``lines`` starts in ``"\\n".join(lines)``."""
    return list(itertools.accumulate((len(line) + 1 for line in lines[:-1]), initial=0))


@dataclass
class WorkspaceFiles:
    """The listed paths of one workspace: ``paths`` (files, then folders with a trailing ``/``)
    (at most ``MAX_PATHS`` files)."""

    paths: list[str]
    _lower: str = field(default="", repr=False)
    _starts: list[int] = field(default_factory=list, repr=False)
    _names: str = field(default="", repr=False)
    _name_starts: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        lowered = [p.lower() for p in self.paths]  # lower() may change a path's length: offsets from these
        self._lower = "\n".join(lowered)
        self._starts = _offsets(lowered)
        names = [p.rstrip("/").rsplit("/", 1)[-1] for p in lowered]  # each path's last part, in order
        self._names = "\n" + "\n".join(names)  # every name follows a "\n": a name's start is a literal search
        self._name_starts = [n + 1 for n in _offsets(names)]

    def rank(self, query: str, limit: int = 50) -> list[str]:
        """The best ``limit`` paths for ``query`` (typed after ``@``), best first.

        An empty query gives the top-level entries, folders first; a folder's path (ending in
        ``/``) its entries. Otherwise, in tiers, each shortest path first: a name (a path's
        last part) starting with the query, then the query anywhere in the path, then its
        characters in order (a subsequence). Matching ignores case. Each tier is found by one
        regular expression over all paths joined (C speed), and at most ``TIER_CAP`` of its
        matches are read, so a one-character query costs what a long one does.
        """
        if not query or query.endswith("/"):  # the top level, or a folder's entries
            inside = self._entries(query)
            if inside or not query:
                return inside[:limit]
        q = query.lower()
        tiers = (
            self._at(re.compile("\n" + re.escape(q)), self._names, self._name_starts, shift=1),
            self._at(re.compile(re.escape(q)), self._lower, self._starts),
            self._at(subsequence(q), self._lower, self._starts),
        )
        chosen: list[str] = []
        for tier in tiers:
            taken = set(chosen)
            fresh = sorted((p for p in tier if p not in taken), key=lambda p: (len(p), p))
            chosen += fresh[: limit - len(chosen)]
            if len(chosen) >= limit:
                break
        return chosen

    def _at(self, pattern: re.Pattern[str], text: str, starts: list[int], shift: int = 0) -> list[str]:
        """The paths whose line of ``text`` (lines starting at ``starts``) ``pattern`` matches,
        each once, in listing order, at most ``TIER_CAP``. ``shift``: characters of the match
        before the line it belongs to (the "\n" a name search begins with)."""
        found: list[str] = []
        last = -1
        for match in pattern.finditer(text):
            n = bisect.bisect_right(starts, match.start() + shift) - 1
            if n != last:
                found.append(self.paths[n])
                last = n
                if len(found) >= TIER_CAP:
                    break
        return found

    def _entries(self, folder: str) -> list[str]:
        """The entries right inside ``folder`` ("" for the top, else ending in ``/``; any case),
        folders first, by name."""
        start, lowered = len(folder), folder.lower()
        inside = [p for p in self.paths if p.lower().startswith(lowered) and len(p) > start
                  and "/" not in p[start:].rstrip("/")]
        return sorted(inside, key=lambda p: (not p.endswith("/"), p.lower()))


def subsequence(query: str) -> re.Pattern[str]:
    """A pattern matching ``query``'s characters in order within one line, written so that it
    never backtracks: each gap excludes the character after it (``a[^b\\n]*b``)."""
    parts = [re.escape(query[0])]
    parts += [f"[^{re.escape(c)}\\n]*{re.escape(c)}" for c in query[1:]]
    return re.compile("".join(parts))


def list_files(root: Path) -> WorkspaceFiles:
    """The files and folders under ``root`` not ignored by ``.gitignore``.

    Raises nothing: an unreadable folder is skipped; without ``git`` or a repository the
    folder is walked.
    """
    files = _git_files(root)
    if files is None:
        files = _walk(root)
    files = files[:MAX_PATHS]
    folders = sorted({f"{parent}/" for path in files for parent in _parents(path)})
    return WorkspaceFiles(files + folders)


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
