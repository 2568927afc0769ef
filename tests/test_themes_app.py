"""Themes in the running app (Pilot): sources, broken files, the palette's live preview,
/theme, the saved choice across runs, hot reload of the theme file, NO_COLOR."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from textual.color import Color
from textual.command import CommandList, CommandPalette

from scout_tui.tui.app import ScoutApp
from scout_tui.config.layers import load_config
from scout_tui.theming.themes import saved_theme, state_path
from scout_tui.widgets.chat_messages import Notice
from scout_tui.widgets.markdown_render import code_theme_of
from scout_tui.store.event_log import Store
from tests.app_helpers import SIZE, conversation, project_dir, send, settle, user_dir, write
from tests.conftest import wait_until


def make_app(repo: Path, **flags) -> ScoutApp:
    return ScoutApp(load_config(repo, flags={"api_key": "sk-test", **flags}), cwd=repo)


def background(app: ScoutApp) -> str:
    """The screen's background as drawn: what the current theme's $background became."""
    return app.screen_stack[0].styles.background.hex


def notifications(app: ScoutApp) -> list[str]:
    return [n.message for n in app._notifications]


async def test_a_user_theme_replaces_the_shipped_one_of_the_same_name(tmp_home: Path, workdir: Path) -> None:
    path = write(user_dir(tmp_home), "nord", 'name = "nord"\nprimary = "#88c0d0"\nbackground = "#101418"\n')
    app = make_app(workdir, theme="nord")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.theme == "nord" and app.theme_sources["nord"].path == path
        assert background(app) == "#101418"


async def test_a_project_theme_can_be_chosen_with_the_theme_command(tmp_home: Path, workdir: Path) -> None:
    write(project_dir(workdir), "repo", 'name = "repo"\nprimary = "#aa5500"\nbackground = "#fdf0e0"\n'
                                        '[variables]\nsyntax-style = "solarized-light"\n')
    app = make_app(workdir)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.theme == "scout-dark"
        await send(app, pilot, "/theme repo")
        await pilot.pause()
        assert app.theme == "repo" and background(app) == "#FDF0E0"
        assert not app.current_theme.dark  # from its light background
        assert code_theme_of(app) == "solarized-light"  # the chat's code blocks follow the theme


async def test_an_unknown_theme_name_is_explained_in_the_chat(tmp_home: Path, workdir: Path) -> None:
    app = make_app(workdir)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "/theme no-such-theme")
        await pilot.pause()
        assert app.theme == "scout-dark"
        notice = " ".join(n.text for n in app.query(Notice))
        assert "Unknown theme 'no-such-theme'" in notice and "scout-light" in notice


async def test_broken_theme_files_are_reported_and_the_app_runs_with_the_rest(tmp_home: Path, workdir: Path) -> None:
    folder = user_dir(tmp_home)
    bad_toml = write(folder, "a", 'name = "a"\nprimary = \n')
    unknown = write(folder, "b", 'name = "b"\nprimary = "#123"\nshade = "#123"\n')
    bad_colour = write(folder, "c", 'name = "c"\nprimary = "#123"\n[variables]\ntool-ok = "greenish"\n')
    bad_style = write(folder, "d", 'name = "d"\nprimary = "#123"\n[variables]\n\nsyntax-style = "nope"\n')
    write(folder, "fine", 'name = "fine"\nprimary = "#123"\n')
    app = make_app(workdir, theme="fine")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        said = "\n".join(notifications(app))
        assert f"{bad_toml}:2:" in said and "invalid TOML at primary" in said
        assert f"{unknown}:3: shade is not a theme field" in said
        assert f"{bad_colour}:4: variables.tool-ok = 'greenish' is not a colour" in said
        assert f"{bad_style}:5: variables.syntax-style = 'nope' is not a Pygments style" in said
        assert app.theme == "fine" and not {"a", "b", "c", "d"} & set(app.available_themes)


async def test_the_palette_previews_each_highlighted_theme_and_escape_goes_back(tmp_home: Path, workdir: Path) -> None:
    app = make_app(workdir)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.action_change_theme()  # Textual's "Theme" command
        await pilot.pause()
        assert CommandPalette.is_open(app)
        await wait_until(pilot, lambda: app.screen.query_one(CommandList).option_count == len(app.available_themes))
        listed = {str(app.screen.query_one(CommandList).get_option_at_index(i).hit.text)
                  for i in range(len(app.available_themes))}
        assert listed == set(app.available_themes) >= {"scout-light", "gruvbox-dark", "textual-dark"}
        seen = []
        for _ in range(2):
            await pilot.press("down")
            await pilot.pause()
            seen.append((app.theme, background(app)))
        (first, first_background), (second, second_background) = seen
        assert "scout-dark" not in (first, second) and first != second  # each highlighted theme shows
        assert second_background == Color.parse(app.current_theme.to_color_system().generate()["background"]).hex
        await pilot.press("escape")
        await pilot.pause()
        assert not CommandPalette.is_open(app)
        assert app.theme == "scout-dark" and background(app) == "#16181D"
        assert saved_theme() is None


async def test_enter_in_the_theme_picker_keeps_the_previewed_theme_and_saves_it(tmp_home: Path, workdir: Path) -> None:
    app = make_app(workdir)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.search_themes()
        await pilot.pause()
        await pilot.press("down", "down")
        await pilot.pause()
        previewed = app.theme
        assert previewed != "scout-dark"
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not CommandPalette.is_open(app)
        assert app.theme == previewed and saved_theme() == previewed


async def test_scout_themes_are_palette_commands_too(tmp_home: Path, workdir: Path) -> None:
    app = make_app(workdir)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        assert "Theme" in commands  # Textual's picker, with every theme
        assert {"Theme: scout-light", "Theme: nord", "Theme: gruvbox-dark"} <= set(commands)
        assert commands["Theme: nord"].help.startswith("shipped theme ")
        # Found by typing "theme" or a name; not listed before anything is typed.
        assert not any(c.discover for title, c in commands.items() if title.startswith("Theme: "))


async def test_the_chosen_theme_is_used_again_on_the_next_run(tmp_home: Path, workdir: Path) -> None:
    first = make_app(workdir)
    async with first.run_test(size=SIZE) as pilot:
        await send(first, pilot, "/theme gruvbox-dark")
        await first.workers.wait_for_complete()
        await pilot.pause()
        assert [n.message for n in first._notifications] == ["Theme gruvbox-dark, saved for the next runs."]
    assert 'theme = "gruvbox-dark"' in state_path().read_text()
    second = make_app(workdir)
    async with second.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert second.theme == "gruvbox-dark"
    explicit = make_app(workdir, theme="nord")  # --theme for this run beats the saved choice
    async with explicit.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert explicit.theme == "nord"


async def test_editing_the_theme_file_in_use_re_applies_it(tmp_home: Path, workdir: Path) -> None:
    path = write(user_dir(tmp_home), "mine", 'name = "mine"\nprimary = "#336699"\nbackground = "#102030"\n')
    app = make_app(workdir, theme="mine")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert background(app) == "#102030"
        edit(path, 'name = "mine"\nprimary = "#336699"\nbackground = "#304050"\n')
        await wait_until(pilot, lambda: background(app) == "#304050")
        assert app.theme == "mine"


async def test_a_broken_edit_is_reported_and_the_last_good_version_stays(tmp_home: Path, workdir: Path) -> None:
    path = write(user_dir(tmp_home), "mine", 'name = "mine"\nprimary = "#336699"\nbackground = "#102030"\n')
    app = make_app(workdir, theme="mine")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        edit(path, 'name = "mine"\nprimary = "#336699"\nbackground = "#30405"\n')
        await wait_until(pilot, lambda: any("is not a colour" in m for m in notifications(app)))
        assert f"{path}:3: background = '#30405' is not a colour" in "\n".join(notifications(app))
        assert background(app) == "#102030" and app.theme == "mine"
        edit(path, 'name = "mine"\nprimary = "#336699"\nbackground = "#304050"\n')  # fixed: applied
        await wait_until(pilot, lambda: background(app) == "#304050")


async def test_code_blocks_follow_an_edited_syntax_style(tmp_home: Path, workdir: Path) -> None:
    theme = 'name = "mine"\nprimary = "#336699"\n[variables]\nsyntax-style = "{}"\n'
    path = write(user_dir(tmp_home), "mine", theme.format("monokai"))
    app = ScoutApp(load_config(workdir, flags={"api_key": "sk-test", "theme": "mine"}), cwd=workdir,
                   resume=conversation(Store(), workdir))  # its answer holds a python code block
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        monokai, solarized = (39, 40, 34), (253, 246, 227)  # the styles' own backgrounds
        assert monokai in backgrounds_drawn(app) and solarized not in backgrounds_drawn(app)
        edit(path, theme.format("solarized-light"))
        await wait_until(pilot, lambda: solarized in backgrounds_drawn(app))
        assert monokai not in backgrounds_drawn(app)


def backgrounds_drawn(app: ScoutApp) -> set[tuple[int, int, int]]:
    return {tuple(segment.style.bgcolor.triplet) for strip in app.screen._compositor.render_strips() for segment in strip
            if segment.style and segment.style.bgcolor and segment.style.bgcolor.triplet}


def edit(path: Path, text: str) -> None:
    """Rewrite ``path`` as an editor would, its mtime moved on (coarse clocks could repeat it)."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 1_000_000_000, before + 1_000_000_000))


async def test_no_color_renders_without_colour(tmp_home: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")  # https://no-color.org
    app = make_app(workdir, theme="tokyo-night")
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "/help")  # text of several colours on screen
        await pilot.pause()
        colours = {
            colour.triplet
            for strip in app.screen._compositor.render_strips()
            for segment in strip
            if segment.style
            for colour in (segment.style.color, segment.style.bgcolor)
            if colour is not None and colour.triplet is not None
        }
        assert len(colours) > 2  # shades of grey still draw the panes apart
        assert all(r == g == b for r, g, b in colours), colours
