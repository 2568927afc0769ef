"""The pieces of an HTML export, each a fragment of escaped HTML: message text as Markdown
(markdown-it-py, raw HTML off), code highlighted by Pygments (CSS classes, no inline styles),
unified diffs coloured by line, and one content block (text, thinking, image, tool call).

Nothing a model or a tool wrote reaches the page unescaped: markdown-it escapes text and raw
HTML (its ``html`` option off), everything else goes through ``html.escape``.
"""

from __future__ import annotations

import functools
import json
from html import escape
from typing import TYPE_CHECKING, Any

from scout_tui.core.diffs import diff_lines
from scout_tui.core.messages import result_text
from scout_tui.core.text import tool_summary

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

CODE_CLASS = "code"
"""The class of every highlighted ``<pre>``; ``code_css`` scopes the Pygments rules to it."""
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""Images kept in the page as ``data:`` URIs (no SVG: it could carry a script)."""


@functools.cache
def _parser() -> MarkdownIt:
    """CommonMark with GFM tables, strikethrough and task lists, as the chat's parser reads answers
    (``widgets/markdown_render.py``), raw HTML off (shown as text), images off (``![a](url)``
    would make the browser fetch ``url``: it reads as a link instead), fences highlighted."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.tasklists import tasklists_plugin

    parser = MarkdownIt("commonmark", {"html": False, "highlight": _fence}).enable("strikethrough").enable("table")
    return parser.use(tasklists_plugin).disable("image")


def markdown(text: str) -> str:
    """``text`` (CommonMark) as HTML; links keep their (http, https, mailto) targets, markdown-it
    refuses ``javascript:`` and ``data:`` ones (``validateLink``)."""
    return _parser().render(text)


def _fence(code: str, lang: str, _attrs: str) -> str:
    return highlight(code, lang.split(maxsplit=1)[0] if lang.strip() else "")


def highlight(code: str, language: str = "") -> str:
    """``code`` in ``<pre class="code">`` with Pygments' token classes for ``language`` (a
    Pygments lexer name or alias); escaped plain text for an unknown or empty one."""
    from pygments import highlight as pygmentize
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name(language) if language else None
    except ClassNotFound:
        lexer = None
    body = pygmentize(code, lexer, HtmlFormatter(nowrap=True)) if lexer is not None else escape(code)
    return f'<pre class="{CODE_CLASS}"><code>{body}</code></pre>\n'


def code_css(style: str) -> str:
    """The CSS of Pygments style ``style`` (e.g. ``monokai``; an unknown one: ``default``) for
    ``highlight``'s output, its background included."""
    from pygments.formatters import HtmlFormatter
    from pygments.util import ClassNotFound

    try:
        formatter = HtmlFormatter(style=style)
    except ClassNotFound:
        formatter = HtmlFormatter(style="default")
    return str(formatter.get_style_defs(f".{CODE_CLASS}"))


def diff(text: str) -> str:
    """A unified diff in ``<pre class="diff">``, each line a span classed by its kind
    (``diffs.diff_lines``: ``d-add``, ``d-remove``, ``d-hunk``, ``d-file``, ``d-context``, ``d-note``)."""
    lines = "".join(f'<span class="d-{kind}">{escape(line)}\n</span>' for kind, line in diff_lines(text))
    return f'<pre class="diff">{lines}</pre>\n'


def tool_call(use: dict, result: dict | None, details: dict[str, Any]) -> str:
    """A tool call as a collapsed ``<details>``: its name and a one-line summary (the state when
    it failed or has no result), then its input (JSON), its output and its diff (``details``:
    ``Store.tool_details``' entry for the call)."""
    name, given = str(use.get("name") or "?"), use.get("input", {})
    state = "" if result is not None else ' <span class="state warn">no result</span>'
    if result is not None and result.get("is_error"):
        state = ' <span class="state error">error</span>'
    elapsed = details.get("elapsed")
    took = f' <span class="dim">{elapsed:.1f} s</span>' if isinstance(elapsed, (int, float)) else ""
    parts = [f'<details class="tool" id="t-{escape(str(use.get("id") or ""))}"><summary><span class="tool-name">'
             f"{escape(name)}</span> <code>{escape(tool_summary(given, 100))}</code>{state}{took}</summary>",
             '<div class="tool-body"><div class="label">input</div>',
             highlight(json.dumps(given, ensure_ascii=False, indent=2), "json")]
    if result is not None:
        parts += ['<div class="label">output</div>', tool_output(result)]
    if details.get("diff"):
        parts += ['<div class="label">diff</div>', diff(str(details["diff"]))]
    if details.get("output_path"):
        parts.append(f'<div class="dim">whole output saved in {escape(str(details["output_path"]))}</div>')
    return "".join(parts) + "</div></details>\n"


def tool_output(result: dict) -> str:
    """A ``tool_result``'s text (``messages.result_text``) in ``<pre class="output">``."""
    error = " error" if result.get("is_error") else ""
    return f'<pre class="output{error}">{escape(result_text(result.get("content")))}</pre>\n'


def block(item: Any, results: dict[str, dict], paired: set[str], details: dict[str, dict]) -> str:
    """One content block of a message as HTML: ``text`` as Markdown; ``thinking`` collapsed;
    an ``image`` inline (base64 PNG, JPEG, GIF, WebP) or named; ``tool_use`` as ``tool_call``
    with its result from ``results`` (by ``tool_use_id``) and ``details`` (by id); a
    ``tool_result`` whose id is in ``paired`` is shown with its call, so nothing here; any other
    as its JSON, collapsed."""
    if not isinstance(item, dict):
        return f"<p>{escape(str(item))}</p>\n"
    kind = item.get("type")
    if kind == "text":
        return markdown(str(item.get("text") or ""))
    if kind == "thinking":
        text = escape(str(item.get("thinking") or item.get("text") or ""))
        return f'<details class="thinking"><summary>thinking</summary><div class="pre">{text}</div></details>\n'
    if kind == "redacted_thinking":
        return '<p class="dim">(thinking the provider keeps hidden)</p>\n'
    if kind == "tool_use":
        key = str(item.get("id") or "")
        return tool_call(item, results.get(key), details.get(key, {}))
    if kind == "tool_result":
        if str(item.get("tool_use_id") or "") in paired:
            return ""
        return f'<details class="tool"><summary>tool result</summary>{tool_output(item)}</details>\n'
    if kind == "image":
        return _image(item)
    shown = escape(json.dumps(item, ensure_ascii=False, indent=2, default=str))
    return f'<details class="block"><summary>{escape(str(kind))} block</summary><pre class="output">{shown}</pre></details>\n'


def _image(item: dict) -> str:
    source = item.get("source")
    source = source if isinstance(source, dict) else {}
    media, data = str(source.get("media_type") or ""), str(source.get("data") or "")
    if source.get("type") == "base64" and media in IMAGE_TYPES and data.replace("+", "").replace("/", "").rstrip("=").isalnum():
        return f'<img class="image" alt="image" src="data:{media};base64,{data}">\n'
    return f'<p class="dim">[image {escape(media)}]</p>\n'
