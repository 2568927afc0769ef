"""Plan mode (``--permission-mode plan``, ``/plan``): what runs and what is refused without
running, ``exit_plan`` and each of the person's four answers (in-process, through
``Session.turn``), ``-p`` printing the plan, and ACP's plan update and permission request."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from scout_tui.config.layers import load_config
from scout_tui.core.bus import PlanBranch, PlanDecided, ToolEnd, TurnEnd
from scout_tui.session.session import Session
from scout_tui.store.event_log import Store
from scout_tui.tools.approvals import PlanDecision, PlanReview
from scout_tui.tools.permissions import PLAN_REFUSAL, Policy, parse_rule
from scout_tui.tools.read_only_commands import read_only_command
from tests.acp_helpers import RecordingClient, acp_process, text
from tests.headless_helpers import env, repo, scout  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer, Recorded, Reply
from tests.subagent_helpers import tool_stream

PLAN = "1. Add `greet()` to app.py\n2. Call it from main\n3. Run the tests"

READ_ONLY = ["ls -la", "git status", "git log --oneline -5", "cat a.txt | head -3", "grep -rn foo src",
             "find . -name '*.py'", "git -C sub diff", "wc -l < a.txt", "git branch -a", "git stash list", "rg foo"]
CHANGING = ["rm -rf x", "echo hi > out.txt", "sed -i s/a/b/ f", "find . -delete", "find . -exec rm {} +",
            "git commit -m x", "git -c core.pager=evil log", "git branch -D main", "git tag v1", "git diff --output=x",
            "sort -o out a", "python3 -c 1", "bash -c 'rm x'", "FOO=1 ls", "$CMD", "echo $(rm x)", "xargs rm",
            "awk 1 f", "cat a >> b", "git stash", "touch x", "ls; rm x", "npm test", "cd /; ls", "git tag v1.0",
            "ls 'unterminated"]


@pytest.mark.parametrize("command", READ_ONLY)
def test_a_command_that_only_reads_is_read_only(command):
    assert read_only_command(command)


@pytest.mark.parametrize("command", CHANGING)
def test_a_command_that_may_change_or_run_anything_is_not(command):
    assert not read_only_command(command)


def test_plan_mode_refuses_changes_and_checks_reads_as_ask_mode_does(tmp_path):
    policy = Policy(mode="plan", workspace=tmp_path)
    for tool, input in (("write", {"path": "a.txt", "content": "x"}), ("edit", {"path": "a.txt"}),
                        ("bash", {"command": "touch a.txt"}), ("mcp__x__do", {})):
        check = policy.check(tool, input, tmp_path)
        assert (check.verdict, check.reason) == ("deny", PLAN_REFUSAL), tool
    assert policy.check("read", {"path": "a.txt"}, tmp_path, read_only=True).verdict == "allow"
    assert policy.check("grep", {"pattern": "x"}, tmp_path, read_only=True).verdict == "allow"
    assert policy.check("bash", {"command": "ls"}, tmp_path).verdict == "ask"  # as in ask mode
    policy.allow_for_session(["bash:ls"])
    assert policy.check("bash", {"command": "ls"}, tmp_path).verdict == "allow"
    denied = Policy(mode="plan", workspace=tmp_path, deny=[parse_rule("read:secret*")])
    assert denied.check("read", {"path": "secret.txt"}, tmp_path, read_only=True).verdict == "deny"  # deny still wins


# -- the turn, in-process --------------------------------------------------------------------


def planner(calls: list[tuple[str, dict]], after: str = "Done.") -> tuple[list[Recorded], Callable[[Recorded], Reply]]:
    """The model: tool calls ``calls`` one per answer (ids toolu_0…), then ``exit_plan(PLAN)``, then
    ``after`` as text for any later request."""
    seen: list[Recorded] = []
    script = [*calls, ("exit_plan", {"plan": PLAN})]

    def handler(recorded: Recorded) -> Reply:
        seen.append(recorded)
        messages = recorded.json()["messages"]
        done = sum(1 for m in messages for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result")
        if done < len(script) and "approved plan" not in json.dumps(messages[0]):
            name, args = script[done]
            return Reply(tool_stream([], [(f"toolu_{done}", name, args)]))
        return Reply(tool_stream([after], []))

    return seen, handler


async def run_plan(repo: Path, server: LoopbackServer, answer: PlanDecision | None, mode_before: str = "auto-edit"):
    config = load_config(repo, flags={"base_url": server.url, "api_key": "sk-test", "permission_mode": mode_before})
    reviews: list[PlanReview] = []

    async def review(r: PlanReview) -> PlanDecision:
        reviews.append(r)
        assert answer is not None
        return answer

    session = Session(Store(repo.parent / "sessions.db"), repo, config,
                      **({"review_plan": review} if answer is not None else {}))
    session.set_permission_mode("plan")
    events = [e async for e in session.turn([{"type": "text", "text": "add a greeting"}])]
    await session.close()
    return session, events, reviews


def ends(events: list) -> dict[str, ToolEnd]:
    return {e.id: e for e in events if isinstance(e, ToolEnd)}


async def test_in_plan_mode_write_edit_and_bash_are_refused_without_running(tmp_home, workdir):
    (workdir / "app.py").write_text("print('hi')\n")
    calls = [("write", {"path": "new.txt", "content": "x"}), ("edit", {"path": "app.py", "old_string": "hi", "new_string": "yo"}),
             ("bash", {"command": "touch made.txt"}), ("read", {"path": "app.py"})]
    seen, handler = planner(calls)
    with LoopbackServer(handler=handler) as server:
        session, events, reviews = await run_plan(workdir, server, PlanDecision("keep", note="also cover errors"))
    results = ends(events)
    for i in range(3):
        assert results[f"toolu_{i}"].is_error and PLAN_REFUSAL in results[f"toolu_{i}"].content
    assert not (workdir / "new.txt").exists() and not (workdir / "made.txt").exists()
    assert (workdir / "app.py").read_text() == "print('hi')\n"
    assert not results["toolu_3"].is_error and "print('hi')" in results["toolu_3"].content
    tools = [t["name"] for t in seen[0].json()["tools"]]
    assert "exit_plan" in tools  # offered in plan mode only
    assert reviews[0].plan == PLAN and reviews[0].request == "add a greeting" and reviews[0].mode == "auto-edit"
    # keep: still planning, the note goes to the model
    assert session.agent.permissions.mode == "plan"
    keep = results["toolu_4"]
    assert keep.is_error and "also cover errors" in keep.content and "keep planning" in keep.content
    decided = [e for e in events if isinstance(e, PlanDecided)]
    assert [(d.action, d.plan, d.note) for d in decided] == [("keep", PLAN, "also cover errors")]


async def test_run_it_here_goes_back_to_the_mode_and_carries_on_with_the_edited_plan(tmp_home, workdir):
    seen, handler = planner([])
    edited = PLAN + "\n4. Update the README"
    with LoopbackServer(handler=handler) as server:
        session, events, _ = await run_plan(workdir, server, PlanDecision("here", plan=edited))
    assert session.agent.permissions.mode == "auto-edit"
    result = ends(events)["toolu_0"]
    assert not result.is_error and "approved" in result.content and "Update the README" in result.content
    assert "exit_plan" not in [t["name"] for t in seen[-1].json()["tools"]]  # out of plan mode
    assert isinstance(events[-1], TurnEnd) and events[-1].stop_reason == "end_turn"  # the turn went on
    with Store(workdir.parent / "sessions.db") as store:
        assert [e[2] for e in store.events(session.id) if e[2] == "plan.decision"] == ["plan.decision"]


async def test_a_fresh_context_is_a_new_branch_starting_from_the_plan(tmp_home, workdir):
    seen, handler = planner([("read", {"path": "."})])
    with LoopbackServer(handler=handler) as server:
        session, events, _ = await run_plan(workdir, server, PlanDecision("fresh"))
    branch = next(e for e in events if isinstance(e, PlanBranch))
    assert session.id == branch.session != branch.parent
    assert session.agent.permissions.mode == "auto-edit"
    last = seen[-1].json()["messages"]
    assert len(last) == 1 and "add a greeting" in json.dumps(last) and "Call it from main" in json.dumps(last)
    with Store(workdir.parent / "sessions.db") as store:
        fresh = store.session(branch.session)
        assert fresh.parent == branch.parent and fresh.fork_at == 0
        assert fresh.shown_title == "add a greeting"  # titled by the request, as a prompt titles a session
        assert store.messages(branch.session)[0]["role"] == "user"
        exploration = store.messages(branch.parent)
        assert any("tool_use" in json.dumps(m["content"]) for m in exploration)  # kept as its own branch
        assert "Call it from main" not in json.dumps(exploration[:1])


async def test_with_nobody_to_approve_the_plan_ends_the_turn(tmp_home, workdir):
    seen, handler = planner([])
    with LoopbackServer(handler=handler) as server:
        session, events, _ = await run_plan(workdir, server, None)
    assert [e.action for e in events if isinstance(e, PlanDecided)] == ["stop"]
    assert len(seen) == 1  # no request after the plan
    assert session.agent.permissions.mode == "plan"


# -- -p and ACP -----------------------------------------------------------------------------


def test_p_in_plan_mode_prints_the_plan_and_changes_nothing(repo, env):
    seen, handler = planner([("write", {"path": "new.txt", "content": "x"})])
    with LoopbackServer(handler=handler) as server:
        done = scout(["-p", "add a greeting", "--permission-mode", "plan", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    assert PLAN in done.stdout
    assert not (repo / "new.txt").exists()
    assert len(seen) == 2


def test_p_slash_plan_with_a_prompt_plans_it(repo, env):
    seen, handler = planner([])
    with LoopbackServer(handler=handler) as server:
        done = scout(["-p", "/plan add a greeting", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    assert PLAN in done.stdout
    assert "exit_plan" in [t["name"] for t in seen[0].json()["tools"]]
    assert "add a greeting" in json.dumps(seen[0].json()["messages"])


async def test_acp_sends_the_plan_and_asks_which_way_to_run_it(repo, env):
    seen, handler = planner([])
    client = RecordingClient(answer="plan_here")
    with LoopbackServer(handler=handler) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            assert "plan" in [m.id for m in session.modes.available_modes]
            await conn.set_session_mode(session_id=session.session_id, mode_id="plan")
            done = await conn.prompt(session_id=session.session_id, prompt=text("add a greeting"))
    assert done.stop_reason == "end_turn"
    updates = client.of(session.session_id)
    plans = [u for u in updates if u.session_update == "plan"]
    assert [e.content for e in plans[0].entries] == ["Add `greet()` to app.py", "Call it from main", "Run the tests"]
    asked = client.asked[-1]
    assert [o.option_id for o in asked["options"]] == ["plan_here", "plan_fresh", "plan_keep"]
    assert asked["tool_call"].raw_input == {"plan": PLAN}
    modes = [u.current_mode_id for u in updates if u.session_update == "current_mode_update"]
    assert modes == ["ask"]  # back to the mode plan mode was entered from
    assert "exit_plan" not in [t["name"] for t in seen[-1].json()["tools"]]
