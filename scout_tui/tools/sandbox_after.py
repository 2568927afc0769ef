"""What follows a sandboxed command: a line for its result when the sandbox refused a write
(``blocked_note``), and what it created that scout-tui or git would run outside the sandbox
later, moved aside (``missing_protected`` before it, ``quarantine`` after).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from scout_tui.config.layers import data_dir
from scout_tui.tools.sandbox import PROTECTED, SandboxSettings


QUARANTINED = (".agents", ".scout", "scout.toml", ".git/hooks", ".git/commondir", ".git/modules")
"""The ``PROTECTED`` names that a sandboxed command must not create where they are missing (a
mount can only protect what exists): ``quarantine`` moves what a command made there out of the
workspace, before scout-tui or git could run it. The ``.git/`` ones count only in a repository
that exists before the command (``git init`` makes its own hooks folder)."""


def missing_protected(cwd: Path, settings: SandboxSettings) -> list[Path]:
    """The ``QUARANTINED`` paths of the workspace ``cwd`` that do not exist, in ``workspace-write``
    mode (in the others nothing is writable); check them again after the command."""
    if settings.mode != "workspace-write":
        return []
    cwd = Path(cwd).resolve()
    names = [n for n in QUARANTINED if not n.startswith(".git/") or (cwd / ".git").is_dir()]
    return [path for name in names if not os.path.lexists(path := cwd / name)]


def new_nested_repositories(cwd: Path, since: float) -> list[Path]:
    """The ``.git`` of each repository nested in the workspace ``cwd`` that the index now holds as
    a gitlink and that was made at or after ``since`` (seconds since the epoch, the command's
    start): the person's next ``git status`` recurses into it and runs its ``core.fsmonitor``.
    Looks only when the index changed since then; lists it with ``git ls-files -s`` (mode
    160000, gitlinks, git-ls-files(1)) with the repository's own fsmonitor off."""
    index = Path(cwd) / ".git" / "index"
    try:
        if index.stat().st_mtime < since:
            return []
        listed = subprocess.run(["git", "-c", "core.fsmonitor=false", "ls-files", "-s", "-z"], cwd=cwd,
                                capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return []
    found = []
    for entry in listed.stdout.split(b"\0"):
        meta, _, name = entry.partition(b"\t")
        if meta.startswith(b"160000 "):
            git = Path(cwd) / os.fsdecode(name) / ".git"
            with contextlib.suppress(OSError):
                if os.lstat(git).st_ctime >= since:
                    found.append(git)
    return found


@dataclass(frozen=True, slots=True)
class MovedAside:
    """What ``quarantine`` did: ``created`` (the paths' names, relative to the workspace), the
    ``folder`` they went to, and ``stuck``, those that could not be moved (with why)."""

    created: tuple[str, ...]
    folder: Path
    stuck: tuple[str, ...] = ()

    def for_model(self) -> str:
        """The line that ends the command's result."""
        line = (f"[the command created {', '.join(self.created)}, which scout-tui (plugins, skills, settings) or git "
                "(hooks, config) would run outside the sandbox later")
        if len(self.stuck) < len(self.created):
            line += f"; moved to {self.folder} for the user to review"
        if self.stuck:
            line += f"; could not move {', '.join(self.stuck)}: tell the user to review it"
        return line + (". Change these only with the user's say: tell them what you want to change, or use the "
                       "write or edit tool, which asks them (unless they chose yolo).]")

    def for_person(self) -> str:
        """The notice the person reads in the chat (or on stderr under ``-p``)."""
        what = (f"A command created {', '.join(self.created)}, which scout-tui or git would run outside the sandbox "
                "later")
        if len(self.stuck) < len(self.created):
            what += f": moved to {self.folder} for you to review"
        if self.stuck:
            what += f". Could not move {', '.join(self.stuck)}: review it before you run git or scout-tui here again"
        return what + "."


def quarantine(created: list[Path], folder: Path | None = None, cwd: Path | None = None) -> MovedAside | None:
    """Move each of ``created`` (paths a sandboxed command made among ``missing_protected``, or
    ``new_nested_repositories``) into ``folder`` (default: a new folder under ``quarantine`` in
    the data folder); None when ``created`` is empty. Paths are named relative to the workspace
    ``cwd`` when given.

    Raises nothing: a path that cannot be moved is in ``MovedAside.stuck``."""
    if not created:
        return None
    if folder is None:
        folder = data_dir() / "quarantine" / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.urandom(3).hex()}"

    def label(path: Path) -> str:  # as named in QUARANTINED, or relative to the workspace
        if cwd is not None and path.is_relative_to(Path(cwd).resolve()):
            return path.relative_to(Path(cwd).resolve()).as_posix()
        return f".git/{path.name}" if path.parent.name == ".git" else path.name

    stuck = []
    for path in created:
        try:
            (folder / label(path)).parent.mkdir(parents=True, exist_ok=True)
            shutil.move(path, folder / label(path))
        except OSError as e:
            stuck.append(f"{label(path)} ({e.strerror or e})")
    return MovedAside(tuple(map(label, created)), folder, tuple(stuck))


