"""Themes: TOML files that become Textual themes, so every widget (Textual's own too) follows them.

A file holds Textual's ``Theme`` fields (``name`` and ``primary`` required) and a ``[variables]``
table of scout-tui's tokens and any Textual CSS variable. Shipped themes live in ``themes/``
(packaged as ``scout_tui.shipped_themes`` in the wheel).
"""

from __future__ import annotations

import tomllib
import importlib.util
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import Theme

from scout_tui.errors import ScoutError

DEFAULT_THEME = "scout-dark"

# scout-tui's own CSS variables and their fallbacks (used when a theme does not set them).
VARIABLE_DEFAULTS: dict[str, str] = {
    "user-message-background": "#232a38",
    "assistant-message-background": "#1b1e24",
    "tool-running": "#ffd75f",
    "tool-ok": "#87d787",
    "tool-error": "#ff6b6b",
    "diff-added": "#2f4a2f",
    "diff-removed": "#4a2f2f",
    "tree-current": "#5fafff",
    "tree-fork": "#af87ff",
}
# Variables that are not colours (kept out of the colour check).
NON_COLOUR_VARIABLES = {"syntax-style"}

COLOUR_FIELDS = (
    "primary", "secondary", "accent", "foreground", "background", "surface", "panel", "boost",
    "success", "warning", "error",
)
FIELDS = {"name", "dark", "variables", *COLOUR_FIELDS}


def shipped_themes_dir() -> Path:
    """The folder of shipped theme files: inside the installed wheel, or ``themes/`` in a checkout."""
    spec = importlib.util.find_spec("scout_tui.shipped_themes")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(__file__).resolve().parent.parent / "themes"  # an editable install or a checkout


def load_theme(path: Path) -> Theme:
    """Parse one theme file into a Textual ``Theme``.

    Raises:
        ScoutError: naming the file (and line for TOML syntax errors) and the field at fault.
    """
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ScoutError(f"{path}:{getattr(e, 'lineno', '?')}: invalid TOML: {e}") from None
    except OSError as e:
        raise ScoutError(f"{path}: cannot read theme: {e.strerror}") from None
    unknown = sorted(set(data) - FIELDS)
    if unknown:
        raise ScoutError(f"{path}: unknown field {unknown[0]!r} (known: {', '.join(sorted(FIELDS))})")
    for required in ("name", "primary"):
        if not isinstance(data.get(required), str):
            raise ScoutError(f"{path}: field {required!r} is required and must be a string")
    for field in COLOUR_FIELDS:
        if field in data:
            _check_colour(path, field, data[field])
    variables = data.get("variables", {})
    if not isinstance(variables, dict):
        raise ScoutError(f"{path}: [variables] must be a table")
    for key, value in variables.items():
        if not isinstance(value, str):
            raise ScoutError(f"{path}: variables.{key} must be a string")
        if key not in NON_COLOUR_VARIABLES and key in VARIABLE_DEFAULTS:
            _check_colour(path, f"variables.{key}", value)
    kwargs = {k: data[k] for k in COLOUR_FIELDS if k in data}
    return Theme(name=data["name"], dark=bool(data.get("dark", True)), variables=dict(variables), **kwargs)


def shipped_themes() -> list[Theme]:
    """Every shipped theme, by file name order. A broken shipped file raises ``ScoutError``."""
    return [load_theme(p) for p in sorted(shipped_themes_dir().glob("*.toml"))]


def _check_colour(path: Path, field: str, value: Any) -> None:
    try:
        Color.parse(value)
    except (ColorParseError, ValueError, TypeError):
        raise ScoutError(f"{path}: {field} = {value!r} is not a colour (#rrggbb, #rgb, rgb(), hsl() or a name)") from None
