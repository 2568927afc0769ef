"""The welcome at the top of an empty session: the folder, the model, whether an instructions
file is read, and where to start (``/help``, Ctrl+T, ``@``). It goes with the first prompt."""

from __future__ import annotations

from pathlib import Path

from textual.content import Content
from textual.widgets import Static

from ..core.text import one_line


def tilde(path: Path, home: Path | None = None) -> str:
    """``path`` as a person reads it: under ``home`` (default ``Path.home()``) as ``~/…``,
    ``home`` itself as ``~``, anything else in full."""
    home = Path.home() if home is None else home
    try:
        rest = path.relative_to(home)
    except ValueError:
        return str(path)
    return "~" if rest == Path(".") else f"~/{rest}"


class Welcome(Static):
    """The welcome of an empty session, three lines in a frame:

    - ``scout`` and the folder (``tilde``);
    - the provider and model (``set_model``, as the status bar shows them), and the instructions
      file read (``instructions``, e.g. ``AGENTS.md`` or ``~/.agents/AGENTS.md``) or that none is;
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

    def __init__(self, folder: str, instructions: str | None) -> None:
        super().__init__()
        self.folder = folder
        self.instructions = instructions
        """The instructions file read, as shown (None: none is)."""
        self.provider = self.model = ""

    def set_model(self, provider: str, model: str) -> None:
        """Show ``provider`` · ``model`` (either "" while not known yet)."""
        self.provider, self.model = provider, model
        self.refresh(layout=True)

    def render(self) -> Content:
        model = " · ".join(part for part in (one_line(self.provider, 30), one_line(self.model, 60)) if part)
        read: tuple[str | tuple[str, str], ...]
        if self.instructions:
            read = ("reads ", (self.instructions, "$text"))
        else:
            read = ("no AGENTS.md (project notes for scout)",)
        return Content.assemble(
            ("✻ ", "$accent"), ("scout", "bold $text"), "  ", (self.folder, "bold $text"), "\n",
            *((model, "$text"), " · ") if model else (), *read, "\n",
            ("/help", "bold $text"), " commands · ", ("Ctrl+T", "bold $text"), " sessions and tools · ",
            ("@", "bold $text"), " attaches a file",
        )
