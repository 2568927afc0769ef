"""The conversation: user prompts, streamed assistant answers, compact tool-call lines, notices.

Streaming (DESIGN.md, "Performance facts"): ``append_delta`` only appends to a list. A pump
task per answer wakes every 40 ms, moves at most ``SHOW_CHARS`` of received text on screen
and awaits the update, so a burst waits in a backlog instead of stalling the event loop.
Finished top-level blocks go into ``MarkdownChunk`` widgets (~4 KB of markdown each, drawn
from ``rich.markdown.Markdown``, first rendered in a worker thread); only the block still
being written is re-rendered each round, in a ``LiveBlock``. A round so costs the same at
the end of a 200 KB answer as at its start, and no widgets are created or removed per round.

A Textual ``Markdown`` fed through ``Markdown.get_stream`` was measured for the live block
too (benchmarks/stream_markdown.py): at a model's pace (2,000 deltas/s) it re-mounts block
widgets whenever a block ends, and the garbage those leave made gen-2 collections and stalls
of 100–240 ms; a ``Static`` stayed under 75 ms. Finished text looks the same as live text.
Rich renderables carry no selection offsets, so answer text is not mouse-selectable.

A long session opens with only its newest ``LOAD_LIMIT`` messages mounted; earlier batches
mount above as the person scrolls up, the view kept on what they were reading. A summary
compaction shows as a ``CompactionMarker`` where it cut in (before the message at its ``count``).
"""

from __future__ import annotations

import asyncio
import io
import re
from typing import ClassVar, Iterable, Iterator

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.markdown import Heading as RichHeading
from rich.markdown import Markdown as RichMarkdown
from rich.measure import Measurement
from rich.segment import Segment
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.geometry import Size
from textual.layout import DockArrangeResult
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from ..history import blocks
from ..text import clip, sanitize, tool_summary
from .compaction import CompactionMarker

FLUSH_INTERVAL = 1 / 25
"""Seconds between pump rounds (each round is at most one markdown update)."""

SHOW_CHARS = 8_000
"""Received characters moved on screen per round at most; the rest waits in a backlog."""

CHUNK_CHARS = 4_000
"""Size of a finished ``MarkdownChunk``: whole blocks; code fences are cut at this size."""

LIVE_CHARS = 2_000
"""A live block longer than this is cut: a fence is closed and reopened, a tight list or a
long paragraph is cut at a line start, so re-rendering the live block stays cheap."""

LOAD_LIMIT = 24
"""Stored messages mounted at a time: the newest by ``ChatView.load``, then one batch more each
time the view comes within a screen of the top; the rest are counted in one line."""

THINKING_CHARS = 20_000
"""Characters of thinking text shown when a thinking block is expanded."""

FORGET_INTERVAL = 2.0
"""Seconds between sweeps that let off-screen chunks drop their cached strips."""


