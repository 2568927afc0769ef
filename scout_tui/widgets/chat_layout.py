"""The chat's layout, bounded by what is visible; ``ChatView`` holds one of each:

- ``StoredWindow``: a stored conversation opens with only its newest ``LOAD_LIMIT`` messages
  mounted; earlier batches mount above as the person scrolls near the top.
- ``VisibleLayout``: after a resize or a burst, only the answer chunks in or near the view are
  rendered before the frame; the rest keep an estimated height (``MarkdownChunk``), measured in
  a worker thread once no answer streams; the view stays on what the person was reading, or at
  the bottom when it follows the newest output, also when a batch goes in above it.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, AsyncIterator, Callable, Iterable, Iterator, NamedTuple, Sequence

from textual.containers import ScrollableContainer
from textual.geometry import Size
from textual.layout import DockArrangeResult
from textual.widget import Widget
from textual.widgets import Static
from textual.worker import WorkerCancelled, WorkerFailed

from .. import compat
from .assistant_message import AssistantMessage
from .chat_batch import build_batch
from .chat_markdown import MarkdownChunk
from .chat_messages import ToolCallLine
from .markdown_render import code_theme_of, measure_heights

if TYPE_CHECKING:
    from .chat_view import ChatView

LOAD_LIMIT = 24
"""Stored messages mounted at a time: the newest by ``ChatView.load``, then one batch more each
time the view comes within a screen of the top; the rest are counted in one line."""

VIEW_MARGIN = 0.5
"""Chunks this many view heights above and below the view are measured with the view's own."""

MEASURE_ROUNDS = 4
"""Layout passes at most to measure the chunks in view (each may bring a few more into view)."""

MEASURE_BATCH = 8
"""Chunks measured per worker-thread round after a resize (~20 ms each for 4 KB)."""

FORGET_INTERVAL = 2.0
"""Seconds between sweeps that let off-screen chunks drop their cached strips."""


class Part(NamedTuple):
    """Where a widget of the chat is in a layout, in the view's virtual rows: a child of the
    view, or a part of an answer (its chunks, thinking, "(interrupted)")."""

    y: int
    height: int
    width: int
    widget: Widget


