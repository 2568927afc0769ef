"""Ctrl+R in the composer: search the prompts sent before, in every session (bash's and Claude
Code's reverse history search). ``HistorySearch`` is a modal screen: a search field over the
prompts, newest first; typing filters them, Up/Down (or Ctrl+R again, older) move, Enter
dismisses with the highlighted prompt, Esc with None.

Matching is bash's, not fuzzy: a prompt matches when it holds every word typed, in any case
(``matching``, as the sessions pane's filter reads titles), and the list keeps the newest-first
order, so the prompt you last sent about something is the first hit. (A fuzzy matcher, as the
command palette's, orders by score: an old prompt would come before yesterday's.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

SHOWN = 200
"""The most matches listed at once (newest first): the rest by typing more."""


def matching(prompts: Iterable[str], query: str) -> list[str]:
    """The prompts holding every blank-separated word of ``query``, compared casefolded, in
    their order; all of them for a blank query."""
    words = query.casefold().split()
    return [p for p in prompts if all(w in p.casefold() for w in words)]


def one_line(prompt: str, query: str) -> Content:
    """``prompt`` as one line of the list (each line break shown as ``⏎``), the words of
    ``query`` found in it underlined and bold. Plain text, never read as markup."""
    text = " ⏎ ".join(line.strip() for line in prompt.strip().splitlines())
    content = Content(text)
    folded = text.casefold()
    for word in query.casefold().split():
        start = folded.find(word)
        while start != -1:
            content = content.stylize("bold underline", start, start + len(word))
            start = folded.find(word, start + len(word))
    return content


class HistorySearch(ModalScreen[str | None]):
    """The prompt history search, dismissed with the chosen prompt, or None (Esc).

    Args:
        prompts: the prompts known at once (this run's, the open session's), newest first.
        load: the stored prompts of every session, newest first (this directory's first),
            called once in a thread; they join after ``prompts``, each prompt once.
        below: rows left free under the box (the composer's and what is under it: the draft
            stays in sight).
    """

    DEFAULT_CSS = """
    HistorySearch {
        align: center bottom;
        & > #history-search {
            width: 100%;
            max-width: 120;
            height: auto;
            max-height: 70%;
            background: $surface;
            border: round $primary;
            border-title-color: $text;
            padding: 0 1;
        }
        & #history-query { border: none; height: 1; padding: 0; background: $surface; }
        & #history-matches {
            height: auto;
            max-height: 20;
            border: none;
            padding: 0;
            background: $surface;
            text-wrap: nowrap;
            text-overflow: ellipsis;
            & > .option-list--option-highlighted { background: $block-cursor-background; color: $block-cursor-foreground; }
        }
        & #history-hint { color: $text-muted; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="history_search.cancel"),
        Binding("up", "move(-1)", "Newer", show=False, id="history_search.newer"),
        Binding("down,ctrl+r", "move(1)", "Older", show=False, id="history_search.older"),
    ]

    def __init__(self, prompts: list[str], load: Callable[[], list[str]] | None = None, below: int = 0) -> None:
        super().__init__()
        self._below = below
        self.prompts = list(dict.fromkeys(prompts))
        """Every prompt to search, newest first, each once."""
        self._load = load
        self.reading = load is not None
        """The stored prompts are being read (said in the hint line until they join)."""
        self._shown: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="history-search") as box:
            box.border_title = "Search earlier prompts"
            yield Input(placeholder="type words of the prompt", id="history-query")
            yield OptionList(id="history-matches")
            yield Static(id="history-hint")

    def on_mount(self) -> None:
        self.query_one("#history-search").styles.margin = (0, 0, self._below, 0)
        self._show()
        if self._load is not None:
            self.run_worker(self._read, thread=True, group="history-read", exit_on_error=False)

    def _read(self) -> None:
        """The stored prompts, in this worker's thread; shown from the event loop."""
        assert self._load is not None
        try:
            found = self._load()
        except Exception as e:  # the store unreadable: this run's prompts are searched still
            self.app.call_from_thread(self._loaded, [], f"stored prompts unreadable: {e}")
            return
        self.app.call_from_thread(self._loaded, found, "")

    def _loaded(self, found: list[str], problem: str) -> None:
        self.prompts = list(dict.fromkeys([*self.prompts, *found]))
        self.reading = False
        self._problem = problem
        self._show()

    _problem = ""

    @property
    def query_text(self) -> str:
        """What is typed in the search field."""
        return self.query_one("#history-query", Input).value

    @on(Input.Changed, "#history-query")
    def _typed(self) -> None:
        self._show()

    def _show(self) -> None:
        """List the prompts matching the field, newest first, the newest highlighted."""
        query = self.query_text
        found = matching(self.prompts, query)
        self._shown = found[:SHOWN]
        matches = self.query_one("#history-matches", OptionList)
        matches.set_options(Option(one_line(p, query)) for p in self._shown)
        matches.highlighted = 0 if self._shown else None
        count = f"{len(found)} of {len(self.prompts)} prompts" + (f", the newest {SHOWN} listed" if len(found) > SHOWN else "")
        state = " · reading older sessions…" if self.reading else f" · {self._problem}" if self._problem else ""
        hint = f"{count}{state} · Enter: into the composer · ↑↓: move · Esc: cancel"
        self.query_one("#history-hint", Static).update(Content(hint))

    def action_move(self, step: int) -> None:
        """Highlight the next older (``step`` 1) or newer (-1) match."""
        matches = self.query_one("#history-matches", OptionList)
        if matches.highlighted is not None:
            matches.highlighted = max(0, min(len(self._shown) - 1, matches.highlighted + step))

    @on(Input.Submitted, "#history-query")
    def _choose(self) -> None:
        highlighted = self.query_one("#history-matches", OptionList).highlighted
        if highlighted is not None and highlighted < len(self._shown):
            self.dismiss(self._shown[highlighted])

    @on(OptionList.OptionSelected, "#history-matches")
    def _clicked(self, message: OptionList.OptionSelected) -> None:
        self.dismiss(self._shown[message.option_index])

    def action_cancel(self) -> None:
        self.dismiss(None)
