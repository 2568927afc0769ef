"""Trust for project plugins: a project's ``.agents/plugins/*.py`` runs only when the person has
trusted that exact content (its sha256) at that path, as Claude Code and VS Code ask before running
a workspace's code. The trusted hashes live in ``<data dir>/trusted.json``; ``plugins.load_plugins``
checks them, ``scout-tui trust`` and ``/trust`` record them.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from scout_tui.config.layers import data_dir
from scout_tui.core.errors import ScoutError
from scout_tui.core.text import reveal

TRUST_FILE = "trusted.json"

UNTRUSTED = "it is new or changed since you trusted it; read it, then run `scout-tui trust` (or /trust) to load it"
"""Why an untrusted project plugin was not loaded (the end of its line in ``Plugins.problems``)."""


@dataclass(frozen=True)
class PluginFile:
    """One project plugin file as read now, and whether that content is trusted.

    Attributes:
        path: the file, as found in the project's plugin folder.
        key: its key in the trust file (``trust_key``).
        sha256: the hex digest of ``source``.
        state: ``"trusted"`` (this content was trusted at this path), ``"new"`` (never trusted
            at this path) or ``"changed"`` (another content was).
        source: the bytes read and hashed; a trusted plugin is run from exactly these, so the
            file cannot change between the check and the run.
    """

    path: Path
    key: str
    sha256: str
    state: str
    source: bytes = field(repr=False)
    label: str = ""
    """What the person is shown for it (an MCP server's name and file); "" for a plugin file."""

    @property
    def shown(self) -> str:
        """``label``, else the path."""
        return self.label or str(self.path)

    @property
    def trusted(self) -> bool:
        return self.state == "trusted"

    @property
    def lines(self) -> int:
        """How many lines ``source`` has (a last one without a newline counts)."""
        return self.source.count(b"\n") + (bool(self.source) and not self.source.endswith(b"\n"))

    def summary(self) -> str:
        """"12 lines, 380 bytes"."""
        return f"{self.lines} line{'s' * (self.lines != 1)}, {len(self.source)} bytes"

    def head(self, lines: int, width: int = 100) -> list[str]:
        """The first ``lines`` lines of the file (split at ``\\n``; UTF-8, bad bytes replaced), each control
        character written out (``text.reveal``: nothing a terminal would act on or hide) and cut
        to ``width`` characters with "…" (so that code pushed far right is seen to be there)."""
        text = self.source.decode("utf-8", "replace").removesuffix("\n")
        shown = []
        for line in text.split("\n")[:lines] if text else []:  # a lone \r is shown, not obeyed
            line = reveal(line.removesuffix("\r"))  # CRLF files read as LF ones
            shown.append(line if len(line) <= width else line[: width - 1] + "…")
        return shown


def trust_file() -> Path:
    """``<data dir>/trusted.json`` (``config.data_dir``: ``$SCOUT_HOME`` or the platform's)."""
    return data_dir() / TRUST_FILE


def trust_key(path: Path) -> str:
    """The trust file's key for plugin ``path``: its absolute path with the folder resolved (so
    ``cd`` through a symlink finds the same entry) but not the file itself (a plugin linked to a
    file elsewhere is trusted where it is found)."""
    path = Path(path).absolute()
    return str(path.parent.resolve() / path.name)


def read_trusted(path: Path | None = None) -> tuple[dict[str, str], str | None]:
    """The trust file ``path`` (default ``trust_file()``) as ``({key: sha256 hex}, problem)``.

    A missing file is an empty table without a problem. An unreadable file, or one that is not
    a JSON object of strings, is an empty table (nothing trusted) and ``problem`` says so:
    "<path>: cannot read the trusted plugins (<why>): no project plugin is trusted until
    `scout-tui trust` writes it again". Never raises.
    """
    path = trust_file() if path is None else path
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, None
    except (OSError, UnicodeDecodeError) as exc:
        return {}, _unreadable(path, exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc))
    try:
        table = json.loads(text)
    except json.JSONDecodeError as exc:
        return {}, _unreadable(path, f"not JSON: {exc.msg} at line {exc.lineno}")
    if not isinstance(table, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in table.items()):
        return {}, _unreadable(path, "expected a JSON object of path: sha256")
    return table, None


