"""The small widgets of the conversation: a prompt the person sent, an answer's thinking, a
compact line per tool call, and a system notice. (The answer itself: ``assistant_message.py``.)"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.markdown import Markdown as RichMarkdown

    from ..session.mentions import Mention
    from .tool_call import ToolCall

from rich.cells import cell_len, set_cell_size
from textual.content import Content
from textual.widgets import Static

from ..core.text import clip, sanitize, tool_summary
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


FOLDED_LINES = 4
"""Lines of a tool call's output shown under its line in a narrow chat until it is expanded."""

TAIL_CHARS = 8_192
"""Characters from the end of a running call's output read for its newest lines."""

LINE_CHARS = 400
"""Characters of an output line drawn at most: a line is one row (cut with "…" at the chat's
width, under 100 columns), and cropping a 20,000-character line cell by cell costs ~10 ms."""


class ToolCallLine(Static):
    """One compact line per tool call: ``▸ read  src/app.py``, then ``✓ read  src/app.py  0.4s``.

    Below 100 columns (the screen's ``-narrow`` class: the tool pane folds away) the call's
    output shows under its line, as the tool pane shows it (``ToolCall.shown``): a running
    call's newest ``FOLDED_LINES`` lines, a finished call's first ones and how many more there
    are; expanded (a click, or ``o`` in the chat: ``toggle_output``), all of it. Wide, the line is
    one line and the output stays in the pane. The output is kept raw and sanitized when drawn,
    and a stored result is read only once it is drawn (``set_result``).
    """

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
    Screen.-narrow ToolCallLine.-output { height: auto; }
    """
    SCOPED_CSS = False  # the rule for a narrow screen starts at the screen

    def __init__(self, tool_use_id: str, name: str, input: dict) -> None:
        super().__init__(classes="-running")
        self.tool_use_id = tool_use_id
        self.tool_name = sanitize(str(name))[:40]
        self.summary = tool_summary(input, 80)
        self.status = "running"
        """``"running"``, ``"ok"`` or ``"error"``."""
        self.elapsed: float | None = None
        self.expanded = False
        """Whether all of the output shows, not only ``FOLDED_LINES`` lines (narrow only)."""
        self._call: ToolCall | None = None  # the output kept (tool_activity's record of a call)
        self._result: object = None  # a tool_result's content not read yet
        self._has_result = False
        self._shown: list[str] | None = None  # the lines of a finished call's output, once read
        self._height = 0  # output lines drawn last (a running call's height grows to a limit)
        self._newlines = 0  # in the live output so far

    @property
    def has_result(self) -> bool:
        """Whether the call's result (``set_result``) is known."""
        return self._has_result

    def finish(self, is_error: bool, elapsed: float | None) -> None:
        """Show the call ended: ✓ or ✗, and ``elapsed`` seconds when known."""
        self.status = "error" if is_error else "ok"
        self.elapsed = elapsed
        self.set_class(False, "-running")
        self.add_class(f"-{self.status}")
        self.refresh(layout=True)

    def add_output(self, text: str) -> None:
        """Keep a live fragment of the running call's output; drawn with the next frame, if narrow."""
        if self._has_result:
            return
        self._record().add(text)
        self._newlines += text.count("\n")
        if text.strip():
            self.add_class("-output")
        if self._narrow():  # one frame draws many fragments; the height stops growing at the fold
            self.refresh(layout=min(self._newlines + 1, FOLDED_LINES + 1) != self._height)

    def set_result(self, content: object) -> None:
        """The call's ``tool_result`` content (a string or blocks): its whole output from now on,
        read when it is first drawn."""
        self._result, self._has_result, self._shown = content, True, None
        self.set_class(bool(content), "-output")
        self.refresh(layout=True)

    def toggle_output(self) -> None:
        """Show all of the output, or fold it again."""
        self.expanded = not self.expanded
        self.refresh(layout=True)

    def on_click(self) -> None:
        if self.has_class("-output"):
            self.toggle_output()

    def _record(self) -> ToolCall:
        if self._call is None:
            from .tool_call import ToolCall

            self._call = ToolCall(self.tool_use_id, self.tool_name, self.summary)
        return self._call

    def _narrow(self) -> bool:
        return self.is_attached and self.screen.has_class("-narrow")

    def _output(self) -> tuple[list[str], str]:
        """The output lines to draw, and the note of the lines not drawn ("" for none)."""
        if self._has_result:
            if self._shown is None:
                record = self._record()
                record.set_result(self._result)
                self._shown = record.shown().rstrip("\n").split("\n") if record.raw.strip() else []
            lines = self._shown
            if self.expanded or len(lines) <= FOLDED_LINES + 1:
                return lines, ""
            return lines[:FOLDED_LINES], f"… {len(lines) - FOLDED_LINES:,} more lines (click or o expands)"
        if self._call is None:
            return [], ""
        if self.expanded:
            return self._call.shown().rstrip("\n").split("\n"), ""
        raw = self._call.raw
        tail = sanitize(raw[-TAIL_CHARS:]).rstrip("\n").split("\n")[-FOLDED_LINES:]
        hidden = raw.rstrip("\n").count("\n") + 1 - len(tail)
        return tail, f"… {hidden:,} earlier lines" if hidden > 0 else ""

    def render(self) -> Content:
        icon = {"running": "▸", "ok": "✓", "error": "✗"}[self.status]
        parts: list[str | tuple[str, str]] = [f"{icon} ", (self.tool_name, "bold"), "  ", self.summary]
        if self.elapsed is not None:
            parts += ["  ", f"{self.elapsed:.1f}s"]
        lines, note = self._output() if self._narrow() and self.has_class("-output") else ([], "")
        self._height = len(lines) + bool(note)
        # A running call's note (lines before its newest) comes first, a finished one's last.
        room = self.size.width - 4 if self.size.width > 4 else LINE_CHARS  # after "  ⎿ "
        rows = [(_cut(line[:LINE_CHARS], room), "$text") for line in lines]
        if note:
            rows.insert(0 if self.status == "running" else len(rows), (note, "$text-muted italic"))
        for i, row in enumerate(rows):
            parts += ["\n  ", ("⎿ " if i == 0 else "  ", "$text-muted"), row]
        return Content.assemble(*parts)


def _cut(line: str, cells: int) -> str:
    """``line`` cut to ``cells`` cells, its last one "…" when it was longer."""
    return line if cell_len(line) <= cells else set_cell_size(line, cells - 1) + "…"


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
