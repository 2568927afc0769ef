"""Small modal dialogs: a yes/no question, a one-line text prompt and a choice of a few.

Push one with ``app.push_screen(screen, callback)``; the callback gets the answer (``bool``, or
the entered text / None, the chosen key / None). Their text is shown as given, never parsed as markup.
"""

from __future__ import annotations

from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

_DIALOG_CSS = """
{name} {{
    align: center middle;
    & > #dialog {{
        width: 64;
        max-width: 90%;
        height: auto;
        padding: 1 2;
        background: $surface;
        border: round $primary;
    }}
    & #question {{ text-style: bold; }}
    & #hint {{ color: $text-muted; margin-top: 1; }}
}}
"""


class ConfirmScreen(ModalScreen[bool]):
    """Ask ``question``; dismiss with True on ``y`` or Enter, False on ``n`` or Esc.

    With ``enter`` False only ``y`` answers yes (Enter does nothing): for a question whose yes
    overwrites someone's work. ``yes`` and ``no`` name the two outcomes in the hint line
    ("y / Enter: delete · n / Esc: cancel").
    """

    DEFAULT_CSS = _DIALOG_CSS.format(name="ConfirmScreen")

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("enter", "enter_answer", "Yes", show=False, id="confirm.enter"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, question: str, *, yes: str = "yes", no: str = "cancel", enter: bool = True) -> None:
        super().__init__()
        self.question = question
        self.yes = yes
        self.no = no
        self.enter = enter  # False: only y answers yes (a question where yes loses someone's work)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Content(self.question), id="question")
            yield Static(Content(f"{'y / Enter' if self.enter else 'y'}: {self.yes} · n / Esc: {self.no}"), id="hint")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "enter_answer" and not self.enter:
            return None  # shown, not run
        return True

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

    def action_enter_answer(self) -> None:
        self.dismiss(True)


class PromptScreen(ModalScreen[str | None]):
    """Ask for one line of text, prefilled with ``value`` (selected, so typing replaces it).

    Dismisses with the entered text stripped of surrounding blanks on Enter (None when that
    leaves nothing), or None on Esc.
    """

    DEFAULT_CSS = _DIALOG_CSS.format(name="PromptScreen") + """
    PromptScreen #answer { margin-top: 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="prompt.cancel"),
    ]

    def __init__(self, question: str, value: str = "", *, placeholder: str = "") -> None:
        super().__init__()
        self.question = question
        self.value = value
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Content(self.question), id="question")
            yield Input(self.value, placeholder=self.placeholder, id="answer")
            yield Static(Content("Enter: save · Esc: cancel"), id="hint")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ChoiceScreen(ModalScreen[str | None]):
    """Ask ``question`` with ``choices`` (``(key, label)`` pairs) in a list, ``initial`` (an
    index) highlighted: Enter on one, or its number key, dismisses with its key; Esc dismisses
    with None."""

    DEFAULT_CSS = _DIALOG_CSS.format(name="ChoiceScreen") + """
    ChoiceScreen #choices { margin-top: 1; height: auto; max-height: 12; }
    ChoiceScreen #dialog { width: 76; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "choose(None)", "Cancel", id="choice.cancel"),
    ]

    def __init__(self, question: str, choices: list[tuple[str, str]], *, initial: int = 0) -> None:
        super().__init__()
        self.question = question
        self.choices = choices
        self.initial = initial

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Content(self.question), id="question")
            yield OptionList(*(Option(Content(f"{n}  {label}"), id=key)
                               for n, (key, label) in enumerate(self.choices, 1)), id="choices")
            yield Static(Content("Enter or 1-9: choose · Esc: cancel"), id="hint")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = self.initial
        options.focus()

    def on_key(self, event: events.Key) -> None:
        if event.character and event.character.isdigit() and 1 <= int(event.character) <= len(self.choices):
            event.stop()
            self.dismiss(self.choices[int(event.character) - 1][0])

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_choose(self, key: str | None) -> None:
        self.dismiss(key)
