"""A session's whole tree as one self-contained HTML page: every branch's conversation (each
message once, in the branch that stores it), tool calls with their output and diffs, compactions
and checkpoints where they happened, costs, the branch tree to navigate, the theme's colours.

``read_tree`` reads the store (call it off the UI loop); ``to_html`` is pure. The page fetches
nothing: its style and script are inline, a Content-Security-Policy forbids any other source,
and its script (branch switching) is optional: without it every branch is a section to scroll to.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from html import escape
from importlib import resources
from typing import TYPE_CHECKING, Any

from scout_tui.core.figures import tokens
from scout_tui.core.messages import blocks, tool_results, tool_uses
from scout_tui.core.redaction import redact, redact_deep
from scout_tui.session import html_parts
from scout_tui.session.compacting import compaction_info
from scout_tui.session.cost import UNKNOWN, cost_text, headline, model_rows

if TYPE_CHECKING:
    from scout_tui.store.event_log import SessionInfo, Store

COLOUR_NAMES = (
    "background", "foreground", "surface", "panel", "primary", "secondary", "accent", "success", "warning", "error",
    "user-message-background", "assistant-message-background", "diff-added", "diff-removed", "tree-current",
    "tree-fork",
)
"""The theme colours the page's CSS reads (as ``var(--NAME)``); its stylesheet holds scout-dark's
as defaults for any not given."""
SYNTAX_STYLE = "syntax-style"
"""The key of ``colours`` naming the Pygments style of code (as in a theme's variables)."""
_MODEL_HEAD = ("model", "requests", "input", "cache read", "cache write", "output", "cache hit", "cost")


@dataclass
class Branch:
    """One session of the tree and what it stores itself: ``messages`` from position ``start``
    (its fork point; 0 for the root), and its own compactions and checkpoint events, each with
    ``position``, the number of messages of its conversation when it was written."""

    info: SessionInfo
    depth: int
    start: int
    messages: list[dict]
    spending: dict[str, dict[str, float]]
    details: dict[str, dict[str, Any]]
    marks: list[tuple[int, str, dict]] = field(default_factory=list)
    """``(position, event type, data)``: ``session.compacted``, ``checkpoint``, ``checkpoint.restore``."""


@dataclass
class SessionTree:
    """What ``to_html`` shows: the branches of one tree in tree order (``tree_order``), the
    exported session's id, and when the export was made (Unix seconds)."""

    branches: list[Branch]
    current: str
    made: float


def read_tree(store: Store, session_id: str) -> SessionTree:
    """The tree ``session_id`` belongs to: its root and every branch under it the person made
    (deleted ones only on the way to ``session_id``; subagents' sessions left out, their work
    is in their ``task`` call's result; a subagent's own session is a tree of its own, as its
    ``Store.ancestry`` starts with it). Reads the store: call it in a thread.

    Raises:
        ScoutError: no session matches ``session_id`` (``Store.find``).
    """
    from scout_tui.store.queries import tree_order

    info = store.find(session_id)
    chain = store.ancestry(info.id)
    root, on_path = chain[0], {a.id for a in chain}
    listed = [s for s in store.sessions(None, include_deleted=True)
              if s.id in on_path or (s.kind is None and not s.deleted)]
    children: dict[str, list[SessionInfo]] = {}
    for s in listed:
        if s.parent is not None:
            children.setdefault(s.parent, []).append(s)
    members, todo = {root.id: root}, [root.id]
    while todo:
        for child in children.get(todo.pop(), []):
            if child.id not in members:
                members[child.id] = child
                todo.append(child.id)
    branches = []
    for member, depth in tree_order(list(members.values())):
        start = (member.fork_at or 0) if member.parent is not None and member.kind is None else 0
        branches.append(Branch(member, depth, start, store.messages(member.id, since=start), store.spending(member.id),
                               store.tool_details(member.id), _marks(store, member.id, start)))
    return SessionTree(branches, info.id, time.time())


def _marks(store: Store, session_id: str, start: int) -> list[tuple[int, str, dict]]:
    position, found = start, []
    for _, _, kind, data, _ in store.events(session_id):
        if kind in ("message.user", "message.assistant"):
            position += 1
        elif kind in ("session.compacted", "checkpoint", "checkpoint.restore"):
            found.append((position, kind, data))
    return found


def to_html(tree: SessionTree, colours: Mapping[str, str] | None = None, secrets: tuple[str, ...] = ()) -> str:
    """The page (UTF-8 text): a header, the branch tree (links ``#b-ID``), then one ``<section
    id="b-ID">`` per branch holding its own messages (``id="m-ID8-N"``, N numbered from 1 as
    ``scout-tui --fork ID:N`` counts) and marks. ``colours``: the theme's (``COLOUR_NAMES`` and
    ``SYNTAX_STYLE``, CSS colour strings); ``secrets``: replaced by ``[redacted]`` in everything
    shown (``redaction.redact_deep`` before rendering, ``redact`` over the page after).
    """
    colours = dict(colours or {})
    current = next(b for b in tree.branches if b.info.id == tree.current)
    script = _asset("export_html.js")
    css = _asset("export_html.css") + _theme_css(colours) + html_parts.code_css(colours.get(SYNTAX_STYLE, "monokai"))
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    policy = f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{digest}'"
    title = redact(current.info.shown_title, secrets)
    page = [
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="generator" content="scout-tui">',
        f"<title>{escape(title)} · scout-tui</title>\n<style>{css}</style></head>",
        f'<body data-current="{escape(tree.current)}">',
        _header(current.info, tree.made, secrets),
        '<div class="layout"><nav class="tree" aria-label="Branches"><h2>Branches</h2>',
        _tree(tree, secrets),
        '<p class="dim hint">Each branch\'s section holds the messages it added; those it shares are in its '
        "parent's, up to its fork point.</p></nav><main>",
        *(_section(tree, branch, secrets) for branch in tree.branches),
        f"</main></div>\n<script>{script}</script>\n</body></html>\n",
    ]
    return redact("\n".join(page), secrets)


def _asset(name: str) -> str:
    return resources.files("scout_tui.session").joinpath(name).read_text(encoding="utf-8")


def _theme_css(colours: Mapping[str, str]) -> str:
    """``:root`` custom properties for the given colours (those that are plain CSS colours)."""
    given = [f"--{name}: {value};" for name, value in colours.items()
             if name in COLOUR_NAMES and value and all(c.isalnum() or c in "#(),. %" for c in value)]
    return f"\n:root {{ {' '.join(given)} }}\n" if given else ""


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))


