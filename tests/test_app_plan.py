"""Plan mode in the real app, driven with Pilot: the plan dialog's four choices (and editing the
plan first), the mode going through the session (Shift+Tab, ``/plan``), and a plan run "in a
fresh context" shown as its new branch."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from scout_tui.store.event_log import Store
from scout_tui.tools.approvals import PlanDecision, PlanReview
from scout_tui.widgets import ChatView, StatusBar
from scout_tui.widgets.plan_dialog import PlanScreen
from tests.app_helpers import SIZE, make_app, rendered, send, settle
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream

PLAN = "## Add a greeting\n\n1. Add `greet()` to **app.py**\n2. Call it from `main()`\n"
REQUEST = "add a friendly greeting"


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    (workdir / "app.py").write_text("def main():\n    pass\n")
    return workdir


async def dialog_up(app, pilot, review: PlanReview) -> tuple[asyncio.Task[PlanDecision], PlanScreen]:
    """``app.review_plan(review)`` running (as the engine's ``exit_plan`` call awaits it) and its
    dialog up, taking keys."""
    task = asyncio.ensure_future(app.review_plan(review))
    await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen), what="the plan dialog")
    await wait_until(pilot, lambda: app.screen.armed, what="the dialog to take keys (ARM_SECONDS after it appeared)")
    return task, app.screen


async def decided(pilot, task: asyncio.Task[PlanDecision]) -> PlanDecision:
    await wait_until(pilot, task.done, what="the person's decision")
    return task.result()


async def in_plan_mode(app, pilot, before: str = "auto-edit") -> None:
    """The app in plan mode, entered from ``before`` with Shift+Tab."""
    while app.permissions.mode != before:
        await pilot.press("shift+tab")
    while app.permissions.mode != "plan":
        await pilot.press("shift+tab")


async def test_the_dialog_shows_the_request_and_the_plan_as_markdown(repo):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        task, screen = await dialog_up(app, pilot, PlanReview("toolu_p", PLAN, REQUEST, "ask"))
        assert "You asked: add a friendly greeting" in str(screen.query_one("#request").render())
        heading = screen.query_one("#plan").query_one("MarkdownH2")
        assert "Add a greeting" in str(heading.render())
        keys = str(screen.query_one("#keys").render())
        assert "h run here (back to ask mode)" in keys and "f run in a fresh context" in keys
        await pilot.press("escape")
        await decided(pilot, task)


async def test_h_runs_the_plan_here_and_the_status_bar_shows_the_mode_back(repo):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await in_plan_mode(app, pilot, before="auto-edit")
        status = app.query_one(StatusBar)
        assert "⏸ plan mode" in str(status.render())
        task, _ = await dialog_up(app, pilot, PlanReview("toolu_p", PLAN, REQUEST, app.session.mode_before_plan))
        assert status.awaiting  # "awaiting approval" while a turn waits on the dialog
        await pilot.press("h")
        assert await decided(pilot, task) == PlanDecision("here", PLAN)
        await pilot.pause()
        assert not status.awaiting
        assert app.permissions.mode == status.permission_mode == "auto-edit"
        assert "auto-edit mode" in str(status.render()) and "plan" not in str(status.render())


async def test_f_runs_the_plan_in_a_fresh_context(repo):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await in_plan_mode(app, pilot, before="ask")
        task, _ = await dialog_up(app, pilot, PlanReview("toolu_p", PLAN, REQUEST, "ask"))
        await pilot.press("f")
        assert await decided(pilot, task) == PlanDecision("fresh", PLAN)
        assert app.permissions.mode == app.query_one(StatusBar).permission_mode == "ask"


async def test_k_keeps_planning_with_the_note_typed(repo):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await in_plan_mode(app, pilot)
        task, screen = await dialog_up(app, pilot, PlanReview("toolu_p", PLAN, REQUEST, "auto-edit"))
        await pilot.press("k")
        assert screen.query_one("#note").has_focus
        await pilot.press(*"test it", "enter")  # "h" and "f" here are the note's, not choices
        assert await decided(pilot, task) == PlanDecision("keep", PLAN, "test it")
        assert app.permissions.mode == app.query_one(StatusBar).permission_mode == "plan"


async def test_escape_keeps_planning_without_a_note(repo):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await in_plan_mode(app, pilot)
        task, _ = await dialog_up(app, pilot, PlanReview("toolu_p", PLAN, REQUEST, "auto-edit"))
        await pilot.press("escape")
        assert await decided(pilot, task) == PlanDecision("keep", PLAN, "")
        assert app.permissions.mode == "plan"


async def test_e_edits_the_plan_and_the_choice_carries_the_edited_text(repo):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await in_plan_mode(app, pilot)
        task, screen = await dialog_up(app, pilot, PlanReview("toolu_p", PLAN, REQUEST, "auto-edit"))
        await pilot.press("e")
        editor = screen.query_one("#editor")
        assert editor.has_focus and editor.text == PLAN
        await pilot.press(*"3. Test it", "escape")  # "h" and "f" typed here are text
        edited = PLAN + "3. Test it"
        assert screen.edited == edited and not task.done()
        assert "run the edited plan here" in str(screen.query_one("#keys").render())
        await pilot.press("f")
        assert await decided(pilot, task) == PlanDecision("fresh", edited)


async def test_a_cancelled_turn_takes_the_dialog_down(repo):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        task, _ = await dialog_up(app, pilot, PlanReview("toolu_p", PLAN, REQUEST, "ask"))
        task.cancel()
        await wait_until(pilot, lambda: not isinstance(app.screen, PlanScreen), what="the dialog to close")
        assert task.cancelled()


async def test_shift_tab_passes_plan_mode_through_the_session(repo):
    app = make_app(repo, None, permission_mode="auto-edit")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("shift+tab")
        assert app.permissions.mode == "plan"
        assert app.session.mode_before_plan == "auto-edit"  # where "run it here" goes back to
        await pilot.press("shift+tab", "shift+tab")
        assert app.permissions.mode == "ask" and app.session.mode_before_plan == "auto-edit"


async def test_the_palettes_plan_mode_goes_through_the_session(repo):
    app = make_app(repo, None, permission_mode="yolo")
    async with app.run_test(size=SIZE) as pilot:
        [plan] = [c for c in app.get_system_commands(app.screen) if c.title == "Permission mode: plan"]
        plan.callback()
        await pilot.pause()
        assert app.permissions.mode == app.query_one(StatusBar).permission_mode == "plan"
        assert app.session.mode_before_plan == "yolo"


async def test_slash_plan_switches_to_plan_mode(repo):
    app = make_app(repo, None, permission_mode="auto-edit")
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "/plan")
        await pilot.pause()
        assert app.permissions.mode == app.query_one(StatusBar).permission_mode == "plan"
        assert app.session.mode_before_plan == "auto-edit"
        assert not app.busy  # nothing sent


async def test_slash_plan_with_text_sends_it_in_plan_mode(repo):
    with LoopbackServer([Reply(anthropic_stream(["I'll look around first."]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, f"/plan {REQUEST}")
            await settle(app, pilot)
            assert app.permissions.mode == "plan" and app.session.mode_before_plan == "ask"
    [request] = server.requests
    assert request.json()["messages"][-1]["content"][0]["text"] == REQUEST


async def test_exit_plan_shows_the_dialog_and_fresh_makes_the_branch(repo):
    """End to end against the plan engine: a loopback model answers with exit_plan; the dialog
    shows; "f" makes a branch, the chat switches to it and the turn goes on there."""
    exit_plan = ("toolu_plan", "exit_plan", [json.dumps({"plan": PLAN})])
    replies = [Reply(anthropic_stream(["Here is my plan."], exit_plan)), Reply(anthropic_stream(["Done: greet() added."]))]
    with LoopbackServer(replies) as server:
        app = make_app(repo, server, permission_mode="plan")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, REQUEST)
            await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen), what="the plan dialog")
            exploration = app.session.id
            await wait_until(pilot, lambda: app.screen.armed, what="the dialog to take keys")
            await pilot.press("f")
            await settle(app, pilot)
            branch = app.session.id
            assert branch != exploration
            assert app.query_one(StatusBar).session_id == branch and app.permissions.mode == "ask"
            tree = app.tree_pane
            await wait_until(pilot, lambda: tree is not None and tree.current_id == branch,
                             what="the sessions pane to show the branch")
            assert exploration in tree._parent_of  # the exploration stays beside it
            shown = rendered(app.query_one(ChatView))
            assert "Done: greet() added." in shown and "Here is my plan." not in shown
    info = Store().session(branch)
    assert info is not None and info.fork_at == 0
    first = Store().messages(branch)[0]
    assert "Add a greeting" in json.dumps(first)
