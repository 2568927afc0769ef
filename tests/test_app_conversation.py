"""The app's conversation is the store's: derived from the same events, whatever fails."""

from __future__ import annotations

import json

from scout_tui.store import Store
from scout_tui.widgets.prompt_view import PromptView
from tests.loopback import LoopbackServer, Reply, anthropic_stream
from tests.test_app import SIZE, make_app, repo, send, settle  # noqa: F401 (fixture)


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
            stored = Store().messages(app.session_id)
            assert app.conversation == stored
            await pilot.press("ctrl+o")
            await settle(app, pilot)
            for _ in range(500):
                if isinstance(app.screen, PromptView):
                    break
                await pilot.pause(0.01)
            view = app.screen
            assert isinstance(view, PromptView)
            assert view.stored == stored
    # The prompt of the failed request stays in what the model is sent next.
    assert "first" in json.dumps(server.requests[-1].json()["messages"])
