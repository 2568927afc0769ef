"""The main screen owns the layout (issue 29): the app starts on it, finds its panes through it,
and the state its widgets show (``busy``, the permission mode) are its reactives, bound to them."""

from __future__ import annotations

from pathlib import Path

from scout_tui.tui.app import ScoutApp
from scout_tui.tui.completion import Completion
from scout_tui.tui.feature import Feature
from scout_tui.tui.themes import Themes
from scout_tui.tui.input_first import TypedKeys
from scout_tui.tui.main_screen import MainScreen
from scout_tui.widgets import ChatView, Composer, StatusBar
from tests.app_helpers import make_app


def test_the_apps_bases_are_textuals_alone_and_its_features_are_objects_it_holds(workdir: Path) -> None:
    """No class of scout-tui is a base of ``ScoutApp`` (issue 29: it was eleven mixins): its
    features are objects it holds, each given the app."""
    ours = [base for base in ScoutApp.__mro__[1:] if base.__module__.startswith("scout_tui")]
    assert ours == []
    assert {base.__module__.split(".")[0] for base in ScoutApp.__mro__[1:]} <= {"textual", "builtins", "typing"}
    app = make_app(workdir, None)
    features = {name: value for name, value in vars(app).items() if isinstance(value, Feature)}
    assert {"queue", "sessions", "side_panes", "turns", "mcp_servers", "long_session", "file_changes", "models",
            "slash", "delivery", "turn_keys", "extensions", "permission_modes"} <= set(features)
    assert all(feature.app is app for feature in features.values())
    assert isinstance(app.themes, Themes) and isinstance(app.completion, Completion)
    assert isinstance(app.typed_keys, TypedKeys)


async def test_the_app_starts_on_the_main_screen_whose_panes_it_reaches(workdir: Path) -> None:
    app = make_app(workdir, None)
    async with app.run_test() as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MainScreen) and screen is app.main_screen
        assert app.chat is screen.query_one("#chat", ChatView)
        assert app.status is screen.query_one(StatusBar) and screen.focused is screen.query_one(Composer)
        assert Path(MainScreen.CSS_PATH).is_file()  # shipped beside the module (tests/test_packaging.py)


async def test_busy_and_the_permission_mode_are_the_screens_and_the_status_bar_shows_them(workdir: Path) -> None:
    app = make_app(workdir, None)
    async with app.run_test() as pilot:
        await pilot.pause()
        status, composer = app.status, app.main_screen.composer
        assert status.permission_mode == app.permissions.mode == "ask"
        app.busy = True
        await pilot.pause()
        assert app.main_screen.busy and status.busy and composer.busy and status.has_class("-busy")
        app.busy = False
        await pilot.pause()
        assert not (status.busy or composer.busy)
        app.permission_modes.set_mode("yolo")
        await pilot.pause()
        assert app.main_screen.permission_mode == status.permission_mode == "yolo"
