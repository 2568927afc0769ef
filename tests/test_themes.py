"""Theme files: the format, broken files, sources and their precedence, the saved choice,
contrast of the shipped themes, and `scout-tui themes`."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from textual.color import Color
from textual.design import ColorSystem
from textual.theme import BUILTIN_THEMES

from scout_tui.core.errors import ScoutError
from scout_tui.theming.colours import contrast_ratio, css_variables, derive_variables, resolve_colour
from scout_tui.theming.themes import (
    DEFAULT_THEME,
    SCOUT_VARIABLES,
    discover_themes,
    is_code_style,
    load_theme,
    pick_theme,
    save_theme,
    saved_theme,
    shipped_themes,
    shipped_themes_dir,
    state_path,
)
from tests.app_helpers import project_dir, user_dir, write

SHIPPED = sorted(p.stem for p in shipped_themes_dir().glob("*.toml"))
TEXT_ON = ("background", "surface", "user-message-background", "assistant-message-background")
COLOURED_TEXT = ("tool-running", "tool-ok", "tool-error", "tree-current", "tree-fork")


# -- shipped themes ------------------------------------------------------------------------


def test_scout_dark_and_light_ship_with_at_least_four_more_palettes() -> None:
    assert {"scout-dark", "scout-light"} <= set(SHIPPED) and len(SHIPPED) >= 6
    assert DEFAULT_THEME == "scout-dark"


def test_each_shipped_file_is_named_for_its_theme_and_sets_every_scout_variable() -> None:
    for theme, stem in zip(shipped_themes(), SHIPPED):
        assert theme.name == stem
        assert set(theme.variables) >= SCOUT_VARIABLES, theme.name
        assert is_code_style(theme.variables["syntax-style"])


def resolved(theme_name: str) -> tuple[dict[str, str], Color, Color, Color]:
    """The theme's CSS variables as the app merges them, and its opaque background, surface
    and foreground (Textual-derived where the file leaves them out)."""
    theme = next(t for t in shipped_themes() if t.name == theme_name)
    variables = css_variables(theme)
    background = Color.parse(variables["background"])
    surface = resolve_colour(variables["surface"], background)
    return variables, background, surface, resolve_colour(variables["foreground"], surface)


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_text_reaches_wcag_aa_contrast_on_every_background(name: str) -> None:
    variables, background, surface, foreground = resolved(name)
    for under in TEXT_ON:
        # Message backgrounds sit in the chat pane, whose background is $surface.
        colour = resolve_colour(variables[under], background if under in ("background", "surface") else surface)
        assert contrast_ratio(foreground, colour) >= 4.5, f"{name}: foreground on {under}"


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_status_and_tree_colours_read_on_the_panes(name: str) -> None:
    variables, _, surface, _ = resolved(name)
    for token in COLOURED_TEXT:  # tool lines and the session tree are text on $surface
        assert contrast_ratio(resolve_colour(variables[token], surface), surface) >= 4.5, f"{name}: {token}"


def test_contrast_ratio_follows_wcag_reference_values() -> None:
    black, white = Color.parse("#000000"), Color.parse("#ffffff")
    assert contrast_ratio(black, white) == pytest.approx(21.0)
    assert contrast_ratio(white, white) == pytest.approx(1.0)
    assert contrast_ratio(Color.parse("#767676"), white) == pytest.approx(4.54, abs=0.01)  # the darkest AA grey
    assert contrast_ratio(Color.parse("#777777"), white) == pytest.approx(4.48, abs=0.01)


def test_alpha_colours_are_blended_over_what_is_under_them() -> None:
    under = Color.parse("#000000")
    assert resolve_colour("#ffffff 50%", under).hex == "#7F7F7F"
    assert resolve_colour("rgba(255, 255, 255, 0.5)", under).hex == "#7F7F7F"
    assert resolve_colour("transparent", under).hex == "#000000"


@pytest.mark.parametrize("name", [n for n, t in BUILTIN_THEMES.items() if not t.ansi])
def test_textual_themes_get_legible_scout_variables_derived_from_their_colours(name: str) -> None:
    theme = BUILTIN_THEMES[name]
    variables = {**css_variables(theme)}
    background = Color.parse(variables["background"])
    surface = resolve_colour(variables["surface"], background)
    foreground = resolve_colour(variables["foreground"], surface)
    if contrast_ratio(foreground, surface) < 4.5:
        pytest.skip(f"{name}'s own text is below 4.5 on its surface")
    for under in ("user-message-background", "assistant-message-background"):
        assert contrast_ratio(foreground, resolve_colour(variables[under], surface)) >= 4.5, under
    for token in COLOURED_TEXT:
        assert contrast_ratio(resolve_colour(variables[token], surface), surface) >= 4.5, token
    assert variables["syntax-style"] == ("monokai" if theme.dark else "default")


# -- the format ----------------------------------------------------------------------------


def test_name_and_primary_are_enough_and_textual_derives_the_rest(tmp_path: Path) -> None:
    theme = load_theme(write(tmp_path, "tiny", 'name = "tiny"\nprimary = "#cc6600"\n'))
    generated = ColorSystem(primary="#cc6600", dark=True).generate()
    variables = css_variables(theme)
    for key in ("background", "surface", "panel", "foreground", "secondary", "text-primary"):
        assert variables[key] == generated[key]
    assert set(derive_variables(theme)) == SCOUT_VARIABLES


def test_dark_follows_the_background_when_the_file_does_not_say(tmp_path: Path) -> None:
    light = load_theme(write(tmp_path, "paper", 'name = "paper"\nprimary = "blue"\nbackground = "#fafafa"\n'))
    night = load_theme(write(tmp_path, "night", 'name = "night"\nprimary = "blue"\nbackground = "#101010"\n'))
    assert (light.dark, night.dark) == (False, True)


def test_every_colour_syntax_of_the_issue_is_accepted(tmp_path: Path) -> None:
    theme = load_theme(write(tmp_path, "syntaxes", """\
