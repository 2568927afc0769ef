"""Summary compaction on screen: a marker in the chat where a summary replaced what came before,
and the preview where a person reads and edits a summary before it is kept.

The data shown is a ``session.compacted`` event's (see ``summary.py``); undoing a compaction is
the app's business (a fork at ``count``): the marker only asks for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from rich.markdown import Markdown as RichMarkdown

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Collapsible, Static

from ..core.text import one_line, sanitize
from .composer import MultilineInput
from .markdown_render import LeftMarkdown, code_theme_of
from scout_tui.core.figures import dollars, tokens

BY = {"user": "by you", "auto": "automatic", "overflow": "context overflow", "plugin": "plugin"}
"""How the marker names what made a compaction (the event's ``by``)."""


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def marker_title(data: dict) -> Content:
    """``⊟ Compacted: 57 messages summarised · 142k → 9k tokens · automatic · u undo``: the
    collapsed line of a ``session.compacted`` event's ``data`` (missing figures left out)."""
    at = _int(data.get("at"))
    parts = [f"⊟ Compacted: {at} message{'s' if at != 1 else ''} summarised"]
    before, after = _int(data.get("tokens_before")), _int(data.get("tokens_after"))
    if before or after:
        parts.append(f"{tokens(before)} → {tokens(after)} tokens")
    by = str(data.get("by") or "")
    if by:
        parts.append(BY.get(by) or one_line(by, 20))
    return Content.assemble(" · ".join(parts), (" · u undo", "$text-muted"))


class CompactionSummary(Static):
    """A compaction's summary, rendered as markdown as answers are (``LeftMarkdown``: one cheap widget)."""

    DEFAULT_CSS = """
    CompactionSummary {
        height: auto;
    }
    """

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
        """The summary's markdown, sanitized."""

    def render(self) -> RichMarkdown:
        return LeftMarkdown(self.text, code_theme=code_theme_of(self.app))


class CompactionMarker(Collapsible):
    """Where a summary compaction cut the conversation: one muted line, expanding (Enter or a
    click on it) to the summary the model reads instead of the messages above.

    Built from a ``session.compacted`` event's ``data`` (``at``, ``count``, ``summary``, ``model``,
    ``tokens_before``, ``tokens_after``, ``cost``, ``focus``, ``by``; any may be missing). ``u``
    posts ``UndoRequested(count)``: the person wants the conversation as it was before, which the
    app does by forking at ``count``.
    """

    DEFAULT_CSS = """
    CompactionMarker {
        margin: 1 0 0 0;
        padding: 0 0 0 1;
        border-top: none;
        border-left: thick $accent 50%;
        background: $surface;
        color: $text-muted;
        &:focus-within {
            border-left: thick $accent;
        }
        & > CollapsibleTitle {
            width: 1fr;
            padding: 0;
            text-wrap: nowrap;
            text-overflow: ellipsis;
        }
        & > Contents {
            padding: 1 1 1 2;
        }
        & #compaction-meta {
            color: $text-muted;
            margin: 0 0 1 0;
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("u", "undo", "Undo compaction", tooltip="Fork the session from before this compaction",
                id="compaction.undo"),
    ]

    @dataclass
    class UndoRequested(Message):
        """``u`` on a marker: the person wants the session as it was before this compaction
        (``count``: the message count when it was made; fork there)."""

        count: int
        marker: CompactionMarker | None = field(default=None, kw_only=True)

        @property
        def control(self) -> CompactionMarker | None:
            return self.marker

    def __init__(self, data: dict, *, id: str | None = None, classes: str | None = None) -> None:
        self.data = data
        """The event data given."""
        self.count = _int(data.get("count"))
        """The session's message count when the compaction was made (undo forks there)."""
        meta: list[str] = []
        if data.get("model"):
            meta.append(f"summary by {one_line(str(data['model']), 60)}")
        if data.get("focus"):
            meta.append(f"focus: {one_line(str(data['focus']), 80)}")
        if isinstance(data.get("cost"), (int, float)):
            meta.append(dollars(float(data["cost"])))
        children: list[Widget] = [CompactionSummary(sanitize(str(data.get("summary") or "")))]
        if meta:
            children.insert(0, Static(Content(" · ".join(meta)), id="compaction-meta"))
        super().__init__(*children, title=marker_title(data), collapsed=True, id=id, classes=classes)  # type: ignore[arg-type]  # Textual 8 types title as str; it passes it on as CollapsibleTitle's ContentText label

    def action_undo(self) -> None:
        self.post_message(self.UndoRequested(self.count, marker=self))


class SummaryEditor(MultilineInput):
    """The summary being previewed: Enter accepts (posts ``Accepted``), Shift+Enter and Ctrl+J
    insert a newline (terminals send either, see ``composer.py``)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Shown in the Footer; the keys themselves are handled in ``MultilineInput.key_first``.
        Binding("enter", "submit", "Accept", id="compact_preview.accept"),
        Binding("shift+enter,ctrl+j", "newline", "Newline", show=False, id="compact_preview.newline"),
    ]

    @dataclass
    class Accepted(Message):
        """Enter: ``text`` is the summary as edited (not stripped)."""

        text: str

    def action_submit(self, later: bool = False) -> None:
        """Accept the summary as edited: post ``Accepted``."""
        self.post_message(self.Accepted(self.text))


class CompactPreview(ModalScreen[str | None]):
    """A summary to read and edit before it replaces the conversation in the prompt.

    ``info`` is one line saying what it summarises ("Summarises messages 0–56 (142k tokens);
    the newest 12 stay. About 9k tokens after."). Dismisses with the edited summary, stripped,
    on Enter (None if that leaves nothing), or None on Esc.
    """

    DEFAULT_CSS = """
    CompactPreview {
        align: center middle;
        & > Vertical {
            width: 90%;
            height: 90%;
            padding: 0 1;
            background: $surface;
            border: round $primary;
            border-title-color: $foreground;
        }
        & #compact-info {
            height: auto;
            margin: 0 0 1 0;
        }
        & SummaryEditor {
            height: 1fr;
        }
        & #compact-hint {
            height: 1;
            color: $text-muted;
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="compact_preview.cancel"),
    ]

    def __init__(self, summary: str, *, info: str) -> None:
        super().__init__()
        self.summary = summary
        self.info = info

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Compact the conversation"
            yield Static(Content(sanitize(self.info)), id="compact-info")
            yield SummaryEditor(sanitize(self.summary), soft_wrap=True, show_line_numbers=False,
                                tab_behavior="focus", id="compact-summary")
            yield Static(Content("Enter accept · Shift+Enter / Ctrl+J new line · Esc cancel"), id="compact-hint")

    def on_mount(self) -> None:
        self.query_one(SummaryEditor).focus()

    @on(SummaryEditor.Accepted)
    def _accepted(self, event: SummaryEditor.Accepted) -> None:
        event.stop()
        self.dismiss(event.text.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