def _header(info: SessionInfo, made: float, secrets: tuple[str, ...]) -> str:
    cwd = redact(str(info.cwd or ""), secrets)
    return (f'<header class="top"><h1>{escape(redact(info.shown_title, secrets))}</h1><p class="dim">'
            f"session <code>{escape(info.id)}</code> · {escape(cwd)} · started {_when(info.created)} · "
            f"updated {_when(info.updated)} · exported {_when(made)} by scout-tui</p></header>")


def _tree(tree: SessionTree, secrets: tuple[str, ...]) -> str:
    """The branches as nested lists of links, each with its fork point, messages and own cost."""
    out, depth = ["<ul>"], 0
    for n, branch in enumerate(tree.branches):
        info = branch.info
        while depth < branch.depth:
            out.append("<ul>")
            depth += 1
        while depth > branch.depth:
            out.append("</ul></li>")
            depth -= 1
        if n:
            out.append("</li>" if out[-1] != "<ul>" else "")
        used = int(info.input_tokens or 0) + int(info.output_tokens or 0)
        mark = " current" if info.id == tree.current else ""
        out.append(f'<li><a class="branch-link{mark}" href="#b-{escape(info.id)}" data-branch="{escape(info.id)}">'
                   f"{escape(redact(info.shown_title, secrets))}</a> <span class=\"dim\">{_forked(info)}"
                   f"{info.message_count} msgs · {tokens(used)} tokens · {cost_text(float(info.cost or 0), used)}"
                   f"</span>")
    out.append("</li>" + "</ul></li>" * depth + "</ul>")
    return "".join(out)


def _forked(info: SessionInfo) -> str:
    """``forked at 3 · `` for a branch (the tree's lines show it is one; ``cost.branch_mark``'s
    ⑂ is missing from common web fonts), "" for the root."""
    return f"forked at {info.fork_at} · " if info.parent is not None and info.fork_at is not None else ""


