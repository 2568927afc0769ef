"""The status bar says when commands run unsandboxed (or in a read-only sandbox), next to the
permission mode; the default sandbox shows nothing. The app learns it off the event loop."""

from __future__ import annotations

import re

import sys
from pathlib import Path
from typing import Iterator

import pytest
from textual.app import App, ComposeResult

from scout_tui.tools import sandbox
from scout_tui.widgets import THEME_VARIABLE_DEFAULTS, StatusBar
from scout_tui.widgets.status_bar import SPINNER
from tests.app_helpers import SIZE, make_app, workers_done
from tests.conftest import wait_until


class StatusApp(App):
    def get_theme_variable_defaults(self) -> dict[str, str]:
        return THEME_VARIABLE_DEFAULTS

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")


def shown(bar: StatusBar) -> str:
    return bar.render().plain


async def test_unsandboxed_shows_as_a_warning_beside_the_permission_mode() -> None:
    async with StatusApp().run_test(size=(120, 3)) as pilot:
        bar = pilot.app.query_one(StatusBar)
        bar.input_tokens, bar.permission_mode, bar.sandbox = 10, "ask", "off"
        await pilot.pause()
        content = bar.render()
        assert content.plain == "↑ 10 ↓ 0 │ ask mode · unsandboxed"
        start = content.plain.index("unsandboxed")
        assert [str(s.style) for s in content.spans if s.start <= start < s.end] == ["$warning"]


async def test_the_default_sandbox_and_an_unknown_one_show_nothing() -> None:
    async with StatusApp().run_test(size=(120, 3)) as pilot:
        bar = pilot.app.query_one(StatusBar)
        bar.input_tokens, bar.permission_mode = 10, "ask"
        for mode in ("", "workspace-write"):
            bar.sandbox = mode
            await pilot.pause()
            assert shown(bar) == "↑ 10 ↓ 0 │ ask mode"


async def test_a_read_only_sandbox_is_named() -> None:
    async with StatusApp().run_test(size=(120, 3)) as pilot:
        bar = pilot.app.query_one(StatusBar)
        bar.input_tokens, bar.permission_mode, bar.sandbox = 10, "yolo", "read-only"
        await pilot.pause()
        assert shown(bar) == "↑ 10 ↓ 0 │ yolo mode · read-only sandbox"


async def test_a_narrow_terminal_keeps_the_cost_the_mode_and_the_unsandboxed_warning() -> None:
    lines = {}
    for width in (60, 80, 120):
        async with StatusApp().run_test(size=(width, 3)) as pilot:
            bar = pilot.app.query_one(StatusBar)
            bar.provider, bar.model, bar.session_id = "anthropic", "claude-sonnet-4-5", "1a2b3c4d5e6f"
            bar.input_tokens, bar.output_tokens, bar.cost, bar.cache_share = 591_000, 360, 0.72, 0.99
            bar.context_used, bar.context_window, bar.permission_mode = 50_600, 200_000, "yolo"
            bar.sandbox, bar.busy = "off", True
            await pilot.pause()
            # the spinner's frame depends on when the line is drawn: any frame reads as the first
            line = bar.render_lines(bar.content_region.reset_offset)[0].text.strip()
            lines[width] = re.sub(f"[{SPINNER}]", SPINNER[0], line)
    # the session, token counts and context numbers go first; the model stays while it fits
    assert lines[120] == ("anthropic · claude-sonnet-4-5 │ $0.72 · cache 99% │ ctx 25% │ yolo mode · unsandboxed │ "
                          "⠋ working (Esc to interrupt)")
    assert lines[80] == lines[60] == "$0.72 │ ctx 25% │ yolo mode · unsandboxed │ ⠋ working"


# -- the app sets it ------------------------------------------------------------------------------


@pytest.fixture
def fresh_probe() -> Iterator[None]:
    """bwrap is probed again in this test (after it hides bwrap), and again after it."""
    sandbox.available.cache_clear()
    yield
    sandbox.available.cache_clear()


async def test_the_app_says_unsandboxed_when_bwrap_is_missing(tmp_home: Path, workdir: Path, monkeypatch,
                                                              fresh_probe) -> None:
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: None)
    app = make_app(workdir, None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "unsandboxed" in shown(app.status), what="the status bar says unsandboxed")
        assert app.status.sandbox == "off"


async def test_the_app_says_unsandboxed_when_the_config_turns_the_sandbox_off(tmp_home: Path, workdir: Path) -> None:
    user = tmp_home / ".config" / "scout" / "scout.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[sandbox]\nmode = "off"\n')
    app = make_app(workdir, None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "unsandboxed" in shown(app.status), what="the status bar says unsandboxed")


@pytest.mark.skipif(not (sys.platform.startswith("linux") and sandbox.available()),
                    reason="bwrap cannot run here: install the Debian/Ubuntu package bubblewrap, as .ci/run does")
async def test_the_app_shows_nothing_more_when_the_sandbox_is_in_force(tmp_home: Path, workdir: Path) -> None:
    app = make_app(workdir, None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.status.sandbox != "", what="the app learns the sandbox in force")
        await workers_done(app)
        assert app.status.sandbox == "workspace-write"
        assert "sandbox" not in shown(app.status)