class ChatView(VerticalScroll):
    """The conversation pane. Methods down (``add_user``, ``append_delta``…); messages up.

    Focused, it keeps a selection among the user and assistant messages (Up/Down or k/j to
    move, Home/End or g/G for the first and newest) and ``f`` posts ``ForkRequested`` for the
    selected one. Every message widget knows its ``index`` in the stored conversation (the
    order of ``Store.messages``): ``load`` numbers what it shows, live ones take the ``index``
    passed to ``add_user`` / ``end_assistant``. Tool-result messages are not shown, but count.
    """

    DEFAULT_CSS = """
    ChatView {
        height: 1fr;
        padding: 0 1;
        background: $surface;
        UserMessage {
            background: $user-message-background;
            padding: 0 1;
            margin: 1 0 0 0;
        }
        AssistantMessage {
            height: auto;
            background: $assistant-message-background;
            margin: 1 0 0 0;
            padding: 0 1;
        }
        MarkdownChunk {
            margin: 0 0 1 0;
        }
        ThinkingBlock {
            color: $text-muted;
            margin: 0 0 1 0;
        }
        AssistantMessage > .interrupted {
            color: $text-muted;
        }
        ToolCallLine {
            padding: 0 1;
            height: 1;
            text-wrap: nowrap;
            text-overflow: ellipsis;
            &.-running { color: $tool-running; }
            &.-ok { color: $tool-ok; }
            &.-error { color: $tool-error; }
        }
        Notice {
            padding: 0 1;
            margin: 1 0 0 0;
            &.-info { color: $text-muted; }
            &.-warning { color: $warning; border-left: thick $warning; }
            &.-error { color: $error; border-left: thick $error; }
        }
        .earlier {
            color: $text-muted;
            text-style: italic;
            padding: 0 1;
        }
    }
    /* An outline is drawn over the message's left padding: selecting changes no layout. */
    ChatView:focus > .-selected {
        outline-left: thick $accent;
        background-tint: $accent 12%;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "select_previous", "Previous message", id="chat.previous", show=False),
        Binding("down,j", "select_next", "Next message", id="chat.next", show=False),
        Binding("home,g", "select_first", "First message", id="chat.first", show=False),
        Binding("end,G", "select_last", "Newest message", id="chat.follow", show=False),
        Binding("f", "fork", "Fork here", id="chat.fork"),
    ]

    class ForkRequested(Message):
        """``f`` on the selected message: the person wants a new branch there.

        ``index`` is the message's position in the stored conversation (``Store.messages``).
        ``role`` ``"user"``: fork *before* it (``at = index``) and offer ``text``, the prompt
        as shown (sanitized), for editing; ``"assistant"``: fork *after* it
        (``at = index + 1``), ``text`` being the answer's markdown.
        """

        def __init__(self, index: int, role: str, text: str, *, chat_view: ChatView | None = None) -> None:
            super().__init__()
            self.index = index
            self.role = role
            self.text = text
            self.chat_view = chat_view

        @property
        def control(self) -> ChatView | None:
            return self.chat_view

    class Selected(Message):
        """The selection moved to a message: its stored ``index`` (None for a live message given
        no index, or an answer still streaming) and ``role`` (``"user"`` or ``"assistant"``)."""

        def __init__(self, index: int | None, role: str, *, chat_view: ChatView | None = None) -> None:
            super().__init__()
            self.index = index
            self.role = role
            self.chat_view = chat_view

        @property
        def control(self) -> ChatView | None:
            return self.chat_view

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._current: AssistantMessage | None = None
        self._tool_lines: dict[str, ToolCallLine] = {}
        self._selected: UserMessage | AssistantMessage | None = None
        self._stored: list[dict] = []  # the conversation given to load()
        self._markers_at: dict[int, list[dict]] = {}  # compactions given to load(), by count
        self._first = 0  # index in _stored of the oldest mounted message
        self._earlier: Static | None = None  # the "N earlier messages" line, while there are any
        self._loading_earlier = False
        self._pin: tuple[Widget, int] | None = None  # (widget, its y before a batch went in above)
        self._select_previous_after = False  # Up was pressed on the first mounted message

    def on_mount(self) -> None:
        # Stay at the bottom as content grows, until the person scrolls up (Widget.anchor);
        # scrolling back to the bottom re-anchors.
        self.anchor()
        self.set_interval(FORGET_INTERVAL, self._forget_offscreen)
        # Code blocks take their colours from the theme's syntax-style, which no CSS rule
        # carries: redraw them when the theme changes (or its file is edited).
        self.app.theme_changed_signal.subscribe(self, self._restyle_code)

    def _restyle_code(self, theme: object) -> None:
        for block in self.query(LiveBlock):
            block._rendered = None
        for widget in self.query("MarkdownChunk, LiveBlock, Notice, CompactionSummary"):
            widget.refresh()

    def _forget_offscreen(self) -> None:
        """Let chunks that scrolled out of view drop their cached strips.

        Textual keeps every line a widget has drawn until it repaints; over a long answer that
        is tens of thousands of objects the garbage collector walks on every full collection.
        """
        view = self.region  # chunk regions are in screen space, even when scrolled out of view
        for chunk in self.query(MarkdownChunk):
            if chunk.painted and not chunk.region.overlaps(view):
                chunk.forget_lines()

    def action_follow(self) -> None:
        """Jump to the newest output and keep following it."""
        self.anchor()

    @property
    def current(self) -> AssistantMessage | None:
        """The answer being streamed, if any."""
        return self._current

    @property
    def loaded_count(self) -> int:
        """How many messages of the conversation given to ``load`` are mounted (newest first;
        tool-result messages count though they show no widget; live additions do not)."""
        return len(self._stored) - self._first

    @property
    def selected(self) -> UserMessage | AssistantMessage | None:
        """The selected message widget, if any (it has ``index``; ``-selected`` class)."""
        return self._selected if self._selected is not None and self._selected.parent is self else None

    def add_user(self, text: str, *, index: int | None = None) -> None:
        """Show a prompt the person sent (plain text, never markup).

        ``index`` is its position in the stored conversation (the app's message count before
        it); without one, the message can be selected but not forked. Sending a prompt means
        wanting its answer: the view follows new output again even if it was scrolled up.
        """
        self.mount(UserMessage(sanitize(text), index=index))
        self.anchor()

    def begin_assistant(self) -> None:
        """Start a streamed assistant answer; deltas go to it until ``end_assistant``."""
        if self._current is not None:
            self._current.finish(None, False)
        self._current = AssistantMessage(streaming=True)
        self.mount(self._current)

    def append_delta(self, kind: str, text: str) -> None:
        """Buffer a streamed fragment; ``kind`` is ``"text"`` or ``"thinking"``. O(1), no redraw."""
        if self._current is None:
            self.begin_assistant()
        assert self._current is not None
        self._current.write(kind, text)

    def end_assistant(self, message: dict | None, interrupted: bool = False, *, index: int | None = None) -> None:
        """Finish the streamed answer; returns at once (the pump drains what is buffered).

        ``message`` is the final ``{"role": "assistant", "content": [blocks]}``; its text and
        thinking blocks are shown if none streamed. ``interrupted`` adds a dim "(interrupted)".
        ``index`` is the message's position in the stored conversation (None when it is not
        stored, or not known: the answer then cannot be forked).
        """
        if self._current is None:
            self.begin_assistant()
        assert self._current is not None
        self._current.index = index
        self._current.finish(message, interrupted)
        self._current = None

    def add_tool_call(self, tool_use_id: str, name: str, input: dict) -> None:
        """Show a compact running line for a tool call: name and a one-line argument summary."""
        line = ToolCallLine(tool_use_id, name, input)
        self._tool_lines[tool_use_id] = line
        self.mount(line)

    def finish_tool_call(self, tool_use_id: str, is_error: bool, elapsed: float | None) -> None:
        """Mark a tool call's line ✓ or ✗ with its elapsed seconds (unknown ids are ignored)."""
        line = self._tool_lines.get(tool_use_id)
        if line is not None:
            line.finish(is_error, elapsed)

    def add_notice(self, text: str, level: str = "info") -> None:
        """Show a system line rendered as markdown; ``level`` is info, warning or error."""
        level = level if level in ("info", "warning", "error") else "info"
        self.mount(Notice(sanitize(text), classes=f"-{level}"))

    def add_compaction(self, data: dict) -> CompactionMarker:
        """Show a compaction just made (a ``session.compacted`` event's data) after everything
        shown; returns its marker (``u`` on it posts ``CompactionMarker.UndoRequested``)."""
        marker = CompactionMarker(data)
        self.mount(marker)
        return marker

    def load(self, messages: list[dict], compactions: Iterable[dict] = ()) -> None:
        """Show a stored conversation (content-block dicts, ``Store.messages`` order) instead of
        what is shown now, with a marker for each of ``compactions`` (``Store.compactions``
        data) just before the message at its ``count`` (at the end when that is ``len(messages)``).

        User text, assistant text and thinking, ``tool_use`` blocks as compact lines, and
        ``tool_result`` blocks marking their line ✓ or ✗ (elapsed unknown). Only the newest
        ``LOAD_LIMIT`` messages mount, after a line counting the others; scrolling near the
        top mounts the batch before them (``loaded_count`` says how many are in). Returns at
        once: a worker renders the markdown in a thread, then mounts everything in one batch
        (await ``app.workers.wait_for_complete()`` in tests). ``messages`` is kept, not copied:
        entries older than the newest batch may be None while the caller reads them, and fill
        them in place later; older batches mount once they are there.
        """
        self.clear()
        self._stored = messages
        self._first = len(messages)
        for data in compactions:
            self._markers_at.setdefault(int(data.get("count") or 0), []).append(data)
        self.run_worker(self._load(messages), name="load", group="chat-load", exclusive=True)

    async def _load(self, messages: list[dict]) -> None:
        start = max(0, len(messages) - LOAD_LIMIT)
        widgets = await self._build(messages, start, len(messages))
        widgets += [CompactionMarker(data) for data in self._markers_at.get(len(messages), ())]
        earlier = Static(_earlier_text(start), classes="earlier", markup=False) if start else None
        # Anything added since load() was called comes after the stored conversation.
        await self.mount_all([earlier, *widgets] if earlier else widgets, before=0 if self.children else None)
        self._first, self._earlier = start, earlier
        if earlier is not None:
            await self.wait_for_refresh()
            self._check_earlier()

    async def _build(self, messages: list[dict], start: int, stop: int) -> list[Widget]:
        """Widgets for ``messages[start:stop]``, their markdown pre-rendered in a thread.

        ``messages[stop]``, when there, is read for the ``tool_result`` blocks answering the
        last message's calls (it is mounted already, or about to be). A compaction marker goes
        before the message at its ``count``.
        """
        widgets: list[Widget] = []
        answers: list[tuple[AssistantMessage, list[str]]] = []
        lines: dict[str, ToolCallLine] = {}
        for index in range(start, min(stop + 1, len(messages))):
            if index < stop and index in self._markers_at:
                widgets += [CompactionMarker(data) for data in self._markers_at[index]]
            message = messages[index]
            content = blocks(message)
            if message.get("role") == "user":
                if index < stop:
                    text = "\n".join(str(b.get("text", "")) for b in content if b.get("type") == "text")
                    if text.strip():
                        widgets.append(UserMessage(sanitize(text), index=index))
                for b in content:
                    if b.get("type") == "tool_result" and (line := lines.get(b.get("tool_use_id"))):
                        line.finish(bool(b.get("is_error")), None)
                continue
            if index == stop:
                break
            text = sanitize("".join(str(b.get("text", "")) for b in content if b.get("type") == "text"))
            thinking = sanitize("".join(str(b.get("thinking", "")) for b in content if b.get("type") == "thinking"))
            if text.strip() or thinking.strip():
                answer = AssistantMessage(streaming=False, text=text, thinking=thinking, index=index)
                chunks, last = split_markdown(text)
                answers.append((answer, [c for c in (*chunks, last) if c.strip()]))
                widgets.append(answer)
            for b in content:
                if b.get("type") == "tool_use":
                    line = ToolCallLine(str(b.get("id")), str(b.get("name", "")), b.get("input") or {})
                    lines[line.tool_use_id] = line
                    widgets.append(line)
        # Chunks land in an AssistantMessage (padding 0 1) beside a scrollbar that a long
        # session will show: render at that width; a wrong guess only costs a re-render.
        width = self.scrollable_content_region.width - 2
        if not self.show_vertical_scrollbar:
            width -= self.styles.scrollbar_size_vertical
        sources = [source for _, pieces in answers for source in pieces]
        prepared = iter(await prerender(sources, width, _code_theme(self.app)))
        for answer, pieces in answers:
            answer.set_chunks([MarkdownChunk(source, next(prepared)) for source in pieces])
        self._tool_lines.update(lines)
        return widgets

    # -- earlier messages, mounted as the person scrolls up -----------------------------------

    def arrange(self, size: Size, optimal: bool = False) -> DockArrangeResult:
        """Textual's arrangement; after an earlier batch was mounted, also scroll by the height
        it added, before this layout is painted: the view does not jump, even for one frame."""
        arrangement = super().arrange(size, optimal)
        if self._pin is not None:
            widget, was = self._pin
            for placement in arrangement.placements:
                if placement.widget is widget:
                    self._pin = None
                    # The compositor reads scroll_y right after arrange() (as it does for
                    # Widget.anchor); watchers and clamping catch up after the refresh.
                    target = max(0.0, self.scroll_y + placement.region.y - was)
                    self.set_reactive(ChatView.scroll_y, target)
                    self.set_reactive(ChatView.scroll_target_y, target)
                    break
        return arrangement

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value < old_value:
            self._check_earlier()

    def on_resize(self, event: events.Resize) -> None:
        self._check_earlier()  # a taller pane may show the top without any scrolling

    def _check_earlier(self) -> None:
        """Mount the previous batch when the view is within one screen of the top."""
        if self._earlier is not None and not self._loading_earlier and self.scroll_y <= self.scrollable_content_region.height:
            self._load_earlier()

    def _load_earlier(self, select_previous: bool = False) -> None:
        """Mount the batch before the oldest mounted message (once; in a worker); then, with
        ``select_previous``, select the message above the selected one."""
        self._select_previous_after = self._select_previous_after or select_previous
        if self._earlier is None or self._loading_earlier:
            return
        self._loading_earlier = True
        self.run_worker(self._mount_earlier(), name="earlier", group="chat-earlier", exclusive=True)

    async def _mount_earlier(self) -> None:
        """Mount the ``LOAD_LIMIT`` stored messages before the oldest mounted one, above it,
        keeping what the person looks at where it is on screen."""
        try:
            earlier = self._earlier
            if earlier is None:
                return
            stop = self._first
            start = max(0, stop - LOAD_LIMIT)
            if self._stored[start] is None:
                return  # the app is still reading the older messages (see ScoutApp.open_session)
            widgets = await self._build(self._stored, start, stop)
            if earlier is not self._earlier:
                return  # load() or clear() ran meanwhile
            # The first widget below the "earlier" line still in view, and where it is.
            below = self.children[self.children.index(earlier) + 1 :]
            keep = next((w for w in below if w.virtual_region.bottom > self.scroll_y), below[0] if below else None)
            if keep is not None:
                was = keep.virtual_region.y
                on_screen = was - self.scroll_y
            with self.app.batch_update():  # no layout until all is in, and the pin set
                await self.mount_all(widgets, after=earlier)
                if start:
                    earlier.update(_earlier_text(start))
                else:
                    await earlier.remove()
                    self._earlier = None
                if keep is not None:
                    self._pin = (keep, was)
            self._first = start
            await self.wait_for_refresh()
            self._pin = None
            if keep is not None and keep.parent is self:
                # Normally a no-op (``arrange`` scrolled already); it also moves the scrollbar.
                self.scroll_to(y=keep.virtual_region.y - on_screen, animate=False, immediate=True, release_anchor=False)
                if self.show_vertical_scrollbar:
                    self.vertical_scrollbar.position = self.scroll_y
        finally:
            self._pin = None
            self._loading_earlier = False
        if not self._select_previous_after:
            self._check_earlier()
            return
        self._select_previous_after = False
        messages = self._messages()
        current = self.selected
        above = messages[: messages.index(current)] if current in messages else []
        if above:
            self.select(above[-1])
        elif self._earlier is not None:  # a batch of tool calls only: keep going up
            self._load_earlier(select_previous=True)

    # -- selection and fork ---------------------------------------------------------------------

    def _messages(self) -> list[UserMessage | AssistantMessage]:
        return [w for w in self.children if isinstance(w, (UserMessage, AssistantMessage))]

    def select(self, message: UserMessage | AssistantMessage, *, scroll: bool = True) -> None:
        """Select ``message`` (a child of this view): highlight it, scroll it into view, post
        ``Selected``."""
        if self._selected is not None:
            self._selected.remove_class("-selected")
        self._selected = message
        message.add_class("-selected")
        if scroll:
            self.scroll_to_widget(message, animate=False)
        role = "user" if isinstance(message, UserMessage) else "assistant"
        self.post_message(self.Selected(message.index, role, chat_view=self))

    def on_focus(self, event: events.Focus) -> None:
        if self.selected is None and (messages := self._messages()):
            newest = messages[-1]
            # Do not jump away from the end of a long answer that is already in view.
            self.select(newest, scroll=not newest.region.overlaps(self.scrollable_content_region))

    def on_click(self, event: events.Click) -> None:
        widget = event.widget
        while widget is not None and widget is not self:
            if isinstance(widget, (UserMessage, AssistantMessage)):
                self.select(widget, scroll=False)
                return
            widget = widget.parent if isinstance(widget.parent, Widget) else None

    def action_select_previous(self) -> None:
        """Select the message above; past the first mounted one, mount the batch before it."""
        messages = self._messages()
        current = self.selected
        if current is None:
            if messages:
                self.select(messages[-1])
            return
        position = messages.index(current)
        if position > 0:
            self.select(messages[position - 1])
        elif self._earlier is not None:
            self._load_earlier(select_previous=True)
        else:
            self.scroll_home(animate=False)

    def action_select_next(self) -> None:
        """Select the message below."""
        messages = self._messages()
        current = self.selected
        if current is None:
            if messages:
                self.select(messages[-1])
            return
        position = messages.index(current)
        if position + 1 < len(messages):
            self.select(messages[position + 1])

    def action_select_first(self) -> None:
        """Select the first mounted message and show the top (where the batch before it loads)."""
        if messages := self._messages():
            self.select(messages[0], scroll=False)
        self.scroll_home(animate=False)

    def action_select_last(self) -> None:
        """Select the newest message and follow new output again."""
        if messages := self._messages():
            self.select(messages[-1], scroll=False)
        self.anchor()

    def action_fork(self) -> None:
        """Post ``ForkRequested`` for the selected message (a bell when none, or not stored)."""
        message = self.selected
        if message is None or message.index is None:
            self.app.bell()
            return
        if isinstance(message, UserMessage):
            self.post_message(self.ForkRequested(message.index, "user", message.text, chat_view=self))
        else:
            self.post_message(self.ForkRequested(message.index, "assistant", message.source, chat_view=self))

    def older_messages_ready(self) -> None:
        """The entries of the loaded list that were None are filled in: mount older messages now
        if the view is already near the top."""
        self._check_earlier()

    def clear(self) -> None:
        """Remove every message (a streaming answer stops with its widget)."""
        self.workers.cancel_group(self, "chat-load")
        self.workers.cancel_group(self, "chat-earlier")
        self._current = None
        self._selected = None
        self._tool_lines.clear()
        self._stored, self._first, self._earlier = [], 0, None
        self._markers_at = {}
        self._loading_earlier = self._select_previous_after = False
        self._pin = None
        self.remove_children()


