"""``/diff``: every file the session's turns changed, by turn and in total, with the unified diff
of the highlighted one. Up/Down (or j/k) move along the files, Esc or ``q`` closes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from .approval import diff_content


@dataclass(frozen=True)
class FileDiff:
    """One row of the view: a turn's heading (``path`` None), or a file with its ``status``
    and unified ``diff`` (from the turn's checkpoint, or over the whole session)."""

    label: str
    path: str | None = None
    status: str = ""
    diff: str = ""


_MARKS = {"added": "A", "modified": "M", "deleted": "D", "renamed": "R"}


class DiffView(ModalScreen[None]):
    """The session's file changes: ``rows`` as ``FileDiff`` (headings and files), the diff of
    the first file at or after row ``start`` shown; ``title`` says how many files and turns."""

    DEFAULT_CSS = """
    DiffView {
        align: center middle;
        & > Vertical {
            width: 96%;
            height: 92%;
            border: round $primary;
            background: $surface;
        }
        & #diff-title { height: auto; text-style: bold; padding: 0 1; }
        & Horizontal { height: 1fr; }
        & #diff-files { width: 34%; min-width: 24; max-width: 40; height: 1fr; border-right: solid $panel;
                         text-wrap: nowrap; text-overflow: ellipsis; }
        & #diff-body-scroll { width: 1fr; height: 1fr; padding: 0 1; }
        & #diff-keys { height: auto; color: $text-muted; padding: 0 1; border-top: solid $panel; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close", id="diff_view.close"),
        Binding("j", "move(1)", "Next file", show=False, id="diff_view.next"),
        Binding("k", "move(-1)", "Previous file", show=False, id="diff_view.previous"),
    ]

    def __init__(self, rows: list[FileDiff], title: str, *, start: int = 0) -> None:
        super().__init__()
        self.rows = rows
        self.start = start
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Content(self.title_text), id="diff-title")
            with Horizontal():
                options = [Option(Content(r.label), disabled=r.path is None) if r.path is None
                           else Option(Content.assemble((f"{_MARKS.get(r.status, '?')} ", "bold"), r.label))
                           for r in self.rows]
                yield OptionList(*options, id="diff-files")
                with VerticalScroll(id="diff-body-scroll"):
                    yield Static(id="diff-body")
            yield Static(Content("↑/↓ or j/k a file · Esc close · /undo puts the last turn's files back"),
                         id="diff-keys")

    def on_mount(self) -> None:
        files = self.query_one("#diff-files", OptionList)
        first = next((n for n, r in enumerate(self.rows) if r.path is not None and n >= self.start), None)
        if first is not None:
            files.highlighted = first
            files.call_after_refresh(files.scroll_to_highlight, top=True)
            self._show(first)
        files.focus()

    def on_option_list_option_highlighted(self, message: OptionList.OptionHighlighted) -> None:
        self._show(message.option_index)

    def _show(self, index: int) -> None:
        row = self.rows[index]
        body = self.query_one("#diff-body", Static)
        body.update(diff_content(row.diff) if row.diff.strip() else Content(f"{row.label}: no text diff"))
        self.query_one("#diff-body-scroll").scroll_home(animate=False)

    def action_move(self, rows: int) -> None:
        files = self.query_one("#diff-files", OptionList)
        files.action_cursor_down() if rows > 0 else files.action_cursor_up()
