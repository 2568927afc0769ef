"""Trusting what you typed, in the app: a prompt interrupted (Esc, Ctrl+C) or failed is sent
once, marked so, before the next one, also after reopening the session; Alt+R / ``/retry``
sends a failed turn again; Ctrl+C interrupts, clears, then quits on a second press."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual import events

from scout_tui.tui.app import ScoutApp
from scout_tui.tui.turn_keys import QUIT_HINT, RETRY_HINT
from scout_tui.config.layers import load_config
from scout_tui.core.messages import INTERRUPTED_TURN, RETRIED_TURN, TOOL_INTERRUPTED
from scout_tui.store.event_log import Store
from scout_tui.widgets import Composer
from scout_tui.widgets.assistant_message import AssistantMessage
from scout_tui.widgets.chat_messages import Notice, UserMessage
from tests.app_helpers import SIZE, HeldReply, make_app, rendered, running_and_printed, send, settle
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream

SLOW = anthropic_stream(["Half of ", "an answer", " that never ends"])
CUT = SLOW.index(b"\n\n", SLOW.index(b"an answer")) + 2


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    return workdir


def _texts(request) -> list[tuple[str, list[str]]]:
    return [(m["role"], [b["text"] for b in m["content"] if b["type"] == "text"]) for m in request.json()["messages"]]


def _footer_says(app) -> str:
    """The footer's words before its keys ("" when none)."""
    said = app.footer.query(".-hint")
    return str(said.first().render()) if said else ""


def _answers(app) -> str:
    return "".join(a.source for a in app.query(AssistantMessage))


