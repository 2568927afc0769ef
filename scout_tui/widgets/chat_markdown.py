"""The widgets that draw an answer's markdown: ``MarkdownChunk`` for a finished piece, drawn
line by line from a shared cache, and ``LiveBlock`` for the block still being written."""

from __future__ import annotations

from rich.segment import Segment
from textual.geometry import Size
from textual.selection import Selection
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from .markdown_render import (LeftMarkdown, RenderOnce, Rendered, cached_lines, code_theme_of, drop_lines, keep_lines,
                              rough_height)


class MarkdownChunk(Widget):
    """A finished piece of an answer, drawn line by line from ``rich.markdown.Markdown``.

    It keeps only its ``source`` and its height per width. The rendered lines live in a
    shared LRU of ``RENDERED_CHUNKS`` entries, so a long conversation holds the lines of the
    chunks on screen, not of every chunk: fewer objects for the garbage collector to walk
    (a 200 KB answer kept as Statics made gen-2 collections of 100–160 ms). A chunk scrolled
    back into view is rendered again (~20 ms per 4 KB).

    At a width it was never rendered at (the terminal was resized), a chunk that knows its
    height at another width only *estimates* its height (``rough_height``, scaled by what it
    measured before) instead of rendering: a 500 KB answer is ~125 chunks, ~20 ms each, so
    re-layout would cost seconds on the event loop. ``ChatView`` measures the chunks near the
    view for real during layout (``measure``) and the rest in a worker thread
    (``set_height``); one drawn at a height it does not have asks for a layout.
    """

    DEFAULT_CSS = """
    MarkdownChunk {
        height: auto;
        margin: 0 0 1 0;
    }
    """

    def __init__(self, source: str, rendered: Rendered | None = None, *, estimated: bool = False) -> None:
        """A chunk of ``source``: ``rendered`` already (``prerender``), or ``estimated``: laid
        out at ``rough_height`` until measured, never rendered unless it comes near the view
        (what a burst scrolls past), else rendered when first laid out."""
        super().__init__()
        self.source = source
        """The markdown text this chunk renders."""
        self._heights: dict[int, int] = {}  # content width -> lines, as rendered
        self._estimates: dict[int, int] = {}  # content width -> lines, estimated
        self._rough = estimated and rendered is None  # no height known anywhere yet: rough_height
        self.painted = False
        """Drawn since the last ``forget_lines``."""
        if rendered is not None:
            self._keep(rendered)

    def set_source(self, source: str, rendered: Rendered | None = None) -> None:
        """Show ``source`` instead (``rendered`` by ``prerender``, if done already)."""
        for width in self._heights:  # the old text's lines will not be drawn again
            drop_lines(self.source, width, code_theme_of(self.app))
        self.source = source
        self._heights.clear()
        self._estimates.clear()
        if rendered is not None:
            self._keep(rendered)
        self.refresh(layout=True)

    def _keep(self, rendered: Rendered) -> None:
        (source, width, _), lines = rendered
        if source == self.source:
            keep_lines(rendered)
            self._heights[width] = len(lines)

    def _lines(self, width: int) -> list[list[Segment]]:
        lines = cached_lines(self.source, width, code_theme_of(self.app))
        self._heights[width] = len(lines)
        return lines

    def measured(self, width: int) -> bool:
        """Whether the height at ``width`` cells is known (rendered), not estimated."""
        return width in self._heights or not (self._heights or self._rough)

    def measure(self, width: int) -> None:
        """Render at ``width`` cells now (on the event loop), so the height there is exact."""
        if width > 0 and width not in self._heights:
            self._lines(width)

    def set_height(self, source: str, width: int, height: int) -> bool:
        """The height ``source`` has at ``width`` cells, measured elsewhere (a worker thread).

        Ignored when the chunk shows other text now, or knew that height already. Returns
        whether the layout changes (the height differs from the estimate used until now); the
        caller refreshes the layout.
        """
        if source != self.source or width in self._heights:
            return False
        self._heights[width] = height
        return self._estimates.get(width, height) != height

    def _estimate(self, width: int) -> int:
        estimate = self._estimates.get(width)
        if estimate is None:
            estimate = rough_height(self.source, width)
            if self._heights:  # scaled by what the last rendered width gave against the same guess there
                known, lines = next(reversed(self._heights.items()))
                estimate = round(estimate * lines / max(1, rough_height(self.source, known)))
            self._estimates[width] = estimate = max(1, estimate)
        return estimate

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        height = self._heights.get(width)
        if height is not None:
            return height
        return self._estimate(width) if self._heights or self._rough else len(self._lines(width))

    def forget_lines(self) -> None:
        """Drop the strips Textual cached while this chunk was on screen (it is not now)."""
        if self.painted:
            self.painted = False
            self.refresh()  # a repaint request clears the widget's line cache; drawing waits

    def render_line(self, y: int) -> Strip:
        self.painted = True
        width, height = self.size
        style = self.rich_style
        lines = self._lines(width)
        if len(lines) != height:
            # Laid out with an estimated height: ChatView measures what is in view, but only
            # for MEASURE_ROUNDS passes, and a chunk could live in another container.
            self.refresh(layout=True)
        if y >= len(lines):
            return Strip.blank(width, style)
        strip = Strip(Segment.apply_style(lines[y], style)).crop_extend(0, width, style)
        selection = self.text_selection
        if selection is not None and (span := selection.get_span(y)) is not None:
            start, end = span
            end = width if end == -1 else end
            chosen = self.screen.get_component_rich_style("screen--selection")
            strip = Strip.join([strip.crop(0, start), Strip(Segment.apply_style(strip.crop(start, end), post_style=chosen)),
                                strip.crop(end, width)])
        return strip.apply_offsets(0, y)  # where the mouse is, for Textual's text selection

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The text of the lines as drawn under ``selection`` (Textual's text selection; cell
        offsets, read as characters), and the "\n" that ends it."""
        lines = self._lines(self.size.width)
        text = "\n".join("".join(segment.text for segment in line).rstrip() for line in lines)
        return selection.extract(text), "\n"


class LiveBlock(Static):
    """The block of an answer still being written, re-rendered as it grows.

    It renders as soon as its text changes and asks for a layout only when its height
    changed, so most rounds repaint this one widget instead of re-laying out the screen.
    """

    def __init__(self) -> None:
        super().__init__()
        self.source = ""
        self._rendered: RenderOnce | None = None

    def set_source(self, source: str) -> None:
        """Show ``source`` (the unfinished block's markdown) from the next frame on."""
        if source == self.source:
            return
        self.source = source
        self._rendered = RenderOnce(LeftMarkdown(source, code_theme=code_theme_of(self.app)))
        width, height = self.size
        if width <= 0:
            self.refresh(layout=True)
            return
        self.refresh(layout=self._rendered.prerender(width) != height)

    def restyle(self) -> None:
        """The theme's code style changed: render the block again."""
        self._rendered = None
        self.refresh()

    def render(self) -> RenderOnce:
        if self._rendered is None:
            self._rendered = RenderOnce(LeftMarkdown(self.source, code_theme=code_theme_of(self.app)))
        return self._rendered
