"""The command palette's theme picker: a ``Provider`` of every available theme, each hit a
``ThemeChoice`` command the app previews while it is highlighted and applies when chosen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.theme import BUILTIN_THEMES

from scout_tui.theming.themes import ThemeSource


class ThemeChoice:
    """A palette command that chooses theme ``name``. The app previews the theme while this
    command is highlighted (see ``ScoutApp.on_command_palette_option_highlighted``)."""

    def __init__(self, name: str, choose: Callable[[str], None]) -> None:
        self.name = name
        self._choose = choose

    def __call__(self) -> None:
        self._choose(self.name)

    def __repr__(self) -> str:
        return f"ThemeChoice({self.name!r})"


def describe_source(name: str, sources: Mapping[str, ThemeSource]) -> str:
    """Where theme ``name`` comes from, for a person: "user theme ~/.config/scout/themes/x.toml"."""
    source = sources.get(name)
    if source is None:
        return "Textual built-in" if name in BUILTIN_THEMES else "registered by a plugin"
    replaced = " (replaces Textual's built-in)" if name in BUILTIN_THEMES else ""
    return f"{source.kind} theme {_short(source.path)}{replaced}"


def _short(path: Path) -> str:
    home = Path.home()
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)


class ThemePicker(Provider):
    """Every available theme, for ``CommandPalette``; each hit's command is a ``ThemeChoice``.

    The app must have ``choose_theme(name)``; ``theme_sources`` (name -> ``ThemeSource``) is
    used, when present, for the help line.
    """

    def _choices(self) -> list[tuple[str, ThemeChoice, str]]:
        app = self.app
        sources = getattr(app, "theme_sources", {})
        return [
            (name, ThemeChoice(name, app.choose_theme), describe_source(name, sources))  # type: ignore[attr-defined]  # the palette\'s app is ScoutApp (Provider.app is typed App)
            for name in sorted(app.available_themes)
        ]

    async def discover(self) -> Hits:
        for name, choice, help in self._choices():
            yield DiscoveryHit(name, choice, help=help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, choice, help in self._choices():
            if (score := matcher.match(name)) > 0:
                yield Hit(score, matcher.highlight(name), choice, text=name, help=help)
