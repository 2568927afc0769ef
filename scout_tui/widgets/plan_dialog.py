"""The plan dialog: a modal screen showing the plan the model proposed in plan mode (its
``exit_plan`` call) and asking what to do with it.

It shows the request the plan answers and the plan rendered as markdown (scrollable). Keys:
``h`` run it here (the permission mode goes back to what it was), ``f`` run it in a fresh
context (a new branch of the session whose first message is the plan), ``k`` keep planning
(type a note for the model, Enter sends it; Esc none), ``e`` edit the plan first (a text area holding the
markdown; Esc leaves it, then ``h`` or ``f`` runs the edited plan), Esc keep planning with no
note. Keys pressed in the first ``approval.ARM_SECONDS`` are ignored, as at the approval
prompt. Dismisses with a ``approvals.PlanDecision``.
"""

from __future__ import annotations

import time
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Markdown, Static, TextArea

from ..core.text import one_line
from ..tools.approvals import PlanDecision, PlanReview
from .approval import ARM_SECONDS

REQUEST_CHARS = 300
"""Characters of the request the dialog quotes (on one line; the rest is cut with "…")."""


class PlanScreen(ModalScreen[PlanDecision]):
    """Ask what to do with a proposed plan (see the module docstring for the keys)."""

    DEFAULT_CSS = """
    PlanScreen {
        align: center middle;
        & > #dialog {
            width: 110;
            max-width: 96%;
            height: auto;
            max-height: 94%;
            padding: 0 1;
            background: $surface;
            border: round $accent;
            border-title-color: $accent;
            border-title-style: bold;
        }
        & #request { color: $text-muted; height: auto; max-height: 3; }
        & #body {
            height: auto;
            max-height: 50vh;  /* with the note and its keys, on a 24-row screen too */
            margin-top: 1;
            background: $panel;
        }
        & #plan { margin: 0; padding: 0 1; background: $panel; }
        & #plan > *:first-child { margin-top: 0; }
        & #editor { display: none; height: 60vh; margin-top: 1; }
        & .-editing #editor { display: block; }
        & .-editing #body { display: none; }
        & #note { display: none; margin-top: 1; }
        & .-noting #note { display: block; }
        & #keys { margin-top: 1; color: $text-muted; height: auto; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("h", "here", "Run it here", id="plan.here"),
        Binding("f", "fresh", "Run it in a fresh context", id="plan.fresh"),
        Binding("k", "keep", "Keep planning", id="plan.keep"),
        Binding("e", "edit", "Edit the plan", id="plan.edit"),
        Binding("escape", "escape", "Keep planning", id="plan.escape"),
    ]

    def __init__(self, review: PlanReview) -> None:
        super().__init__()
        self.review = review
        self.edited: str | None = None
        """The plan as the person edited it (None: not edited)."""
        self._shown_at = time.monotonic()
        self._state = ""  # "", "editing" or "noting"

    @property
    def armed(self) -> bool:
        """Whether the dialog takes its choice keys yet (``ARM_SECONDS`` after it appeared)."""
        return time.monotonic() - self._shown_at >= ARM_SECONDS

    @property
    def plan(self) -> str:
        """The plan as it would run now: the edited text, else the proposed one."""
        return self.review.plan if self.edited is None else self.edited

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = "Plan: ready to start?"
            request = one_line(" ".join(self.review.request.split()), REQUEST_CHARS) or "(no request)"
            yield Static(Content.assemble(("You asked: ", "bold"), request), id="request")
            with VerticalScroll(id="body"):
                yield Markdown(self.review.plan, id="plan")
            yield TextArea(self.review.plan, id="editor", soft_wrap=True, show_line_numbers=False)
            yield Input(placeholder="What should the plan change? (optional, goes to the model; Enter sends)",
                        id="note")
            yield Static(self._keys(), id="keys")

    def on_mount(self) -> None:
        self._shown_at = time.monotonic()
        self.query_one("#body").focus()  # ↑/↓ and PgUp/PgDn scroll a long plan

    def _keys(self) -> Content:
        key = "bold $text"
        if self._state == "editing":
            return Content.assemble(("Esc", key), " done editing (then h or f runs the edited plan)")
        if self._state == "noting":
            return Content.assemble(("Enter", key), " keep planning with this note · ", ("Esc", key),
                                    " keep planning without one")
        edited = " the edited plan" if self.edited is not None else ""
        return Content.assemble(
            ("h", key), f" run{edited} here (back to {self.review.mode} mode) · ", ("f", key),
            f" run{edited} in a fresh context · ", ("e", key), " edit the plan · ", ("k", key), "/",
            ("Esc", key), " keep planning")

    def _enter(self, state: str) -> None:
        dialog = self.query_one("#dialog")
        dialog.set_class(state == "editing", "-editing")
        dialog.set_class(state == "noting", "-noting")
        self._state = state
        self.query_one("#keys", Static).update(self._keys())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("here", "fresh", "keep", "edit"):
            # While editing or typing a note, letters belong to the text.
            return not self._state and self.armed
        return True

    def action_here(self) -> None:
        self.dismiss(PlanDecision("here", self.plan))

    def action_fresh(self) -> None:
        self.dismiss(PlanDecision("fresh", self.plan))

    def action_keep(self) -> None:
        """Ask for an optional note for the model; Enter sends it."""
        self._enter("noting")
        self.query_one("#note", Input).focus()

    def action_edit(self) -> None:
        """Edit the plan's markdown in a text area; Esc leaves it with the text kept."""
        self._enter("editing")
        editor = self.query_one("#editor", TextArea)
        editor.move_cursor(editor.document.end)  # most edits add a step or a note at the end
        editor.focus()

    async def action_escape(self) -> None:
        if self._state == "editing":
            text = self.query_one("#editor", TextArea).text
            if text != self.plan:
                self.edited = text
                await self.query_one("#plan", Markdown).update(text)
            self._enter("")
            self.query_one("#body").focus()
            return
        self.dismiss(PlanDecision("keep", self.plan))

    @on(Input.Submitted, "#note")
    def _note_given(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(PlanDecision("keep", self.plan, event.value.strip()))