def _earlier_text(hidden: int) -> str:
    return f"{hidden:,} earlier message{'s' if hidden != 1 else ''} not shown yet: scroll up to load them"


class AssistantMessage(Vertical):
    """One assistant answer: optional thinking, finished chunks, and while streaming a live block.

    ``source`` is the answer text as received (sanitized); ``streaming`` is True until
    ``finish`` is called, ``done`` once the last widget is in place.
    """

    def __init__(self, *, streaming: bool, text: str = "", thinking: str = "", index: int | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.index = index
        """Position in the stored conversation; None while streaming or when not stored."""
        self.streaming = streaming
        self.done = not streaming
        self._streamed = streaming
        self._parts: list[str] = [text] if text else []
        self._stored_thinking = thinking
        self._pending_text: list[str] = []
        self._pending_thinking: list[str] = []
        self._backlog = ""  # received, not yet on screen
        self._tail = ""  # the unfinished last block, shown by the live markdown
        self._live: LiveBlock | None = None
        self._open: MarkdownChunk | None = None  # the last chunk, still taking finished blocks
        self._thinking: ThinkingBlock | None = None
        self._finish: tuple[dict | None, bool] | None = None
        self._chunks: list[MarkdownChunk] | None = None  # a stored answer's, when pre-rendered

    @property
    def source(self) -> str:
        """All answer text received so far, sanitized (deltas still buffered included)."""
        return "".join(self._parts) + sanitize("".join(self._pending_text))

    def compose(self) -> ComposeResult:
        if self._streamed:
            self._live = LiveBlock()
            yield self._live
            return
        if self._stored_thinking.strip():
            self._thinking = ThinkingBlock(self._stored_thinking, finished=True)
            yield self._thinking
        if self._chunks is None:
            chunks, last = split_markdown("".join(self._parts))
            self._chunks = [MarkdownChunk(chunk) for chunk in (*chunks, last) if chunk.strip()]
        yield from self._chunks

    def set_chunks(self, chunks: list[MarkdownChunk]) -> None:
        """Use these (pre-rendered) chunks for a stored answer; call before mounting."""
        self._chunks = chunks

    def on_mount(self) -> None:
        if self._streamed:
            self.run_worker(self._pump(), name="stream", group="stream")

    def write(self, kind: str, text: str) -> None:
        """Buffer a delta; ``kind`` is ``"text"`` or ``"thinking"``."""
        (self._pending_thinking if kind == "thinking" else self._pending_text).append(text)

    def finish(self, message: dict | None, interrupted: bool) -> None:
        """End the stream; the pump drains the buffer, then leaves only finished widgets."""
        self.streaming = False
        self._finish = (message, interrupted)

    async def _pump(self) -> None:
        """Show buffered text every ``FLUSH_INTERVAL`` s until finished; the only writer.

        Each round moves at most ``SHOW_CHARS`` on screen and awaits the update: one round,
        one bounded piece of work, however fast deltas arrive.
        """
        while True:
            finishing = self._finish is not None
            await self._take_pending()
            if finishing:
                self._adopt_final_text()
            await self._show_some()
            if finishing and not self._backlog and not self._pending_text:
                break
            await asyncio.sleep(FLUSH_INTERVAL)
        await self._finish_now()

    async def _take_pending(self) -> None:
        if self._pending_thinking:
            thinking = sanitize("".join(self._pending_thinking))
            self._pending_thinking.clear()
            if self._thinking is None:
                self._thinking = ThinkingBlock(thinking)
                await self.mount(self._thinking, before=0)
            else:
                self._thinking.append(thinking)
        if self._pending_text:
            text = sanitize("".join(self._pending_text))
            self._pending_text.clear()
            self._parts.append(text)
            self._backlog += text

    def _adopt_final_text(self) -> None:
        """When nothing streamed but the final message has text, show that text instead."""
        message = self._finish[0] if self._finish else None
        if message is None or "".join(self._parts).strip():
            return
        text = sanitize("".join(str(b.get("text", "")) for b in blocks(message) if b.get("type") == "text"))
        if text.strip():
            self._parts = [text]
            self._backlog = text

    async def _show_some(self) -> None:
        if not self._backlog or self._live is None:
            return
        piece, self._backlog = self._backlog[:SHOW_CHARS], self._backlog[SHOW_CHARS:]
        text = self._tail + piece
        head, rest = last_cut(text, LIVE_CHARS)
        self._tail = rest
        if not head:
            self._live.set_source(rest)
            return
        await self._add_finished(head, rest)

    async def _add_finished(self, head: str, live_rest: str | None = None) -> None:
        """Append finished blocks ``head`` to the open chunk, or to new chunks past ``CHUNK_CHARS``.

        Chunks are rendered in a worker thread first; swapping them in and replacing the live
        block's text by ``live_rest`` (when given) then happen in one batch: no flicker.
        """
        reuse = self._open if self._open is not None and len(self._open.source) < CHUNK_CHARS else None
        chunks, last = split_markdown((reuse.source if reuse else "") + head)
        sources = [c for c in (*chunks, last) if c.strip()]
        width = self._live.size.width if self._live is not None else self.size.width
        prepared = await prerender(sources, width, _code_theme(self.app))
        with self.app.batch_update():
            new: list[MarkdownChunk] = []
            for i, (source, rendered) in enumerate(zip(sources, prepared)):
                if i == 0 and reuse is not None:
                    reuse.set_source(source, rendered)
                else:
                    new.append(MarkdownChunk(source, rendered))
            if new:
                await self.mount_all(new, before=self._live)
            if live_rest is not None and self._live is not None:
                self._live.set_source(live_rest)
        self._open = new[-1] if new else reuse

    async def _finish_now(self) -> None:
        message, interrupted = self._finish or (None, False)
        if self._thinking is None and message is not None:
            thinking = "".join(str(b.get("thinking", "")) for b in blocks(message) if b.get("type") == "thinking")
            if thinking.strip():
                self._thinking = ThinkingBlock(sanitize(thinking))
                await self.mount(self._thinking, before=0)
        if self._thinking is not None:
            self._thinking.finished = True
            self._thinking.refresh()
        if self._tail.strip():
            await self._add_finished(self._tail, live_rest="")
        self._tail = ""
        with self.app.batch_update():
            if interrupted:
                await self.mount(Static(Content.styled("(interrupted)", "italic"), classes="interrupted"), before=self._live)
            if self._live is not None:
                await self._live.remove()
                self._live = None
        self.done = True


class LiveBlock(Static):
    """The block of an answer still being written, re-rendered as it grows.

    It renders as soon as its text changes and asks for a layout only when its height
    changed, so most rounds repaint this one widget instead of re-laying out the screen.
    """

    def __init__(self) -> None:
        super().__init__()
        self.source = ""
        self._rendered: _RenderOnce | None = None

    def set_source(self, source: str) -> None:
        """Show ``source`` (the unfinished block's markdown) from the next frame on."""
        if source == self.source:
            return
        self.source = source
        self._rendered = _RenderOnce(_RichMarkdown(source, code_theme=_code_theme(self.app)))
        width, height = self.size
        if width <= 0:
            self.refresh(layout=True)
            return
        self.refresh(layout=self._rendered.prerender(width) != height)

    def render(self) -> _RenderOnce:
        if self._rendered is None:
            self._rendered = _RenderOnce(_RichMarkdown(self.source, code_theme=_code_theme(self.app)))
        return self._rendered


class MarkdownChunk(Widget):
    """A finished piece of an answer, drawn line by line from ``rich.markdown.Markdown``.

    It keeps only its ``source`` and its height per width. The rendered lines live in a
    shared LRU of ``RENDERED_CHUNKS`` entries, so a long conversation holds the lines of the
    chunks on screen, not of every chunk: fewer objects for the garbage collector to walk
    (a 200 KB answer kept as Statics made gen-2 collections of 100–160 ms). A chunk scrolled
    back into view is rendered again (~20 ms per 4 KB).
    """

    DEFAULT_CSS = """
    MarkdownChunk {
        height: auto;
    }
    """

    def __init__(self, source: str, rendered: _Rendered | None = None) -> None:
        super().__init__()
        self.source = source
        """The markdown text this chunk renders."""
        self._heights: dict[int, int] = {}  # content width -> lines
        self.painted = False
        """Drawn since the last ``forget_lines``."""
        if rendered is not None:
            self._keep(rendered)

    def set_source(self, source: str, rendered: _Rendered | None = None) -> None:
        """Show ``source`` instead (``rendered`` by ``prerender``, if done already)."""
        for width in self._heights:  # the old text's lines will not be drawn again
            _LINES.discard((self.source, width, _code_theme(self.app)))
        self.source = source
        self._heights.clear()
        if rendered is not None:
            self._keep(rendered)
        self.refresh(layout=True)

    def _keep(self, rendered: _Rendered) -> None:
        (source, width, code_theme), lines = rendered
        if source == self.source:
            _LINES.set((source, width, code_theme), lines)
            self._heights[width] = len(lines)

    def _lines(self, width: int) -> list[list[Segment]]:
        key = (self.source, width, _code_theme(self.app))
        lines = _LINES.get(key)
        if lines is None:
            lines = _render_lines(*key)
            _LINES.set(key, lines)
        self._heights[width] = len(lines)
        return lines

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        height = self._heights.get(width)
        return len(self._lines(width)) if height is None else height

    def forget_lines(self) -> None:
        """Drop the strips Textual cached while this chunk was on screen (it is not now)."""
        if self.painted:
            self.painted = False
            self.refresh()  # a repaint request clears the widget's line cache; drawing waits

    def render_line(self, y: int) -> Strip:
        self.painted = True
        width = self.size.width
        style = self.rich_style
        lines = self._lines(width)
        if y >= len(lines):
            return Strip.blank(width, style)
        return Strip(Segment.apply_style(lines[y], style)).crop_extend(0, width, style)


class ThinkingBlock(Static):
    """Reasoning text, dim: its last lines while streaming, one line once finished; a click
    shows all of it (clipped to ``THINKING_CHARS``)."""

    def __init__(self, text: str = "", finished: bool = False) -> None:
        super().__init__()
        self.text = text
        self.finished = finished
        self.expanded = False

    def append(self, text: str) -> None:
        self.text += text
        self.refresh(layout=True)

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


class UserMessage(Static):
    """A prompt the person sent: ``text`` (sanitized, shown literally) and its ``index`` in the
    stored conversation (None when not known)."""

    def __init__(self, text: str, *, index: int | None = None) -> None:
        super().__init__(Content(text))
        self.text = text
        self.index = index


class Notice(Static):
    """A system line (info, warning, error), rendered as markdown."""

    def __init__(self, text: str, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self.text = text

    def render(self) -> RichMarkdown:
        return _RichMarkdown(self.text, code_theme=_code_theme(self.app))


class ToolCallLine(Static):
    """One compact line per tool call: ``▸ read  src/app.py``, then ``✓ read  src/app.py  0.4s``."""

    def __init__(self, tool_use_id: str, name: str, input: dict) -> None:
        super().__init__(classes="-running")
        self.tool_use_id = tool_use_id
        self.tool_name = sanitize(str(name))[:40]
        self.summary = tool_summary(input, 80)
        self.status = "running"
        """``"running"``, ``"ok"`` or ``"error"``."""
        self.elapsed: float | None = None

    def finish(self, is_error: bool, elapsed: float | None) -> None:
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


# -- rendering markdown cheaply ---------------------------------------------------------------


class _LeftHeading(RichHeading):
    """Rich's heading, left-aligned as the live Textual ``Markdown`` shows it."""

    LEVEL_ALIGN: ClassVar[dict] = {tag: "left" for tag in ("h1", "h2", "h3", "h4", "h5", "h6")}


class _RichMarkdown(RichMarkdown):
    elements: ClassVar[dict] = {**RichMarkdown.elements, "heading_open": _LeftHeading}

    def __init__(self, markup: str, code_theme: str = "monokai", **kwargs) -> None:
        # Inline `code` in the theme's code style too: Rich's default (bold cyan on black)
        # shows as black blocks on a light theme.
        super().__init__(markup, code_theme=code_theme, inline_code_lexer="text", inline_code_theme=code_theme, **kwargs)


class _RenderOnce:
    """A Rich renderable that renders its inner one once per width and replays the segments.

    Textual renders content twice per width (to measure its height, then to draw it); the
    live block is re-rendered every round, so the second pass is worth saving.
    """

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable
        self._width = -1
        self._segments: list[Segment] = []

    def prerender(self, width: int) -> int:
        """Render now at ``width`` cells (private console); returns the height in lines."""
        console = Console(file=io.StringIO(), width=width, force_terminal=True, color_system="truecolor", legacy_windows=False)
        self._segments = list(console.render(self.renderable, console.options.update(highlight=False)))
        self._width = width
        return sum(text.count("\n") for text, _, _ in self._segments)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if options.max_width != self._width:
            self._segments = list(console.render(self.renderable, options))
            self._width = options.max_width
        return self._segments

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.renderable)


def _code_theme(app: App) -> str:
    """The Pygments style for code blocks: the theme's ``syntax-style`` variable, else monokai."""
    return app.theme_variables.get("syntax-style") or "monokai"


_Rendered = tuple[tuple[str, int, str], list[list[Segment]]]
"""((source, width, code theme), lines of segments)."""

RENDERED_CHUNKS = 16
"""How many chunks' rendered lines are kept (the LRU behind ``MarkdownChunk``)."""

_LINES: LRUCache[tuple[str, int, str], list[list[Segment]]] = LRUCache(RENDERED_CHUNKS)


def _render_lines(source: str, width: int, code_theme: str) -> list[list[Segment]]:
    """Markdown ``source`` as lines of segments ``width`` cells wide (touches no DOM)."""
    console = Console(file=io.StringIO(), width=width, force_terminal=True, color_system="truecolor", legacy_windows=False)
    return console.render_lines(_RichMarkdown(source, code_theme=code_theme), console.options.update(highlight=False), pad=False)


async def prerender(sources: list[str], width: int, code_theme: str) -> list[_Rendered | None]:
    """Markdown ``sources`` rendered at ``width`` cells in a worker thread, for ``MarkdownChunk``.

    The thread holds the GIL in 5 ms slices (``sys.getswitchinterval``), so the event loop
    keeps running meanwhile. Width 0 (not laid out yet) renders nothing: chunks then render
    when first laid out.
    """
    if width <= 0:
        return [None] * len(sources)

    def work() -> list[_Rendered | None]:
        return [((source, width, code_theme), _render_lines(source, width, code_theme)) for source in sources]

    return await asyncio.to_thread(work)


# -- cutting growing markdown at block boundaries ---------------------------------------------

_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)")
_LIST_ITEM = re.compile(r"(?:[-*+]|\d{1,9}[.)])[ \t]")


