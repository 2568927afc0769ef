"""Ctrl+G in the composer: the draft in ``$VISUAL`` / ``$EDITOR`` (here a script the test writes,
run for real as a subprocess; Pilot's headless app cannot be suspended, so it runs without the
terminal), then back in the composer."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from scout_tui.widgets import Composer
from scout_tui.widgets.external_editor import editor_command
from tests.app_helpers import SIZE, make_app
from tests.conftest import wait_until


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    return workdir


def _script(folder: Path, name: str, body: str) -> Path:
    """An executable shell script ``name`` in ``folder``: the editor, given the file as $1."""
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _notes(app) -> list[str]:
    return [n.message for n in app._notifications]


async def test_ctrl_g_puts_what_the_editor_wrote_back_in_the_composer(repo, tmp_path, monkeypatch):
    editor = _script(tmp_path, "append.sh", 'for file; do :; done; printf "and one more line\\n" >> "$file"')  # the last argument
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", f"'{editor}' --wait")  # quoted, with an argument: split as a shell would
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        composer = app.query_one(Composer)
        composer.load_text("first line\nsecond line")
        composer.move_cursor((0, 0))
        await pilot.press("ctrl+g")
        await wait_until(pilot, lambda: "more" in composer.text, what="the edited text")
        assert composer.text == "first line\nsecond line\nand one more line"
        assert composer.cursor_location == composer.document.end
        assert composer.has_focus
        await pilot.press("ctrl+z")  # one edit: undone, the draft is back
        assert composer.text == "first line\nsecond line"


async def test_visual_wins_over_editor(repo, tmp_path, monkeypatch):
    visual = _script(tmp_path, "visual.sh", 'printf "from visual" > "$1"')
    editor = _script(tmp_path, "editor.sh", 'printf "from editor" > "$1"')
    monkeypatch.setenv("VISUAL", str(visual))
    monkeypatch.setenv("EDITOR", str(editor))
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        composer = app.query_one(Composer)
        composer.load_text("draft")
        await pilot.press("ctrl+g")
        await wait_until(pilot, lambda: composer.text != "draft", what="the edited text")
        assert composer.text == "from visual"


@pytest.mark.parametrize("body, said", [
    ('printf "half-written" > "$1"; echo "E37: No write since last change" >&2; exit 3',
     "exited with status 3: E37: No write since last change"),
    ('rm "$1"', "is gone"),
])
async def test_a_failing_editor_keeps_the_draft_and_says_why(repo, tmp_path, monkeypatch, body, said):
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", str(_script(tmp_path, "bad.sh", body)))
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        composer = app.query_one(Composer)
        composer.load_text("keep me")
        await pilot.press("ctrl+g")
        await wait_until(pilot, lambda: any("Editor" in n or "editor" in n for n in _notes(app)), what="the notice")
        assert composer.text == "keep me"
        assert any(said in n and "The prompt is unchanged." in n for n in _notes(app)), _notes(app)


async def test_an_editor_that_is_not_there_is_named(repo, tmp_path, monkeypatch):
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", str(tmp_path / "no-such-editor"))
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        composer = app.query_one(Composer)
        composer.load_text("keep me")
        await pilot.press("ctrl+g")
        await wait_until(pilot, lambda: _notes(app), what="the notice")
        assert composer.text == "keep me"
        assert "no-such-editor` could not be run" in _notes(app)[-1]


def test_the_editor_is_visual_then_editor_then_vi_split_as_a_shell_would():
    assert editor_command({"VISUAL": "code --wait", "EDITOR": "nano"}) == ["code", "--wait"]
    assert editor_command({"VISUAL": "", "EDITOR": "emacs -nw"}) == ["emacs", "-nw"]  # empty: unset, as in git
    assert editor_command({"EDITOR": "'/opt/my editor/bin/ed' -q"}) == ["/opt/my editor/bin/ed", "-q"]
    assert editor_command({}) == ["vi"]
    with pytest.raises(ValueError, match=r"\$EDITOR"):
        editor_command({"EDITOR": "'unclosed"})
