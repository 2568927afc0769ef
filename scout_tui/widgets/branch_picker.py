"""A list of the branches of the session tree to pick one from (``/compare`` with no argument):
dismissed with the chosen session's id, or None (Esc)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from scout_tui.core.text import sanitize
from scout_tui.store.queries import SessionInfo


class BranchPicker(ModalScreen[str | None]):
    """``branches`` (``(info, depth)`` in tree order) as an OptionList under ``prompt``."""

    DEFAULT_CSS = """
    BranchPicker { align: center middle; }
    BranchPicker > Vertical { width: 80%; max-width: 100; height: auto; max-height: 80%; border: round $accent;
                              background: $surface; padding: 0 1; }
    BranchPicker OptionList, BranchPicker OptionList:focus { height: auto; max-height: 20; border: none; padding: 0; }
    """

    BINDINGS = [Binding("escape", "dismiss_screen", "Close", id="branch_picker.close")]

    def __init__(self, branches: list[tuple[SessionInfo, int]], prompt: str) -> None:
        super().__init__()
        self.branches = branches
        self.prompt = prompt

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Pick a branch"
            yield Static(self.prompt, markup=False)
            yield OptionList(*[Option(self._row(info, depth), id=info.id) for info, depth in self.branches])

    @staticmethod
    def _row(info: SessionInfo, depth: int) -> str:
        at = f" · at {info.fork_at}" if info.parent and info.kind is None else ""
        return f"{'  ' * depth}{'⑂ ' if depth else ''}{info.id[:8]}  {sanitize(info.shown_title)}{at}"

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_dismiss_screen(self) -> None:
        self.dismiss(None)
