"""Prompts sent while a turn runs: pending above the composer; Enter steers (with the running
tool calls' results), Alt+Enter queues (after the turn); Up takes back, Esc cancels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scout_tui.widgets import Composer
from scout_tui.widgets.assistant_message import AssistantMessage
from scout_tui.widgets.chat_messages import UserMessage
from tests.app_helpers import SIZE, HeldReply, make_app, running_and_printed, send, settle
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream

# A bash call that runs until the test creates the file "go": the test decides when it ends.
WAITING = ("toolu_w", "bash", [json.dumps({"command": "echo started; while [ ! -f go ]; do sleep 0.05; done"})])


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    return workdir


def _pending(app) -> list[tuple[str, bool]]:
    return [(p.text, p.steer) for p in app.queue.pending]


def _shown(app) -> str:
    widgets = app.screen.query("PendingPrompts")
    return str(widgets.first().render()) if widgets and widgets.first().display else ""


async def test_enter_during_a_tool_call_steers_and_alt_enter_queues_for_after_the_turn(repo):
    replies = [Reply(anthropic_stream(["Waiting."], WAITING)), Reply(anthropic_stream(["Checked."])),
               Reply(anthropic_stream(["Summary."]))]
    with LoopbackServer(replies) as server:
        app = make_app(repo, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "wait for go")
            await wait_until(pilot, lambda: running_and_printed(app, "toolu_w", "started"))
            await send(app, pilot, "also check the README")
            composer = app.query_one(Composer)
            composer.load_text("then summarise")
            await pilot.press("alt+enter")
            assert _pending(app) == [("also check the README", True), ("then summarise", False)]
            await wait_until(pilot, lambda: "next step: also check the README" in _shown(app))
            assert "after the turn: then summarise" in _shown(app)
            await wait_until(pilot, lambda: app.session.agent.steering)  # given to the agent
            (repo / "go").touch()
            await wait_until(pilot, lambda: len(server.requests) >= 3)
            await settle(app, pilot)
            # The steering prompt went with the tool result, in the same user message, after it
            second = json.loads(server.requests[1].body)["messages"][-1]["content"]
            assert [b["type"] for b in second] == ["tool_result", "text"]
            assert second[1]["text"] == "also check the README"
            # The queued one went as its own turn, after the first ended
            third = json.loads(server.requests[2].body)["messages"]
            assert third[-1]["content"][0]["text"] == "then summarise" and third[-2]["role"] == "assistant"
            assert _pending(app) == [] and _shown(app) == ""
            assert [u.text for u in app.query(UserMessage)] == ["wait for go", "also check the README",
                                                                 "then summarise"]


async def test_up_takes_the_newest_pending_back_and_escape_cancels_before_interrupting(repo):
    with LoopbackServer([Reply(anthropic_stream(["Waiting."], WAITING)), Reply(anthropic_stream(["Done."]))]) as server:
        app = make_app(repo, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "wait for go")
            await wait_until(pilot, lambda: running_and_printed(app, "toolu_w", "started"))
            await send(app, pilot, "first")
            await send(app, pilot, "oops, not this")
            await pilot.press("up")  # the composer is empty: the newest comes back
            composer = app.query_one(Composer)
            assert composer.text == "oops, not this" and _pending(app) == [("first", True)]
            composer.clear()
            await pilot.press("escape")  # cancels "first"; the turn goes on
            assert _pending(app) == [] and app.busy
            await wait_until(pilot, lambda: app.session.agent.steering == [])
            (repo / "go").touch()
            await wait_until(pilot, lambda: not app.busy)
            await settle(app, pilot)
            second = json.loads(server.requests[1].body)["messages"][-1]["content"]
            assert [b["type"] for b in second] == ["tool_result"]  # nothing cancelled went
            assert len(server.requests) == 2


async def test_a_steering_prompt_no_tool_call_takes_is_the_next_turn(repo):
    body = anthropic_stream(["Half " * 20, "and the rest."])
    cut = body.index(b"and the rest")
    held = HeldReply([body[:cut], body[cut:]], held_after=1)  # the rest waits for the test
    with LoopbackServer([held, Reply(anthropic_stream(["Next."]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "answer")
            await wait_until(pilot, lambda: "Half" in "".join(a.source for a in app.query(AssistantMessage)))
            assert app.busy
            await send(app, pilot, "and another thing")
            await wait_until(pilot, lambda: app.session.agent is not None and app.session.agent.steering)
            held.release()
            await wait_until(pilot, lambda: len(server.requests) == 2)
            await settle(app, pilot)
            last = json.loads(server.requests[1].body)["messages"]
            assert last[-1]["content"][0]["text"] == "and another thing" and last[-2]["role"] == "assistant"
            assert _pending(app) == []


async def test_several_prompts_sent_during_an_answer_all_go_in_order(repo):
    body = anthropic_stream(["Half " * 20, "and the rest."])
    cut = body.index(b"and the rest")
    held = HeldReply([body[:cut], body[cut:]], held_after=1)
    replies = [held] + [Reply(anthropic_stream([f"Answer {n}."])) for n in range(3)]
    with LoopbackServer(replies) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "answer")
            await wait_until(pilot, lambda: "Half" in "".join(a.source for a in app.query(AssistantMessage)))
            await send(app, pilot, "steer one")
            await send(app, pilot, "steer two")
            composer = app.query_one(Composer)
            composer.load_text("queued three")
            await pilot.press("tab")  # Tab queues while a turn runs (Codex's key), it does not move the focus
            assert composer.has_focus and _pending(app) == [("steer one", True), ("steer two", True),
                                                            ("queued three", False)]
            held.release()
            await wait_until(pilot, lambda: len(server.requests) == 4 and not app.busy)
            await settle(app, pilot)
            sent = [json.loads(r.body)["messages"][-1]["content"][0]["text"] for r in server.requests]
            assert sent == ["answer", "steer one", "steer two", "queued three"]
            assert _pending(app) == []


async def test_tab_moves_the_focus_when_no_turn_runs(repo):
    app = make_app(repo, None, api_key="sk-test")
    async with app.run_test(size=SIZE) as pilot:
        composer = app.query_one(Composer)
        composer.load_text("draft")
        await pilot.press("tab")
        assert not composer.has_focus and app.queue.pending == []


async def test_a_steering_prompt_sent_after_a_queued_one_goes_first_as_the_screen_shows(repo):
    body = anthropic_stream(["Half " * 20, "and the rest."])
    cut = body.index(b"and the rest")
    held = HeldReply([body[:cut], body[cut:]], held_after=1)
    replies = [held] + [Reply(anthropic_stream([f"Answer {n}."])) for n in range(2)]
    with LoopbackServer(replies) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "answer")
            await wait_until(pilot, lambda: "Half" in "".join(a.source for a in app.query(AssistantMessage)))
            composer = app.query_one(Composer)
            composer.load_text("QUEUED-A")
            await pilot.press("tab")
            await send(app, pilot, "STEER-B2")
            shown = _shown(app).splitlines()
            assert "next step: STEER-B2" in shown[0] and "after the turn: QUEUED-A" in shown[1]
            held.release()
            await wait_until(pilot, lambda: len(server.requests) == 3 and not app.busy)
            await settle(app, pilot)
            sent = [json.loads(r.body)["messages"][-1]["content"][0]["text"] for r in server.requests]
            assert sent == ["answer", "STEER-B2", "QUEUED-A"]
