"""Snapshots of a workspace's files, with the ``git`` program as the engine, in an object store
of scout-tui's own: the person's repository, index, stash and history are never read or written.

One bare repository per workspace under ``<data dir>/checkpoints/``, with its own index file,
holds every snapshot of that workspace as a git *tree* (no commits or refs: nothing runs
``git gc`` there, ``gc.auto`` is off). Taking a snapshot is ``git add --all`` into that index
(files whose size and time did not change are not read again: fast on a large workspace) and
``git write-tree``. Git applies the workspace's ``.gitignore`` files; ``.git`` folders are never
taken; files over ``MAX_FILE_BYTES`` are left out and listed in the snapshot's ``skipped``, and so
is a folder that is a git repository of its own (a clone inside the workspace: git would keep
only its commit id, not its files), listed with a trailing ``/`` (``why_skipped`` says which).
Bytes are kept exactly (``core.autocrlf`` off, no filters), with the executable bit.

Workspaces that are not git repositories work the same way. Sources: git-add(1),
git-write-tree(1), git-diff-tree(1), git-checkout(1), git-read-tree(1); opencode's snapshots
take the same approach (a separate git dir over the project's work tree).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from scout_tui.core.errors import ScoutError

MAX_FILE_BYTES = 5_000_000
"""Files larger than this are not kept in a snapshot (listed in ``Snapshot.skipped``)."""

MAX_NEW_FILES = 50_000
"""More new files than this in one snapshot (a home folder opened by mistake): refused, not
copied into the store."""

GIT_TIMEOUT = 120.0
"""Seconds any one git command may take."""

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
"""Git's id of the empty tree (what a snapshot of an empty folder is)."""


@dataclass(frozen=True)
class Snapshot:
    """The workspace's files at one moment: ``tree`` (a git tree id in the checkpoint store)
    and ``skipped`` (workspace-relative paths left out for their size)."""

    tree: str
    skipped: tuple[str, ...] = ()


def why_skipped(path: str) -> str:
    """Why ``path`` of a ``Snapshot.skipped`` is not kept, for people to read."""
    if path.endswith("/"):
        return "a git repository of its own"
    return f"over {MAX_FILE_BYTES // 1_000_000} MB"


@dataclass(frozen=True)
class Change:
    """One file that differs between two snapshots: ``status`` "added", "modified",
    "deleted" or "renamed" (then ``old_path`` is where it was), its ``path``."""

    status: str
    path: str
    old_path: str | None = None


_STATUS = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed", "T": "modified", "C": "added"}