class VisibleLayout:
    """The layout of one ``ChatView``, bounded by what is visible: its ``arrange`` (the view's
    delegates to it), the worker measuring the chunks left with an estimated height, the sweep
    that lets off-screen chunks forget their strips, and ``keeping_view`` for a batch mounted
    above. It keeps the last layout's parts, top to bottom."""

    def __init__(self, view: ChatView) -> None:
        self.view = view
        self._parts: list[Part] = []  # the last layout, top to bottom
        self._measuring = False  # a worker measures chunks whose height is estimated
        self._pin: tuple[Widget, int] | None = None  # (widget, its y before a batch went in above)

    def arrange(self, size: Size, arrange_all: Callable[[], DockArrangeResult]) -> DockArrangeResult:
        """The view's arrangement at ``size`` (its cells), bounded by what is visible, before
        it is painted; ``arrange_all`` is Textual's arrangement of all its children (called
        again after chunks were measured):

        - chunks in or near the view (``VIEW_MARGIN``) whose height at this width was only
          estimated are rendered, and the view arranged again (a resize so renders a few
          chunks on the event loop, not all of a long answer's); the rest are measured in a
          worker afterwards (``_measure_rest``);
        - when the view follows the newest output, Textual keeps it at the bottom; otherwise the
          row at the top of the view stays there, however heights changed above it;
        - after an earlier batch was mounted, it scrolls by the height that batch added.
        The view does not jump, even for one frame.
        """
        view = self.view
        reading = self._reading() if self._pin is None and not self.following else None
        arrangement = arrange_all()
        parts = _parts_of(arrangement)
        below = int(size.height * VIEW_MARGIN)
        # Following the newest output, the view stays at the bottom whatever the heights above
        # it: only what is in the view needs its real height (a burst's chunks scroll past).
        above = 0 if self.following else below
        for _ in range(MEASURE_ROUNDS):
            top = self._view_top(arrangement, parts, size.height, reading)
            stale = [(chunk, part.width) for part, chunk in _chunks(parts)
                     if part.y + part.height > top - above and part.y < top + size.height + below
                     and not chunk.measured(part.width)]
            if not stale:
                break
            for chunk, width in stale:
                chunk.measure(width)
                _relayout(chunk, view)
            arrangement = arrange_all()
            parts = _parts_of(arrangement)
        self._parts = parts
        if self._pin is not None:
            widget, was = self._pin
            for placement in arrangement.placements:
                if placement.widget is widget:
                    self._pin = None
                    self._scroll_now(max(0.0, view.scroll_y + placement.region.y - was))
                    break
        elif reading is not None:
            top = self._view_top(arrangement, parts, size.height, reading)
            if top != round(view.scroll_y):
                self._scroll_now(top)
        if not self._measuring and any(not chunk.measured(part.width) for part, chunk in _chunks(parts)):
            self._measure_after_refresh()
        return arrangement

    @property
    def following(self) -> bool:
        """Whether the view keeps to the bottom as content grows (``Widget.anchor``, not released)."""
        return self.view.is_anchored and not compat.anchor_released(self.view)

    @asynccontextmanager
    async def keeping_view(self, below: Sequence[Widget]) -> AsyncIterator[None]:
        """Mount a batch above what the person looks at (in this block, one screen update),
        keeping that where it is on screen: the first of ``below`` (the view's children after
        where the batch goes) still in view. Returns after the frame that shows the batch."""
        view = self.view
        keep = next((w for w in below if w.virtual_region.bottom > view.scroll_y), below[0] if below else None)
        was = keep.virtual_region.y if keep is not None else 0
        on_screen = was - view.scroll_y
        try:
            with view.app.batch_update():  # no layout until all is in, and the pin set
                yield
                if keep is not None:
                    self._pin = (keep, was)
            await view.wait_for_refresh()
            self._pin = None
            if keep is not None and keep.parent is view and not self.following:
                # Normally a no-op (``arrange`` scrolled already); it also moves the scrollbar.
                # Not when following the bottom (Textual keeps the view there): Textual's
                # scroll_to(immediate=True) releases the anchor whatever ``release_anchor`` says,
                # and the view would stay put while the rows above the last answer change height.
                view.scroll_to(y=keep.virtual_region.y - on_screen, animate=False, immediate=True, release_anchor=False)
                if view.show_vertical_scrollbar:
                    view.vertical_scrollbar.position = view.scroll_y
        finally:
            self._pin = None

    def answer_drawn(self) -> None:
        """An answer is all drawn (``AssistantMessage.Drawn``): measure the chunks whose height
        was left estimated while it streamed."""
        if not self._measuring:
            self._measure_after_refresh()

    def forget_offscreen(self) -> None:
        """Let chunks that scrolled out of view drop their cached strips (every
        ``FORGET_INTERVAL`` seconds).

        Textual keeps every line a widget has drawn until it repaints; over a long answer that
        is tens of thousands of objects the garbage collector walks on every full collection.
        """
        view = self.view.region  # chunk regions are in screen space, even when scrolled out of view
        for chunk in self.view.query(MarkdownChunk):
            if chunk.painted and not chunk.region.overlaps(view):
                chunk.forget_lines()

    def clear(self) -> None:
        """The view's messages are going: stop measuring, drop the pin."""
        self.view.workers.cancel_group(self.view, "chat-measure")
        self._pin = None

    def _scroll_now(self, y: float) -> None:
        # The compositor reads scroll_y right after arrange() (as it does for Widget.anchor);
        # watchers and clamping catch up after the refresh.
        self.view.set_reactive(ScrollableContainer.scroll_y, y)
        self.view.set_reactive(ScrollableContainer.scroll_target_y, y)

    def _reading(self) -> tuple[Part, int] | None:
        """What the top row of the view showed in the last layout: ``(its part, rows into
        it)``, rows negative when the row was a gap above it; None when nothing was there."""
        top = round(self.view.scroll_y)
        for part in self._parts:
            if part.y + part.height > top:
                return part, top - part.y
        return None

    def _view_top(self, arrangement: DockArrangeResult, parts: list[Part], height: int,
                  reading: tuple[Part, int] | None) -> int:
        """The virtual row that will be at the top of a view ``height`` rows tall."""
        bottom = max(0, arrangement.total_region.bottom - height)
        if self.following:
            return bottom
        top = round(self.view.scroll_y)
        if reading is None:
            return top
        was, into = reading
        part = next((p for p in parts if p.widget is was.widget), None)
        if part is None or (part.y, part.height) == (was.y, was.height):
            return top  # gone, or where it was: nothing to correct
        if part.width != was.width and into > 0 and was.height:
            into = round(into * part.height / was.height)  # rewrapped: the same share of it above the view
        return max(0, min(part.y + into, bottom))

    def _measure_after_refresh(self) -> None:
        self._measuring = True
        self.view.call_after_refresh(self._start_measuring)

    def _start_measuring(self) -> None:
        if self.view.drawing:
            # Rendering in a thread competes with the stream's frames for the GIL: wait until
            # the answer is drawn (answer_drawn).
            self._measuring = False
            return
        self.view.run_worker(self._measure_rest(), name="measure", group="chat-measure", exclusive=True)

    async def _measure_rest(self) -> None:
        """Measure the chunks laid out with an estimated height, in a worker thread, nearest
        the view first, ``MEASURE_BATCH`` at a time; then one layout for all whose height was
        off (``arrange`` keeps the view where it was). A layout costs a full repaint, so not one
        per batch; a chunk drawn meanwhile corrects itself (``MarkdownChunk.render_line``)."""
        changed: list[MarkdownChunk] = []
        try:
            while True:
                pending = [(part, chunk) for part, chunk in _chunks(self._parts)
                           if part.width > 0 and not chunk.measured(part.width)]
                if not pending:
                    return
                top = self.view.scroll_y
                pending.sort(key=lambda pair: abs(pair[0].y - top))
                width = pending[0][0].width
                batch = [chunk for part, chunk in pending if part.width == width][:MEASURE_BATCH]
                sources = [chunk.source for chunk in batch]
                heights = await measure_heights(sources, width, code_theme_of(self.view.app))
                changed += [chunk for chunk, source, height in zip(batch, sources, heights)
                            if chunk.set_height(source, width, height)]
        finally:
            self._measuring = False
            for chunk in changed:
                chunk.refresh(layout=True)


