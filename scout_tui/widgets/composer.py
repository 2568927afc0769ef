"""The prompt box: multi-line input that sends on Enter and remembers earlier prompts; and
``MultilineInput``, the Enter-sends text area it shares with the summary preview.

Terminals disagree on Shift+Enter: some send it as its own key, many as plain Enter, some
as Ctrl+J (a bare line feed). Both ``shift+enter`` and ``ctrl+j`` insert a newline here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea

from .. import compat
from ..session.completion import Choice, Token, complete, token_at

if TYPE_CHECKING:
    from .completion_list import CompletionList

PLACEHOLDER = "Ask scout… (Enter to send, Shift+Enter for newline)"


class MultilineInput(compat.KeysBeforeTextArea, TextArea):
    """A text area that sends on Enter, like an ``Input``: Enter runs ``action_submit`` (each
    subclass says what sending means), Shift+Enter and Ctrl+J insert a newline.

    The keys are handled in ``key_first``, before the text area's key handler, not by priority
    bindings; subclasses still list them in ``BINDINGS``, for the Footer and keymaps.
    """

    async def key_first(self, event: events.Key) -> bool:
        # Enter is handled here, in the widget's own queue after the keys typed before it.
        # A priority binding would run as soon as the key arrives, ahead of characters still
        # queued, and send half a prompt when text arrives fast (a paste, tmux send-keys).
        # Ctrl+J / Shift+Enter likewise, or the newline lands after text typed later.
        if event.key in ("enter", "alt+enter", "ctrl+j", "shift+enter"):
            event.stop()
            event.prevent_default()
            if event.key in ("enter", "alt+enter"):
                self.action_submit(later=event.key == "alt+enter")
            else:
                self.action_newline()
            return True
        # This box's own bindings (Backspace, Delete, arrows, Ctrl+W…) run here too, in turn: as
        # bindings they would run once the key had bubbled up, after keys that arrived with it
        # were typed ("x", Backspace, "y" in one read of the terminal left "x" and deleted "y").
        # Textual issue #6605; its open pull request #6631 does the same in TextArea itself.
        binding = next(iter(compat.bindings_for_key(self, event.key)), None)
        if binding is not None and not event.is_printable and self.check_action(binding.action, ()):
            event.stop()
            event.prevent_default()
            await self.run_action(binding.action)
            return True
        if event.key.startswith("alt+") and event.is_printable:
            # Alt+letter reaches a terminal app as ESC and the letter: Textual's key ``alt+r``
            # with the character "r", which the text area would type. A chord is never text:
            # the screen's or the app's binding for it runs (Alt+R retries), else nothing.
            event.stop()
            event.prevent_default()
            active = self.screen.active_bindings.get(event.key)
            if active is not None and active.enabled:
                await self.app.run_action(active.binding.action, active.node)
            return True
        return await super().key_first(event)

    def action_submit(self, later: bool = False) -> None:
        """Send the text: what Enter does (each subclass posts its own message); ``later``:
        Alt+Enter, for after what is running."""
        raise NotImplementedError

    def action_newline(self) -> None:
        """Insert a line break at the cursor (replacing any selection)."""
        start, end = self.selection
        self.replace("\n", start, end, maintain_selection_offset=False)


class Composer(MultilineInput):
    """Multi-line prompt input. Posts ``Submitted(text)`` on Enter, then clears itself.

    ``prompt_history`` holds earlier prompts, newest first (the app may fill it); Up on the
    first visual line recalls older ones, Down on the last line comes back, to the unsent
    draft. (Not ``history``: ``TextArea.history`` is the undo/redo ``EditHistory``.)
    It stays editable while a turn runs: ``disabled`` is never used.
    """

    DEFAULT_CSS = """
    Composer {
        height: auto;
        min-height: 3;
        max-height: 12;
        border: tall $border-blurred;
        background: $surface;
        &:focus {
            border: tall $primary;
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        # Shown in the Footer; Enter and the newline keys are handled in ``MultilineInput.key_first``.
        Binding("enter", "submit", "Send", id="composer.submit"),
        Binding("alt+enter", "submit(True)", "Send after the turn", show=False, id="composer.queue"),
        Binding("shift+enter,ctrl+j", "newline", "Newline", show=False, id="composer.newline"),
        Binding("up", "history_previous", "Earlier prompt", show=False, id="composer.history_previous"),
        Binding("down", "history_next", "Later prompt", show=False, id="composer.history_next"),
        Binding("ctrl+g", "edit_in_editor", "Edit in $EDITOR", show=False, id="composer.editor"),
        Binding("ctrl+r", "search_history", "Search prompts", show=False, id="composer.history_search"),
        # The box is a few lines tall: paging scrolls the conversation above it instead.
        Binding("pageup", "app.scroll_chat('page_up')", "Scroll chat up", show=False, id="composer.chat_page_up"),
        Binding("pagedown", "app.scroll_chat('page_down')", "Scroll chat down", show=False,
                id="composer.chat_page_down"),
        Binding("ctrl+home", "app.scroll_chat('home')", "Chat top", show=False, id="composer.chat_home"),
        Binding("ctrl+end", "app.scroll_chat('end')", "Chat bottom", show=False, id="composer.chat_end"),
    ]

    completion: CompletionList | None = None
    """The completion list this box drives (set by the app once mounted)."""
    command_choices: Callable[[str], list[Choice]] | None = None
    """The commands matching a typed name, best first, as the list shows them (set by the app):
    for Enter typed before the list caught up with the word (``_burst_choice``)."""
    prompt_source: Callable[[], list[str]] | None = None
    """The prompts of every stored session, newest first (set by the app): for Ctrl+R's search,
    which calls it in a thread (it reads the store)."""
    _token: Token | None = None

    @dataclass
    class Completing(Message):
        """The word at the cursor can be completed (``token``), or no longer (None): the app
        finds the choices and shows them in ``completion``."""

        token: Token | None

    @dataclass
    class Submitted(Message):
        """The person sent a prompt: ``text`` (never blank; trailing whitespace removed)."""

        text: str
        composer: Composer | None = None
        later: bool = False
        """Alt+Enter: while a turn runs, queue it for after the turn (Enter steers it)."""

        @property
        def control(self) -> Composer | None:
            return self.composer

    class TakeBackRequested(Message):
        """Up in the empty box while prompts are pending: the newest should come back here."""

    pending = 0
    """How many prompts sent during the turn are pending (set by the app): Up takes one back."""
    busy = False
    """A turn is running (set by the app): Tab queues the text for after it, as in Codex."""

    def __init__(self, *, id: str | None = None, classes: str | None = None, prompt_history: list[str] | None = None) -> None:
        super().__init__(
            id=id,
            classes=classes,
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            placeholder=PLACEHOLDER,
        )
        self.prompt_history: list[str] = list(prompt_history or [])
        """Earlier prompts, newest first."""
        self._history_index = -1  # -1: editing the draft, not a recalled prompt
        self._draft = ""

    # -- completion: the list is driven from here, as the focus stays in the box -----------------

    @property
    def token(self) -> Token | None:
        """The word at the cursor that can be completed, if any."""
        return self._token

    _LIST_KEYS = {"up": -1, "down": 1}

    async def key_first(self, event: events.Key) -> bool:
        completion = self.completion
        if event.key == "enter" and (choice := self._burst_choice()) is not None:
            event.stop()
            event.prevent_default()
            if completion is not None:
                completion.hide()
            self.accept(choice, send=True)
            return True
        if event.key == "enter" and completion is not None and completion.shown and self._typed_whole(completion):
            completion.hide()  # the word is typed out already: Enter sends, as it would with no list
        if event.key == "enter" and completion is not None and completion.shown and completion.token != self._token:
            completion.hide()  # the list is for an earlier word ("/re" of "/redo" typed with Enter): send what is typed
        if completion is not None and completion.shown and self._token is not None and \
                event.key in ("up", "down", "tab", "enter", "escape"):
            event.stop()
            event.prevent_default()
            if event.key in self._LIST_KEYS:
                completion.move(self._LIST_KEYS[event.key])
            elif event.key == "escape":
                completion.hide()
            elif (choice := completion.chosen) is not None:
                self.accept(choice, send=event.key == "enter")
            return True
        if event.key == "tab" and self.busy and self.text.strip():
            event.stop()
            event.prevent_default()
            self.action_submit(later=True)
            return True
        return await super().key_first(event)

    def _burst_choice(self) -> Choice | None:
        """For Enter typed with the command word before it, before the list caught up (keys sent
        at once: "/cos" and Enter, by a fast typist or a paste), the choice the list would
        highlight for that word (``command_choices``' best). None when the list is there for
        this word (it decides, or it was closed with Esc), the word is typed out whole, or no
        command matches: Enter then sends what is typed."""
        token, completion = self._token, self.completion
        if token is None or token.kind != "command" or self.command_choices is None:
            return None
        if completion is not None and completion.token == token:
            return None
        choices = self.command_choices(token.query)
        if not choices or self.document.get_line(token.row)[token.start:token.end] == choices[0].value:
            return None
        return choices[0]

    def _typed_whole(self, completion: CompletionList) -> bool:
        """Whether the word being completed already reads as the highlighted choice."""
        token, choice = self._token, completion.chosen
        if token is None or choice is None:
            return False
        return self.document.get_line(token.row)[token.start:token.end] == choice.value

    def accept(self, choice: Choice, *, send: bool = False) -> None:
        """Put ``choice`` in place of the word being completed; with ``send`` (Enter), a command
        that takes no arguments is sent at once."""
        token = self._token
        if token is None:
            return
        line = self.document.get_line(token.row)
        text, column = complete(line, token, choice)
        self.replace(text, (token.row, 0), (token.row, len(line)), maintain_selection_offset=False)
        self.move_cursor((token.row, column))
        if send and choice.runs:
            self.action_submit()

    def watch_selection(self) -> None:
        # Called as the cursor moves, right after TextArea's own watcher: the word is checked
        # before the next queued key is handled. Its ``SelectionChanged`` message comes after
        # those keys ("/cos" and Enter at once then sent the list's older choice).
        self._check_token()

    def on_text_area_changed(self, _: TextArea.Changed) -> None:
        self._check_token()  # the text can change under a cursor that stays (Delete, a recalled prompt)

    def _check_token(self) -> None:
        """Tell the app when the word at the cursor starts, changes or stops being completable."""
        row, column = self.cursor_location
        token = token_at(self.document.get_line(row), row, column) if self.selection.is_empty else None
        if token != self._token:
            self._token = token
            if token is None and self.completion is not None:
                self.completion.hide()  # at once: keys already queued behind this one must not reach it
            self.post_message(self.Completing(token))

    def action_submit(self, later: bool = False) -> None:
        """Send the text (if not blank) and clear the box; ``later`` (Alt+Enter) says to queue
        it for after a running turn."""
        text = self.text.rstrip().lstrip("\n")
        if not text.strip():
            return
        if not self.prompt_history or self.prompt_history[0] != text:
            self.prompt_history.insert(0, text)
        self._history_index = -1
        self._draft = ""
        self.clear()
        self.post_message(self.Submitted(text, self, later))

    def action_history_previous(self) -> None:
        """On the first visual line: recall the next older prompt. Elsewhere: cursor up. In an
        empty box with prompts pending, ask for the newest back first."""
        if self.pending and not self.text:
            self.post_message(self.TakeBackRequested())
            return
        if not self.navigator.is_first_wrapped_line(self.cursor_location) or self._history_index + 1 >= len(self.prompt_history):
            self.action_cursor_up()
            return
        if self._history_index == -1:
            self._draft = self.text
        self._history_index += 1
        self._show(self.prompt_history[self._history_index])

    def action_history_next(self) -> None:
        """On the last visual line of a recalled prompt: the next newer one, or the draft."""
        if self._history_index < 0 or not self.navigator.is_last_wrapped_line(self.cursor_location):
            self.action_cursor_down()
            return
        self._history_index -= 1
        self._show(self.prompt_history[self._history_index] if self._history_index >= 0 else self._draft)

    def action_search_history(self) -> None:
        """Ctrl+R: search the prompts sent before, this run's and every stored session's
        (``HistorySearch``); the one chosen replaces the text (one undoable edit), Esc leaves
        the text as it was."""
        from .history_search import HistorySearch

        below = max(0, self.screen.size.height - self.region.y)  # the box ends above this one
        self.app.push_screen(HistorySearch(self.prompt_history, self.prompt_source, below), self._history_chosen)

    def _history_chosen(self, prompt: str | None) -> None:
        if prompt is not None:
            self._put(prompt)
        self.focus()

    def _put(self, text: str) -> None:
        """``text`` in place of the whole text, as one edit Ctrl+Z undoes, the cursor at its end:
        the draft now (not a recalled prompt)."""
        self._history_index = -1
        self.replace(text, self.document.start, self.document.end, maintain_selection_offset=False)
        self.move_cursor(self.document.end)

    def action_edit_in_editor(self) -> None:
        """Ctrl+G: the text in the person's editor (``external_editor``), then back here with
        the cursor at its end (one undoable edit: Ctrl+Z brings the text before it back). When
        the editor fails (exits non-zero, the file is gone…) the text stays as it was, and a
        notice says why."""
        self.run_worker(self._edit_in_editor(), group="composer-editor", exclusive=True)

    async def _edit_in_editor(self) -> None:
        from .external_editor import edit_in_editor

        edited = await edit_in_editor(self.app, self.text)
        if edited.text is None:
            self.notify(f"{edited.problem} The prompt is unchanged.", title="Editor", severity="warning", timeout=8)
        else:
            self._put(edited.text)
        self.focus()

    def _show(self, text: str) -> None:
        self.load_text(text)
        self.move_cursor(self.document.end)
