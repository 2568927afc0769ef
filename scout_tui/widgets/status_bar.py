"""One line of state: provider and model, session, token usage and cost, and whether a turn is running.

``anthropic · claude-sonnet-4-5 │ session 1a2b3c4d │ ↑ 12.3k ↓ 1.2k │ $0.42 · cache 87% │ ctx 24.1k/200k 12% │ ask mode │ ⠋ working``

Without a sandbox the mode reads ``ask mode · unsandboxed``.
"""

from __future__ import annotations

from typing import ClassVar

from textual.binding import BindingType
from textual.content import Content
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Static

from ..core.figures import dollars, tokens
from ..core.text import one_line

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


DROPPED = ("session", "tokens", "ctx numbers", "hint", "cache", "model", "ctx")
"""The parts a narrow status bar leaves out, first to last: the cost and the permission mode
(with the sandbox warning and the spinner) always stay, the model as long as it can."""


class StatusBar(Static):
    """The status line. Set its reactive attributes; it redraws itself."""

    DEFAULT_CSS = """
    StatusBar {
        height: 1;
        padding: 0 1;
        background: $panel;
        color: $foreground-muted;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        &.-busy {
            color: $foreground;
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = []

    provider: reactive[str] = reactive("")
    model: reactive[str] = reactive("")
    session_id: reactive[str | None] = reactive(None)
    input_tokens: reactive[int] = reactive(0)
    output_tokens: reactive[int] = reactive(0)
    cost: reactive[float | None] = reactive(None)
    """What the session cost so far, in dollars; None hides it."""
    cache_share: reactive[float | None] = reactive(None)
    """The share (0..1) of the last request's input tokens read from the prompt cache; None hides it."""
    context_used: reactive[int] = reactive(0)
    """Estimated tokens of the next request (the compacted prompt), 0 when unknown."""
    context_window: reactive[int] = reactive(0)
    """The model's context window in tokens, 0 when unknown (then only ``context_used`` shows)."""
    permission_mode: reactive[str] = reactive("")
    """``ask``, ``auto-edit``, ``plan`` (shown as "⏸ plan mode", in the accent colour) or ``yolo`` (Shift+Tab); "" hides it."""
    sandbox: reactive[str] = reactive("")
    """The sandbox mode commands run in (``tools.sandbox.in_force``): ``off`` shows "unsandboxed",
    ``read-only`` shows "read-only sandbox"; ``workspace-write`` (the default) and "" (not known
    yet) show nothing."""
    busy: reactive[bool] = reactive(False)
    """A turn is running: show a spinner and how to interrupt it."""
    awaiting: reactive[bool] = reactive(False)
    """A tool call waits for the person's approval: say so instead of spinning."""
    state: reactive[str] = reactive("")
    """Free text such as "retrying 1/4 in 2.0s"; shown after everything else."""
    _frame: reactive[int] = reactive(0)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._spinner: Timer | None = None

    def on_mount(self) -> None:
        self._spinner = self.set_interval(0.1, self._spin, pause=not self.busy)

    def watch_busy(self, busy: bool) -> None:
        self.set_class(busy, "-busy")
        self._set_spinner()

    def watch_awaiting(self, awaiting: bool) -> None:
        self._set_spinner()

    def _set_spinner(self) -> None:
        if self._spinner is not None:
            if self.busy and not self.awaiting:
                self._spinner.resume()
            else:
                self._spinner.pause()

    def _spin(self) -> None:
        self._frame += 1

    def render(self) -> Content:
        # A narrow terminal drops the least useful parts first (``DROPPED``, in order), so the
        # cost, the permission mode, the sandbox warning and the spinner stay on screen.
        width = self.content_region.width or 10_000
        for n in range(len(DROPPED) + 1):
            content = self._line(frozenset(DROPPED[:n]))
            if content.cell_length <= width:
                return content
        return content

    def _line(self, dropped: frozenset[str]) -> Content:
        sep = (" │ ", "$text-muted")
        parts: list[str | tuple[str, str]] = []
        if "model" not in dropped and (self.provider or self.model):
            parts += [(one_line(self.provider, 30), "bold"), " · " if self.provider and self.model else "", one_line(self.model, 60)]
        if "session" not in dropped and self.session_id:
            parts += [sep, f"session {one_line(self.session_id, 40)[:8]}"]
        if "tokens" not in dropped:
            parts += [sep, f"↑ {tokens(self.input_tokens)} ↓ {tokens(self.output_tokens)}"]
        spending = [text for text in (
            dollars(self.cost) if self.cost is not None else "",
            f"cache {self.cache_share:.0%}" if self.cache_share is not None and "cache" not in dropped else "",
        ) if text]
        if spending:
            parts += [sep, " · ".join(spending)]
        if "ctx" not in dropped and self.context_used and self.context_window:
            share = self.context_used / self.context_window
            colour = "$error" if share >= 0.8 else "$warning" if share >= 0.5 else "$success"
            numbers = f"{tokens(self.context_used)}/{tokens(self.context_window)} " if "ctx numbers" not in dropped else ""
            parts += [sep, f"ctx {numbers}", (f"{share:.0%}", colour)]
        elif self.context_used and not {"ctx", "ctx numbers"} & dropped:
            parts += [sep, f"ctx {tokens(self.context_used)}"]
        if self.permission_mode:
            style = {"ask": "$text-muted", "auto-edit": "$warning", "plan": "bold $accent",
                     "yolo": "bold $error"}.get(self.permission_mode, "")
            mark = "⏸ " if self.permission_mode == "plan" else ""  # Claude Code's sign for plan mode
            parts += [sep, (f"{mark}{one_line(self.permission_mode, 20)} mode", style)]
        sandbox = {"off": ("unsandboxed", "$warning"), "read-only": ("read-only sandbox", "$text-muted")}.get(self.sandbox)
        if sandbox:
            parts += [" · " if self.permission_mode else sep, sandbox]
        if self.busy and self.awaiting:
            parts += [sep, ("awaiting approval", "bold $warning")]
        elif self.busy:
            parts += [sep, (f"{SPINNER[self._frame % len(SPINNER)]} working", "$warning")]
            if "hint" not in dropped:
                parts.append((" (Esc to interrupt)", "$text-muted"))
        if self.state:
            parts += [sep, one_line(self.state, 80)]
        if parts and parts[0] == sep:
            parts = parts[1:]
        return Content.assemble(*parts)
