"""The composer's completion list: the commands matching a typed ``/name``, or the workspace
paths matching a typed ``@path``, shown above the composer while it keeps the focus.

The list never takes the focus: the composer sends it Up, Down, Tab, Enter and Esc while it is
shown (``Composer.key_first``). Matched characters are highlighted with Textual's fuzzy
``Matcher``, the one the command palette uses.
"""

from __future__ import annotations

from textual.content import Content
from textual.fuzzy import Matcher
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from ..session.completion import Choice, Token

LABEL_COLUMNS = 24
"""The help of each choice starts after this many columns (or after a longer label)."""


class CompletionList(OptionList, can_focus=False):
    """Choices for the token at the composer's cursor (``show``), or hidden (``hide``)."""

    DEFAULT_CSS = """
    CompletionList {
        display: none;
        height: auto;
        max-height: 10;
        border: round $border-blurred;
        background: $surface;
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        &.-shown { display: block; }
        & > .option-list--option-highlighted { background: $block-cursor-blurred-background; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.choices: list[Choice] = []
        self.token: Token | None = None

    @property
    def shown(self) -> bool:
        """Whether the list is on screen with at least one choice."""
        return self.has_class("-shown")

    def show(self, token: Token, choices: list[Choice]) -> None:
        """Show ``choices`` for ``token`` (hidden when there are none), the first highlighted."""
        self.token, self.choices = token, choices
        if not choices:
            self.hide()
            return
        matcher = Matcher(token.query) if token.query else None
        width = min(LABEL_COLUMNS, max(len(choice.label) for choice in choices))
        self.set_options(_option(choice, matcher, width) for choice in choices)
        self.highlighted = 0
        self.border_title = "commands" if token.kind == "command" else "files"
        self.border_subtitle = "Tab/Enter complete · Esc close"
        self.add_class("-shown")

    def hide(self) -> None:
        """Hide the list (its choices are dropped)."""
        self.remove_class("-shown")
        self.choices = []

    def move(self, rows: int) -> None:
        """Highlight the choice ``rows`` below (negative: above), wrapping around."""
        if self.choices:
            self.highlighted = ((self.highlighted or 0) + rows) % len(self.choices)

    @property
    def chosen(self) -> Choice | None:
        """The highlighted choice, if any."""
        index = self.highlighted
        return self.choices[index] if self.shown and index is not None and index < len(self.choices) else None


def highlighted(matcher: Matcher, text: str) -> Content:
    """``text`` as written, its characters matching ``matcher``'s query styled as the command
    palette styles them. (``Matcher.highlight`` reads ``text`` as markup: ``[N]`` or a path
    like ``app/[id]/page.tsx`` would lose its brackets.)"""
    content = Content(text)
    score, offsets = matcher.fuzzy_search.match(matcher.query, text)
    for offset in offsets if score else ():
        if not text[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content


def _option(choice: Choice, matcher: Matcher | None, width: int) -> Option:
    label = highlighted(matcher, choice.label) if matcher is not None else Content(choice.label)
    if choice.help:
        label = Content.assemble(label, " " * max(2, width + 2 - len(choice.label)), (choice.help, "dim"))
    return Option(label)
