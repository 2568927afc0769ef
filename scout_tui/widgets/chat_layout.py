"""The chat's layout, bounded by what is visible (``VisibleLayout``, which ``ChatView`` holds):
after a resize or a burst, only the answer chunks in or near the view are rendered before the
frame; the rest keep an estimated height (``MarkdownChunk``), measured in a worker thread once no
answer streams; the view stays on what the person was reading, or at the bottom when it follows
the newest output, also when a batch of earlier messages goes in above it.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, AsyncIterator, Callable, Iterator, NamedTuple, Sequence

from textual.containers import ScrollableContainer
from textual.geometry import Size
from textual.layout import DockArrangeResult
from textual.widget import Widget

from .. import compat
from .assistant_message import AssistantMessage
from .chat_markdown import MarkdownChunk
from .markdown_render import code_theme_of, measure_heights

if TYPE_CHECKING:
    from .chat_view import ChatView

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