async def _interrupt_with(key: str, repo: Path) -> tuple[list, str]:
    """Send "slow answer please", press ``key`` mid-answer, send "another slow answer"; the
    requests and the session id."""
    with LoopbackServer([Reply([SLOW[:CUT], SLOW[CUT:]], delay=600), Reply(anthropic_stream(["Second."]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "slow answer please")
            await wait_until(pilot, lambda: "an answer" in _answers(app))
            await pilot.press(key)
            await wait_until(pilot, lambda: not app.busy)  # the rest of the answer would take 600 s
            await settle(app, pilot)
            notes = [rendered(n) for n in app.query(Notice)]
            assert any("Interrupted: the model is told with your next prompt" in n for n in notes), notes
            await send(app, pilot, "another slow answer")
            await settle(app, pilot)
            assert [u.text for u in app.query(UserMessage)] == ["slow answer please", "another slow answer"]
            return server.requests, app.session.id


@pytest.mark.parametrize("key", ["escape", "ctrl+c"])
async def test_an_interrupted_prompt_goes_once_marked_before_the_next_with_its_partial_answer(repo, key):
    requests, session_id = await _interrupt_with(key, repo)
    assert _texts(requests[1]) == [("user", ["slow answer please"]), ("assistant", ["Half of an answer"]),
                                   ("user", [INTERRUPTED_TURN, "another slow answer"])]
    stored = Store().messages(session_id)
    assert [m["role"] for m in stored] == ["user", "assistant", "user", "user", "assistant"]
    assert stored[1].get("incomplete") and stored[2]["content"] == [{"type": "text", "text": INTERRUPTED_TURN}]


async def test_a_session_reopened_after_an_interrupt_sends_the_same_conversation(repo):
    requests, session_id = await _interrupt_with("escape", repo)
    with LoopbackServer([Reply(anthropic_stream(["Third."]))]) as server:
        app = ScoutApp(load_config(repo, flags={"provider": "anthropic", "base_url": server.url, "api_key": "sk-test"}),
                       cwd=repo, continue_=True)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.session.id == session_id)
            await send(app, pilot, "third")
            await settle(app, pilot)
            # the marker is not shown as a prompt of yours
            assert [u.text for u in app.query(UserMessage)] == ["slow answer please", "another slow answer", "third"]
    before, after = _texts(requests[1]), _texts(server.requests[0])
    assert after[:len(before)] == before and after[len(before):] == [("assistant", ["Second."]), ("user", ["third"])]


def _terminal_alt_r(app) -> None:
    """Alt+R as a terminal sends it (ESC r) and Textual's parser reads it: the key ``alt+r``
    with the character "r" (Pilot's ``press("alt+r")`` gives no character)."""
    event = events.Key("alt+r", "r")
    event.set_sender(app)
    app.post_message(event)


async def test_a_dropped_stream_is_marked_failed_and_alt_r_sends_it_again_once(repo):
    dropped = SLOW[:CUT]  # the connection closes after "Half of an answer": no message_stop
    with LoopbackServer([Reply(dropped), Reply(anthropic_stream(["Whole answer."])),
                         Reply(anthropic_stream(["Next."]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "test drop")
            await settle(app, pilot)
            errors = [rendered(n) for n in app.query(Notice) if n.has_class("-error")]
            assert errors and RETRY_HINT.replace("`", "") in errors[-1]
            _terminal_alt_r(app)  # in the composer, which must not type the "r"
            await settle(app, pilot)
            assert "Whole answer." in _answers(app)
            assert app.query_one(Composer).text == ""
            await pilot.press("alt+r")  # nothing failed now: nothing is sent
            await send(app, pilot, "continue")
            await settle(app, pilot)
    assert len(server.requests) == 3
    failed = [("user", ["test drop"]), ("assistant", ["Half of an answer"]),
              ("user", ["[Request failed: incomplete stream]", RETRIED_TURN])]
    assert _texts(server.requests[1]) == failed  # the model is asked to carry on, not just told it failed
    assert _texts(server.requests[2]) == [*failed, ("assistant", ["Whole answer."]), ("user", ["continue"])]


async def test_slash_retry_after_a_persistent_529_sends_the_prompt_once_more(repo):
    overloaded = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).encode()
    busy = [Reply(overloaded, 529, {"content-type": "application/json", "retry-after": "0"}) for _ in range(5)]
    with LoopbackServer([*busy, Reply(anthropic_stream(["At last."]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "test 529 persistent")
            await settle(app, pilot)
            assert len(server.requests) == 5
            await send(app, pilot, "/retry")
            await settle(app, pilot)
            assert "At last." in _answers(app)
    assert _texts(server.requests[5]) == [("user", ["test 529 persistent", "[Request failed: overloaded]", RETRIED_TURN])]


async def test_a_turn_interrupted_during_a_tool_call_can_be_retried(repo):
    call = ("toolu_s", "bash", [json.dumps({"command": "echo started; sleep 600; touch finished"})])
    with LoopbackServer([Reply(anthropic_stream(["Sleeping."], call)), Reply(anthropic_stream(["Carried on."]))]) as server:
        app = make_app(repo, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "sleep")
            await wait_until(pilot, lambda: running_and_printed(app, "toolu_s", "started"))
            await pilot.press("escape")
            await wait_until(pilot, lambda: not app.busy)  # only the kill ends a 600 s sleep
            await settle(app, pilot)
            notes = [rendered(n) for n in app.query(Notice)]
            assert any("Alt+R" in n for n in notes), notes  # the interrupt says how to send it again
            await pilot.press("alt+r")
            await settle(app, pilot)
            assert "Carried on." in _answers(app)
    last = server.requests[1].json()["messages"][-1]
    assert last["role"] == "user"
    assert [(b["type"], b.get("content", b.get("text"))) for b in last["content"]] == [
        ("tool_result", TOOL_INTERRUPTED), ("text", RETRIED_TURN)]


async def test_ctrl_c_gives_the_pending_prompts_back_in_the_order_they_were_shown(repo):
    held = HeldReply([SLOW[:CUT], SLOW[CUT:]], held_after=1)
    with LoopbackServer([held]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "slow answer please")
            await wait_until(pilot, lambda: "an answer" in _answers(app))
            composer = app.query_one(Composer)
            composer.load_text("QUEUED-X")
            await pilot.press("tab")  # queued: after the turn
            await send(app, pilot, "STEER-Y")  # steering: the next step, shown (and sent) first
            await wait_until(pilot, lambda: len(app.queue.pending) == 2)
            await pilot.press("ctrl+c")
            await wait_until(pilot, lambda: not app.busy)
            held.release()
            await settle(app, pilot)
            assert composer.text == "STEER-Y\n\nQUEUED-X"


async def test_ctrl_c_interrupts_then_clears_then_asks_then_quits(repo):
    held = HeldReply([SLOW[:CUT], SLOW[CUT:]], held_after=1)
    with LoopbackServer([held]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "slow answer please")
            await wait_until(pilot, lambda: "an answer" in _answers(app))
            composer = app.query_one(Composer)
            composer.load_text("QUEUED-A")
            await pilot.press("tab")
            await pilot.press("ctrl+c")  # streaming: interrupts; the queued prompt comes back, unsent
            await wait_until(pilot, lambda: not app.busy)
            held.release()
            await settle(app, pilot)
            assert composer.text == "QUEUED-A" and app.queue.pending == [] and len(server.requests) == 1
            await pilot.press("ctrl+c")  # idle, with text: clears it
            assert composer.text == "" and app.is_running
            await pilot.press("ctrl+c")  # idle, empty: the footer asks
            await pilot.pause()
            assert app.is_running and _footer_says(app) == QUIT_HINT
            composer.insert("x")  # typing takes the question back
            await pilot.pause()
            assert _footer_says(app) == ""
            await pilot.press("ctrl+c", "ctrl+c")
            assert app.is_running and _footer_says(app) == QUIT_HINT
            await pilot.press("ctrl+c")
            await wait_until(pilot, lambda: not app.is_running, what="the app quits")


async def test_dragging_across_an_answer_selects_its_text_and_ctrl_c_copies_it(repo):
    from scout_tui.widgets.chat_markdown import MarkdownChunk

    with LoopbackServer([Reply(anthropic_stream(["Plain words to copy."]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "say something")
            await settle(app, pilot)
            chunk = app.query(MarkdownChunk).first()
            await pilot.mouse_down(chunk, offset=(0, 0))
            await pilot.hover(chunk, offset=(10, 0))
            await pilot.mouse_up(chunk, offset=(10, 0))
            await pilot.pause()
            assert app.screen.get_selected_text() == "Plain words"
            line = chunk.render_line(0)
            selected = app.screen.get_component_rich_style("screen--selection")
            assert [s.style.bgcolor for s in line.crop(0, 10)] == [selected.bgcolor] * len(list(line.crop(0, 10)))
            await pilot.press("ctrl+c")
            assert app.clipboard == "Plain words"


OVERLOADED = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).encode()


def _overloaded(retry_after: str = "0") -> Reply:
    return Reply(OVERLOADED, 529, {"content-type": "application/json", "retry-after": retry_after})


def _retry_lines(app) -> list[str]:
    return [rendered(n) for n in app.query(Notice) if n.has_class("-retry")]


async def test_the_retrying_line_goes_once_the_request_is_answered_or_fails_for_good(repo):
    with LoopbackServer([_overloaded(), Reply(anthropic_stream(["Answered."])), *[_overloaded() for _ in range(5)]]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "answered after a retry")
            await settle(app, pilot)
            assert "Answered." in _answers(app) and len(server.requests) == 2
            assert _retry_lines(app) == [] and "retrying" not in app.status.state
            await send(app, pilot, "never answered")
            await settle(app, pilot)
            assert len(server.requests) == 7
            assert _retry_lines(app) == [] and "retrying" not in app.status.state
            assert "Overloaded" in [rendered(n) for n in app.query(Notice)][-1]


async def test_the_retrying_line_goes_when_the_wait_is_interrupted(repo):
    with LoopbackServer([_overloaded("60")]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "interrupted while waiting")
            await wait_until(pilot, lambda: _retry_lines(app), what="the retrying line")
            await pilot.press("escape")
            await wait_until(pilot, lambda: not app.busy)  # the wait would take 60 s
            await settle(app, pilot)
            assert _retry_lines(app) == [] and "retrying" not in app.status.state


async def test_alt_r_twice_quickly_retries_once(repo):
    with LoopbackServer([Reply(SLOW[:CUT]), Reply(anthropic_stream(["Whole answer."]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "test drop")
            await settle(app, pilot)
            app.action_retry()
            app.action_retry()  # before the first press's turn started: refused as during a turn
            await settle(app, pilot)
            notes = [rendered(n) for n in app.query(Notice)]
            assert sum("Retrying:" in n for n in notes) == 1, notes
            assert "Whole answer." in _answers(app)
    assert len(server.requests) == 2
