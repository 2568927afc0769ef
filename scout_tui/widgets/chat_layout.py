"""The chat's layout, bounded by what is visible (a mixin of ``ChatView``): after a resize or a
burst, only the answer chunks in or near the view are rendered before the frame; the rest keep
an estimated height (``MarkdownChunk``), measured in a worker thread once no answer streams; the
view stays on what the person was reading, or at the bottom when it follows the newest output.
"""

from __future__ import annotations

from typing import NamedTuple, cast

from textual.containers import ScrollableContainer
from textual.geometry import Size
from textual.layout import DockArrangeResult
from textual.widget import Widget

from .. import compat
from .assistant_message import AssistantMessage
from .chat_markdown import MarkdownChunk
from .markdown_render import code_theme_of, measure_heights

VIEW_MARGIN = 0.5
"""Chunks this many view heights above and below the view are measured with the view's own."""

MEASURE_ROUNDS = 4
"""Layout passes at most to measure the chunks in view (each may bring a few more into view)."""

MEASURE_BATCH = 8
"""Chunks measured per worker-thread round after a resize (~20 ms each for 4 KB)."""


class Part(NamedTuple):
    """Where a widget of the chat is in a layout, in the view's virtual rows: a child of the
    view, or a part of an answer (its chunks, thinking, "(interrupted)")."""

    y: int
    height: int
    width: int
    widget: Widget


class VisibleLayout:
    """``arrange`` and the measuring worker for ``ChatView`` (a ``VerticalScroll``, after this
    in its bases); it keeps ``_parts`` (the last layout), ``_measuring`` and ``_pin`` (a widget
    to keep in place after a batch went in above it, and its old y)."""

    _parts: list[Part]
    _measuring: bool
    _pin: tuple[Widget, int] | None

    @property
    def drawing(self) -> bool:
        """Whether an answer is still being drawn (``ChatView.drawing``)."""
        raise NotImplementedError

    def arrange(self, size: Size, optimal: bool = False) -> DockArrangeResult:
        """Textual's arrangement, bounded by what is visible, before this layout is painted:

        - chunks in or near the view (``VIEW_MARGIN``) whose height at this width was only
          estimated are rendered, and the view arranged again (a resize so renders a few
          chunks on the event loop, not all of a long answer's); the rest are measured in a
          worker afterwards (``_measure_rest``);
        - when the view follows the newest output, Textual keeps it at the bottom; otherwise the
          row at the top of the view stays there, however heights changed above it;
        - after an earlier batch was mounted, it scrolls by the height that batch added.
        The view does not jump, even for one frame.
        """
        reading = self._reading() if self._pin is None and not self._following else None
        arrangement = super().arrange(size, optimal)
        parts = _parts_of(arrangement)
        below = int(size.height * VIEW_MARGIN)
        # Following the newest output, the view stays at the bottom whatever the heights above
        # it: only what is in the view needs its real height (a burst's chunks scroll past).
        above = 0 if self._following else below
        for _ in range(MEASURE_ROUNDS):
            top = self._view_top(arrangement, parts, size.height, reading)
            stale = [part for part in parts if isinstance(part.widget, MarkdownChunk)
                     and part.y + part.height > top - above and part.y < top + size.height + below
                     and not part.widget.measured(part.width)]
            if not stale:
                break
            for part in stale:
                part.widget.measure(part.width)
                _relayout(part.widget, self)
            arrangement = super().arrange(size, optimal)
            parts = _parts_of(arrangement)
        self._parts = parts
        if self._pin is not None:
            widget, was = self._pin
            for placement in arrangement.placements:
                if placement.widget is widget:
                    self._pin = None
                    self._scroll_now(max(0.0, self.scroll_y + placement.region.y - was))
                    break
        elif reading is not None:
            top = self._view_top(arrangement, parts, size.height, reading)
            if top != round(self.scroll_y):
                self._scroll_now(top)
        if not self._measuring and any(isinstance(part.widget, MarkdownChunk) and not part.widget.measured(part.width)
                                       for part in parts):
            self._measuring = True
            self.call_after_refresh(self._start_measuring)
        return arrangement

    def _scroll_now(self, y: float) -> None:
        # The compositor reads scroll_y right after arrange() (as it does for Widget.anchor);
        # watchers and clamping catch up after the refresh.
        self.set_reactive(ScrollableContainer.scroll_y, y)
        self.set_reactive(ScrollableContainer.scroll_target_y, y)

    @property
    def _following(self) -> bool:
        """Whether the view keeps to the bottom as content grows (``Widget.anchor``, not released)."""
        view = cast(Widget, self)  # this mixin is part of ChatView
        return view.is_anchored and not compat.anchor_released(view)

    def _reading(self) -> tuple[Part, int] | None:
        """What the top row of the view showed in the last layout: ``(its part, rows into
        it)``, rows negative when the row was a gap above it; None when nothing was there."""
        top = round(self.scroll_y)
        for part in self._parts:
            if part.y + part.height > top:
                return part, top - part.y
        return None

    def _view_top(self, arrangement: DockArrangeResult, parts: list[Part], height: int,
                  reading: tuple[Part, int] | None) -> int:
        """The virtual row that will be at the top of a view ``height`` rows tall."""
        bottom = max(0, arrangement.total_region.bottom - height)
        if self._following:
            return bottom
        top = round(self.scroll_y)
        if reading is None:
            return top
        was, into = reading
        part = next((p for p in parts if p.widget is was.widget), None)
        if part is None or (part.y, part.height) == (was.y, was.height):
            return top  # gone, or where it was: nothing to correct
        if part.width != was.width and into > 0 and was.height:
            into = round(into * part.height / was.height)  # rewrapped: the same share of it above the view
        return max(0, min(part.y + into, bottom))

    def _start_measuring(self) -> None:
        if self.drawing:
            # Rendering in a thread competes with the stream's frames for the GIL: wait until
            # the answer is drawn (on_assistant_message_drawn).
            self._measuring = False
            return
        self.run_worker(self._measure_rest(), name="measure", group="chat-measure", exclusive=True)

    def on_assistant_message_drawn(self, message: AssistantMessage.Drawn) -> None:
        if not self._measuring:
            self._measuring = True
            self.call_after_refresh(self._start_measuring)

    async def _measure_rest(self) -> None:
        """Measure the chunks laid out with an estimated height, in a worker thread, nearest
        the view first, ``MEASURE_BATCH`` at a time; then one layout for all whose height was
        off (``arrange`` keeps the view where it was). A layout costs a full repaint, so not one
        per batch; a chunk drawn meanwhile corrects itself (``MarkdownChunk.render_line``)."""
        changed: list[MarkdownChunk] = []
        try:
            while True:
                pending = [part for part in self._parts if part.width > 0
                           and isinstance(part.widget, MarkdownChunk) and not part.widget.measured(part.width)]
                if not pending:
                    return
                top = self.scroll_y
                pending.sort(key=lambda part: abs(part.y - top))
                width = pending[0].width
                batch = [part.widget for part in pending if part.width == width][:MEASURE_BATCH]
                sources = [chunk.source for chunk in batch]
                heights = await measure_heights(sources, width, code_theme_of(self.app))
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
