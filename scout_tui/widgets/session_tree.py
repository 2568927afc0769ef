"""The session pane: every session of this directory as a tree, branches nested under their parents.

A line reads ``● ⑂ at 3 Title  failed · 7 msgs · 10m ago · 120k tok · $0.42``: "●" marks the
current session, "⑂ at 3" says the branch shares its parent's first 3 messages ("⑂ at 3 fork of
Title" while it has no prompt of its own), then the title, "failed" while its newest turn ended
in an error, message count, age, and what the session's own requests spent (tokens in and out,
dollars; left out while 0). Siblings are newest first; a branch whose parent is not listed
(deleted, or in another directory) is shown at the top level, still with its fork point. The
lines' text, fitted to the pane's width (parts left out whole, never cut), comes from
``session_rows.py``.

The open session's summary compactions (``set_compactions``) and the turns of it that changed
files (``set_checkpoints``) are leaves under its line, in message order, before its branches:
``⊟ compacted at msg 57: 142k → 9.0k tokens (auto)``, ``✎ msg 60: 2 files · notes.txt, app.py``
(``(undone)`` once ``/undo`` or a rewind took them back); their text comes from ``session_rows.py``.

Keys while the tree has focus: Enter opens the highlighted session, ``n`` asks for a new one,
``r`` renames (a prompt), ``d`` deletes (after a y/n question), ``j``/``k`` move down/up,
Space folds or unfolds a branch, ``/`` starts a filter. On a compaction leaf, ``u`` asks to
undo it (a fork before it); on a checkpoint leaf, Enter opens ``/diff`` at that turn's files;
``r`` and ``d`` do nothing on a leaf, nor Enter on a compaction.

Typing filters by title (case-insensitive substring; a session stays visible while one of its
descendants matches). A filter opens with ``/`` or with any printable key that no binding
claims (so not ``n``, ``r``, ``d``, ``j``, ``k`` or Space). While it is open *every* printable
key, those included, goes to the filter, shown in the pane's border subtitle; Backspace edits
it (and closes it once empty), Esc clears and closes it, Enter opens the highlighted session
and closes it. With no filter open, Esc is not handled here, so the app's Esc binding runs.
"""

from __future__ import annotations

import time
from typing import Callable, ClassVar, Iterable, Sequence

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from ..store.event_log import SessionInfo, tree_order
from ..core.text import one_line, sanitize
from .session_rows import (TITLE_WIDTH, CheckpointEntry, CompactionEntry, Leaf, checkpoint_entries, display_parents,
                           folded_note, leaf_label, session_label, shown_sessions, title_of)

RELABEL_SECONDS = 30
"""How often the ages ("5m ago") are redrawn."""

_NO_LABEL = Text()  # every node's stored label: render_label draws from the session
_TOGGLE = Style.from_meta({"toggle": True})  # a click here folds/unfolds, as on Tree's own icon

NodeData = SessionInfo | CompactionEntry | CheckpointEntry
"""What a node of the tree holds: a session, or (a leaf) one of its compactions or checkpoints."""


