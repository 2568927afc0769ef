"""The key bar (``KeysFooter``): its first frame's keys drawn as one line look exactly as
Textual's keys do once made, in every shipped theme and at any width; the keys made later are
Textual's, clickable, following the bindings; the line stands until they replace it."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets._footer import FooterKey

from scout_tui.tui.app import ScoutApp
from scout_tui.config.layers import load_config
from scout_tui.theming.themes import shipped_themes
from scout_tui.widgets.footer import KeysFooter
from tests.app_helpers import SIZE, settle
from tests.conftest import wait_until


class Keys(App):
    """A footer under bindings like the app's: a long key name, a key the footer hides."""

    BINDINGS = [
        Binding("shift+tab", "press('mode')", "Mode"),
        Binding("ctrl+q", "press('quit')", "Quit"),
        Binding("ctrl+o", "press('view')", "Model's view"),
        Binding("x", "press('hidden')", "Hidden", show=False),
        Binding("f2", "press('help')", "Help"),
    ]

    def __init__(self, theme: str = "textual-dark") -> None:
        super().__init__()
        self.pressed: list[str] = []
        for shipped in shipped_themes():
            self.register_theme(shipped)
        self.theme = theme

    def compose(self) -> ComposeResult:
        self.footer = KeysFooter()
        yield self.footer

    def action_press(self, what: str) -> None:
        self.pressed.append(what)


async def keys_made(app: Keys | ScoutApp, pilot) -> None:
    await wait_until(pilot, lambda: app.footer.drawn is None and app.footer.query(FooterKey), what="the keys are made")
    await pilot.pause()


THEMES = ["textual-dark", "textual-light", *(theme.name for theme in shipped_themes())]


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("width", [120, 60, 40])  # 40: a key half under the palette's
async def test_the_drawn_keys_look_as_textuals_keys_do(theme: str, width: int) -> None:
    app = Keys(theme)
    async with app.run_test(size=(width, 3)) as pilot:
        await pilot.pause()
        assert app.footer.drawn is not None and not app.footer.query(FooterKey)
        drawn = app.export_screenshot()
        app.footer.show_keys()
        await keys_made(app, pilot)
        assert app.export_screenshot() == drawn  # byte for byte: cells, colours and segments


async def test_the_keys_made_after_the_line_are_clickable() -> None:
    app = Keys()
    async with app.run_test(size=(120, 3)) as pilot:
        app.footer.show_keys()
        await keys_made(app, pilot)
        help_key = next(key for key in app.footer.query(FooterKey) if key.description == "Help")
        await pilot.click(help_key)
        await wait_until(pilot, lambda: app.pressed == ["help"])


async def test_bindings_changing_while_the_line_stands_make_no_keys() -> None:
    app = Keys()
    async with app.run_test(size=(120, 3)) as pilot:
        app.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        assert app.footer.drawn is not None and not app.footer.query(FooterKey)


async def test_the_line_stands_until_the_keys_replace_it() -> None:
    app = Keys()
    async with app.run_test(size=(120, 3)) as pilot:
        app.footer.show_keys()
        assert app.footer.drawn is not None  # still drawn: it goes in the batch that mounts the keys
        await keys_made(app, pilot)


async def test_the_app_makes_textuals_keys_once_its_first_frame_is_up(tmp_home: Path, workdir: Path) -> None:
    line_until_started: list[bool] = []

    class Recording(ScoutApp):
        def start_background(self) -> None:
            if not self.background_started:
                line_until_started.append(self.footer.drawn is not None and not self.footer.query(FooterKey))
            super().start_background()

    app = Recording(load_config(workdir, flags={"api_key": "sk-test"}), cwd=workdir)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await keys_made(app, pilot)
        # Textual's keys follow the bindings: the composer's Enter (focused after the line was drawn).
        assert "Send" in [key.description for key in app.footer.query(FooterKey)]
    assert line_until_started == [True]