name = "syntaxes"
primary = "#336699"
secondary = "#369"
accent = "rgb(255, 128, 0)"
success = "hsl(120, 100%, 25%)"
error = "crimson"
[variables]
tool-ok = "#00ff00 80%"
border = "auto 50%"
block-cursor-text-style = "bold reverse"
"""))
    colours = {field: Color.parse(getattr(theme, field)).hex for field in ("secondary", "accent", "success", "error")}
    assert colours == {"secondary": "#336699", "accent": "#FF8000", "success": "#008000", "error": "#DC143C"}
    assert css_variables(theme)["tool-ok"] == "#00ff00 80%"


BROKEN = {
    "bad TOML": ('name = "x"\nprimary = "#123456"\nsecondary = \n', ":3:", "invalid TOML at secondary"),
    "unknown field": ('name = "x"\nprimary = "#123456"\ncolour = "#123456"\n', ":3:", "colour is not a theme field"),
    "bad colour": ('name = "x"\n\nprimary = "blurple"\n', ":3:", "primary = 'blurple' is not a colour"),
    "bad variable colour": ('name = "x"\nprimary = "#123"\n[variables]\ntool-ok = "#12345"\n', ":4:",
                            "variables.tool-ok = '#12345' is not a colour"),
    "bad Pygments style": ('name = "x"\nprimary = "#123"\n\n[variables]\nsyntax-style = "no-such-style"\n', ":5:",
                           "variables.syntax-style = 'no-such-style' is not a Pygments style"),
    "unknown variable": ('name = "x"\nprimary = "#123"\n[variables]\ntool-okay = "red"\n', ":4:",
                         "variables.tool-okay is not a scout-tui or Textual variable"),
    "wrong type": ('name = "x"\nprimary = "#123"\ndark = "yes"\n', ":3:", "dark = 'yes' must be true or false"),
    "bad text style": ('name = "x"\nprimary = "#123"\n[variables]\nblock-cursor-text-style = "loud"\n', ":4:",
                       "variables.block-cursor-text-style = 'loud' is not a text style"),
}


@pytest.mark.parametrize("kind", BROKEN)
def test_a_broken_file_is_reported_with_its_path_line_and_field(tmp_path: Path, kind: str) -> None:
    text, line, problem = BROKEN[kind]
    path = write(tmp_path, "broken", text)
    with pytest.raises(ScoutError) as caught:
        load_theme(path)
    assert str(caught.value).startswith(f"{path}{line}")
    assert problem in str(caught.value)


def test_a_missing_required_field_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "x", 'name = "x"\n')
    with pytest.raises(ScoutError, match=rf"^{path}: missing field 'primary'"):
        load_theme(path)


def test_a_dotted_variable_is_found_on_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "x", 'name = "x"\nprimary = "#123"\nvariables.tool-error = "nope"\n')
    with pytest.raises(ScoutError, match=rf"^{path}:3: variables.tool-error = 'nope'"):
        load_theme(path)


# -- sources -------------------------------------------------------------------------------


NORD_USER = 'name = "nord"\nprimary = "#88c0d0"\nbackground = "#101418"\n'


def test_a_user_theme_replaces_the_shipped_one_of_the_same_name(tmp_home: Path, workdir: Path) -> None:
    path = write(user_dir(tmp_home), "nord", NORD_USER)
    found, problems = discover_themes(workdir)
    assert problems == []
    assert found["nord"].path == path and found["nord"].kind == "user"
    assert found["nord"].theme.background == "#101418"
    assert found["scout-dark"].kind == "shipped"


def test_a_project_theme_replaces_a_user_theme_and_adds_its_own(tmp_home: Path, workdir: Path) -> None:
    write(user_dir(tmp_home), "nord", NORD_USER)
    project_nord = write(project_dir(workdir), "nord", 'name = "nord"\nprimary = "#88c0d0"\nbackground = "#202428"\n')
    write(project_dir(workdir), "repo-colours", 'name = "repo-colours"\nprimary = "#aa5500"\n')
    found, _ = discover_themes(workdir)
    assert found["nord"].path == project_nord and found["nord"].kind == "project"
    assert found["repo-colours"].kind == "project"


def test_a_broken_file_is_skipped_and_the_others_load(tmp_home: Path, workdir: Path) -> None:
    broken = write(user_dir(tmp_home), "broken", 'name = "broken"\nprimary = "nope"\n')
    write(user_dir(tmp_home), "fine", 'name = "fine"\nprimary = "#abcdef"\n')
    found, problems = discover_themes(workdir)
    assert "fine" in found and "broken" not in found and set(SHIPPED) <= set(found)
    assert problems == [f"{broken}:2: primary = 'nope' is not a colour (use #rrggbb, #rgb, rgb(), hsl() or a colour name)"]


# -- which theme starts --------------------------------------------------------------------


AVAILABLE = {"scout-dark", "nord", "scout-light"}


def test_an_explicit_setting_beats_the_saved_choice() -> None:
    assert pick_theme("nord", "flag --theme", "scout-light", AVAILABLE) == ("nord", [])


def test_the_saved_choice_beats_the_default() -> None:
    assert pick_theme("scout-dark", None, "scout-light", AVAILABLE) == ("scout-light", [])
    assert pick_theme("scout-dark", None, None, AVAILABLE) == ("scout-dark", [])


def test_an_unknown_explicit_theme_warns_and_falls_back_to_the_saved_one() -> None:
    name, warnings = pick_theme("nope", "env SCOUT_THEME", "nord", AVAILABLE)
    assert name == "nord"
    assert warnings == ["Unknown theme 'nope' (env SCOUT_THEME); `scout-tui themes` lists them."]


def test_the_saved_choice_goes_to_a_state_file_and_leaves_scout_toml_alone(tmp_home: Path) -> None:
    config_dir = tmp_home / ".config" / "scout"
    config_dir.mkdir(parents=True)
    (config_dir / "scout.toml").write_text('# mine\nmodel = "x"\n')
    (config_dir / "state.toml").write_text('other = 1\n')
    save_theme("nord")
    assert state_path() == config_dir / "state.toml"
    assert tomllib.loads(state_path().read_text()) == {"other": 1, "theme": "nord"}
    assert (config_dir / "scout.toml").read_text() == '# mine\nmodel = "x"\n'
    assert saved_theme() == "nord"


def test_a_broken_state_file_names_its_line(tmp_home: Path) -> None:
    path = tmp_home / ".config" / "scout" / "state.toml"
    path.parent.mkdir(parents=True)
    path.write_text('theme = "nord"\ntheme = "x"\n')
    with pytest.raises(ScoutError, match=rf"^{path}:2:"):
        saved_theme()


# -- scout-tui themes ----------------------------------------------------------------------


def test_the_themes_command_lists_every_theme_with_its_source_file(tmp_home: Path, workdir: Path) -> None:
    mine = write(user_dir(tmp_home), "mine", 'name = "mine"\nprimary = "#abcdef"\n')
    write(user_dir(tmp_home), "broken", 'name = "broken"\nprimary = "#abcdef"\nshade = 1\n')
    ours = write(project_dir(workdir), "ours", 'name = "ours"\nprimary = "#abcdef"\n')
    result = subprocess.run([sys.executable, "-m", "scout_tui", "themes"], cwd=workdir, env=dict(os.environ),
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    rows = {line.split()[1] if line.startswith("*") else line.split()[0]: line for line in result.stdout.splitlines()[1:]}
    assert "shipped" in rows["scout-dark"] and str(shipped_themes_dir() / "scout-dark.toml") in rows["scout-dark"]
    assert rows["scout-dark"].startswith("*")  # the theme a run would start with
    assert "user" in rows["mine"] and str(mine) in rows["mine"]
    assert "project" in rows["ours"] and str(ours) in rows["ours"]
    assert "built-in" in rows["textual-dark"] and "gruvbox" in rows
    assert "broken" not in rows
    assert f"{user_dir(tmp_home) / 'broken.toml'}:3: shade is not a theme field" in result.stderr
