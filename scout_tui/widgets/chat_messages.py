"""The small widgets of the conversation: a prompt the person sent, an answer's thinking, a
compact line per tool call, and a system notice. (The answer itself: ``assistant_message.py``.)"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.markdown import Markdown as RichMarkdown

    from ..mentions import Mention

from textual.content import Content
from textual.widgets import Static

from ..text import clip, sanitize, tool_summary
from .markdown_render import LeftMarkdown, code_theme_of

THINKING_CHARS = 20_000
"""Characters of thinking text shown when a thinking block is expanded."""


class UserMessage(Static):
    """A prompt the person sent: ``text`` (sanitized, shown literally) and its ``index`` in the
    stored conversation (None when not known)."""

    DEFAULT_CSS = """
    UserMessage {
        background: $user-message-background;
        padding: 0 1;
        margin: 1 0 0 0;
    }
    """

    def __init__(self, text: str, *, index: int | None = None, mentions: Sequence[Mention] = ()) -> None:
        super().__init__(Content.assemble(text, *(part for m in mentions for part in _chip(m))))
        self.text = text
        self.index = index
        self.mentions = tuple(mentions)


def _chip(mention: Mention) -> tuple[str | tuple[str, str], ...]:
    """A mention's line under the prompt: its path in reverse video, its size and any cut."""
    cut = f" · {mention.cut.split(';')[0]}" if mention.cut else ""  # "showing lines 1-2000"
    return "\n", (f" @{sanitize(mention.path)} ", "bold reverse"), (f" {mention.size}{cut}", "dim")


class ThinkingBlock(Static):
    """Reasoning text, dim: its last lines while streaming, one line once finished; a click
    shows all of it (clipped to ``THINKING_CHARS``)."""

    DEFAULT_CSS = """
    ThinkingBlock {
        color: $text-muted;
        margin: 0 0 1 0;
    }
    """

    def __init__(self, text: str = "", finished: bool = False) -> None:
        super().__init__()
        self.text = text
        self.finished = finished
        self.expanded = False

    def append(self, text: str) -> None:
        self.text += text
        self.refresh(layout=True)

    def finish(self) -> None:
        """The answer is complete: fold to one line (until clicked)."""
        self.finished = True
        self.refresh()

    def render(self) -> Content:
        label = "✻ Thinking" + ("" if self.finished else "…")
        hint = f"  ({len(self.text):,} chars, click to {'collapse' if self.expanded else 'expand'})"
        body = self.text.strip()
        if self.expanded:
            body = clip(body, 400, THINKING_CHARS)
        elif self.finished:
            return Content.assemble((label, "italic"), hint)
        else:
            body = "\n".join(body[-2000:].splitlines()[-3:])  # the latest lines, as they come
        return Content.assemble((label, "italic"), hint, "\n", body)

    def on_click(self) -> None:
        self.expanded = not self.expanded
        self.refresh(layout=True)


class ToolCallLine(Static):
    """One compact line per tool call: ``▸ read  src/app.py``, then ``✓ read  src/app.py  0.4s``."""

    DEFAULT_CSS = """
    ToolCallLine {
        padding: 0 1;
        height: 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        &.-running { color: $tool-running; }
        &.-ok { color: $tool-ok; }
        &.-error { color: $tool-error; }
    }
    """

    def __init__(self, tool_use_id: str, name: str, input: dict) -> None:
        super().__init__(classes="-running")
        self.tool_use_id = tool_use_id
        self.tool_name = sanitize(str(name))[:40]
        self.summary = tool_summary(input, 80)
        self.status = "running"
        """``"running"``, ``"ok"`` or ``"error"``."""
        self.elapsed: float | None = None

    def finish(self, is_error: bool, elapsed: float | None) -> None:
        """Show the call ended: ✓ or ✗, and ``elapsed`` seconds when known."""
        self.status = "error" if is_error else "ok"
        self.elapsed = elapsed
        self.set_class(False, "-running")
        self.add_class(f"-{self.status}")
        self.refresh()

    def render(self) -> Content:
        icon = {"running": "▸", "ok": "✓", "error": "✗"}[self.status]
        parts: list[str | tuple[str, str]] = [f"{icon} ", (self.tool_name, "bold"), "  ", self.summary]
        if self.elapsed is not None:
            parts += ["  ", f"{self.elapsed:.1f}s"]
        return Content.assemble(*parts)


class Notice(Static):
    """A system line (info, warning, error), rendered as markdown."""

    DEFAULT_CSS = """
    Notice {
        padding: 0 1;
        margin: 1 0 0 0;
        &.-info { color: $text-muted; }
        &.-warning { color: $warning; border-left: thick $warning; }
        &.-error { color: $error; border-left: thick $error; }
    }
    """

    def __init__(self, text: str, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self.text = text

    def render(self) -> RichMarkdown:
        return LeftMarkdown(self.text, code_theme=code_theme_of(self.app))
