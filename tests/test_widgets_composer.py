"""Composer: Enter sends and clears, Ctrl+J / Shift+Enter add a line, Up and Down walk history."""

from __future__ import annotations

from textual.app import App, ComposeResult

from scout_tui.widgets import THEME_VARIABLE_DEFAULTS, Composer
from scout_tui.widgets.composer import PLACEHOLDER


class ComposerApp(App):
    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return THEME_VARIABLE_DEFAULTS

    def compose(self) -> ComposeResult:
        yield Composer(id="composer")

    def on_composer_submitted(self, event: Composer.Submitted) -> None:
        self.sent.append(event.text)


async def test_enter_posts_the_text_and_clears_the_box():
    app = ComposerApp()
    async with app.run_test() as pilot:
        composer = app.query_one(Composer)
        composer.focus()
        await pilot.press(*"fix it")
        await pilot.press("enter")
        await pilot.pause()
        assert app.sent == ["fix it"]
        assert composer.text == ""
        assert composer.prompt_history == ["fix it"]


async def test_blank_text_is_not_sent():
    app = ComposerApp()
    async with app.run_test() as pilot:
        app.query_one(Composer).focus()
        await pilot.press("space", "space", "enter")
        await pilot.pause()
        assert app.sent == []


async def test_ctrl_j_and_shift_enter_insert_a_newline_instead_of_sending():
    app = ComposerApp()
    async with app.run_test() as pilot:
        composer = app.query_one(Composer)
        composer.focus()
        await pilot.press("a", "ctrl+j", "b", "shift+enter", "c")
        assert composer.text == "a\nb\nc"
        await pilot.press("enter")
        await pilot.pause()
        assert app.sent == ["a\nb\nc"]


async def test_up_recalls_earlier_prompts_newest_first_and_down_returns_to_the_draft():
    app = ComposerApp()
    async with app.run_test() as pilot:
        composer = app.query_one(Composer)
        composer.prompt_history = ["second", "first"]
        composer.focus()
        await pilot.press(*"draft")
        await pilot.press("up")
        assert composer.text == "second"
        await pilot.press("up")
        assert composer.text == "first"
        await pilot.press("up")  # nothing older: stays
        assert composer.text == "first"
        await pilot.press("down")
        assert composer.text == "second"
        await pilot.press("down")
        assert composer.text == "draft"


async def test_up_inside_a_multiline_text_moves_the_cursor_not_the_history():
    app = ComposerApp()
    async with app.run_test() as pilot:
        composer = app.query_one(Composer)
        composer.prompt_history = ["older"]
        composer.focus()
        await pilot.press("a", "ctrl+j", "b")
        await pilot.press("up")
        assert composer.text == "a\nb"
        assert composer.cursor_location[0] == 0


async def test_placeholder_explains_the_keys():
    app = ComposerApp()
    async with app.run_test():
        assert app.query_one(Composer).placeholder == PLACEHOLDER


async def test_enter_arriving_with_a_burst_of_keys_sends_the_whole_text():
    """A paste or `tmux send-keys` delivers every key at once; Enter must not overtake them."""
    from textual import events

    app = ComposerApp()
    async with app.run_test() as pilot:
        app.query_one(Composer).focus()
        await pilot.pause()
        for ch in "what does it say?":
            app.post_message(events.Key(ch, ch))
        app.post_message(events.Key("enter", "\r"))
        await pilot.pause()
        await pilot.pause()
        assert app.sent == ["what does it say?"]


async def test_ctrl_j_in_a_burst_of_keys_lands_where_it_was_typed():
    from textual import events

    app = ComposerApp()
    async with app.run_test() as pilot:
        composer = app.query_one(Composer)
        composer.focus()
        await pilot.pause()
        for key, char in [("a", "a"), ("a", "a"), ("ctrl+j", "\n"), ("b", "b"), ("b", "b")]:
            app.post_message(events.Key(key, char))
        await pilot.pause()
        await pilot.pause()
        assert composer.text == "aa\nbb"