def _fence_line(line: str, complete: bool) -> re.Match[str] | None:
    """A fence line per CommonMark 0.31 §4.5 (``` or ~~~ runs); an unfinished line never is."""
    if not complete or ("`" not in line and "~" not in line):
        return None
    match = _FENCE.match(line)
    if match and match.group(1)[0] == "`" and "`" in match.group(2):
        return None  # a backtick fence's info string may not contain backticks
    return match


def _closes(match: re.Match[str] | None, marker: str) -> bool:
    return bool(match) and match.group(1)[0] == marker[0] and len(match.group(1)) >= len(marker) and not match.group(2).strip()  # type: ignore[union-attr]


def _scan(source: str) -> Iterator[tuple[int, int, str, bool, re.Match[str] | None]]:
    """Each line of ``source``: ``(start, end, text, complete, fence match)``; the last may lack
    its newline (``complete`` False: then a fence line does not count yet, see ``_fence_line``)."""
    pos, total = 0, len(source)
    while pos < total:
        end = source.find("\n", pos)
        complete = end >= 0
        if not complete:
            end = total
        line = source[pos:end]
        yield pos, end, line, complete, _fence_line(line, complete)
        pos = end + 1


def split_markdown(source: str, size: int = CHUNK_CHARS) -> tuple[list[str], str]:
    """Cut markdown ``source`` into chunks of at least ``size`` characters: ``(chunks, rest)``.

    A cut falls where a non-indented, non-blank line follows a blank line outside any code
    fence (a new top-level block), so rendering the chunks one after another looks like
    rendering ``source``; a block with no blank line in ``2 * size`` characters is cut at a
    line start (a tight list between items, a paragraph between lines). A code fence longer
    than ``size`` is closed and reopened in the next chunk, so no chunk (and no highlighting
    pass) grows with the fence. ``rest`` is the
    text after the last cut (with a reopened fence line in front, if cut inside one).
    """
    chunks: list[str] = []
    start, prefix = 0, ""  # the current chunk is prefix + source[start:...]
    fence: tuple[str, str] | None = None  # (opening line, marker) while inside a fence
    fence_start = 0  # where the fence's part in the current chunk starts
    previous_blank = False
    for pos, end, line, complete, match in _scan(source):
        blank = not line.strip()
        if fence is not None:
            if _closes(match, fence[1]):
                fence = None
            elif complete and pos - fence_start >= size:
                chunks.append(prefix + source[start:pos] + fence[1] + "\n")
                start, prefix, fence_start = pos, fence[0], pos
        elif not blank:
            length = pos - start + len(prefix)
            # A new block after a blank line; or, in a block with no blank line for 2 x size
            # (a tight list, a huge paragraph), any plain line start.
            if line[0] not in " \t|" and length >= (size if previous_blank else 2 * size):
                chunks.append(prefix + source[start:pos])
                start, prefix = pos, ""
            if match:
                fence, fence_start = (line + "\n", match.group(1)), pos
        previous_blank = blank
    return chunks, prefix + source[start:]