class StoredWindow:
    """Which messages of a stored conversation one ``ChatView`` has mounted: the newest
    ``LOAD_LIMIT`` at first, after a line counting the others; then, each time the view comes
    within a screen of the top, the batch before them, mounted above without moving what the
    person looks at (``VisibleLayout.keeping_view``)."""

    def __init__(self, view: ChatView, tool_lines: dict[str, ToolCallLine]) -> None:
        self.view = view
        self._tool_lines = tool_lines  # the view's tool-call lines by tool_use_id: a batch's join them
        self.messages: list[dict | None] = []  # the conversation given to load(), older entries None until read
        self._markers_at: dict[int, list[dict]] = {}  # compactions given to load(), by count
        self._first = 0  # index in messages of the oldest mounted message
        self._earlier: Static | None = None  # the "N earlier messages" line, while there are any
        self._loading = False  # a worker mounts the batch before the oldest mounted message
        self._select_previous = False  # Up was pressed on the first mounted message

    @property
    def loaded_count(self) -> int:
        """How many messages of the conversation given to ``load`` are mounted (see
        ``ChatView.loaded_count``)."""
        return len(self.messages) - self._first

    @property
    def more(self) -> bool:
        """Whether earlier messages wait to be mounted (a line counts them at the top)."""
        return self._earlier is not None

    def load(self, messages: list[dict | None], compactions: Iterable[dict]) -> None:
        """Mount the newest ``LOAD_LIMIT`` of ``messages`` (and of ``compactions``, their
        markers) in a worker, in an empty view (see ``ChatView.load``, which empties it)."""
        self.messages = messages
        self._first = len(messages)
        for data in compactions:
            self._markers_at.setdefault(int(data.get("count") or 0), []).append(data)
        if not messages and not self._markers_at:  # a new session: nothing to build
            return
        # The conversation may grow after this call (the caller appends new messages to the same
        # list, and shows them as they come): only the first ``count`` are the stored ones.
        self.view.run_worker(self._load(messages, len(messages)), name="load", group="chat-load", exclusive=True)

    def check_earlier(self) -> None:
        """Mount the previous batch when the view is within one screen of the top."""
        view = self.view
        if self._earlier is not None and not self._loading and view.scroll_y <= view.scrollable_content_region.height:
            self.load_earlier()

    def load_earlier(self, select_previous: bool = False) -> None:
        """Mount the batch before the oldest mounted message (once; in a worker); then, with
        ``select_previous``, select the message above the selected one."""
        self._select_previous = self._select_previous or select_previous
        if self._earlier is None or self._loading:
            return
        self._loading = True
        self.view.run_worker(self._mount_earlier(), name="earlier", group="chat-earlier", exclusive=True)

    async def mount_back_to(self, index: int) -> bool:
        """Mount the batches before the oldest mounted message until message ``index`` of the
        conversation is mounted; returns once no batch is being mounted (``mounted``). False
        when it cannot be: an index past the conversation, or older messages not read yet (None
        in the list given to ``load``)."""
        while True:
            await self.mounted()
            if not 0 <= index < len(self.messages):
                return False
            if self._first <= index or self._earlier is None:
                return self._first <= index
            if self.messages[max(0, self._first - LOAD_LIMIT)] is None:
                return False
            first = self._first
            self._loading = True  # as load_earlier does, awaited here
            await self._mount_earlier()
            if self._first == first:
                return False  # load() or clear() ran meanwhile

    async def mounted(self) -> None:
        """Return once no worker mounts a batch (the first one, or one above it). After this,
        until the caller awaits something, the view's children and scroll stay as they are: a
        batch mounted later keeps the view where the caller leaves it."""
        view = self.view
        while running := [w for w in view.workers if w.node is view and w.group in ("chat-load", "chat-earlier")
                          and not w.is_finished]:
            for worker in running:
                try:
                    await worker.wait()
                except (WorkerCancelled, WorkerFailed):
                    pass

    def clear(self) -> None:
        """The view's messages are going: stop mounting, forget the conversation."""
        self.view.workers.cancel_group(self.view, "chat-load")
        self.view.workers.cancel_group(self.view, "chat-earlier")
        self.messages, self._first, self._earlier = [], 0, None
        self._markers_at = {}
        self._loading = self._select_previous = False

    async def _load(self, messages: list[dict | None], count: int) -> None:
        view = self.view
        start = max(0, count - LOAD_LIMIT)
        widgets = await self._build(messages, start, count)
        if count in self._markers_at:
            from .compaction import CompactionMarker  # only where there are some: see chat_view

            widgets += [CompactionMarker(data) for data in self._markers_at[count]]
        earlier = Static(_earlier_text(start), classes="earlier", markup=False) if start else None
        # Anything added since load() was called comes after the stored conversation.
        await view.mount_all([earlier, *widgets] if earlier else widgets, before=0 if view.children else None)
        self._first, self._earlier = start, earlier
        if earlier is not None:
            await view.wait_for_refresh()
            self.check_earlier()

    async def _build(self, messages: list[dict | None], start: int, stop: int) -> list[Widget]:
        """Widgets for ``messages[start:stop]`` (see ``build_batch``); their tool-call lines
        join the ones ``tool_call_ended`` and later results can finish."""
        view = self.view
        # Chunks land in an AssistantMessage (padding 0 1) beside a scrollbar that a long
        # session will show: render at that width; a wrong guess only costs a re-render.
        width = view.scrollable_content_region.width - 2
        if not view.show_vertical_scrollbar:
            width -= view.styles.scrollbar_size_vertical
        widgets, lines = await build_batch(messages, start, stop, self._markers_at, width, code_theme_of(view.app))
        self._tool_lines.update(lines)
        return widgets

    async def _mount_earlier(self) -> None:
        """Mount the ``LOAD_LIMIT`` stored messages before the oldest mounted one, above it,
        keeping what the person looks at where it is on screen."""
        view = self.view
        try:
            earlier = self._earlier
            if earlier is None:
                return
            stop = self._first
            start = max(0, stop - LOAD_LIMIT)
            if self.messages[start] is None:
                return  # the app is still reading the older messages (see ScoutApp.open_session)
            widgets = await self._build(self.messages, start, stop)
            if earlier is not self._earlier:
                return  # load() or clear() ran meanwhile
            async with view.visible_layout.keeping_view(view.children[view.children.index(earlier) + 1 :]):
                await view.mount_all(widgets, after=earlier)
                if start:
                    earlier.update(_earlier_text(start))
                else:
                    await earlier.remove()
                    self._earlier = None
                self._first = start
        finally:
            self._loading = False
        if not self._select_previous:
            self.check_earlier()
            return
        self._select_previous = False
        if not view.select_beside(-1) and self._earlier is not None:
            self.load_earlier(select_previous=True)  # a batch of tool calls only: keep going up


