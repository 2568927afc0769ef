"""The side panes: the tool activity and sessions panes mounted once the first frame is painted,
Ctrl+T to the sessions pane and back (below 100 columns they are shown over the chat), the open
session's file checkpoints marked in the tree, and a leaf of the tree or ``d`` on a tool-pane
row opening ``/diff`` at its turn.

A feature of ``ScoutApp`` (app.py); the panes themselves are ``widgets/tool_activity.py`` and
``widgets/session_tree.py``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from textual.widget import Widget

from scout_tui.tui.feature import Feature, feature_work
from scout_tui.tui.main_screen import SIDE_PANES

if TYPE_CHECKING:
    from scout_tui.tui.sessions import CheckpointsLoaded
    from scout_tui.widgets import SessionTree, ToolActivity


class SidePanes(Feature):
    """The tool activity and sessions panes for ``ScoutApp``."""

    _before_tree: Widget | None = None
    """The widget focused before Ctrl+T went to the sessions pane."""

    file_checkpoints: tuple[tuple[str, dict], ...] = ()
    """The open session's ``checkpoint`` and ``checkpoint.restore`` events as
    ``Store.checkpoint_events`` gives them: read once it is shown, then those delivered since."""

    @feature_work(exclusive=True, group="side-panes")
    async def mount_side_panes(self) -> None:
        """Replace the side panes' stand-ins with the tool activity and sessions panes, show the
        open session in them (``Sessions.show_in_side_panes``) and set ``side_panes_ready``: the session
        list and a session's tool-call details are read once that is set (``Sessions._after_shown``)."""
        from scout_tui.widgets import SessionTree, ToolActivity

        tool_pane, tree = ToolActivity(id="tools"), SessionTree(id="tree")
        tool_pane.border_title, tree.border_title = SIDE_PANES["tools"], SIDE_PANES["tree"]
        side = self.app.query_one("#side")
        with self.app.batch_update():  # no frame without either (the stand-ins gone, the panes not in)
            await side.remove_children()
            await side.mount(tool_pane, tree)
        await tool_pane.wait_for_refresh()  # laid out: filling them scrolls to the newest rows
        tool_pane.may_change_files = self.tool_may_change_files
        self.app.tool_pane, self.app.tree_pane = tool_pane, tree
        self.app.sessions.show_in_side_panes()
        self.app.side_panes_ready.set()

    def checkpoints_loaded(self, message: CheckpointsLoaded) -> None:
        if message.session_id != self.app.session.id:
            return
        live = [e for e in self.file_checkpoints if e not in message.events]  # delivered while it was read
        self.file_checkpoints = (*message.events, *live)
        self.show_checkpoints()

    def add_checkpoint_event(self, kind: str, data: dict) -> None:
        """A ``checkpoint`` or ``checkpoint.restore`` event (its type and data) was delivered in the
        open session: the tree marks the turn, or marks it undone or done again."""
        self.file_checkpoints = (*self.file_checkpoints, (kind, data))
        self.show_checkpoints()

    def show_checkpoints(self) -> None:
        if self.app.session.id and self.app.tree_pane is not None:
            self.app.tree_pane.set_checkpoints(self.app.session.id, list(self.file_checkpoints))

    def tree_diff_requested(self, message: SessionTree.DiffRequested) -> None:
        if message.session_id != self.app.session.id:
            self.app.notify("Open that session first to see its changes.", severity="warning")
            return
        self.app.file_changes.show_diffs(message.turn)

    def tool_may_change_files(self, name: str) -> bool:
        """Whether a call of tool ``name`` may change files, as the agent judges before a turn's
        snapshot (``tool_runner``): a tool not read-only, or unknown. Before the agent is built,
        the plugins' tools, then the built-ins, answer."""
        from scout_tui.tools.base import may_change_files

        if self.app.session.agent is not None:
            tool = self.app.session.agent.tools.tools.get(name)
        else:
            from scout_tui.tools import builtin_registry

            tool = (self.app.plugins.tools.get(name) if self.app.plugins else None) or builtin_registry().tools.get(name)
        return may_change_files(tool)

    def call_diff_requested(self, message: ToolActivity.DiffRequested) -> None:
        self.show_diffs_of_call(message.tool_use_id)

    @feature_work(exclusive=True, group="call-diff")
    async def show_diffs_of_call(self, tool_use_id: str) -> None:
        """``/diff`` at the turn of call ``tool_use_id`` (once the whole conversation is read), or
        a notice that its turn changed no files."""
        from scout_tui.core.messages import tool_results, turn_of

        await self.app.history_ready.wait()
        turn = turn_of(self.app.session.messages, tool_use_id)
        if turn is None or self.app.session.id is None:
            self.app.notify("That call is not in this session's messages.", severity="warning")
            return
        events = await asyncio.to_thread(self.app.store.checkpoint_events, self.app.session.id)
        if any(kind == "checkpoint" and data.get("turn") == turn for kind, data in events):
            self.app.file_changes.show_diffs(turn)
            return
        name = self.app.file_changes.turn_name(turn)  # its prompt, as /diff and /undo name it
        name = name[0].upper() + name[1:]
        if self.app.busy and not any(m and m.get("role") == "user" and not tool_results(m)
                                 for m in self.app.session.messages[turn + 1:]):
            self.app.notify(f"{name} is still running: the files it changes are recorded when it ends.")
        else:
            self.app.notify(f"{name} changed no files.")

    @feature_work(group="tree-focus")
    async def toggle_tree(self) -> None:
        """Ctrl+T: to the sessions pane, and back to where the focus was (the composer at first).
        Pressed in the moment after the first frame, before the pane is mounted, it waits for it."""
        await self.app.side_panes_ready.wait()
        focused = self.app.screen.focused  # (``has_focus`` follows a moment later)
        if focused is self.app.tree_pane and self.app.screen.has_class("-narrow") and self.app.tool_pane is not None:
            self.app.screen.set_focus(self.app.tool_pane.query_one("#tool-list"))  # over the chat: the tool pane next
        elif focused is self.app.tree_pane or (self.app.main_screen.side_shown and _inside(focused, "tools")):
            self.hide_side_panes()
        else:
            self._focus_tree()

    def hide_side_panes(self) -> None:
        """Back from the side panes to where the focus was (the composer at first); in a narrow
        terminal they fold away again."""
        back = self._before_tree if self._before_tree is not None and self._before_tree.is_attached else None
        self.app.screen.set_focus(back or self.app.main_screen.composer)
        self.app.main_screen.side_shown = False

    def focus_moved(self) -> None:
        """The focus left the side panes (Tab, a click, a session opened): fold them away when
        they were shown over the chat."""
        screen = self.app.screen
        if screen is self.app.main_screen and screen.side_shown and not _inside(screen.focused, "side"):
            screen.side_shown = False

    @feature_work(group="tree-focus")
    async def focus_tree(self) -> None:
        """Focus the sessions pane (once mounted), remembering where the focus was for Ctrl+T to
        go back."""
        await self.app.side_panes_ready.wait()
        self._focus_tree()

    def _focus_tree(self) -> None:
        # At once, not after a refresh (``Widget.focus``): a second Ctrl+T waiting for the pane
        # with this one runs right after it, and must see the focus moved.
        if self.app.screen.focused is not self.app.tree_pane:
            self._before_tree = self.app.focused
            self.app.main_screen.side_shown = True  # over the chat, in a narrow terminal
            self.app.screen.set_focus(self.app.tree_pane)


def _inside(widget: Widget | None, container_id: str) -> bool:
    """Whether ``widget`` is, or is inside, the widget of id ``container_id``."""
    return widget is not None and any(node.id == container_id for node in widget.ancestors_with_self)