class SessionTree(Tree[NodeData]):
    """The sessions of one directory; see the module docstring for what it shows and its keys.

    Feed it with ``set_sessions``, ``set_compactions`` and ``set_checkpoints``. It tells its
    parent what the person asked for by posting ``Opened``, ``NewRequested``, ``RenameRequested``,
    ``DeleteRequested``, ``UndoCompactionRequested`` and ``DiffRequested``; it never changes the
    store itself.
    """

    DEFAULT_CSS = """
    SessionTree {
        height: 1fr;
        background: $surface;
        padding: 0 1;
        border-subtitle-align: left;
        border-subtitle-color: $foreground;
        &.-filtering {
            border-bottom: solid $tree-fork;
        }
        & > .session-tree--current {
            color: $tree-current;
            text-style: bold;
        }
        & > .session-tree--fork {
            color: $tree-fork;
            text-style: dim;
        }
        & > .session-tree--meta {
            color: $text-muted;
        }
        & > .session-tree--failed {
            color: $text-error;
        }
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "session-tree--current",
        "session-tree--fork",
        "session-tree--meta",
        "session-tree--failed",
    }

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Open", tooltip="Open the highlighted session", id="tree.open"),
        Binding("n", "new", "New", tooltip="Start a new session", id="tree.new"),
        Binding("r", "rename", "Rename", tooltip="Rename the highlighted session", id="tree.rename"),
        Binding("d", "delete", "Delete", tooltip="Delete the highlighted session (asks first)", id="tree.delete"),
        Binding("slash", "start_filter", "Filter",
                tooltip="Filter by title; typing any other unbound letter starts one too", id="tree.filter"),
        Binding("s", "search", "Search", tooltip="Search the words of every session: prompts, answers, tool output",
                id="tree.search"),
        Binding("escape", "clear_filter", "Clear filter",
                tooltip="Clear the filter (all letters go to it while it is open)", id="tree.clear_filter"),
        Binding("u", "undo_compaction", "Undo compaction",
                tooltip="Fork the session from before the highlighted compaction", id="tree.undo_compaction"),
        Binding("j", "cursor_down", "Down", show=False, id="tree.down"),
        Binding("k", "cursor_up", "Up", show=False, id="tree.up"),
    ]

    _rebuilding = False  # True while _rebuild runs

    default_clock: ClassVar[Callable[[], float]] = staticmethod(time.time)
    """The "now" (epoch seconds) of a tree built without a ``clock``; tests stop it."""

    filter_text: reactive[str | None] = reactive(None, init=False)
    """The title filter: None when closed, "" when just opened, else the text typed so far."""

    class Opened(Message):
        """The person chose a session to open (Enter or a click)."""

        def __init__(self, session_id: str) -> None:
            super().__init__()
            self.session_id = session_id

    class NewRequested(Message):
        """The person asked for a new session (``n``)."""

    class RenameRequested(Message):
        """The person renamed a session: ``title`` is the new title (non-empty, stripped)."""

        def __init__(self, session_id: str, title: str) -> None:
            super().__init__()
            self.session_id = session_id
            self.title = title

    class DeleteRequested(Message):
        """The person confirmed deleting a session (``d``, then y or Enter)."""

        def __init__(self, session_id: str) -> None:
            super().__init__()
            self.session_id = session_id

    class SearchRequested(Message):
        """The person asked to search the words of every session (``s``)."""

    class UndoCompactionRequested(Message):
        """``u`` on a compaction leaf: fork ``session_id`` at ``count`` (the message count when
        the compaction was made), which gives the conversation as it was before it."""

        def __init__(self, session_id: str, count: int) -> None:
            super().__init__()
            self.session_id = session_id
            self.count = count

    class DiffRequested(Message):
        """Enter on a checkpoint leaf: show the files the turn at message ``turn`` of
        ``session_id`` changed (``/diff`` at that turn)."""

        def __init__(self, session_id: str, turn: int) -> None:
            super().__init__()
            self.session_id = session_id
            self.turn = turn

    def __init__(
        self,
        *,
        clock: Callable[[], float] | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """``clock`` gives "now" in epoch seconds for the ages (a fixed one makes snapshots
        stable); without one, ``default_clock``."""
        super().__init__("sessions", id=id, classes=classes)
        self.show_root = False
        self.guide_depth = 3
        self.auto_expand = False  # Enter opens a session; it must not fold its branches
        self.clock = clock if clock is not None else type(self).default_clock
        self.current_id: str | None = None
        self._ordered: list[tuple[SessionInfo, int]] = []  # (session, depth) in display order
        self._parent_of: dict[str, str | None] = {}  # as displayed: None for a top-level session
        self._session_nodes: dict[str, TreeNode[NodeData]] = {}
        self._leaves: tuple[str, tuple[Leaf, ...]] | None = None  # (session id, its leaves in order)
        self._collapsed: set[str] = set()  # folded by the person, in the unfiltered view
        self._shape: tuple | None = None  # what the nodes were built from (see _show)
        self._bindings_state: tuple[bool, type] | None = None  # see _refresh_bindings

    def on_mount(self) -> None:
        self.set_interval(RELABEL_SECONDS, self._relabel)

    # -- feeding ------------------------------------------------------------------------------

    def set_sessions(self, sessions: Iterable[SessionInfo], current_id: str | None) -> None:
        """Show ``sessions`` (deleted ones are skipped), marking ``current_id`` as current.

        Cheap to call after every message: when the tree's shape (which sessions are shown,
        under which parent, in which order) is unchanged, the nodes stay and only changed
        labels are redrawn; otherwise the nodes are rebuilt. Either way the cursor stays on the
        session it was on (or, if that one is gone, on the line it was on), folded branches
        stay folded, and the current session's ancestors are unfolded. Posts nothing.
        """
        self._ordered = tree_order([s for s in sessions if not getattr(s, "deleted", False)])
        self._parent_of = display_parents(self._ordered)
        previous, self.current_id = self.current_id, current_id
        if current_id is not None and current_id != previous:
            self._reveal(current_id)
        self._show()
        for session_id in {previous, current_id}:
            if session_id is None:
                continue
            node = self._session_nodes.get(session_id)
            if node is not None:
                node.refresh()

    def set_compactions(self, session_id: str, entries: list[dict]) -> None:
        """Show ``entries`` (``session.compacted`` event data, as ``Store.compactions`` gives
        them, oldest first) as leaves under ``session_id``'s line, in message order with its
        checkpoint leaves; they replace the compaction leaves shown before (and any leaves of
        another session). ``[]`` removes them. Cheap when nothing changed; posts nothing.
        Leaves are hidden while a filter is open.
        """
        self._set_leaves(session_id, CompactionEntry, [CompactionEntry.from_event(session_id, d) for d in entries])

    def set_checkpoints(self, session_id: str, events: list[tuple[str, dict]]) -> None:
        """``set_compactions`` for the turns that changed files: ``events`` as
        ``Store.checkpoint_events`` gives them (a turn its restores took back reads "(undone)")."""
        self._set_leaves(session_id, CheckpointEntry, checkpoint_entries(session_id, events))

    def _set_leaves(self, session_id: str, kind: type, entries: Sequence[Leaf]) -> None:
        """Replace the leaves of ``kind``; those of another kind stay if they are ``session_id``'s."""
        old = self._leaves
        kept = [e for e in old[1] if not isinstance(e, kind)] if old is not None and old[0] == session_id else []
        leaves = tuple(sorted([*kept, *entries], key=lambda e: e.position))
        shown = (session_id, leaves) if leaves else None
        if shown != self._leaves:
            self._leaves = shown
            self._show()

    @property
    def highlighted_session(self) -> SessionInfo | None:
        """The session under the cursor, or None when the tree shows none (or the cursor is on
        a compaction leaf)."""
        data = self._cursor_data()
        return data if isinstance(data, SessionInfo) else None

    @property
    def highlighted_compaction(self) -> CompactionEntry | None:
        """The compaction leaf under the cursor, if it is on one."""
        data = self._cursor_data()
        return data if isinstance(data, CompactionEntry) else None

    def _cursor_data(self) -> NodeData | None:
        if self.cursor_line < 0:
            return None
        node = self.get_node_at_line(self.cursor_line)
        return node.data if node is not None else None

    def _show(self) -> None:
        """Bring the nodes in line with ``_ordered``, ``filter_text`` and ``_collapsed``."""
        ordered, parent_of = self._ordered, self._parent_of
        needle = (self.filter_text or "").casefold()
        rows = shown_sessions(ordered, parent_of, needle)
        shape = (bool(needle), tuple((info.id, parent_of[info.id]) for info in rows),
                 None if needle else self._leaves)
        if shape == self._shape:
            for info in rows:
                node = self._session_nodes[info.id]
                if node.data != info:
                    node.data = info
                    node.refresh()
        else:
            self._rebuild(rows, filtered=bool(needle), needle=needle)
            self._shape = shape
        self._show_filter(matches=bool(rows))
        self._refresh_bindings()

    def _rebuild(self, rows: list[SessionInfo], *, filtered: bool, needle: str) -> None:
        was_on = self._cursor_data()
        was_line = self.cursor_line
        self._rebuilding = True  # the cursor passes through -1: no binding refresh until done
        try:
            self._add_nodes(rows, filtered=filtered, needle=needle, was_on=was_on, was_line=was_line)
        finally:
            self._rebuilding = False

    def _add_nodes(self, rows: list[SessionInfo], *, filtered: bool, needle: str, was_on: NodeData | None,
                   was_line: int) -> None:
        self.clear()
        self.unselect()  # so moving the cursor below always updates Tree's cursor node
        has_children = {self._parent_of[info.id] for info in rows}
        with_leaves, leaves = self._leaves if self._leaves and not filtered else (None, ())
        has_children.add(with_leaves)
        nodes: dict[str, TreeNode[NodeData]] = {}
        leaf_nodes: dict[Leaf, TreeNode[NodeData]] = {}
        for info in rows:
            parent = self._parent_of[info.id]
            node = nodes[info.id] = (nodes[parent] if parent is not None else self.root).add(
                _NO_LABEL,
                data=info,
                expand=filtered or info.id not in self._collapsed,
                allow_expand=info.id in has_children,
            )
            if info.id == with_leaves:  # before its branches, which come later in display order
                for entry in leaves:
                    leaf_nodes[entry] = node.add(_NO_LABEL, data=entry, allow_expand=False)
        self._session_nodes = nodes
        if not nodes:
            return
        last = self.last_line  # lays out the lines, so every shown node knows its line

        def shown(node: TreeNode[NodeData] | None) -> TreeNode[NodeData] | None:
            return node if node is not None and node.line >= 0 else None

        target = None
        if isinstance(was_on, (CompactionEntry, CheckpointEntry)):
            target = shown(leaf_nodes.get(was_on))
        session_id: str | None = (was_on.id if isinstance(was_on, SessionInfo)
                                  else was_on.session_id if was_on is not None else None)
        if target is None and session_id in nodes:
            # Still listed, perhaps inside a folded branch: the nearest shown ancestor.
            while target is None and session_id is not None:
                target = shown(nodes.get(session_id))
                session_id = self._parent_of.get(session_id)
        if target is None and filtered:
            target = next((nodes[i.id] for i in rows if needle in title_of(i).casefold()), None)
        if target is None and was_on is not None:
            target = self.get_node_at_line(min(max(was_line, 0), last))  # it was deleted: stay put
        if target is None and self.current_id is not None:
            target = shown(nodes.get(self.current_id))
        self.move_cursor(target or self.get_node_at_line(0))

    def _reveal(self, session_id: str) -> None:
        """Unfold every ancestor of ``session_id`` (now, and in later rebuilds)."""
        parent = self._parent_of.get(session_id)
        while parent is not None:
            self._collapsed.discard(parent)
            node = self._session_nodes.get(parent)
            if node is not None and not node.is_expanded:
                node.expand()
            parent = self._parent_of.get(parent)

    def _relabel(self) -> None:
        for node in self._session_nodes.values():
            node.refresh()

    # -- drawing ------------------------------------------------------------------------------

    def process_label(self, label: str | Text) -> Text:
        # Labels are drawn from the node's session by render_label; the stored one is unused,
        # so skip Tree's markup parse and line split (a rebuild adds every node again).
        return label if isinstance(label, Text) else Text(label)

    def render_label(self, node: TreeNode[NodeData], base_style: Style, style: Style) -> Text:
        session = node.data
        if isinstance(session, (CompactionEntry, CheckpointEntry)):
            return self._leaf_label(node, session, style)
        if session is None:
            return super().render_label(node, base_style, style)
        current = session.id == self.current_id
        fork_style = self.get_component_rich_style("session-tree--fork", partial=True)
        styles = {
            "title": self.get_component_rich_style("session-tree--current", partial=True) if current else Style(),
            "fork": fork_style,
            "meta": self.get_component_rich_style("session-tree--meta", partial=True),
            "failed": self.get_component_rich_style("session-tree--failed", partial=True),
            "toggle": fork_style + _TOGGLE,
        }
        folded = ""
        if node.allow_expand and not node.is_expanded:
            kinds = [type(child.data) for child in node.children]
            folded = folded_note(kinds.count(SessionInfo), kinds.count(CompactionEntry), kinds.count(CheckpointEntry))
        parts = session_label(session, current=current, now=self.clock(), room=self._label_room(node), folded=folded)
        label = Text.assemble(*((text, styles[role]) for text, role in parts))
        label.stylize(style)
        return label

    def _label_room(self, node: TreeNode[NodeData]) -> int:
        """Cells a node's label has: the pane's width (less a scrollbar) less its guides,
        ``guide_depth`` cells a level (render_label draws no fold icon). A wide number before
        the first layout, so nothing is left out for want of a size."""
        width = self.scrollable_content_region.width
        if width <= 0:
            return 10_000
        depth, parent = 0, node.parent
        while parent is not None and parent is not self.root:
            depth, parent = depth + 1, parent.parent
        return width - depth * self.guide_depth

    def get_label_width(self, node: TreeNode[NodeData]) -> int:
        # Every label is fitted to its room in the pane (render_label), so no line needs a
        # horizontal scroll. Measured, a width taken before a vertical scrollbar appeared
        # would be 2 cells too wide for after, and add a horizontal one.
        return 0 if node.data is not None else super().get_label_width(node)

    def _leaf_label(self, node: TreeNode[NodeData], entry: Leaf, style: Style) -> Text:
        """``⊟ compacted at msg 57: 142k → 9.0k tokens (auto)`` or ``✎ msg 60: 2 files · a.py,
        b.py``, fitted, in the meta colour."""
        label = Text(leaf_label(entry, self._label_room(node)),
                     style=self.get_component_rich_style("session-tree--meta", partial=True))
        label.stylize(style)
        return label

    def _show_filter(self, *, matches: bool) -> None:
        if self.filter_text is None:
            self.border_subtitle = None
            return
        note = "" if matches or not self.filter_text else "  no match"
        self.border_subtitle = Content(f"/{sanitize(self.filter_text)}▏{note}")

    # -- keys ---------------------------------------------------------------------------------

    def on_key(self, event: events.Key) -> None:
        # Runs before any binding is looked up (bindings are checked as the key bubbles up to
        # the app), so stopping the event here keeps n, r, d, j and k for the filter.
        if self.filter_text is not None:
            if event.key == "backspace":
                self.filter_text = self.filter_text[:-1] if self.filter_text else None
            elif event.is_printable and event.character:
                self.filter_text += event.character
            else:
                return
        elif event.is_printable and event.character and event.key not in self.screen.active_bindings:
            self.filter_text = event.character
        else:
            return
        event.stop()
        event.prevent_default()

    def watch_filter_text(self, old: str | None, new: str | None) -> None:
        self.set_class(new is not None, "-filtering")
        if (old or "") != (new or ""):
            self._show()
        else:
            self._show_filter(matches=bool(self._session_nodes))
            self._refresh_bindings()

    def _refresh_bindings(self) -> None:
        # The Footer redraws all its keys on refresh_bindings (~10 ms): only ask when what
        # check_action answers can have changed, not after every message.
        data = self._cursor_data()
        state = (self.filter_text is None, type(data))
        if state != self._bindings_state:
            self._bindings_state = state
            self.refresh_bindings()

    def watch_cursor_line(self, previous_line: int, line: int) -> None:
        super().watch_cursor_line(previous_line, line)
        # Tree.__init__ moves the cursor too; a rebuild refreshes them once done (see _show).
        if self.is_mounted and not self._rebuilding:
            self._refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("new", "start_filter"):
            return self.filter_text is None
        if action in ("rename", "delete"):
            if self.filter_text is not None:
                return False
            return True if self.highlighted_session is not None else None
        if action == "clear_filter":
            return self.filter_text is not None  # False: Esc goes on to the app's binding
        if action == "undo_compaction":
            # False elsewhere: u is then free to start a filter, like any unbound letter.
            return self.filter_text is None and self.highlighted_compaction is not None
        return super().check_action(action, parameters)

    def action_start_filter(self) -> None:
        self.filter_text = ""

    def action_clear_filter(self) -> None:
        self.filter_text = None

    def action_search(self) -> None:
        self.post_message(self.SearchRequested())

    def action_new(self) -> None:
        self.post_message(self.NewRequested())

    def action_rename(self) -> None:
        session = self.highlighted_session
        if session is None:
            return

        def renamed(title: str | None) -> None:
            if title:
                self.post_message(self.RenameRequested(session.id, title))

        from .dialogs import PromptScreen  # a dialog: imported when first asked for, not at start-up

        value = sanitize(title_of(session)).replace("\n", " ").strip()
        self.app.push_screen(PromptScreen("Rename session", value, placeholder="title"), renamed)

    def action_undo_compaction(self) -> None:
        entry = self.highlighted_compaction
        if entry is not None:
            self.post_message(self.UndoCompactionRequested(entry.session_id, entry.count))

    def action_delete(self) -> None:
        session = self.highlighted_session
        if session is None:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.post_message(self.DeleteRequested(session.id))

        from .dialogs import ConfirmScreen

        title = one_line(title_of(session), TITLE_WIDTH) or session.id
        self.app.push_screen(ConfirmScreen(f"Delete session “{title}”?", yes="delete"), answered)

    # -- tree events ----------------------------------------------------------------------------

    def on_tree_node_selected(self, event: Tree.NodeSelected[NodeData]) -> None:
        event.stop()
        session = event.node.data
        if isinstance(session, CheckpointEntry):
            self.post_message(self.DiffRequested(session.session_id, session.turn))
        if not isinstance(session, SessionInfo):
            return  # a compaction leaf: u undoes it; Enter has nothing to open
        if self.filter_text is not None:
            self._reveal(session.id)
            self.filter_text = None
        self.post_message(self.Opened(session.id))

    def on_tree_node_collapsed(self, event: Tree.NodeCollapsed[NodeData]) -> None:
        if self.filter_text is None and isinstance(event.node.data, SessionInfo):
            self._collapsed.add(event.node.data.id)

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[NodeData]) -> None:
        if self.filter_text is None and isinstance(event.node.data, SessionInfo):
            self._collapsed.discard(event.node.data.id)
