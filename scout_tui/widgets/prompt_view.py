"""What the model sees: the stored history beside the compacted prompt of the next call.

A modal screen with two columns. Tool calls that compaction truncated or dropped are marked in
both, so a person can see what the model no longer reads in full (the store keeps every byte).
"""

from __future__ import annotations

import json
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..core.messages import blocks, result_text
from ..core.text import sanitize

PREVIEW_CHARS = 240
"""Characters of each text, argument set or result shown per block."""

SHOWN_MESSAGES = 400
"""Messages shown per column, the newest: a long session stays quick to open here."""


def _preview(text: str, width: int = PREVIEW_CHARS) -> str:
    """``text`` sanitized, its whitespace runs (newlines too) squashed to one space, cut to ``width``."""
    flat = " ".join(sanitize(text[: width * 4 + 1024]).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def render_conversation(messages: list[dict], marks: dict[str, str]) -> Text:
    """A compact transcript: one header per message, one line or two per block.

    ``marks`` maps tool_use ids to ``"truncated"`` or ``"dropped"``; marked calls and results
    are labelled. Only the newest ``SHOWN_MESSAGES`` appear. Model and tool text is sanitized
    and never read as markup.
    """
    out = Text()
    first = max(0, len(messages) - SHOWN_MESSAGES)
    if first:
        out.append(f"… {first:,} earlier messages not shown\n", style="dim")
    for i, message in enumerate(messages[first:], start=first):
        role = message.get("role", "?")
        out.append(f"#{i} {role}\n", style="bold")
        for block in blocks(message):
            kind = block.get("type")
            if kind == "text":
                out.append("  " + _preview(str(block.get("text", ""))) + "\n")
            elif kind == "thinking":
                out.append("  (thinking) " + _preview(str(block.get("thinking", "")), 80) + "\n", style="dim")
            elif kind == "tool_use":
                args = json.dumps(block.get("input"), ensure_ascii=False)
                out.append(f"  → {block.get('name')} ", style="bold")
                out.append(_preview(args))
                _mark(out, marks.get(str(block.get("id"))))
                out.append("\n")
            elif kind == "tool_result":
                text = result_text(block.get("content"))
                out.append("  ← ", style="bold")
                out.append(f"{len(text):,} chars{' (error)' if block.get('is_error') else ''}: ", style="dim")
                out.append(_preview(text))
                _mark(out, marks.get(str(block.get("tool_use_id"))))
                out.append("\n")
            else:
                out.append(f"  ({kind})\n", style="dim")
    return out


def _mark(out: Text, mark: str | None) -> None:
    if mark:
        out.append(f"  [{mark}]", style="bold red" if mark == "dropped" else "bold yellow")


class PromptView(ModalScreen[None]):
    """Stored history (left) and the prepared prompt of the next model call (right)."""

    DEFAULT_CSS = """
    PromptView {
        align: center middle;
    }
    PromptView > Vertical {
        width: 96%;
        height: 92%;
        border: round $primary;
        background: $surface;
    }
    PromptView #prompt-summary {
        height: auto;
        padding: 0 1;
        color: $text-muted;
    }
    PromptView Horizontal {
        height: 1fr;
    }
    PromptView VerticalScroll {
        width: 1fr;
        border-top: solid $panel;
        padding: 0 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,ctrl+o,q", "dismiss", "Close", id="prompt_view.close"),
    ]

    def __init__(self, stored: list[dict], prompt: list[dict], marks: dict[str, str], summary: str) -> None:
        super().__init__()
        self.stored = stored
        self.prompt = prompt
        self.marks = marks
        self.summary = summary

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.summary), id="prompt-summary")
            with Horizontal():
                stored = VerticalScroll(id="prompt-stored")
                stored.border_title = f"Stored history ({len(self.stored)} messages)"
                with stored:
                    yield Static(render_conversation(self.stored, self.marks))
                sent = VerticalScroll(id="prompt-sent")
                sent.border_title = f"What the model sees ({len(self.prompt)} messages)"
                with sent:
                    yield Static(render_conversation(self.prompt, self.marks))
