"""Themes: TOML files that become Textual themes, so every widget (Textual's own too) follows them.

Sources, later replacing earlier by name: Textual's built-ins < shipped ``themes/*.toml`` <
``<user config dir>/themes/*.toml`` < ``./.scout/themes/*.toml``. Also here: the saved choice
(``state.toml``) and the hot-reload poller. Derived variables and contrast: ``theme_colours.py``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import tempfile
import tomllib
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.design import ColorSystem
from textual.theme import Theme

from scout_tui.config.layers import read_text, toml_error, user_config_dir
from scout_tui.core.errors import ScoutError
from scout_tui.config.tomlpos import where

DEFAULT_THEME = "scout-dark"
STATE_FILE = "state.toml"
"""scout-tui's own small state file in ``user_config_dir()``; the person's scout.toml is never written."""
POLL_SECONDS = 0.5
"""How often the file of the theme in use is checked for edits (a stat call: cheap)."""

# scout-tui's own CSS variables and static fallbacks (widget tests use these; the app derives
# its fallbacks from the current theme with ``theme_colours.derive_variables``).
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
SYNTAX_STYLE = "syntax-style"
"""The variable naming the Pygments style of code blocks (read by ``widgets/markdown_render.py``)."""
SCOUT_VARIABLES = frozenset(VARIABLE_DEFAULTS) | {SYNTAX_STYLE}
# Rich's own code themes that follow the terminal's palette; not Pygments styles.
RICH_CODE_THEMES = frozenset({"ansi_dark", "ansi_light"})

COLOUR_FIELDS = (
    "primary", "secondary", "accent", "foreground", "background", "surface", "panel", "boost",
    "success", "warning", "error",
)
FIELDS = ("name", "dark", *COLOUR_FIELDS, "variables")
REQUIRED = ("name", "primary")
KINDS = ("shipped", "user", "project")
"""Theme sources, lowest precedence first."""

_TEXT_STYLE_WORDS = frozenset(
    {"b", "blink", "bold", "dim", "i", "italic", "none", "not", "o", "overline", "reverse", "strike", "u",
     "underline", "uu"}
)  # textual.css.constants.VALID_STYLE_FLAGS
ALPHA_SUFFIX = re.compile(r"(.+?)\s+(\d+(?:\.\d+)?)%")
"""A colour with an alpha share after it, as Textual's CSS writes it: ``#ffffff 50%`` → colour, 50."""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


@dataclass(frozen=True)
class ThemeSource:
    """A theme read from a file. ``kind`` is one of ``KINDS``; ``stamp`` is the file's
    (mtime in ns, size in bytes) taken just before reading, for the hot-reload poller."""

    theme: Theme
    path: Path
    kind: str
    stamp: tuple[int, int] | None = None


# -- reading theme files ---------------------------------------------------------------------


def shipped_themes_dir() -> Path:
    """The folder of shipped theme files: inside the installed wheel, or ``themes/`` in a checkout."""
    spec = importlib.util.find_spec("scout_tui.shipped_themes")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(__file__).resolve().parents[2] / "themes"  # an editable install or a checkout


def theme_dirs(cwd: Path) -> list[tuple[str, Path]]:
    """``(kind, folder)`` for every source, lowest precedence first."""

    return [
        ("shipped", shipped_themes_dir()),
        ("user", user_config_dir() / "themes"),
        ("project", Path(cwd) / ".scout" / "themes"),
    ]


def load_theme(path: Path, text: str | None = None, *, check_variables: bool = True) -> Theme:
    """Parse one theme file (``text``, or the file's content) into a Textual ``Theme``.

    The format: Textual's ``Theme`` fields (``FIELDS``; ``name`` and ``primary`` required) and a
    ``[variables]`` table of scout-tui's tokens (``SCOUT_VARIABLES``) and Textual CSS variables.
    Colours are ``#rrggbb``, ``#rgb``, ``rgb()``, ``hsl()`` or a name (``textual.color.Color.parse``);
    a variable's may end in an alpha like ``50%``. When ``dark`` is absent it follows the
    background's brightness (Textual's default, dark, when there is no background either).

    ``check_variables=False`` takes the ``[variables]`` values as they are: for the shipped
    files, which tests/test_themes.py checks (checking them costs ~8 ms at every start, most of
    it importing Pygments to know its style names).

    Raises:
        ScoutError: "<path>:<line>: <field> ..." for bad TOML, an unknown field or variable, a
            wrong type, a bad colour, an unknown Pygments style; "<path>: missing field ..."
    """
    if text is None:
        text = read_text(path, "theme")
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScoutError(_toml_message(path, text, e)) from None

    def fail(field: str, problem: str, table: str | None = None) -> ScoutError:
        at = where(path, text, (table, field) if table else (field,))
        return ScoutError(f"{at}: {f'{table}.' if table else ''}{field} {problem}")

    for key in data:
        if key not in FIELDS:
            raise fail(key, f"is not a theme field (fields: {', '.join(FIELDS)})")
    for key in REQUIRED:
        if key not in data:
            raise ScoutError(f"{path}: missing field {key!r} (every theme needs {' and '.join(REQUIRED)})")
    name = data["name"]
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise fail("name", f"= {name!r} must be letters, digits, '-' or '_' (it becomes a CSS class)")
    if "dark" in data and not isinstance(data["dark"], bool):
        raise fail("dark", f"= {data['dark']!r} must be true or false")
    for key in COLOUR_FIELDS:  # Textual parses these itself (Color.parse): no alpha suffix here
        if key in data and not _is_colour(data[key], alpha=False):
            raise fail(key, f"= {data[key]!r} is not a colour (use #rrggbb, #rgb, rgb(), hsl() or a colour name)")
    variables = data.get("variables", {})
    if not isinstance(variables, dict):
        raise fail("variables", "must be a table: [variables]")
    for key, value in variables.items() if check_variables else ():
        _check_variable(key, value, partial(fail, key, table="variables"))
    colours = {k: data[k] for k in COLOUR_FIELDS if k in data}
    dark = data.get("dark")
    if dark is None:
        dark = Color.parse(colours["background"]).brightness < 0.5 if "background" in colours else True
    return Theme(name=name, dark=dark, variables=dict(variables), **colours)