def _earlier_text(hidden: int) -> str:
    return f"{hidden:,} earlier message{'s' if hidden != 1 else ''} not shown yet: scroll up to load them"


def _parts_of(arrangement: DockArrangeResult) -> list[Part]:
    """Where each child of the chat is in ``arrangement``, an answer's parts in its place."""
    parts: list[Part] = []
    for placement in arrangement.placements:
        widget, region = placement.widget, placement.region
        if isinstance(widget, AssistantMessage) and widget.children:
            # The same arrangement the compositor asks for next (Textual caches it by size).
            content = region.shrink(widget.styles.gutter)
            parts += [Part(content.y + sub.region.y, sub.region.height, sub.region.width, sub.widget)
                      for sub in widget.arrange(content.size).placements]
        else:
            parts.append(Part(region.y, region.height, region.width, widget))
    return parts


def _chunks(parts: list[Part]) -> Iterator[tuple[Part, MarkdownChunk]]:
    """The parts that are an answer's chunks, each with its chunk."""
    for part in parts:
        if isinstance(part.widget, MarkdownChunk):
            yield part, part.widget


def _relayout(widget: Widget, container: Widget) -> None:
    """Let ``widget``'s new height count in the layout pass under way, up to ``container``.

    Textual caches box models and arrangements on counters that ``refresh(layout=True)`` bumps
    only on the next idle (``Widget._check_refresh``), too late for this pass.
    """
    compat.count_layout_change(widget)
    for node in widget.ancestors:
        if isinstance(node, Widget):
            compat.clear_layout_cache(node)
        if node is container:
            break