@dataclass
class Checkpoints:
    """The checkpoint store of ``workspace``, under ``root`` (default ``<data dir>/checkpoints``).

    Raises ScoutError (naming the command and git's message) when git is missing or fails.
    """

    workspace: Path
    root: Path | None = None
    git_dir: Path = field(init=False)

    def __post_init__(self) -> None:
        from scout_tui.config.layers import data_dir

        self.workspace = self.workspace.resolve()
        root = self.root if self.root is not None else data_dir() / "checkpoints"
        key = hashlib.sha256(str(self.workspace).encode()).hexdigest()[:16]
        self.git_dir = root / f"{self.workspace.name or 'root'}-{key}.git"

    # -- git ------------------------------------------------------------------------------------

    def _git(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        """Run git on the checkpoint store with the workspace as its work tree; stdout."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}  # the person's GIT_DIR etc.
        env.update(GIT_DIR=str(self.git_dir), GIT_WORK_TREE=str(self.workspace),
                   GIT_INDEX_FILE=str(self.git_dir / "scout-index"), GIT_CONFIG_NOSYSTEM="1",
                   GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0")
        command = ["git", "-c", "core.autocrlf=false", "-c", "core.safecrlf=false", "-c", "core.fileMode=true",
                   "-c", "core.symlinks=true", "-c", "core.quotePath=off", "-c", "gc.auto=0",
                   "-c", "core.hooksPath=" + os.devnull, *args]
        try:
            done = subprocess.run(command, cwd=self.workspace, env=env, input=input, capture_output=True,
                                  timeout=GIT_TIMEOUT)
        except FileNotFoundError:
            raise ScoutError("checkpoints need the git program, which is not installed") from None
        except subprocess.TimeoutExpired:
            raise ScoutError(f"git {args[0]} took over {GIT_TIMEOUT:.0f} s in {self.workspace}") from None
        if check and done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise ScoutError(f"git {args[0]} failed in the checkpoint store {self.git_dir}: "
                             f"{message[-1] if message else 'exit ' + str(done.returncode)}")
        return done.stdout

    def _ready(self) -> None:
        if not (self.git_dir / "HEAD").exists():
            self.git_dir.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["git", "init", "--quiet", "--bare", str(self.git_dir)], capture_output=True, check=True,
                           env={k: v for k, v in os.environ.items() if not k.startswith("GIT_")})
            (self.git_dir / "info").mkdir(exist_ok=True)

    # -- snapshots ------------------------------------------------------------------------------

    @contextmanager
    def _alone(self) -> Iterator[None]:
        """Hold the store's lock: two scout-tui processes in one workspace share its index, and
        a ``git add`` refused for the other's ``index.lock`` would leave a file out unsaid, and
        two first snapshots would both ``git init`` the store."""
        self.git_dir.parent.mkdir(parents=True, exist_ok=True)
        with open(self.git_dir.with_name(self.git_dir.name + ".lock"), "a") as lock:  # beside it: init too
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                self._ready()
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def snapshot(self) -> Snapshot:
        """Take the workspace's files as they are now. Cost: one look at the files' stat data
        (``git diff-files``) and one walk for new files (``git ls-files --others``, which applies
        ``.gitignore``); only the files found changed are read, then ``write-tree``. One
        process at a time per store (a lock file beside it)."""
        with self._alone():
            return self._snapshot()

    def _snapshot(self) -> Snapshot:
        changed = _paths(self._git("diff-files", "--name-only", "-z"))  # modified or deleted since taken
        new = _paths(self._git("ls-files", "--others", "--exclude-standard", "-z"))
        if len(new) > MAX_NEW_FILES:
            raise ScoutError(f"{self.workspace} has {len(new):,} files not in .gitignore, over the {MAX_NEW_FILES:,} a "
                             'checkpoint takes; set checkpoints = "off" in scout.toml for this folder')
        nested = [p for p in new if p.endswith("/")]  # git lists a repository inside as "folder/"
        skipped = nested + [p for p in (*changed, *new) if not p.endswith("/") and _size(self.workspace / p) > MAX_FILE_BYTES]
        if skipped:  # left out; one taken before it grew (or became a repository) goes out of the store's index
            self._git("rm", "--cached", "-r", "--force", "--quiet", "--ignore-unmatch", "--pathspec-from-file=-",
                      "--pathspec-file-nul", input=_nul(skipped))
        taken = sorted((set(changed) | set(new)) - set(skipped))
        if taken:  # an unreadable file is left out (--ignore-errors), the others taken
            self._git("add", "--all", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul",
                      input=_nul(taken), check=False)
        tree = self._git("write-tree").decode().strip()
        return Snapshot(tree, tuple(sorted(skipped)))

    # -- reading them ---------------------------------------------------------------------------

    def changes(self, before: str, after: str) -> list[Change]:
        """The files that differ from snapshot ``before`` to ``after``, renames found, by path."""
        out = self._git("diff-tree", "-r", "-z", "-M", "--name-status", "--no-commit-id", before, after)
        fields = [os.fsdecode(f) for f in out.split(b"\0") if f]
        changes, i = [], 0
        while i < len(fields):
            code = fields[i][0]
            if code in "RC":
                changes.append(Change(_STATUS[code], fields[i + 2], fields[i + 1] if code == "R" else None))
                i += 3
            else:
                changes.append(Change(_STATUS.get(code, "modified"), fields[i + 1]))
                i += 2
        return sorted(changes, key=lambda c: c.path)

    def diff(self, before: str, after: str, paths: list[str] | None = None) -> str:
        """The unified diff from snapshot ``before`` to ``after`` (of ``paths`` only, when
        given), renames found, as ``git diff`` prints it (binary files said, not shown)."""
        out = self._git("diff-tree", "-r", "-p", "-M", "--no-color", "--no-commit-id", before, after,
                        "--", *(paths or []))
        return out.decode("utf-8", "replace")

    def numstat(self, before: str, after: str) -> dict[str, tuple[int, int] | None]:
        """Lines added and removed per path from snapshot ``before`` to ``after`` (renames
        found, under the new path), as ``git diff --numstat`` counts them; None for a binary
        file."""
        out = self._git("diff-tree", "-r", "-z", "-M", "--numstat", "--no-commit-id", before, after)
        fields = [os.fsdecode(f) for f in out.split(b"\0")]
        counts: dict[str, tuple[int, int] | None] = {}
        i = 0
        while i < len(fields) and fields[i]:
            added, removed, path = fields[i].split("\t", 2)
            if not path:  # a rename: the old and the new path follow, each its own field
                path, i = fields[i + 2], i + 2
            counts[path] = None if added == "-" else (int(added), int(removed))
            i += 1
        return counts

    def file(self, tree: str, path: str) -> bytes | None:
        """The bytes of ``path`` in snapshot ``tree``; None when it is not there."""
        if not self._git("ls-tree", "-z", tree, "--", path):
            return None
        return self._git("cat-file", "blob", f"{tree}:{path}")

    def changed_since(self, tree: str, paths: list[str]) -> list[str]:
        """Which of ``paths`` differ now from snapshot ``tree`` (changed by someone else since
        it was taken): a restore must not overwrite them unasked. Takes a snapshot."""
        now = self.snapshot().tree
        wanted = set(paths)
        return sorted({p for c in self.changes(tree, now) for p in (c.path, c.old_path) if p in wanted})

    # -- restoring ------------------------------------------------------------------------------

    def restore(self, tree: str, paths: list[str]) -> None:
        """Make each of ``paths`` in the workspace what it is in snapshot ``tree``: its bytes and
        executable bit written back, or the file removed when the snapshot has none. Other
        files are not touched. Raises ScoutError when git fails."""
        with self._alone():  # checkout writes the store's index too
            self._restore(tree, paths)

    def _restore(self, tree: str, paths: list[str]) -> None:
        present = {os.fsdecode(p) for p in self._git("ls-tree", "-r", "-z", "--name-only", tree, "--", *paths)
                   .split(b"\0") if p}
        if present:
            self._git("checkout", tree, "--", *sorted(present))
        for path in paths:
            if path not in present:
                target = self.workspace / path
                if target.is_file() or target.is_symlink():
                    target.unlink()
                    _remove_empty_parents(target.parent, self.workspace)


def _paths(out: bytes) -> list[str]:
    """The paths of a ``-z`` listing."""
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def _nul(paths: list[str]) -> bytes:
    """``paths`` for ``--pathspec-from-file=- --pathspec-file-nul``, each literal."""
    return b"".join(os.fsencode(f":(literal){p}") + b"\0" for p in paths)


def _size(path: Path) -> int:
    """``path``'s size in bytes (a link's own); 0 when it is gone."""
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def _remove_empty_parents(folder: Path, stop: Path) -> None:
    while folder != stop and folder.is_relative_to(stop):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