def _toml_message(path: Path, text: str, error: tomllib.TOMLDecodeError) -> str:
    """"<path>:<line>:<col>: invalid TOML at <field>: <reason>" (the field when the line has one)."""
    message = toml_error(path, text, error)
    where = re.match(rf"{re.escape(str(path))}:(\d+)", message)
    lines = text.splitlines()
    if where and int(where[1]) <= len(lines):
        if key := re.match(r"""\s*["']?([A-Za-z0-9_.-]+)["']?\s*=""", lines[int(where[1]) - 1]):
            message = message.replace(": invalid TOML: ", f": invalid TOML at {key[1]}: ", 1)
    return message


def discover_themes(cwd: Path) -> tuple[dict[str, ThemeSource], list[str]]:
    """Every theme file of every source (see ``theme_dirs``) by theme name, a later source
    replacing an earlier theme of the same name; and one message per skipped (broken) file.

    Files are read in name order within a folder; a missing folder is simply empty. The shipped
    files' variables are not checked here (``load_theme``'s ``check_variables``).
    """
    found: dict[str, ThemeSource] = {}
    problems: list[str] = []
    for kind, folder in theme_dirs(cwd):
        try:
            paths = sorted(p for p in folder.glob("*.toml") if p.is_file())
        except OSError:
            paths = []
        for path in paths:
            try:
                source = read_theme_file(path, kind, check_variables=kind != "shipped")
            except ScoutError as e:
                problems.append(str(e))
                continue
            found[source.theme.name] = source
    return found, problems


def read_theme_file(path: Path, kind: str, *, check_variables: bool = True) -> ThemeSource:
    """``load_theme`` with the file's stamp taken first (so an edit made meanwhile is seen later).

    Raises:
        ScoutError: as ``load_theme``.
    """
    stamp = file_stamp(path)
    return ThemeSource(load_theme(path, check_variables=check_variables), path, kind, stamp)


