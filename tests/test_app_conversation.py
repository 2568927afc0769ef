"""The app's conversation is the store's: derived from the same events, whatever fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scout_tui.store.event_log import Store
from scout_tui.widgets.prompt_view import PromptView
from tests.loopback import LoopbackServer, Reply, anthropic_stream
from tests.app_helpers import SIZE, make_app, send, settle
from tests.conftest import wait_until


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    return workdir


def _bad_request() -> Reply:
    body = json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": "bad field"}})
    return Reply(body.encode(), status=400, headers={"content-type": "application/json"})


async def test_a_failed_request_leaves_the_app_the_store_and_ctrl_o_agreeing(repo):
    replies = [_bad_request(), Reply(anthropic_stream(["second answer"])), Reply(anthropic_stream(["third answer"]))]
    with LoopbackServer(replies) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            for text in ("first", "second", "third"):
                await send(app, pilot, text)
                await settle(app, pilot)
            stored = Store().messages(app.session.id)
            assert app.session.messages == stored
            await pilot.press("ctrl+o")
            await wait_until(pilot, lambda: isinstance(app.screen, PromptView))
            assert app.screen.stored == stored
    # The prompt of the failed request stays in what the model is sent next.
    assert "first" in json.dumps(server.requests[-1].json()["messages"])
