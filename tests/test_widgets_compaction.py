"""CompactionMarker and CompactPreview: a compaction's line in the chat, its summary, undo, and
the summary preview's Enter / Shift+Enter / Esc."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import TextArea

from scout_tui.widgets import THEME_VARIABLE_DEFAULTS, CompactionMarker, CompactPreview
from scout_tui.widgets.compaction import CompactionSummary, marker_title
from tests.app_helpers import rendered

DATA = {
    "at": 57, "count": 69, "model": "claude-haiku-4-5", "tokens_before": 142_000, "tokens_after": 9_000,
    "usage": {"input_tokens": 142_000, "output_tokens": 1_800}, "cost": 0.15, "focus": "the parser [bold]",
    "by": "auto",
    "summary": "## Current task\n\nRewrite the **parser** with [link=x]tables[/link].\n\n- lexer done\n- tests failing",
}


class MarkerApp(App):
    def __init__(self, data: dict) -> None:
        super().__init__()
        self.data = data
        self.undo: list[int] = []

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return THEME_VARIABLE_DEFAULTS

    def compose(self) -> ComposeResult:
        yield CompactionMarker(self.data)

    def on_compaction_marker_undo_requested(self, event: CompactionMarker.UndoRequested) -> None:
        self.undo.append(event.count)


class PreviewApp(App):
    def __init__(self) -> None:
        super().__init__()
        self.answers: list[str | None] = []

    def on_mount(self) -> None:
        self.push_screen(CompactPreview("## Task\n\nFix the lexer.", info="Summarises messages 0–56 (142k tokens)."),
                         self.answers.append)


def test_the_title_says_how_much_was_summarised_by_whom_and_how_to_undo():
    assert marker_title(DATA).plain == "⊟ Compacted: 57 messages summarised · 142k → 9.0k tokens · automatic · u undo"
    by = {b: marker_title({**DATA, "by": b}).plain.split(" · ")[-2] for b in ("user", "overflow", "plugin")}
    assert by == {"user": "by you", "overflow": "context overflow", "plugin": "plugin"}
    assert marker_title({"at": 1, "count": 2}).plain == "⊟ Compacted: 1 message summarised · u undo"


async def test_marker_is_one_line_until_expanded_then_shows_the_summary_as_markdown():
    app = MarkerApp(DATA)
    async with app.run_test(size=(100, 30)) as pilot:
        marker = app.query_one(CompactionMarker)
        await pilot.pause()
        assert marker.size.height == 1
        assert "Compacted: 57 messages summarised" in rendered(marker)
        assert "Rewrite the" not in rendered(marker)
        await pilot.click("CollapsibleTitle")
        await pilot.pause()
        shown = rendered(marker)
        assert "Current task" in shown and "## Current task" not in shown  # a heading, not the source
        assert "Rewrite the parser with [link=x]tables[/link]." in shown  # bold drawn, markup literal
        assert "summary by claude-haiku-4-5 · focus: the parser [bold] · $0.15" in shown
        assert marker.size.height > 5


async def test_enter_on_the_focused_title_expands_and_u_asks_to_undo_with_the_count():
    app = MarkerApp(DATA)
    async with app.run_test(size=(100, 30)) as pilot:
        marker = app.query_one(CompactionMarker)
        await pilot.press("tab")  # the title is the only focusable widget
        assert app.focused is not None and app.focused.parent is marker
        await pilot.press("enter")
        await pilot.pause()
        assert not marker.collapsed and marker.query_one(CompactionSummary).display
        await pilot.press("u")
        await pilot.pause()
        assert app.undo == [69]


async def test_preview_enter_returns_the_edited_summary_stripped():
    app = PreviewApp()
    async with app.run_test(size=(100, 30)) as pilot:
        assert isinstance(app.screen, CompactPreview)
        editor = app.screen.query_one(TextArea)
        assert app.focused is editor and editor.text == "## Task\n\nFix the lexer."
        editor.move_cursor(editor.document.end)
        await pilot.press(*" Then tests.", "space", "space")
        await pilot.press("enter")
        await pilot.pause()
        assert app.answers == ["## Task\n\nFix the lexer. Then tests."]
        assert not isinstance(app.screen, CompactPreview)


async def test_preview_shift_enter_and_ctrl_j_add_a_line_instead_of_accepting():
    app = PreviewApp()
    async with app.run_test(size=(100, 30)) as pilot:
        editor = app.screen.query_one(TextArea)
        editor.move_cursor(editor.document.end)
        await pilot.press("shift+enter", *"a", "ctrl+j", *"b")
        await pilot.pause()
        assert isinstance(app.screen, CompactPreview) and app.answers == []
        assert editor.text == "## Task\n\nFix the lexer.\na\nb"
        await pilot.press("enter")
        await pilot.pause()
        assert app.answers == ["## Task\n\nFix the lexer.\na\nb"]


async def test_preview_esc_returns_none_and_an_emptied_summary_counts_as_none():
    app = PreviewApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("escape")
        await pilot.pause()
        assert app.answers == [None] and not isinstance(app.screen, CompactPreview)
        app.push_screen(CompactPreview("x", info="i"), app.answers.append)
        await pilot.pause()
        app.screen.query_one(TextArea).clear()
        await pilot.press("space", "enter")
        await pilot.pause()
        assert app.answers == [None, None]


async def test_preview_shows_the_info_line_and_the_keys():
    app = PreviewApp()
    async with app.run_test(size=(100, 30)) as pilot:
        shown = rendered(app.screen)
        assert "Summarises messages 0–56 (142k tokens)." in shown
        assert "Enter accept · Shift+Enter / Ctrl+J new line · Esc cancel" in shown
