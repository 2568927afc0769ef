"""`scout-tui acp`: a prompt cancelled (``session/cancel``) or failed is sent once, marked so,
before the next prompt; a reloaded session does not show the mark as a prompt."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from acp import RequestError

from scout_tui.core.messages import INTERRUPTED_TURN
from scout_tui.store.event_log import Store
from tests.acp_helpers import RecordingClient, acp_process, fold, text
from tests.conftest import wait_until
from tests.headless_helpers import env, repo  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer, Reply, anthropic_stream

SLOW = anthropic_stream(["first words ", "never sent"])
CUT = SLOW.index(b"event: content_block_delta", SLOW.index(b"first words"))


def _texts(request) -> list[tuple[str, list[str]]]:
    return [(m["role"], [b["text"] for b in m["content"] if b["type"] == "text"]) for m in request.json()["messages"]]


async def test_a_cancelled_prompt_goes_once_marked_interrupted_before_the_next_prompt(repo, env):
    client = RecordingClient()
    with LoopbackServer([Reply([SLOW[:CUT], SLOW[CUT:]], delay=600), Reply(anthropic_stream(["Second."]))]) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            turn = asyncio.create_task(conn.prompt(session_id=session.session_id, prompt=text("slow answer please")))
            await wait_until(None, lambda: any(u.session_update == "agent_message_chunk"  # not the commands
                                               for u in client.of(session.session_id)), what="the first chunk")
            await conn.cancel(session_id=session.session_id)
            assert (await asyncio.wait_for(turn, 60)).stop_reason == "cancelled"  # only a guard against a hang
            done = await conn.prompt(session_id=session.session_id, prompt=text("another slow answer"))
    assert done.stop_reason == "end_turn"
    assert _texts(server.requests[1]) == [("user", ["slow answer please"]), ("assistant", ["first words "]),
                                          ("user", [INTERRUPTED_TURN, "another slow answer"])]
    later = RecordingClient()
    async with acp_process(repo, env, later) as (conn, _, _):
        await conn.load_session(cwd=str(repo), session_id=session.session_id)
    said = [words for kind, words in fold(later.of(session.session_id)) if kind == "user_message_chunk"]
    assert said == ["slow answer please", "another slow answer"]


async def test_a_prompt_whose_stream_dropped_goes_once_marked_failed_before_the_next(repo, env):
    client = RecordingClient()
    with LoopbackServer([Reply(SLOW[:CUT]), Reply(anthropic_stream(["Second."]))]) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            with pytest.raises(RequestError):  # the failed request is a JSON-RPC error, as before
                await conn.prompt(session_id=session.session_id, prompt=text("test drop"))
            await conn.prompt(session_id=session.session_id, prompt=text("continue"))
    assert _texts(server.requests[1]) == [("user", ["test drop"]), ("assistant", ["first words "]),
                                          ("user", ["[Request failed: incomplete stream]", "continue"])]
    stored = Store(Path(env["SCOUT_HOME"]) / "sessions.db").messages(session.session_id)
    assert [m["role"] for m in stored] == ["user", "assistant", "user", "user", "assistant"]