_PATH = re.compile(r"""(?<![\w.~/-])(?:~|\.\.?)?/[^\s'"`:,;()\[\]]*""")


def writable_places(cwd: Path, settings: SandboxSettings) -> list[Path]:
    """The paths a sandboxed command may write under: /tmp, /dev, and in ``workspace-write``
    mode the workspace and the ``writable`` paths."""
    places = [Path("/tmp"), Path("/dev")]
    if settings.mode == "workspace-write":
        places += [Path(cwd).resolve(), *settings.writable]
    return places


_REPORTED = re.compile(r"(?::\s|^)(?:Read-only file system|Permission denied|Device or resource busy)(?:\s*$|:\s)"
                       r"|\[Errno (?:13|16|30)\]|\bE(?:ROFS|ACCES|BUSY):", re.IGNORECASE)
"""How a program reports a refused system call: the C library's message after ``: `` at the end
of a line (coreutils, bash: "touch: cannot touch 'x': Read-only file system"), or before ``: ``
and a path, Python's ``[Errno 30]`` and Node's ``EROFS:`` (strerror(3), errno(3))."""

_WRITING = re.compile(r"cannot (?:touch|create|remove|move|overwrite|make|open .* for writing)|for writing"
                      r"|failed to (?:create|open .* for writing)")
"""Words of coreutils' and GNU tools' messages that say the refused call was a write."""


def blocked_note(output: str, cwd: Path, settings: SandboxSettings, *, succeeded: bool = False) -> str | None:
    """A line for a sandboxed command's result when its ``output`` shows the sandbox refused a
    write: "Read-only file system" (EROFS, what a read-only bind gives), "Device or resource
    busy" (EBUSY: replacing a protected path, as ``git config`` does with ``.git/config``)
    naming one of ``PROTECTED``, or "Permission denied" naming a path outside
    ``writable_places``. None when nothing points at the sandbox.

    ``succeeded``: the command exited 0, as a compound command does when only its last part
    matters (``touch /etc/x; echo done``). Its output may merely quote such words (``grep``
    of a log), so a line counts only when it has the shape of a refused call (``_REPORTED``),
    and a "Permission denied" only when it also says it was a write (``_WRITING``: a refused
    read is not the sandbox's doing)."""
    places = writable_places(cwd, settings)
    for text in output.splitlines():
        if succeeded and not _REPORTED.search(text):
            continue
        if "Read-only file system" in text or "EROFS" in text or "[Errno 30]" in text:
            break
        if "Device or resource busy" in text and any(name in text for name in PROTECTED):
            break
        if ("Permission denied" in text and (not succeeded or _WRITING.search(text))
                and any(_outside(p, cwd, places) for p in _PATH.findall(text))):
            break
    else:
        return None
    where = ("the workspace (but not .git/config, .git/hooks, .agents, .scout nor scout.toml: they run outside the "
             "sandbox later), /tmp and the [sandbox] writable paths" if settings.mode == "workspace-write"
             else "only /tmp (read-only mode)")
    return (f"[the sandbox ({settings.mode}) blocked a write: commands may write {where}. If this command "
            "must write elsewhere, call bash again with outside_sandbox: true (the user is asked first).]")


def _outside(text: str, cwd: Path, places: list[Path]) -> bool:
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = Path(cwd) / path
    try:
        path = path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: say nothing about it
        return False
    return not any(path.is_relative_to(place) for place in places)
