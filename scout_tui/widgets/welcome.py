"""The welcome at the top of an empty session: the folder, the model, the memory files read
(AGENTS.md…), and where to start (``/help``, Ctrl+T, ``@``). It goes with the first prompt."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from textual.content import Content
from textual.widgets import Static

from ..core.text import one_line

if TYPE_CHECKING:
    from scout_tui.session.memory import MemoryFile

SHOWN_FILES = 2
"""The memory files the welcome names; of more, the nearest and how many others."""


def tilde(path: Path, home: Path | None = None) -> str:
    """``path`` as a person reads it: under ``home`` (default ``Path.home()``) as ``~/…``,
    ``home`` itself as ``~``, anything else in full."""
    home = Path.home() if home is None else home
    try:
        rest = path.relative_to(home)
    except ValueError:
        return str(path)
    return "~" if rest == Path(".") else f"~/{rest}"


def shown_path(path: Path, cwd: Path, home: Path | None = None) -> str:
    """A memory file's path as a person reads it here: in ``cwd`` or a folder above it relative
    to ``cwd`` (``AGENTS.md``, ``../AGENTS.md``), any other as ``tilde`` shows it."""
    cwd, folder = cwd.resolve(), path.parent.resolve()
    return os.path.relpath(folder / path.name, cwd) if cwd.is_relative_to(folder) else tilde(path, home)


def memory_names(files: Sequence[MemoryFile], cwd: Path, home: Path | None = None) -> list[str]:
    """The memory files (``memory.memory_files``) as the welcome names them (``shown_path``),
    general first; "(clipped)" after one the budget cut."""
    return [f"{shown_path(file.path, cwd, home)}{' (clipped)' if file.clipped else ''}" for file in files]


class Welcome(Static):
    """The welcome of an empty session, three lines in a frame:

    - ``scout`` and the folder (``tilde``);
    - the provider and model (``set_model``, as the status bar shows them), and the memory files
      read (``memory``, e.g. ``~/.agents/AGENTS.md, AGENTS.md``; of more than ``SHOWN_FILES``, the
      nearest and how many others) or that none is;
    - the keys to start with.

    Setting up a provider is not its business: without a key, the notice below it says how.
    """

    DEFAULT_CSS = """
    Welcome {
        border: round $primary 60%;
        border-title-color: $text-muted;
        padding: 0 1;
        margin: 1 0 0 0;
        color: $text-muted;
    }
    """

    def __init__(self, folder: str, memory: Sequence[str]) -> None:
        super().__init__()
        self.folder = folder
        self.memory = list(memory)
        """The memory files read, as shown (``memory_names``), general first."""
        self.provider = self.model = ""

    def set_model(self, provider: str, model: str) -> None:
        """Show ``provider`` · ``model`` (either "" while not known yet)."""
        self.provider, self.model = provider, model
        self.refresh(layout=True)

    def render(self) -> Content:
        model = " · ".join(part for part in (one_line(self.provider, 30), one_line(self.model, 60)) if part)
        read: tuple[str | tuple[str, str], ...]
        if len(self.memory) > SHOWN_FILES:
            others = len(self.memory) - 1
            read = ("reads ", (self.memory[-1], "$text"), f" and {others} more memory file{'s' * (others > 1)}")
        elif self.memory:
            read = ("reads ", *_joined([(name, "$text") for name in self.memory], ", "))
        else:
            read = ("no AGENTS.md: ", ("/init", "bold $text"), " writes one")
        return Content.assemble(
            ("✻ ", "$accent"), ("scout", "bold $text"), "  ", (self.folder, "bold $text"), "\n",
            *((model, "$text"), " · ") if model else (), *read, "\n",
            ("/help", "bold $text"), " commands · ", ("Ctrl+T", "bold $text"), " sessions and tools · ",
            ("@", "bold $text"), " attaches a file",
        )


def _joined(parts: list[tuple[str, str]], separator: str) -> list[str | tuple[str, str]]:
    joined: list[str | tuple[str, str]] = []
    for part in parts:
        joined += [separator, part] if joined else [part]
    return joined
