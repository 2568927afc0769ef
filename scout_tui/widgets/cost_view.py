"""What a session cost: its branch's spending by model (tokens, cache hits, dollars), and what
each branch of this directory's session tree spent, in a modal screen.

Figures come from the store (``Store.spending``, ``Store.tree``); nothing is computed here but sums
and shares. Tables are Rich ``Table``s in ``Static``s: one cheap widget each.
"""

from __future__ import annotations

from typing import ClassVar

from rich import box
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..store.event_log import SessionInfo
from ..core.text import one_line
from scout_tui.session.cost import branch_mark, branch_rows, headline, model_rows

TITLE_WIDTH = 40
"""Characters of a branch title shown at most."""

def model_table(by_model: dict[str, dict[str, float]]) -> Table:
    """One row per model (``Store.spending``'s shape), most expensive first, and a total row
    when there are several."""
    table = Table(box=box.SIMPLE_HEAD, expand=False, pad_edge=False, collapse_padding=True, title_justify="left",
                  title=Text("By model", style="bold"))
    # Only the name column gives way when the screen is narrow; numbers are never cut.
    table.add_column("model", min_width=8, overflow="ellipsis")
    for name in ("requests", "input", "cache\nread", "cache\nwrite", "output", "cache\nhit", "cost"):
        table.add_column(name, justify="right", no_wrap=True)
    rows = model_rows(by_model)  # the figures and their formats: session.cost's, as /cost in acp and -p
    for n, cells in enumerate(rows):
        total = len(by_model) > 1 and n == len(rows) - 1
        if total:
            table.add_section()
        table.add_row(*(Text(cell) for cell in cells), style="bold" if total else "")
    if not rows:
        table.add_row(Text("no requests yet", style="dim"))
    return table


def branch_table(branches: list[tuple[SessionInfo, int]], current_id: str | None) -> Table:
    """One row per session in tree order (``Store.tree``), indented by depth, ``●`` on the
    current one; each counts only its own requests (a branch's shared messages cost its parent)."""
    table = Table(box=box.SIMPLE_HEAD, expand=False, pad_edge=False, collapse_padding=True, title_justify="left",
                  title=Text("By branch", style="bold"))
    table.add_column("session", min_width=12, overflow="ellipsis")
    for name in ("messages", "tokens", "cost"):
        table.add_column(name, justify="right", no_wrap=True)
    rows = branch_rows(branches, current_id)  # the figures: session.cost's, as /cost in acp and -p
    for (info, depth), cells in zip(branches, rows):
        current = info.id == current_id
        label = Text("● " if current else "  ", style="bold" if current else "")
        label.append("  " * depth)
        label.append(branch_mark(info), style="dim")
        label.append(one_line(info.shown_title, TITLE_WIDTH), style="bold" if current else "")
        table.add_row(label, *(Text(cell) for cell in cells[1:]))
    if len(rows) > len(branches):
        table.add_section()
        table.add_row(Text("  all branches"), *(Text(cell) for cell in rows[-1][1:]), style="bold")
    return table


class CostView(ModalScreen[None]):
    """What this session's branch cost by model, and every branch's own spending.

    ``by_model`` is ``Store.spending(session_id)`` (``{model: {"requests", "input_tokens"
    (uncached), "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost"}}``, tokens
    as counts, cost in dollars, None when unknown), ``branches`` is ``Store.tree(cwd)``
    (``[(SessionInfo, depth)]``), ``current_id`` the open session, ``note`` one line shown at
    the bottom (where the prices come from), ``by_subagents`` the dollars the session's subagents
    spent (``Store.subagent_cost``: in the total). Esc or ``q`` closes it.
    """

    DEFAULT_CSS = """
    CostView {
        align: center middle;
        & > Vertical {
            width: 96%;
            height: 92%;
            padding: 0 1;
            border: round $primary;
            background: $surface;
        }
        & #cost-title {
            height: auto;
            text-style: bold;
        }
        & #cost-subtitle {
            height: auto;
            color: $text-muted;
        }
        & VerticalScroll {
            height: 1fr;
            border-top: solid $panel;
        }
        & #cost-by-model {
            margin: 0 0 1 0;
        }
        & #cost-note {
            height: auto;
            color: $text-muted;
            border-top: solid $panel;
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close", id="cost_view.close"),
    ]

    def __init__(self, by_model: dict[str, dict[str, float]], branches: list[tuple[SessionInfo, int]],
                 current_id: str | None, *, note: str = "", by_subagents: float = 0.0) -> None:
        super().__init__()
        self.by_model = by_model
        self.branches = branches
        self.current_id = current_id
        self.note = note
        self.by_subagents = by_subagents

    def compose(self) -> ComposeResult:
        title, subtitle = headline(self.by_model, self.by_subagents)
        with Vertical():
            yield Static(Text(title), id="cost-title")
            yield Static(Text(subtitle), id="cost-subtitle")
            with VerticalScroll():
                yield Static(model_table(self.by_model), id="cost-by-model")
                yield Static(branch_table(self.branches, self.current_id), id="cost-by-branch")
            if self.note:
                yield Static(Text(one_line(self.note, 400)), id="cost-note")
