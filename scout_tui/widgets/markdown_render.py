"""Markdown drawn by Rich as lines of segments, for the chat's answer widgets: once per width,
in a worker thread when it is a finished chunk, kept in a small LRU shared by all chunks.

Rich's ``Markdown`` (https://rich.readthedocs.io/en/stable/markdown.html) is used rather than
Textual's: see ``widgets/assistant_message.py`` for the measurements behind that choice. Its
markdown-it parser gets GitHub's task lists and two token rules of ours (``_parser``):
``LeftMarkdown`` is the one renderer of answer text, live or finished.
"""

from __future__ import annotations

import asyncio
import functools
import io
from typing import TYPE_CHECKING, ClassVar

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from textual.cache import LRUCache

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.rules_core import StateCore
    from rich.markdown import Markdown as RichMarkdown
    from textual.app import App

_NEW_LINE = Segment("\n")
"""The segment Rich puts between blocks."""

TASK_BOXES = {False: "\u2610", True: "\u2611"}
"""The glyph a task list item shows for its ``[ ]`` (☐) or ``[x]`` (☑), keyed by checked."""


@functools.cache
def _parser() -> MarkdownIt:
    """The markdown-it parser of answer text, made once (it is ~0.2 ms to make, and parsing
    reads it only, so worker threads share it): Rich's own (CommonMark, strikethrough, tables)
    without raw HTML, plus GFM task lists (``mdit_py_plugins.tasklists``, https://github.github.com/gfm/#task-list-items-extension-)
    with their checkboxes as glyphs (``_task_boxes``), and each link's target shown after its
    text (``_link_targets``).

    Raw HTML is off (markdown-it's ``html`` option): Rich draws no HTML token, so with it on a
    model's ``<<Files staged successfully>>`` (a valid open tag inside ``<>``), ``<div>`` or
    ``<!-- note -->`` vanished from the chat. Off, they are text and show as written, as GitHub
    shows them escaped; autolinks (``<https://x.org>``) are a rule of their own and stay links."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.tasklists import tasklists_plugin

    parser = MarkdownIt("commonmark", {"html": False}).enable("strikethrough").enable("table").use(tasklists_plugin)
    parser.core.ruler.after("github-tasklists", "task_boxes", _task_boxes)
    parser.core.ruler.push("link_targets", _link_targets)
    return parser


def _task_boxes(state: StateCore) -> None:
    """Each task item's checkbox as text: the tasklists plugin puts an HTML ``<input>`` (with
    ``checked="checked"`` when ticked) first in the item's inline tokens, and Rich draws no HTML."""
    from markdown_it.token import Token

    for token in state.tokens:
        children = token.children
        if token.type == "inline" and children and children[0].type == "html_inline" \
                and 'class="task-list-item-checkbox"' in children[0].content:
            children[0] = Token("text", "", 0, content=TASK_BOXES['checked="checked"' in children[0].content])


def _link_targets(state: StateCore) -> None:
    """After each link whose text is not its address, the address in parentheses, a link too:
    ``[docs](https://x.org)`` reads "docs (https://x.org)", and both parts open the address in
    a terminal with OSC 8 hyperlinks (Rich's link style). An autolink (``<https://x.org>``) or a
    link whose text is its address shows the address once. The address is shown as markdown-it
    shows an autolink's (``normalizeLinkText``: percent-escapes decoded)."""
    from markdown_it.token import Token

    for token in state.tokens:
        if token.type != "inline" or not token.children or not any(c.type == "link_open" for c in token.children):
            continue
        children: list[Token] = []
        opened: Token | None = None
        label: list[str] = []
        for child in token.children:
            children.append(child)
            if child.type == "link_open":
                opened, label = child, []
            elif opened is None:
                continue
            elif child.type == "link_close":
                href = str(opened.attrGet("href") or "")
                shown = state.md.normalizeLinkText(href)
                text = "".join(label).strip()
                if opened.markup != "autolink" and href and text not in (href, shown, shown.removeprefix("mailto:")):
                    children += [Token("text", "", 0, content=" ("),
                                 Token("link_open", "a", 1, attrs={"href": href}),
                                 Token("text", "", 0, content=shown),
                                 Token("link_close", "a", -1),
                                 Token("text", "", 0, content=")")]
                opened = None
            elif child.type in ("text", "code_inline"):
                label.append(child.content)
            elif child.type in ("softbreak", "hardbreak"):
                label.append(" ")
        token.children = children


