"""The app's themes: the shipped, user and project theme files registered at start-up, the
palette's theme picker with its live preview, ``/theme NAME`` (saved for the next runs), and
re-applying the theme in use when its file is edited.

A mixin of ``ScoutApp`` (app.py): it uses the app's config, cwd, chat and Textual's theme API.
"""

from __future__ import annotations

from typing import Any, cast

from textual import work
from textual.app import App
from textual.command import CommandPalette

from scout_tui import compat
from scout_tui.core.errors import ScoutError
from scout_tui.theming.colours import derive_variables
from scout_tui.tui.theme_picker import ThemeChoice, ThemePicker
from scout_tui.theming.themes import (POLL_SECONDS, ThemeFileWatcher, ThemeSource, discover_themes, pick_theme, save_theme,
                              saved_theme)
from scout_tui.widgets import ChatView


class ThemesMixin:
    """Theme files, the picker's preview, ``/theme`` and live reload for ``ScoutApp``."""

    theme_sources: dict[str, ThemeSource]
    """Theme name -> the file it came from."""
    _theme_watcher: ThemeFileWatcher | None = None
    _theme_preview_from: str | None = None
    """The theme to go back to while the palette previews another."""
    _theme_notes: list[tuple[str, dict]]
    """What ``_register_themes`` found to tell the person: (text, ``notify`` arguments)."""

    def get_theme_variable_defaults(self) -> dict[str, str]:
        # scout-tui's variables for a theme that leaves some out (Textual's own leave out all),
        # derived from its colours: a light theme gets light message backgrounds.
        return derive_variables(self.current_theme)

    def _register_themes(self) -> None:
        """Register the shipped, user and project themes and start with the configured or saved
        theme (``themes.pick_theme``); what to tell the person waits for ``_report_themes``.

        Called from ``__init__``, before Textual parses any CSS: the first parse then uses this
        theme's colours, where setting ``App.theme`` once the app runs parses every widget's CSS
        a second time (~20 ms before the first frame)."""
        self.theme_sources, problems = discover_themes(self.cwd)
        self._theme_notes = [(problem, {"title": "Theme file skipped", "severity": "error", "timeout": 15})
                             for problem in problems]
        for source in self.theme_sources.values():
            self.register_theme(source.theme)
        try:
            saved = saved_theme()
        except ScoutError as e:
            self._theme_notes.append((str(e), {"title": "Saved theme ignored", "severity": "warning"}))
            saved = None
        name, warnings = pick_theme(self.config.theme, self.config.sources.get("theme"), saved, self.available_themes)
        self._theme_notes += [(warning, {"severity": "warning"}) for warning in warnings]
        # What the ``App.theme`` watcher does, minus re-parsing the CSS that is not parsed yet.
        self.set_reactive(App.theme, name)
        dark = self.current_theme.dark
        self.set_class(dark, "-dark-mode", update=False)
        self.set_class(not dark, "-light-mode", update=False)
        self.set_class(True, f"-theme-{name}", update=False)
        app = cast("App[Any]", self)  # this mixin is part of ScoutApp
        compat.refresh_truecolor_filter(app, app.ansi_theme)
        self.stylesheet.set_variables(self.get_css_variables())
        self._theme_watcher = ThemeFileWatcher()
        self._theme_watcher.watch(self.theme_sources.get(name))

    def _report_themes(self) -> None:
        """Once the app runs: the notes of ``_register_themes`` as toasts (skipped files, an
        unknown theme name), and the theme file polled for edits."""
        for text, how in self._theme_notes:
            self.notify(text, **how)
        self.set_interval(POLL_SECONDS, self._poll_theme_file, name="theme-file")

    def watch_theme(self, name: str) -> None:
        if self._theme_watcher is not None:
            self._theme_watcher.watch(self.theme_sources.get(name))

    def choose_theme(self, name: str) -> None:
        """Use theme ``name`` and save the choice for the next runs (the palette, ``/theme NAME``)."""
        self._theme_preview_from = None
        if name not in self.available_themes:
            names = ", ".join(sorted(self.available_themes))
            self.query_one(ChatView).add_notice(f"Unknown theme {name!r}. Use `/theme NAME` with: {names}.", "error")
            return
        self.theme = name
        self._save_theme(name)

    @work(thread=True, exclusive=True, group="theme-save")
    def _save_theme(self, name: str) -> None:
        try:
            save_theme(name)
        except ScoutError as e:
            self.call_from_thread(self.notify, str(e), title="Theme not saved", severity="error")
            return
        origin = self.config.sources.get("theme")
        if origin and self.config.theme != name:
            self.call_from_thread(self.notify, f"Theme {name} saved, but {origin} sets theme = "
                                  f"{self.config.theme!r}, which comes first at start-up.", severity="warning")
        else:
            self.call_from_thread(self.notify, f"Theme {name}, saved for the next runs.", timeout=3)

    def search_themes(self) -> None:
        """The theme picker (also behind Textual's "Theme" command): highlighting previews a
        theme, Enter keeps it, Esc goes back to the one before."""
        self.push_screen(CommandPalette(providers=[ThemePicker], placeholder="Search for themes…"))

    def on_command_palette_option_highlighted(self, message: CommandPalette.OptionHighlighted) -> None:
        command = getattr(getattr(message.highlighted_event.option, "hit", None), "command", None)
        if isinstance(command, ThemeChoice):
            if self._theme_preview_from is None:
                self._theme_preview_from = self.theme
            self.theme = command.name
        elif self._theme_preview_from is not None:  # moved on to a command that is not a theme
            self.theme = self._theme_preview_from

    def on_command_palette_closed(self, message: CommandPalette.Closed) -> None:
        # The palette queues the chosen command after this message: end the preview after it,
        # so a chosen theme stays (choose_theme clears the preview) and anything else restores.
        if self._theme_preview_from is not None:
            self.call_later(self._end_theme_preview)

    def _end_theme_preview(self) -> None:
        if self._theme_preview_from is not None:
            self.theme, self._theme_preview_from = self._theme_preview_from, None

    def _poll_theme_file(self) -> None:
        """Re-apply the theme in use when its file changed; a broken edit keeps the last good one."""
        result = self._theme_watcher.poll()
        if isinstance(result, ScoutError):
            self.notify(f"{result}. The last good version stays.", title="Theme not reloaded", severity="error",
                        timeout=15)
        elif result is not None:
            name = result.theme.name
            self.theme_sources = {**self.theme_sources, name: result}
            self.register_theme(result.theme)
            if name != self.theme:  # the file now names another theme
                self.theme = name
            else:
                # Textual applies a theme when its name changes; its watcher re-applies this one.
                compat.reapply_theme(cast("App[Any]", self), name)
            self.notify(f"Theme {name} reloaded.", timeout=2)
