"""The app's themes: the shipped, user and project theme files registered at start-up, the
palette's theme picker with its live preview, ``/theme NAME`` (saved for the next runs), and
re-applying the theme in use when its file is edited.

A feature the app holds (``ScoutApp.themes``): its theme watcher, the palette's messages and the
``/theme`` command call it. It uses Textual's theme API on the app it is given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.command import CommandPalette

from scout_tui import compat
from scout_tui.core.errors import ScoutError
from scout_tui.tui.theme_picker import ThemeChoice, ThemePicker
from scout_tui.theming.themes import (POLL_SECONDS, ThemeFileWatcher, ThemeSource, discover_themes, pick_theme, save_theme,
                              saved_theme)
from scout_tui.widgets import ChatView

if TYPE_CHECKING:
    from pathlib import Path

    from scout_tui.config.layers import Config


class Themes:
    """Theme files, the picker's preview, ``/theme`` and live reload.

    Args:
        app: the app whose theme this sets (Textual's ``App.theme``, ``register_theme``).
        config: the configuration (its ``theme`` and where that is set).
        cwd: the project, whose ``.scout/themes`` files join the user's and the shipped ones.
    """

    def __init__(self, app: App[Any], config: Config, cwd: Path) -> None:
        self.app = app
        self.config = config
        self.cwd = cwd
        self.sources: dict[str, ThemeSource] = {}
        """Theme name -> the file it came from."""
        self._watcher = ThemeFileWatcher()
        self._preview_from: str | None = None
        """The theme to go back to while the palette previews another."""
        self._notes: list[tuple[str, dict]] = []
        """What ``register`` found to tell the person: (text, ``notify`` arguments)."""

    def register(self) -> None:
        """Register the shipped, user and project themes and start with the configured or saved
        theme (``themes.pick_theme``); what to tell the person waits for ``report``.

        Called from the app's ``__init__``, before Textual parses any CSS: the first parse then
        uses this theme's colours, where setting ``App.theme`` once the app runs parses every
        widget's CSS a second time (~20 ms before the first frame)."""
        app = self.app
        self.sources, problems = discover_themes(self.cwd)
        self._notes = [(problem, {"title": "Theme file skipped", "severity": "error", "timeout": 15})
                       for problem in problems]
        for source in self.sources.values():
            app.register_theme(source.theme)
        try:
            saved = saved_theme()
        except ScoutError as e:
            self._notes.append((str(e), {"title": "Saved theme ignored", "severity": "warning"}))
            saved = None
        name, warnings = pick_theme(self.config.theme, self.config.sources.get("theme"), saved, app.available_themes)
        self._notes += [(warning, {"severity": "warning"}) for warning in warnings]
        # What the ``App.theme`` watcher does, minus re-parsing the CSS that is not parsed yet.
        app.set_reactive(App.theme, name)
        dark = app.current_theme.dark
        app.set_class(dark, "-dark-mode", update=False)
        app.set_class(not dark, "-light-mode", update=False)
        app.set_class(True, f"-theme-{name}", update=False)
        compat.refresh_truecolor_filter(app, app.ansi_theme)
        app.stylesheet.set_variables(app.get_css_variables())
        self._watcher.watch(self.sources.get(name))

    def report(self) -> None:
        """Once the app runs: the notes of ``register`` as toasts (skipped files, an unknown
        theme name), and the theme file polled for edits."""
        for text, how in self._notes:
            self.app.notify(text, **how)
        self.app.set_interval(POLL_SECONDS, self.poll, name="theme-file")

    def watch(self, name: str) -> None:
        """Theme ``name`` is in use: poll its file for edits (the app's ``theme`` watcher)."""
        self._watcher.watch(self.sources.get(name))

    def choose(self, name: str) -> None:
        """Use theme ``name`` and save the choice for the next runs (the palette, ``/theme NAME``)."""
        self._preview_from = None
        app = self.app
        if name not in app.available_themes:
            names = ", ".join(sorted(app.available_themes))
            app.query_one(ChatView).add_notice(f"Unknown theme {name!r}. Use `/theme NAME` with: {names}.", "error")
            return
        app.theme = name
        app.run_worker(lambda: self._save(name), thread=True, exclusive=True, group="theme-save")

    def _save(self, name: str) -> None:
        """Save theme ``name`` for the next runs (in a thread) and say so."""
        say = self.app.call_from_thread
        try:
            save_theme(name)
        except ScoutError as e:
            say(self.app.notify, str(e), title="Theme not saved", severity="error")
            return
        origin = self.config.sources.get("theme")
        if origin and self.config.theme != name:
            say(self.app.notify, f"Theme {name} saved, but {origin} sets theme = "
                f"{self.config.theme!r}, which comes first at start-up.", severity="warning")
        else:
            say(self.app.notify, f"Theme {name}, saved for the next runs.", timeout=3)

    def search(self) -> None:
        """The theme picker (also behind Textual's "Theme" command): highlighting previews a
        theme, Enter keeps it, Esc goes back to the one before."""
        self.app.push_screen(CommandPalette(providers=[ThemePicker], placeholder="Search for themes…"))

    def option_highlighted(self, message: CommandPalette.OptionHighlighted) -> None:
        """The palette highlighted an option: preview it if it is a theme, else go back."""
        command = getattr(getattr(message.highlighted_event.option, "hit", None), "command", None)
        if isinstance(command, ThemeChoice):
            if self._preview_from is None:
                self._preview_from = self.app.theme
            self.app.theme = command.name
        elif self._preview_from is not None:  # moved on to a command that is not a theme
            self.app.theme = self._preview_from

    def palette_closed(self) -> None:
        """The palette closed. It queues the chosen command after this: the preview ends after
        it, so a chosen theme stays (``choose`` clears the preview) and anything else restores."""
        if self._preview_from is not None:
            self.app.call_later(self._end_preview)

    def _end_preview(self) -> None:
        if self._preview_from is not None:
            self.app.theme, self._preview_from = self._preview_from, None

    def poll(self) -> None:
        """Re-apply the theme in use when its file changed; a broken edit keeps the last good one."""
        app = self.app
        result = self._watcher.poll()
        if isinstance(result, ScoutError):
            app.notify(f"{result}. The last good version stays.", title="Theme not reloaded", severity="error",
                       timeout=15)
        elif result is not None:
            name = result.theme.name
            self.sources = {**self.sources, name: result}
            app.register_theme(result.theme)
            if name != app.theme:  # the file now names another theme
                app.theme = name
            else:
                # Textual applies a theme when its name changes; its watcher re-applies this one.
                compat.reapply_theme(app, name)
            app.notify(f"Theme {name} reloaded.", timeout=2)