def last_cut(source: str, limit: int = LIVE_CHARS) -> tuple[str, str]:
    """Cut growing markdown ``source`` where its last top-level block starts: ``(head, rest)``.

    ``head`` holds finished blocks only; ``rest`` is the block still being written (its look
    may change as text arrives). When that block is longer than ``limit`` it is cut too: a
    code fence at its last complete line (``head`` gets a closing fence line, ``rest`` the
    opening line again); a tight list before its last item; a long paragraph at a line start.
    ``("", source)`` when there is no cut point.
    """
    boundary = 0
    item = line_cut = 0  # last list item / plain line start after a non-blank line, outside fences
    fence: tuple[int, int, str] | None = None  # (line start, line end, marker) of an open fence
    previous_blank = True
    total = len(source)
    for pos, end, line, complete, match in _scan(source):
        blank = not line.strip()
        if fence is not None:
            if _closes(match, fence[2]):
                fence = None
        elif not blank:
            if line[0] not in " \t|":
                if previous_blank:
                    boundary = pos
                else:
                    line_cut = pos
                    if _LIST_ITEM.match(line):
                        item = pos
            if match:
                fence = (pos, end, match.group(1))
        previous_blank = blank
    if fence is not None:
        start, line_end, marker = fence
        last_line = source.rfind("\n", 0, total - 1) + 1
        if total - start > limit and last_line > line_end + 1:
            return source[:last_line] + marker + "\n", source[start : line_end + 1] + source[last_line:]
        return source[:boundary], source[boundary:]
    if total - boundary > limit:
        cut = item if item > boundary else line_cut
        if cut > boundary:
            return source[:cut], source[cut:]
    return source[:boundary], source[boundary:]
