"""The sessions pane alone: a fixed set of sessions with forks at fixed ages, and an app that
shows them and records what the tree posts; its drawn lines as text."""

from __future__ import annotations

from rich.segment import Segment
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer

from scout_tui.store.event_log import SessionInfo
from scout_tui.widgets import THEME_VARIABLE_DEFAULTS, SessionTree

NOW = 1_700_000_000.0
"""The tree's clock in these tests: ages are fixed, so lines and snapshots never drift."""


def info(id: str, title: str, age: float, count: int = 2, parent: str | None = None,
         fork_at: int | None = None, deleted: bool = False) -> SessionInfo:
    """A session last updated ``age`` seconds before ``NOW``."""
    return SessionInfo(id=id, parent=parent, fork_at=fork_at, cwd="/repo", title=title,
                       created=NOW - age - 60, updated=NOW - age, message_count=count,
                       input_tokens=0, output_tokens=0, deleted=deleted)


def sessions() -> list[SessionInfo]:
    """Two levels of forks under "root", a branch whose parent is gone, and a deleted session."""
    return [
        info("root", "Parser rewrite", 3 * 3600, 12),
        info("b", "Try a lexer", 3600, 7, parent="root", fork_at=3),
        info("c", "Lexer with tables", 600, 9, parent="b", fork_at=5),
        info("d", "Different plan", 300, 4, parent="root", fork_at=1),
        info("other", "Old work", 2 * 86_400, 1),
        info("orphan", "Branch of a deleted session", 86_400, 3, parent="gone", fork_at=2),
        info("del", "Deleted one", 10, 5, deleted=True),
    ]


class TreeApp(App):
    """The tree alone, with an app-level Esc binding like ScoutApp's, recording what it posts."""

    CSS = "SessionTree { border-top: solid $panel; border-title-color: $text-muted; }"
    BINDINGS = [Binding("escape", "app_escape", "Interrupt", id="app.escape")]

    def __init__(self, current: str | None = "b") -> None:
        super().__init__()
        self.current = current
        self.posted: list[tuple] = []

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return THEME_VARIABLE_DEFAULTS

    def compose(self) -> ComposeResult:
        yield SessionTree(id="tree", clock=lambda: NOW)
        yield Footer()

    def on_mount(self) -> None:
        tree = self.query_one(SessionTree)
        tree.border_title = "Sessions"
        tree.set_sessions(sessions(), self.current)
        tree.focus()

    def action_app_escape(self) -> None:
        self.posted.append(("app escape",))

    def on_session_tree_opened(self, event: SessionTree.Opened) -> None:
        self.posted.append(("opened", event.session_id))

    def on_session_tree_new_requested(self, event: SessionTree.NewRequested) -> None:
        self.posted.append(("new",))

    def on_session_tree_rename_requested(self, event: SessionTree.RenameRequested) -> None:
        self.posted.append(("rename", event.session_id, event.title))

    def on_session_tree_delete_requested(self, event: SessionTree.DeleteRequested) -> None:
        self.posted.append(("delete", event.session_id))


def strips(tree: SessionTree) -> list[list[Segment]]:
    """The tree's lines (guides and labels, no border or padding) as segments."""
    return [list(tree.render_line(y)) for y in range(tree.last_line + 1)]


def lines(tree: SessionTree) -> list[str]:
    """The tree's lines as plain text, trailing spaces cut."""
    return ["".join(s.text for s in line).rstrip() for line in strips(tree)]
