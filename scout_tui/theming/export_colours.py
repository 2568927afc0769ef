"""A theme's colours for a page outside the terminal (the HTML export): each colour resolved to
``#rrggbb``, and the theme a run here would start with, found without the app.
"""

from __future__ import annotations

from pathlib import Path

from textual.color import Color, ColorParseError
from textual.theme import BUILTIN_THEMES, Theme

from scout_tui.core.errors import ScoutError
from scout_tui.theming.colours import css_variables, resolve_colour
from scout_tui.theming.themes import SYNTAX_STYLE, discover_themes, pick_theme, saved_theme

PAGE_COLOURS = (
    "background", "foreground", "surface", "panel", "primary", "secondary", "accent", "success", "warning", "error",
    "user-message-background", "assistant-message-background", "diff-added", "diff-removed", "tree-current",
    "tree-fork",
)
"""The colours a page takes from a theme (``export_html.COLOUR_NAMES``)."""


def page_colours(theme: Theme) -> dict[str, str]:
    """``{name: "#rrggbb"}`` for ``PAGE_COLOURS`` as the app resolves them for ``theme``
    (``css_variables``: alpha blended over the background), plus ``syntax-style`` (a Pygments
    style; a terminal-palette one as monokai or default). A colour that is no CSS colour (a
    terminal's ``ansi_red`` in an ANSI theme) is left out: the page's default stands."""
    variables = css_variables(theme)
    try:
        background = Color.parse(variables.get("background", "#000000"))
    except ColorParseError:
        background = Color(0, 0, 0)
    found: dict[str, str] = {}
    for name in PAGE_COLOURS:
        try:
            found[name] = resolve_colour(str(variables[name]), background).hex
        except (KeyError, ColorParseError):
            continue
    style = str(variables.get(SYNTAX_STYLE) or "")
    found[SYNTAX_STYLE] = style if style and not style.startswith("ansi_") else ("monokai" if theme.dark else "default")
    return found


def configured_theme(cwd: Path, wanted: str, origin: str | None) -> Theme:
    """The theme a run in ``cwd`` starts with (``pick_theme``: the configured ``wanted`` when
    ``origin`` says it was set, the saved choice, the default), read from its file or Textual's
    built-ins; broken theme files and an unreadable saved choice are skipped."""
    sources, _ = discover_themes(cwd)
    available = {**BUILTIN_THEMES, **{name: source.theme for name, source in sources.items()}}
    try:
        saved = saved_theme()
    except ScoutError:  # a broken state file: skipped, as at start-up
        saved = None
    name, _ = pick_theme(wanted, origin, saved, available)
    return available.get(name) or BUILTIN_THEMES["textual-dark"]