@functools.cache
def _left_markdown_class() -> type[RichMarkdown]:
    """``LeftMarkdown``'s class, made on first use: importing rich.markdown (markdown-it-py,
    ~60 modules, ~25 ms) waits until a message has markdown to show, after the first frame."""
    from rich.markdown import Heading as RichHeading
    from rich.markdown import Markdown as RichMarkdown

    class _LeftHeading(RichHeading):
        """Rich's heading, left-aligned as the live Textual ``Markdown`` shows it."""

        LEVEL_ALIGN: ClassVar[dict] = {tag: "left" for tag in ("h1", "h2", "h3", "h4", "h5", "h6")}

    class LeftMarkdown(RichMarkdown):
        """Rich's ``Markdown`` with left-aligned headings, inline code in the code theme, task
        list boxes and link targets (``_parser``)."""

        elements: ClassVar[dict] = {**RichMarkdown.elements, "heading_open": _LeftHeading}

        def __init__(self, markup: str, code_theme: str = "monokai", **kwargs) -> None:
            # Inline `code` in the theme's code style too: Rich's default (bold cyan on black)
            # shows as black blocks on a light theme.
            super().__init__("", code_theme=code_theme, inline_code_lexer="text", inline_code_theme=code_theme,
                             **kwargs)
            # Rich parses with a parser of its own making; the tokens it draws are ``parsed``.
            self.markup = markup
            self.parsed = _parser().parse(markup)

        def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
            # Rich puts a blank line before a block when the last block *closed* wanted one,
            # nested ones included: a text starting with a list, quote or table starts with a
            # blank line, and a list cut into pieces (markdown_cut) gets a gap at each cut.
            segments = iter(super().__rich_console__(console, options))
            first = next(segments, None)
            if first is not None and first != _NEW_LINE:
                yield first
            yield from segments

    return LeftMarkdown


def LeftMarkdown(markup: str, code_theme: str = "monokai", **kwargs) -> RichMarkdown:  # noqa: N802 (was a class)
    """Rich's ``Markdown`` of ``markup`` with left-aligned headings, inline code in
    ``code_theme``, ☐/☑ for task list items and each link's address after its text."""
    return _left_markdown_class()(markup, code_theme=code_theme, **kwargs)


class RenderOnce:
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


def code_theme_of(app: App) -> str:
    """The Pygments style for code blocks: the theme's ``syntax-style`` variable, else monokai."""
    return app.theme_variables.get("syntax-style") or "monokai"


Rendered = tuple[tuple[str, int, str], list[list[Segment]]]
"""((source, width, code theme), lines of segments)."""

RENDERED_CHUNKS = 16
"""How many chunks' rendered lines are kept (the LRU behind ``MarkdownChunk``)."""

_LINES: LRUCache[tuple[str, int, str], list[list[Segment]]] = LRUCache(RENDERED_CHUNKS)


def warm_up(code_theme: str) -> None:
    """Import and set up what the first rendered answer needs (rich.markdown, markdown-it, a
    Pygments lexer and ``code_theme``'s style): ~60 modules and tens of ms, which would
    otherwise land on the event loop in the first round of the first streamed answer. For a
    worker thread, after the first frame."""
    render_lines("# Warm\n\nText with `code`.\n\n```python\nx = 1\n```\n", 40, code_theme)


def render_lines(source: str, width: int, code_theme: str) -> list[list[Segment]]:
    """Markdown ``source`` as lines of segments ``width`` cells wide (touches no DOM)."""
    console = Console(file=io.StringIO(), width=width, force_terminal=True, color_system="truecolor", legacy_windows=False)
    return console.render_lines(LeftMarkdown(source, code_theme=code_theme), console.options.update(highlight=False), pad=False)


def cached_lines(source: str, width: int, code_theme: str) -> list[list[Segment]]:
    """``render_lines`` through the shared LRU: rendered only when not kept already."""
    key = (source, width, code_theme)
    lines = _LINES.get(key)
    if lines is None:
        lines = render_lines(*key)
        _LINES.set(key, lines)
    return lines


def keep_lines(rendered: Rendered) -> None:
    """Put lines made by ``prerender`` in the shared LRU."""
    key, lines = rendered
    _LINES.set(key, lines)


def drop_lines(source: str, width: int, code_theme: str) -> None:
    """Forget the lines of text that will not be drawn again."""
    _LINES.discard((source, width, code_theme))


def rough_height(source: str, width: int) -> int:
    """A cheap guess at the lines markdown ``source`` takes ``width`` cells wide: each source
    line wrapped as plain text (no markup, no reflow). Only useful relative to the same guess
    at another width (``MarkdownChunk`` scales a rendered height by it): ~10 µs per 4 KB
    where rendering takes ~20 ms."""
    width = max(1, width)
    return sum((len(line) + width - 1) // width or 1 for line in source.split("\n"))


async def measure_heights(sources: list[str], width: int, code_theme: str) -> list[int]:
    """The height in lines of each of markdown ``sources`` rendered ``width`` cells wide,
    rendered in a worker thread; the lines are not kept (most are far from the view)."""

    def work() -> list[int]:
        return [len(render_lines(source, width, code_theme)) for source in sources]

    return await asyncio.to_thread(work)


async def prerender(sources: list[str], width: int, code_theme: str) -> list[Rendered | None]:
    """Markdown ``sources`` rendered at ``width`` cells in a worker thread, for ``MarkdownChunk``.

    The thread holds the GIL in 5 ms slices (``sys.getswitchinterval``), so the event loop
    keeps running meanwhile. Width 0 (not laid out yet) renders nothing: chunks then render
    when first laid out.
    """
    if width <= 0:
        return [None] * len(sources)

    def work() -> list[Rendered | None]:
        return [((source, width, code_theme), render_lines(source, width, code_theme)) for source in sources]

    return await asyncio.to_thread(work)