def _section(tree: SessionTree, branch: Branch, secrets: tuple[str, ...]) -> str:
    info, sid = branch.info, branch.info.id
    deleted = ' <span class="dim">(deleted)</span>' if info.deleted else ""
    parent = next((b.info for b in tree.branches if b.info.id == info.parent), None)
    out = [f'<section class="branch" id="b-{escape(sid)}" data-branch="{escape(sid)}" '
           f'data-parent="{escape(info.parent or "") if parent else ""}" data-start="{branch.start}">',
           f'<div class="branch-head"><h2>{escape(redact(info.shown_title, secrets))}{deleted}</h2>']
    if parent is not None:
        shared = (f'messages 1–{branch.start} (<a href="#m-{parent.id[:8]}-{branch.start}">up to here</a>)'
                  if branch.start else "no messages")
        out.append(f'<p class="dim">A branch of <a href="#b-{escape(parent.id)}">'
                   f"{escape(redact(parent.shown_title, secrets))}</a>: it shares {shared}, then goes on with its own.</p>")
    out.append(_costs(branch))
    out.append("</div>")
    messages = redact_deep(branch.messages, secrets)
    results = {str(r.get("tool_use_id")): r for m in messages for r in tool_results(m)}
    called = {str(u.get("id")) for m in messages for u in tool_uses(m)}
    details = redact_deep(branch.details, secrets)
    marks = sorted(redact_deep(branch.marks, secrets), key=lambda mark: mark[0])
    for offset, message in enumerate(messages):
        index = branch.start + offset
        while marks and marks[0][0] <= index:
            out.append(_mark(sid, *marks.pop(0)))
        out.append(_message(sid, index, message, results, called, details))
    out += [_mark(sid, *mark) for mark in marks]
    if not messages:
        out.append('<p class="dim empty">No messages of its own yet.</p>')
    return "\n".join(out) + "\n</section>"


def _costs(branch: Branch) -> str:
    title, subtitle = headline(branch.spending)
    rows = model_rows(branch.spending)
    table = ""
    if rows:
        head = "".join(f"<th>{h}</th>" for h in _MODEL_HEAD)
        body = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows)
        table = f'<table class="costs"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    info = branch.info
    used = int(info.input_tokens or 0) + int(info.output_tokens or 0)
    own = cost_text(float(info.cost or 0), used)
    return (f'<details class="cost"><summary>{escape(title)} <span class="dim">({escape(subtitle)}; its own requests: '
            f"{tokens(used)} tokens, {own})</span></summary>{table}</details>")


def _message(sid: str, index: int, message: dict, results: dict[str, dict], called: set[str],
             details: dict[str, dict]) -> str:
    role = str(message.get("role") or "?")
    content = blocks(message)
    only_results = bool(content) and all(isinstance(b, dict) and b.get("type") == "tool_result"
                                         and str(b.get("tool_use_id")) in called for b in content)
    kind = "results" if only_results else role if role in ("user", "assistant") else "other"
    who = "tool results (with their calls above)" if only_results else {"user": "You", "assistant": "Assistant"}.get(role, role)
    body = "".join(html_parts.block(b, results, called, details) for b in content)
    if message.get("incomplete"):
        body += '<p class="dim">(incomplete: the answer was cut off)</p>'
    anchor = f"m-{sid[:8]}-{index + 1}"
    return (f'<article class="msg {kind}" id="{anchor}" data-owner="{escape(sid)}" data-index="{index}">'
            f'<div class="msg-head"><a href="#{anchor}">#{index + 1}</a> {escape(who)}</div>'
            f'<div class="msg-body">{body}</div></article>')


def _mark(sid: str, position: int, kind: str, data: dict) -> str:
    """A compaction or checkpoint between messages: shown to a branch that shares it (the
    script hides it like a message at ``data-index``: the turn or count it belongs to)."""
    if kind == "session.compacted":
        cost = data.get("cost")
        spent = f" Cost {cost_text(float(cost), 1)}." if isinstance(cost, (int, float)) else ""
        label = escape(f"Compacted by {data.get('model') or UNKNOWN}. {_try(compaction_info, data)}{spent}")
        summary = html_parts.markdown(str(data.get("summary") or ""))
        return (f'<details class="mark compaction" data-owner="{escape(sid)}" data-index="{int(data.get("count", position))}">'
                f"<summary>⇣ {label}</summary>{summary}</details>")
    if kind == "checkpoint":
        files = data.get("files") or []
        names = ", ".join(f"{f.get('path')} ({f.get('status')})" for f in files if isinstance(f, dict)) or "no files"
        skipped = f"; not kept: {', '.join(map(str, data.get('skipped') or []))}" if data.get("skipped") else ""
        text = f"⚑ Checkpoint of the turn at message {int(data.get('turn', 0)) + 1}: changed {names}{skipped}"
        index = int(data.get("turn", position))
    else:
        verb = "Redo" if data.get("redo") else "Undo"
        paths = ", ".join(map(str, data.get("paths") or [])) or "no files"
        text = f"↶ {verb} of the turn at message {int(data.get('turn', 0)) + 1}: wrote back {paths}"
        index = max(position - 1, 0)
    return f'<div class="mark checkpoint" data-owner="{escape(sid)}" data-index="{index}">{escape(text)}</div>'


def _try(describe: Any, data: dict) -> str:
    try:
        return str(describe(data))
    except (KeyError, TypeError, ValueError):  # an old event without a field: say the rest
        return ""