def lazy_trusted(notes: list[str]) -> Callable[[], dict[str, str]]:
    """A function giving the trust table (``read_trusted``), read on its first call only, an
    unreadable file's problem added to ``notes`` then: for readers of config entries that need
    it only when a project brings one."""
    table: dict[str, str] | None = None

    def trusted() -> dict[str, str]:
        nonlocal table
        if table is None:
            table, problem = read_trusted()
            if problem:
                notes.append(problem)
        return table

    return trusted


def check_file(path: Path, trusted: dict[str, str]) -> PluginFile:
    """Read plugin ``path`` once and say whether ``trusted`` (from ``read_trusted``) holds its
    content's sha256 at its key.

    Raises:
        OSError: the file cannot be read.
    """
    source = Path(path).read_bytes()
    key, digest = trust_key(path), hashlib.sha256(source).hexdigest()
    known = trusted.get(key)
    state = "new" if known is None else "trusted" if known == digest else "changed"
    return PluginFile(Path(path), key, digest, state, source)


def check_entry(path: Path, entry: str, source: bytes, trusted: dict[str, str], label: str = "") -> PluginFile:
    """Like ``check_file`` for one entry ``entry`` of config file ``path`` (an MCP server of a
    project's ``.mcp.json``), ``source`` being the entry's own text: its key is
    ``"<trust_key(path)>#<entry>"``, so each server is trusted on its own and a change to one
    leaves the others trusted."""
    key, digest = f"{trust_key(path)}#{entry}", hashlib.sha256(source).hexdigest()
    known = trusted.get(key)
    state = "new" if known is None else "trusted" if known == digest else "changed"
    return PluginFile(Path(path), key, digest, state, source, label)


def check_files(paths: list[Path]) -> tuple[list[PluginFile], list[str]]:
    """Each of ``paths`` (a project's plugin or agent files) read now with its trust state
    (``check_file``), and the problems met: an unreadable trust file (``read_trusted``), "<path>:
    cannot read it: <why>" for a file that cannot be read (left out). Never raises."""
    if not paths:
        return [], []
    trusted, problem = read_trusted()
    problems = [problem] if problem else []
    files = []
    for path in paths:
        try:
            files.append(check_file(path, trusted))
        except OSError as exc:
            problems.append(f"{path}: cannot read it: {exc.strerror or exc}")
    return files, problems


def record_trust(files: Iterable[PluginFile], path: Path | None = None) -> Path:
    """Trust each of ``files`` with the content it was read with (``PluginFile.sha256``, not the
    file as it is now) in the trust file ``path`` (default ``trust_file()``); returns that path.

    The table is read again just before writing (another run may have added to it; a corrupt
    one is replaced) and written atomically: a temporary file in the same folder, then
    ``os.replace``, so a reader never sees half a file.

    Raises:
        ScoutError: the file cannot be written ("<path>: cannot record the trusted plugins: <why>").
    """
    path = trust_file() if path is None else path
    table, _ = read_trusted(path)
    table.update({f.key: f.sha256 for f in files})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{TRUST_FILE}.", dir=path.parent)  # mode 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(dict(sorted(table.items())), out, indent=2)
                out.write("\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, path)
        except BaseException:
            os.unlink(temp)
            raise
    except OSError as exc:
        raise ScoutError(f"{path}: cannot record the trusted plugins: {exc.strerror or exc}") from None
    return path


def _unreadable(path: Path, why: str) -> str:
    return (f"{path}: cannot read the trusted plugins ({why}): no project plugin is trusted until "
            "`scout-tui trust` writes it again")
