"""The ``/compare`` screen: two branches of one tree side by side, from where they diverge: each
side's messages after that point in its own scrolling column, the files it changed and what it
cost. Dismissed with the id of a branch to open (``o`` / Enter on its column) or None (Esc)."""

from __future__ import annotations

from textual.app import ComposeResult
from rich.cells import cell_len
from rich.segment import Segment
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.geometry import Size
from textual.screen import ModalScreen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from scout_tui.core.text import sanitize
from scout_tui.session.compare import Comparison, Side, file_line, first_line, spend_line


FILES_SHOWN = 5
"""Files listed under a column; more are counted, so the messages keep their room."""


class SideColumn(ScrollView, can_focus=True):
    """One side's messages after the divergence, one line each, numbered as the branch counts.
    Only the lines in view are drawn (a line API ``ScrollView``), so a branch of thousands of
    messages opens at once (a widget per message took seconds of the UI loop); lines are
    wrapped to the column's width."""

    COMPONENT_CLASSES = {"side-column--user", "side-column--other"}
    DEFAULT_CSS = """
    SideColumn { height: 1fr; }
    SideColumn > .side-column--user { color: $text; text-style: bold; }
    SideColumn > .side-column--other { color: $text-muted; }
    """

    def __init__(self, side: Side, shared: int, label: str) -> None:
        super().__init__(id=f"side-{label.lower()}")
        self.side = side
        self.shared = shared
        entries = [(message.get("role") == "user",
                    f"#{n} {'›' if message.get('role') == 'user' else '‹'} {sanitize(first_line(message, 200))}")
                   for n, message in enumerate(side.messages, shared + 1)]
        self.entries = entries or [(False, "(nothing after the divergence)")]
        self.lines = self.entries
        self.virtual_size = Size(max(cell_len(text) for _, text in self.lines), len(self.lines))

    def on_resize(self) -> None:
        """Wrap the lines to the column's width (a few ms for thousands of them)."""
        width = max(self.scrollable_content_region.width, 10)
        self.lines = [(user, piece.plain) for user, text in self.entries for piece in Content(text).wrap(width)]
        self.virtual_size = Size(width, len(self.lines))
        self.refresh()

    def render_line(self, y: int) -> Strip:
        """Line ``y`` of the view: the message at that row once scrolled, cropped to the width."""
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        if not 0 <= y + scroll_y < len(self.lines):
            return Strip.blank(width, self.rich_style)
        user, text = self.lines[y + scroll_y]
        style = self.get_component_rich_style("side-column--user" if user else "side-column--other")
        strip = Strip([Segment(text, style)]).crop(scroll_x, scroll_x + width)
        return strip.extend_cell_length(width, self.rich_style)


class BranchCompare(ModalScreen[str | None]):
    """Branches ``comparison.a`` and ``comparison.b`` side by side; Tab moves between them."""

    DEFAULT_CSS = """
    BranchCompare { align: center middle; }
    BranchCompare > Vertical { width: 96%; height: 92%; border: round $accent; background: $surface; padding: 0 1; }
    BranchCompare #where { color: $text-muted; height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    BranchCompare Horizontal { height: 1fr; }
    BranchCompare .side { width: 1fr; height: 1fr; margin: 0 1 0 0; }
    BranchCompare .column { height: 1fr; border: round $panel; padding: 0 1; }
    BranchCompare .column:focus-within { border: round $accent; }
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
                        with Vertical(classes="column") as column:  # the border: a line-API view scrolls within it
                            count = len(side.messages)
                            column.border_title = f"{label} · {count} message{'s' * (count != 1)} after"
                            yield SideColumn(side, c.shared, label)
                        files = [file_line(f) for f in side.files[:FILES_SHOWN]] or ["no file changed"]
                        if len(side.files) > FILES_SHOWN:
                            files.append(f"… and {len(side.files) - FILES_SHOWN} more files "
                                         "(scout-tui compare lists them all)")
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
