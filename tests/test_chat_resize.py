"""ChatView after a resize: layout is bounded by what is visible, not by the answer's length
(issue 13). Chunks near the view are rendered at the new width before the frame; the rest keep
an estimated height until a worker thread has measured them."""

from __future__ import annotations

import asyncio
import threading

import pytest

from scout_tui.widgets import chat_layout, markdown_render
from scout_tui.widgets.chat_markdown import MarkdownChunk
from scout_tui.widgets.markdown_render import cached_lines, code_theme_of
from tests.chat_helpers import ChatApp, loaded, long_answer, text
from tests.conftest import wait_until

SMALL, LARGE = (50, 16), (120, 40)
CONVERSATION = [text("user", "write a long answer"), text("assistant", long_answer(800))]


@pytest.fixture
def loop_renders(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sources rendered on the event loop (the main thread) from now on; worker threads'
    renders are not counted."""
    renders: list[str] = []
    render = markdown_render.render_lines

    def counted(source: str, width: int, code_theme: str):
        if threading.current_thread() is threading.main_thread():
            renders.append(source)
        return render(source, width, code_theme)

    monkeypatch.setattr(markdown_render, "render_lines", counted)
    return renders


def screen_text(app: ChatApp) -> list[str]:
    """The screen's lines, without the focused chat's mark down its left edge."""
    return [strip.text.removeprefix("▏") for strip in app.screen._compositor.render_strips()]


async def settled(app: ChatApp, pilot) -> None:
    """Until no worker runs (the measuring one starts after a frame) and a frame more."""
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


async def fresh_screen(size: tuple[int, int]) -> tuple[list[str], int]:
    """What the conversation looks like opened at ``size`` directly: screen rows, chat height."""
    app = ChatApp()
    async with app.run_test(size=size) as pilot:
        chat = await loaded(app, pilot, CONVERSATION)
        await settled(app, pilot)
        return screen_text(app), chat.virtual_size.height


async def test_a_resize_renders_only_the_chunks_near_the_view_and_shows_the_end(loop_renders):
    expected, _ = await fresh_screen(LARGE)
    app = ChatApp()
    async with app.run_test(size=SMALL) as pilot:
        chat = await loaded(app, pilot, CONVERSATION)
        await settled(app, pilot)
        chunks = list(chat.query(MarkdownChunk))
        assert len(chunks) >= 25
        loop_renders.clear()
        await pilot.resize_terminal(*LARGE)
        await pilot.pause()
        assert len(loop_renders) <= 6  # the view is 38 rows, ~70 rows a chunk: not all 28
        assert screen_text(app) == expected  # the newest lines, at the bottom as before


async def test_after_a_resize_a_worker_measures_the_rest_to_their_exact_height(loop_renders):
    _, expected_height = await fresh_screen(LARGE)
    app = ChatApp()
    async with app.run_test(size=SMALL) as pilot:
        chat = await loaded(app, pilot, CONVERSATION)
        await settled(app, pilot)
        loop_renders.clear()
        await pilot.resize_terminal(*LARGE)
        await settled(app, pilot)
        assert len(loop_renders) <= 6
        assert chat.virtual_size.height == expected_height
        width = chat.query(MarkdownChunk).first().size.width
        for chunk in chat.query(MarkdownChunk):
            assert chunk.measured(width)
            assert chunk.size.height == len(cached_lines(chunk.source, width, code_theme_of(app)))
        assert chat.scroll_y == chat.max_scroll_y  # still following the newest output


async def test_a_resize_keeps_what_was_at_the_top_of_the_view_on_screen():
    app = ChatApp()
    async with app.run_test(size=SMALL) as pilot:
        chat = await loaded(app, pilot, CONVERSATION)
        chat.scroll_to(y=chat.max_scroll_y // 2, animate=False)
        await settled(app, pilot)
        top = next(line.strip() for line in screen_text(app) if line.strip().startswith("Part "))
        await pilot.resize_terminal(*LARGE)
        await pilot.pause()
        assert top in [line.strip() for line in screen_text(app)]
        await settled(app, pilot)  # and stays there once the worker measured the rest
        assert top in [line.strip() for line in screen_text(app)]


async def test_chunks_scrolled_into_view_before_the_worker_measured_them_show_at_their_real_height(monkeypatch):
    never = asyncio.Event()

    async def stalled(sources: list[str], width: int, code_theme: str) -> list[int]:
        await never.wait()
        return []

    monkeypatch.setattr(chat_layout, "measure_heights", stalled)
    app = ChatApp()
    async with app.run_test(size=SMALL) as pilot:
        chat = await loaded(app, pilot, CONVERSATION)
        await pilot.resize_terminal(*LARGE)
        await pilot.pause()
        chunks = list(chat.query(MarkdownChunk))
        width = chunks[-1].size.width
        far = next(chunk for chunk in chunks if not chunk.measured(width))
        chat.scroll_to_widget(far, animate=False, top=True)
        await pilot.pause()

        def drawn_at_real_height() -> bool:
            shown = [chunk for chunk in chunks if chunk.region.overlaps(chat.region)]
            return bool(shown) and all(
                chunk.size.height == len(cached_lines(chunk.source, width, code_theme_of(app))) for chunk in shown)

        await wait_until(pilot, drawn_at_real_height, what="the chunks in view are laid out at their real height")
        assert far.measured(width)
        chat.workers.cancel_group(chat, "chat-measure")  # stalled for good

