"""StatusBar: one line of provider, model, session, tokens and the busy hint."""

from __future__ import annotations

import re

from textual.app import App, ComposeResult
from textual.geometry import Region

from scout_tui.widgets import THEME_VARIABLE_DEFAULTS, StatusBar
from scout_tui.widgets.status_bar import SPINNER


class StatusApp(App):
    def get_theme_variable_defaults(self) -> dict[str, str]:
        return THEME_VARIABLE_DEFAULTS

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")


def line(bar: StatusBar) -> str:
    return bar.render_lines(Region(0, 0, bar.size.width, 1))[0].text.strip()


async def test_status_shows_provider_model_session_and_tokens():
    app = StatusApp()
    async with app.run_test(size=(120, 3)) as pilot:
        bar = app.query_one(StatusBar)
        bar.provider, bar.model = "anthropic", "claude-sonnet-4-5"
        bar.session_id = "1a2b3c4d5e6f"
        bar.input_tokens, bar.output_tokens = 12_345, 1_234
        await pilot.pause()
        assert line(bar) == "anthropic · claude-sonnet-4-5 │ session 1a2b3c4d │ ↑ 12.3k ↓ 1.2k"


async def test_busy_shows_a_spinner_and_how_to_interrupt_until_idle():
    app = StatusApp()
    async with app.run_test(size=(120, 3)) as pilot:
        bar = app.query_one(StatusBar)
        bar.busy = True
        await pilot.pause()
        assert "working (Esc to interrupt)" in line(bar)
        assert bar.has_class("-busy")
        bar.busy = False
        await pilot.pause()
        assert "Esc" not in line(bar)


async def test_state_text_is_shown_literally():
    app = StatusApp()
    async with app.run_test(size=(120, 3)) as pilot:
        bar = app.query_one(StatusBar)
        bar.state = "retrying 1/4 in 2.0s [bold]"
        await pilot.pause()
        assert line(bar).endswith("retrying 1/4 in 2.0s [bold]")


async def test_context_use_is_shown_with_a_colour_that_rises_as_it_fills():
    app = StatusApp()
    async with app.run_test(size=(160, 1)) as pilot:
        bar = app.query_one(StatusBar)
        bar.context_window = 200_000
        bar.context_used = 24_100
        await pilot.pause()
        text = bar.render()
        assert "ctx 24.1k/200k 12%" in text.plain
        colours = {}
        for used in (24_100, 120_000, 190_000):
            bar.context_used = used
            content = bar.render()
            start = content.plain.index("%") - 3
            colours[used] = [str(span.style) for span in content.spans if span.start <= start + 2 < span.end]
        assert colours[24_100] == ["$success"] and colours[120_000] == ["$warning"] and colours[190_000] == ["$error"]


async def test_cost_and_cache_share_follow_the_token_counts_and_none_hides_them():
    app = StatusApp()
    async with app.run_test(size=(160, 3)) as pilot:
        bar = app.query_one(StatusBar)
        bar.input_tokens, bar.output_tokens = 12_345, 1_234
        bar.context_window, bar.context_used = 200_000, 24_100
        bar.cost, bar.cache_share = 0.4213, 0.871
        await pilot.pause()
        assert "↑ 12.3k ↓ 1.2k │ $0.42 · cache 87% │ ctx 24.1k/200k 12%" in line(bar)
        bar.cache_share = None
        await pilot.pause()
        assert "↓ 1.2k │ $0.42 │ ctx" in line(bar) and "cache" not in line(bar)
        bar.cost, bar.cache_share = None, 0.5
        await pilot.pause()
        assert "↓ 1.2k │ cache 50% │ ctx" in line(bar) and "$" not in line(bar)
        bar.cache_share = None
        await pilot.pause()
        assert "↓ 1.2k │ ctx" in line(bar)


async def test_cost_is_shown_with_fewer_decimals_as_it_grows():
    app = StatusApp()
    async with app.run_test(size=(120, 3)) as pilot:
        bar = app.query_one(StatusBar)
        shown = {}
        for cost in (0.0, 0.004, 0.01, 3.1, 9.994, 12.46, 1234.5):
            bar.cost = cost
            await pilot.pause()
            shown[cost] = line(bar).rsplit("│", 1)[-1].strip()
        assert shown == {0.0: "<$0.01", 0.004: "<$0.01", 0.01: "$0.01", 3.1: "$3.10", 9.994: "$9.99",
                         12.46: "$12.5", 1234.5: "$1234.5"}


async def test_context_use_with_an_unknown_window_shows_only_the_tokens():
    app = StatusApp()
    async with app.run_test(size=(120, 3)) as pilot:
        bar = app.query_one(StatusBar)
        bar.context_used = 24_100
        await pilot.pause()
        assert line(bar).endswith("│ ctx 24.1k")
        assert "%" not in line(bar) and "/" not in line(bar)


async def test_a_narrow_terminal_drops_the_session_then_the_token_counts_but_keeps_the_model_cost_and_mode():
    def fill(bar: StatusBar) -> None:
        bar.provider, bar.model, bar.session_id = "anthropic", "claude-sonnet-4-5", "1a2b3c4d5e6f"
        bar.input_tokens, bar.output_tokens, bar.cost, bar.cache_share = 591_000, 360, 0.72, 0.99
        bar.context_used, bar.context_window, bar.permission_mode = 50_600, 200_000, "yolo"

    async with StatusApp().run_test(size=(104, 3)) as pilot:
        bar = pilot.app.query_one(StatusBar)
        fill(bar)
        await pilot.pause()
        shown = line(bar)
        assert shown.endswith("yolo mode") and "session" not in shown and "claude-sonnet-4-5" in shown
    async with StatusApp().run_test(size=(80, 3)) as pilot:
        bar = pilot.app.query_one(StatusBar)
        fill(bar)
        bar.busy = True
        await pilot.pause()
        shown = line(bar)
        # the token counts and the context's numbers go before the model; the cost and mode stay
        assert re.sub(f"[{SPINNER}]", SPINNER[0], shown) == \
            "anthropic · claude-sonnet-4-5 │ $0.72 │ ctx 25% │ yolo mode │ ⠋ working"  # any spinner frame
    async with StatusApp().run_test(size=(160, 3)) as pilot:
        bar = pilot.app.query_one(StatusBar)
        bar.provider, bar.model, bar.session_id, bar.permission_mode = "anthropic", "m", "1a2b3c4d5e6f", "ask"
        await pilot.pause()
        assert "session 1a2b3c4d" in line(bar)  # room enough: nothing dropped
