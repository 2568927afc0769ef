"""The main screen: the chat beside the side panes (tool activity, sessions), the composer, the
status bar and the keys, with its CSS in ``main_screen.tcss``.

It holds the state those widgets show as reactives bound to them: ``busy`` (a turn runs) and
``permission_mode``. The app holds it (``ScoutApp.main_screen``) and sets them; widgets are
found with typed lookups (``chat``, ``status``, ``composer``, ``footer``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Callable, ClassVar

from textual import getters
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import Static

from scout_tui.session.completion import Choice
from scout_tui.tui.input_first import KeyFirstScreen
from scout_tui.widgets import ChatView, Composer, StatusBar
from scout_tui.widgets.footer import KeysFooter

NARROW = 100
"""Below this many columns the side panes fold away (Ctrl+T shows them as an overlay)."""

SIDE_PANES = {"tools": "Tool activity", "tree": "Sessions"}
"""The side panes' ids and titles: the stand-ins of the first frame wear them, then the panes."""


class MainScreen(KeyFirstScreen):
    """The screen the app starts on and returns to.

    Args:
        secrets: values the chat keeps off the screen (``ChatView.secrets``).
        command_choices: the slash commands matching a query (``Composer.command_choices``).
        permission_mode: the permission mode the status bar shows at first.
    """

    # The default screen's CSS is not loaded by Textual (only that of a pushed screen or a mode's):
    # ``ScoutApp.CSS_PATH`` names the same file, which Textual then reads once. Absolute: Textual
    # reads a relative path beside the file of the class in use (a test's subclass of the app).
    CSS_PATH = Path(__file__).with_name("main_screen.tcss")
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (NARROW, "-wide")]
    # Focused as the screen is composed, not moved there from Textual's first pick after it is
    # styled: each move restyles the widgets it leaves and enters, before the first frame.
    AUTO_FOCUS: ClassVar[str | None] = "#composer"

    busy: reactive[bool] = reactive(False, init=False)
    """A turn runs: the status bar's spinner, Tab in the composer queues."""
    permission_mode: reactive[str] = reactive("")
    """The permission mode in force (``Policy.mode``), shown in the status bar."""
    pending: reactive[tuple[tuple[str, bool], ...]] = reactive((), init=False)
    """The prompts sent during the turn, in the order they go: ``(text, steer)`` each, shown
    above the composer (``PendingPrompts``, mounted the first time there are any)."""
    side_shown: reactive[bool] = reactive(False, init=False)
    """The side panes are shown over the chat (Ctrl+T below ``NARROW`` columns): ``-side-shown``."""

    chat = getters.query_one("#chat", ChatView)
    side = getters.query_one("#side", Vertical)
    composer = getters.child_by_id("composer", Composer)
    status = getters.child_by_id("status", StatusBar)
    footer = getters.query_one(KeysFooter)

    def __init__(self, *, secrets: tuple[str, ...], command_choices: Callable[[str], list[Choice]],
                 permission_mode: str) -> None:
        super().__init__(id="_default")
        self._secrets = secrets
        self._command_choices = command_choices
        self.set_reactive(MainScreen.permission_mode, permission_mode)
        self.mounted = asyncio.Event()
        """Set once the screen is mounted with the composer focused: keys typed before the app
        started go there (the app's ``on_mount`` waits for it before its queue handles them)."""

    def compose(self) -> ComposeResult:
        chat = ChatView(id="chat")
        chat.secrets = self._secrets
        with Horizontal(id="main"):
            yield chat
            with Vertical(id="side"):
                # The side panes' frames, titled: empty until the panes replace them once the
                # first frame is painted (``SidePanes.mount_side_panes``; a session's tool calls and the
                # session list are read after that frame anyway).
                for pane, title in SIDE_PANES.items():
                    stand_in = Static(id=f"{pane}-stand-in")
                    stand_in.border_title = title
                    yield stand_in
        composer = Composer(id="composer")
        composer.command_choices = self._command_choices  # Enter typed with a command's first letters
        yield composer
        yield StatusBar(id="status").data_bind(MainScreen.busy, MainScreen.permission_mode)

    async def on_mount(self) -> None:
        # The first frame's keys, drawn as one line (Textual's keys are made in ``start_background``):
        # mounted once the composer has the focus, as the line shows the focused widget's keys.
        self.set_focus(self.composer)
        await self.mount(KeysFooter())
        self.mounted.set()

    def watch_busy(self, busy: bool) -> None:
        self.composer.busy = busy  # a plain attribute: the composer reads it per key

    def watch_pending(self, pending: tuple[tuple[str, bool], ...]) -> None:
        from scout_tui.widgets.pending import PendingPrompts  # not for the first frame

        composer = self.composer
        composer.pending = len(pending)
        shown = self.query_children(PendingPrompts)
        if not shown and not pending:
            return
        widget = shown.first() if shown else PendingPrompts(id="pending")
        if not shown:
            self.mount(widget, before=composer)
        widget.show(list(pending))

    def watch_side_shown(self, shown: bool) -> None:
        self.set_class(shown, "-side-shown")