def file_stamp(path: Path) -> tuple[int, int] | None:
    """(mtime in ns, size in bytes) of ``path``, or None when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def shipped_themes() -> list[Theme]:
    """Every shipped theme, by file name order. A broken shipped file raises ``ScoutError``."""
    return [load_theme(p) for p in sorted(shipped_themes_dir().glob("*.toml"))]


def _check_variable(key: str, value: Any, fail: Callable[[str], ScoutError]) -> None:
    if not isinstance(value, str):
        raise fail(f"= {value!r} must be a string")
    if key == SYNTAX_STYLE:
        if not is_code_style(value):
            raise fail(f"= {value!r} is not a Pygments style (for example: {', '.join(_some_styles())})")
    elif key in SCOUT_VARIABLES or key in _textual_colour_variables():
        if not _is_colour(value, textual=key not in SCOUT_VARIABLES):
            raise fail(f"= {value!r} is not a colour (use #rrggbb, #rgb, rgb(), hsl() or a colour name)")
    elif key in _textual_style_variables():
        if not value.split() or not set(value.split()) <= _TEXT_STYLE_WORDS:
            raise fail(f"= {value!r} is not a text style (words: {', '.join(sorted(_TEXT_STYLE_WORDS))})")
    else:
        raise fail(f"is not a scout-tui or Textual variable (scout-tui's: {', '.join(sorted(SCOUT_VARIABLES))})")


def is_code_style(name: str) -> bool:
    """Whether ``name`` is a Pygments style (or one of Rich's terminal-palette code themes)."""
    if name in RICH_CODE_THEMES:
        return True
    from pygments.styles import STYLE_MAP, get_style_by_name
    from pygments.util import ClassNotFound

    if name in STYLE_MAP:  # a built-in style, known without building its class (~5 ms each)
        return True
    try:
        get_style_by_name(name)
    except ClassNotFound:
        return False
    return True


def _some_styles() -> list[str]:
    return ["monokai", "github-dark", "one-dark", "nord", "gruvbox-dark", "solarized-light", "default", "friendly"]


@cache
def _textual_variables() -> dict[str, str]:
    """Every variable Textual's colour system defines, with a sample value (dark and light)."""
    return {**ColorSystem(primary="#0178d4").generate(), **ColorSystem(primary="#0178d4", dark=True).generate()}


@cache
def _textual_style_variables() -> frozenset[str]:
    return frozenset(k for k in _textual_variables() if "text-style" in k or k.startswith("link-style"))


@cache
def _textual_colour_variables() -> frozenset[str]:
    return frozenset(_textual_variables()) - _textual_style_variables()


def _is_colour(value: Any, textual: bool = False, alpha: bool = True) -> bool:
    """A colour Textual's CSS accepts: ``Color.parse`` syntax, with ``alpha`` also followed by
    ``NN%``; ``textual`` also allows Textual's ``auto NN%`` and ``initial``."""
    if not isinstance(value, str):
        return False
    text = value.strip()
    if textual and text == "initial":
        return True
    match = ALPHA_SUFFIX.fullmatch(text) if alpha else None
    if match:
        text = match[1]
        if textual and text == "auto":
            return True
    try:
        Color.parse(text)
    except (ColorParseError, ValueError):
        return False
    return True


# -- the choice: which theme starts, and the saved one ---------------------------------------


def state_path() -> Path:
    """``<user config dir>/state.toml``: scout-tui's own state, written by ``save_theme``."""

    return user_config_dir() / STATE_FILE


def read_state() -> dict[str, Any]:
    """The state file's table ({} when there is none).

    Raises:
        ScoutError: "<path>:<line>:<col>: invalid TOML: ..." or unreadable.
    """
    path = state_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as e:
        raise ScoutError(f"{path}: cannot read scout-tui's state: {getattr(e, 'strerror', None) or e}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScoutError(toml_error(path, text, e)) from None


def saved_theme() -> str | None:
    """The theme saved by an earlier run, or None.

    Raises:
        ScoutError: the state file is unreadable or not TOML.
    """
    theme = read_state().get("theme")
    return theme if isinstance(theme, str) and theme else None


def save_theme(name: str) -> Path:
    """Remember ``name`` for the next runs in the state file (other keys kept); returns its path.

    Written to a temporary file then renamed, so a crash never leaves half a file.

    Raises:
        ScoutError: the folder or file cannot be written.
    """
    import tomli_w

    path = state_path()
    try:
        state = read_state()
    except ScoutError:
        state = {}  # a broken state file is replaced rather than kept broken
    state["theme"] = name
    temporary: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, name_of_temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        temporary = Path(name_of_temporary)
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(tomli_w.dumps(state))
        os.replace(temporary, path)
    except OSError as e:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
        raise ScoutError(f"{path}: cannot save the theme choice: {e.strerror or e}") from None
    return path


def pick_theme(wanted: str, origin: str | None, saved: str | None, available: Collection[str]) -> tuple[str, list[str]]:
    """The theme to start with, and warnings for a person.

    Precedence: ``wanted`` when ``origin`` says it was set explicitly (``Config.sources["theme"]``:
    a flag, SCOUT_THEME or a scout.toml) > ``saved`` > ``DEFAULT_THEME`` (> Textual's default,
    should the shipped files be gone). An unknown name is skipped with a warning.
    """
    warnings: list[str] = []
    candidates = [(wanted, origin)] if origin else []
    candidates += [(saved, "saved choice")] if saved else []
    for name, source in candidates:
        if name in available:
            return name, warnings
        warnings.append(f"Unknown theme {name!r} ({source}); `scout-tui themes` lists them.")
    return (DEFAULT_THEME if DEFAULT_THEME in available else "textual-dark"), warnings


# -- hot reload --------------------------------------------------------------------------------


@dataclass
class ThemeFileWatcher:
    """Polls the file of the theme in use; ``poll`` returns what changed since the last call.

    It holds no timer: the app calls ``poll`` every ``POLL_SECONDS`` (``App.set_interval``).
    """

    source: ThemeSource | None = None
    _seen: tuple[int, int] | None = field(default=None, repr=False)

    def watch(self, source: ThemeSource | None) -> None:
        """Follow ``source``'s file from now on (None: a theme without a file)."""
        if source is None or self.source is None or source.path != self.source.path:
            self._seen = source.stamp if source else None
        self.source = source

    def poll(self) -> ThemeSource | ScoutError | None:
        """The reloaded theme when its file changed and parses; a ``ScoutError`` when it
        changed and is broken (once per change: the last good theme stays); else None.
        A file that vanished is not an error: the theme stays as it was."""
        if self.source is None:
            return None
        stamp = file_stamp(self.source.path)
        if stamp is None or stamp == self._seen:
            return None
        self._seen = stamp
        try:
            reloaded = read_theme_file(self.source.path, self.source.kind)
        except ScoutError as e:
            return e
        self.source, self._seen = reloaded, reloaded.stamp
        return reloaded
