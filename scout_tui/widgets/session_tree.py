"""The sessions of this directory as a tree: newest first, forks under their parents.

Entries are duck-typed session infos with ``.id``, ``.parent`` (id or None), ``.title``,
``.message_count`` and ``.updated`` (epoch seconds). Labels are drawn at render time, so the
relative times and the theme's colours stay current.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from ..text import one_line

TITLE_WIDTH = 40
"""Characters of a session title shown at most."""


def relative_time(updated: float, now: float | None = None) -> str:
    """``updated`` (epoch seconds) relative to ``now``: "just now", "5m ago", "3h ago", "2d ago"."""
    seconds = max(0.0, (time.time() if now is None else now) - updated)
    if seconds < 60:
        return "just now"
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


class SessionTree(Tree[Any]):
    """Sessions, newest first; the current one marked "● ". Posts ``Opened`` on Enter or click."""

    DEFAULT_CSS = """
    SessionTree {
        height: 1fr;
        background: $surface;
        padding: 0 1;
        & > .session-tree--current {
            color: $primary;
            text-style: bold;
        }
        & > .session-tree--meta {
            color: $text-muted;
        }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {"session-tree--current", "session-tree--meta"}

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Open session", id="tree.open"),
    ]

    class Opened(Message):
        """The person chose a session to open."""

        def __init__(self, session_id: str) -> None:
            super().__init__()
            self.session_id = session_id

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__("sessions", id=id, classes=classes)
        self.show_root = False
        self.guide_depth = 2
        self.auto_expand = False  # selecting a parent opens it; it must not fold its forks
        self.current_id: str | None = None

    def on_mount(self) -> None:
        # "5m ago" goes stale: redraw the labels every half minute.
        self.set_interval(30, self._refresh_labels)

    def set_sessions(self, sessions: list, current_id: str | None) -> None:
        """Show ``sessions`` (forks nested under their parents, newest first at each level).

        The cursor stays on the session it was on, if that one is still listed. Posts nothing.
        """
        cursor = self.cursor_node.data.id if self.cursor_node is not None and self.cursor_node.data is not None else None
        self.current_id = current_id
        self.clear()
        by_id = {s.id: s for s in sessions}
        children: dict[str | None, list] = {}
        for session in sessions:
            parent = getattr(session, "parent", None)
            children.setdefault(parent if parent in by_id else None, []).append(session)
        nodes: dict[str, TreeNode[Any]] = {}

        def add(parent_node: TreeNode[Any], parent_id: str | None) -> None:
            for session in sorted(children.get(parent_id, ()), key=lambda s: s.updated or 0, reverse=True):
                kids = children.get(session.id)
                node = parent_node.add(Text(session.id), data=session, expand=True, allow_expand=bool(kids))
                nodes[session.id] = node
                add(node, session.id)

        add(self.root, None)
        target = nodes.get(cursor) or nodes.get(current_id)  # type: ignore[arg-type]
        if target is not None:
            self.last_line  # noqa: B018 - builds the tree lines so the node knows its line
            self.move_cursor(target)

    def render_label(self, node: TreeNode[Any], base_style: Style, style: Style) -> Text:
        session = node.data
        if session is None:
            return super().render_label(node, base_style, style)
        current = session.id == self.current_id
        title_style = self.get_component_rich_style("session-tree--current", partial=True) if current else Style()
        meta_style = self.get_component_rich_style("session-tree--meta", partial=True)
        title = one_line(str(session.title or ""), TITLE_WIDTH) or "(untitled)"
        count = int(session.message_count or 0)
        label = Text.assemble(
            ("● " if current else "  ", title_style),
            (title, title_style),
            (f"  {count} msg{'s' if count != 1 else ''} · {relative_time(float(session.updated or 0))}", meta_style),
        )
        label.stylize(style)
        return label

    def _refresh_labels(self) -> None:
        stack = list(self.root.children)
        while stack:
            node = stack.pop()
            node.refresh()
            stack.extend(node.children)

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        event.stop()
        if event.node.data is not None:
            self.post_message(self.Opened(event.node.data.id))
