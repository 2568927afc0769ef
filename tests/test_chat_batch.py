"""``build_batch``: a stored batch's widgets, its markdown rendered before it mounts, in a
thread unless it is short (a reopened session's newest messages are drawn without waiting
for one)."""

from __future__ import annotations

import pytest

from scout_tui.widgets import chat_batch
from scout_tui.widgets.chat_batch import INLINE_RENDER_CHARS, build_batch


def answer(text: str) -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


@pytest.fixture
def threaded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many sources each call of the thread renderer (``prerender``) was given."""
    calls: list[int] = []
    real = chat_batch.prerender

    async def counted(sources, width, code_theme):
        calls.append(len(sources))
        return await real(sources, width, code_theme)

    monkeypatch.setattr(chat_batch, "prerender", counted)
    return calls


async def test_a_short_batch_is_rendered_without_a_thread(threaded: list[int]) -> None:
    messages = [{"role": "user", "content": "and?"}, answer("**done**, see `notes.txt`")]
    widgets, _ = await build_batch(messages, 0, 2, {}, 78, "monokai")
    assert threaded == [] and len(widgets) == 2


async def test_a_long_batch_is_rendered_in_a_thread(threaded: list[int]) -> None:
    text = "A paragraph of the answer.\n\n" * (INLINE_RENDER_CHARS // 20)
    widgets, _ = await build_batch([answer(text)], 0, 1, {}, 78, "monokai")
    assert threaded and len(widgets) == 1
