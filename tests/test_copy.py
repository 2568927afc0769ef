"""Copying to the clipboard: the selected message (c), its code blocks (b), /copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from scout_tui.core.text import code_blocks
from scout_tui.widgets import ChatView
from scout_tui.widgets.chat_messages import Notice
from tests.app_helpers import SIZE, make_app, send, settle
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream

ANSWER = "Two ways:\n\n```python\nprint(1)\n```\n\nor\n\n```sh\necho 2\n```\n"


def test_code_blocks_are_the_fenced_and_indented_blocks_in_order():
    text = "a\n\n~~~ js extra\nx()\n~~~\n\n    indented\n\n```\nplain\n```\n\n`inline` is not one"
    assert code_blocks(text) == [("js", "x()\n"), ("", "indented\n"), ("", "plain\n")]


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    return workdir


def _toasts(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_c_copies_the_selected_message_and_b_its_code_blocks_one_per_press(repo):
    with LoopbackServer([Reply(anthropic_stream([ANSWER]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "print something")
            await settle(app, pilot)
            chat = app.query_one(ChatView)
            chat.focus()
            await pilot.press("end", "c")
            assert app.clipboard == ANSWER.rstrip("\n") or app.clipboard == ANSWER
            assert any(t.startswith("Copied the answer (") for t in _toasts(app))
            await pilot.press("b")
            assert app.clipboard == "print(1)\n"
            await pilot.press("b")
            assert app.clipboard == "echo 2\n"
            assert any("sh code block 2 of 2" in t for t in _toasts(app))
            await pilot.press("b")  # round again
            assert app.clipboard == "print(1)\n"
            await pilot.press("up", "c")  # the prompt
            assert app.clipboard == "print something"


async def test_slash_copy_takes_the_last_answer_or_its_last_code_block(repo):
    with LoopbackServer([Reply(anthropic_stream([ANSWER]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "/copy")
            await wait_until(pilot, lambda: any("No answer to copy yet" in n.text for n in app.query(Notice)))
            await send(app, pilot, "go")
            await settle(app, pilot)
            await send(app, pilot, "/copy code")
            assert app.clipboard == "echo 2\n"
            await send(app, pilot, "/copy")
            assert "print(1)" in app.clipboard and "echo 2" in app.clipboard
            assert server.requests and len(server.requests) == 1  # /copy is not sent
