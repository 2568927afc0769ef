"""The chat's widgets for stored messages: a batch of a stored conversation (what ``ChatView``
mounts on load and as the person scrolls up), and the one rule for showing a user message."""

from __future__ import annotations

from typing import Sequence

from textual.widget import Widget

from ..session.mentions import mentions, typed_text
from ..core.messages import blocks, message_text, thinking_text, tool_results
from ..core.text import sanitize
from .assistant_message import AssistantMessage
from .chat_markdown import MarkdownChunk
from .chat_messages import ToolCallLine, UserMessage
from .markdown_cut import split_markdown
from .markdown_render import Rendered, prerender, render_lines

INLINE_RENDER_CHARS = 4_000
"""A batch with at most this many characters of markdown is rendered on the event loop (a few
ms): in a thread it waits its turn for the interpreter while the loop draws, ~20 ms in tmux
when a reopened session's newest messages are being shown."""


def user_widget(index: int | None, message: dict) -> UserMessage | None:
    """The widget showing user ``message``'s typed text (sanitized, at stored position
    ``index``) and a chip per ``@`` mention; None when it has no text (a message of tool
    results)."""
    text = typed_text(message)
    return UserMessage(sanitize(text), index=index, mentions=mentions(message)) if text.strip() else None


def answer_calls(message: dict, lines: dict[str, ToolCallLine]) -> None:
    """Mark the lines of ``lines`` (by ``tool_use_id``) still running ✓ or ✗ for ``message``'s
    ``tool_result`` blocks, elapsed unknown, and give them the result's content as their output;
    a line already finished keeps its elapsed time and output."""
    for result in tool_results(message):
        line = lines.get(result.get("tool_use_id") or "")
        if line is not None and line.status == "running":
            line.finish(bool(result.get("is_error")), None)
        if line is not None and not line.has_result:
            line.set_result(result.get("content"))


async def build_batch(
    messages: Sequence[dict | None], start: int, stop: int, markers_at: dict[int, list[dict]], width: int, code_theme: str
) -> tuple[list[Widget], dict[str, ToolCallLine]]:
    """Widgets for ``messages[start:stop]``, their markdown pre-rendered at ``width`` cells (in a
    thread, unless it is short); and the batch's tool-call lines by ``tool_use_id``.

    User text, assistant text and thinking, ``tool_use`` blocks as compact lines, and
    ``tool_result`` blocks marking their line ✓ or ✗. ``messages[stop]``, when there, is read
    for the ``tool_result`` blocks answering the last message's calls (it is mounted already,
    or about to be). A compaction marker (``markers_at``: compaction data by ``count``) goes
    before the message at its ``count``. Raises ``LookupError`` when one of those messages is
    None (a stored message not read yet: see ``ChatView.load``).
    """
    widgets: list[Widget] = []
    answers: list[tuple[AssistantMessage, list[str]]] = []
    lines: dict[str, ToolCallLine] = {}
    for index in range(start, min(stop + 1, len(messages))):
        if index < stop and index in markers_at:
            from .compaction import CompactionMarker  # only where there are some: see chat_view

            widgets += [CompactionMarker(data) for data in markers_at[index]]
        message = messages[index]
        if message is None:
            raise LookupError(f"stored message {index} is not read yet")
        if message.get("role") == "user":
            if index < stop and (widget := user_widget(index, message)) is not None:
                widgets.append(widget)
            answer_calls(message, lines)
            continue
        if index == stop:
            break
        content = blocks(message)
        text, thinking = sanitize(message_text(message)), sanitize(thinking_text(message))
        if text.strip() or thinking.strip():
            answer = AssistantMessage(text=text, thinking=thinking, index=index,
                                      interrupted=bool(message.get("incomplete")))
            chunks, last = split_markdown(text)
            answers.append((answer, [c for c in (*chunks, last) if c.strip()]))
            widgets.append(answer)
        for b in content:
            if b.get("type") == "tool_use":
                line = ToolCallLine(str(b.get("id")), str(b.get("name", "")), b.get("input") or {})
                lines[line.tool_use_id] = line
                widgets.append(line)
    sources = [source for _, pieces in answers for source in pieces]
    prepared = iter(await _rendered(sources, width, code_theme))
    for answer, pieces in answers:
        answer.set_chunks([MarkdownChunk(source, next(prepared)) for source in pieces])
    return widgets, lines


async def _rendered(sources: list[str], width: int, code_theme: str) -> list[Rendered | None]:
    """``prerender(sources, width, code_theme)``, here when they are short (``INLINE_RENDER_CHARS``)."""
    if 0 < width and sum(map(len, sources)) <= INLINE_RENDER_CHARS:
        return [((source, width, code_theme), render_lines(source, width, code_theme)) for source in sources]
    return await prerender(sources, width, code_theme)
