"""The ``/compare`` screen: two branches of one tree side by side, from where they diverge: each
side's messages after that point in its own scrolling column, the files it changed and what it
cost. Dismissed with the id of a branch to open (``o`` / Enter on its column) or None (Esc)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from scout_tui.core.text import sanitize
from scout_tui.session.compare import Comparison, Side, file_line, first_line, spend_line


class SideColumn(VerticalScroll, can_focus=True):
    """One side's messages after the divergence, one line each, numbered as the branch counts."""

    DEFAULT_CSS = """
    SideColumn { height: 1fr; border: round $panel; padding: 0 1; }
    SideColumn:focus { border: round $accent; }
    SideColumn > .-user { color: $text; text-style: bold; }
    SideColumn > .-assistant { color: $text-muted; }
    """

    def __init__(self, side: Side, shared: int, label: str) -> None:
        super().__init__(id=f"side-{label.lower()}")
        self.side = side
        self.shared = shared
        self.border_title = f"{label} · {len(side.messages)} message{'s' * (len(side.messages) != 1)} after"

    def compose(self) -> ComposeResult:
        if not self.side.messages:
            yield Static("(nothing after the divergence)", classes="-assistant")
        for n, message in enumerate(self.side.messages, self.shared + 1):
            role = str(message.get("role", "?"))
            mark = "›" if role == "user" else "‹"
            yield Static(f"#{n} {mark} {sanitize(first_line(message, 200))}", classes=f"-{role}", markup=False)


class BranchCompare(ModalScreen[str | None]):
    """Branches ``comparison.a`` and ``comparison.b`` side by side; Tab moves between them."""

    DEFAULT_CSS = """
    BranchCompare { align: center middle; }
    BranchCompare > Vertical { width: 96%; height: 92%; border: round $accent; background: $surface; padding: 0 1; }
    BranchCompare #where { color: $text-muted; height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    BranchCompare Horizontal { height: 1fr; }
    BranchCompare .side { width: 1fr; height: 1fr; margin: 0 1 0 0; }
    BranchCompare .head { text-style: bold; height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    BranchCompare .files, BranchCompare .spend { height: auto; color: $text-muted; }
    BranchCompare #keys { color: $text-muted; height: 1; }
    """

    BINDINGS = [
        Binding("escape", "dismiss_screen", "Close", id="compare.close"),
        Binding("o,enter", "open_side", "Open this branch", id="compare.open"),
    ]

    def __init__(self, comparison: Comparison) -> None:
        super().__init__()
        self.comparison = comparison

    def compose(self) -> ComposeResult:
        c = self.comparison
        with Vertical() as box:
            box.border_title = "Compare branches"
            where = f"Both share {c.shared} message{'s' * (c.shared != 1)}"
            if c.last_shared is not None:
                where += f" · last shared #{c.shared}: {sanitize(first_line(c.last_shared, 160))}"
            yield Static(where, id="where", markup=False)
            with Horizontal():
                for label, side in (("A", c.a), ("B", c.b)):
                    with Vertical(classes="side"):
                        yield Static(self._head(label, side), classes="head", markup=False)
                        yield SideColumn(side, c.shared, label)
                        files = [file_line(f) for f in side.files] or ["no file changed"]
                        yield Static("\n".join(sanitize(line) for line in files), classes="files", markup=False)
                        yield Static(spend_line(side.usage), classes="spend", markup=False)
            yield Static("Tab: other side · o/Enter: open that branch · Esc: close", id="keys")

    @staticmethod
    def _head(label: str, side: Side) -> str:
        info = side.session
        fork = f" · fork of {info.parent[:8]} at {info.fork_at}" if info.parent and info.kind is None else ""
        return f"{label}  {info.id[:8]}  {sanitize(info.shown_title)}{fork}"

    def on_mount(self) -> None:
        self.query_one("#side-a", SideColumn).focus()

    def action_open_side(self) -> None:
        focused = self.focused
        column = focused if isinstance(focused, SideColumn) else self.query_one("#side-a", SideColumn)
        self.dismiss(column.side.session.id)

    def action_dismiss_screen(self) -> None:
        self.dismiss(None)
