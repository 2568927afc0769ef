"""The ``task`` tool: one answer with two ``task`` calls, driven from each front end (``-p``,
``acp``, the TUI) against a loopback server. Both subagents' first requests reach the server
before either finishes (they run at once); each child session is in the store with its parent
and call; the parent's next request holds both answers and none of the children's tool outputs."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from scout_tui.store.event_log import Store
from tests.acp_helpers import RecordingClient, acp_process, text
from tests.headless_helpers import env, repo, scout  # noqa: F401 — fixtures
from tests.subagent_helpers import ANSWERS, FILES, FINAL, TASKS, SubagentModel, request_texts, split_the_work, write_files


def check_run(model: SubagentModel, requests: list, store_path: Path) -> None:
    """What every front end's run must show (see the module's docstring)."""
    seen = model.first_seen
    assert "A:3" in seen and "B:3" in seen, seen  # each child read its file and answered
    assert max(seen.index("A:1"), seen.index("B:1")) < min(seen.index("A:3"), seen.index("B:3")), seen
    def offered(who: str) -> list[str]:
        first = next(r for r in requests if f"CHILD-{who}" in request_texts(r)[:200])
        return [t["name"] for t in first.json()["tools"]]

    assert "task" in [t["name"] for t in requests[0].json()["tools"]]
    assert offered("A") == ["read", "grep", "glob"]  # explore: read-only tools
    assert "task" not in offered("B") and {"bash", "write", "edit"} <= set(offered("B"))  # no nesting
    parent_last = [r for r in requests if '"CHILD-' not in request_texts(r)[:200]][-1]
    sent = request_texts(parent_last)
    assert ANSWERS["A"] in sent and ANSWERS["B"] in sent
    for _, inside in FILES.values():  # the children's tool outputs stayed in their own sessions
        assert inside.splitlines()[0] not in sent
    with Store(store_path) as store:
        children = [s for s in store.sessions() if s.kind == "subagent"]
        parents = [s for s in store.sessions() if s.kind is None]
        assert len(parents) == 1 and len(children) == 2
        assert {c.parent for c in children} == {parents[0].id}
        assert {c.call for c in children} == {"toolu_task_A", "toolu_task_B"}
        assert {c.title for c in children} == {t["description"] for t in TASKS.values()}
        assert {c.agent for c in children} == {"explore", "general"}
        for child in children:
            messages = store.messages(child.id)
            assert messages[0]["role"] == "user" and "CHILD-" in str(messages[0]["content"])
            assert "inside" in str(messages)  # the child's own transcript holds its tool output


def test_p_runs_two_subagents_at_once(repo, env):
    done, model, requests = split_the_work(repo, env)
    assert FINAL in done.stdout
    assert ANSWERS["A"] not in done.stdout  # the person reads the parent's answer
    check_run(model, requests, Path(env["SCOUT_HOME"]) / "sessions.db")


async def test_acp_runs_two_subagents_at_once(repo, env):
    write_files(repo)
    model = SubagentModel()
    client = RecordingClient()
    with model.server() as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            done = await conn.prompt(session_id=session.session_id, prompt=text("split the work"))
    assert done.stop_reason == "end_turn"
    check_run(model, server.requests, Path(env["SCOUT_HOME"]) / "sessions.db")
    updates = client.of(session.session_id)
    starts = {u.tool_call_id: u for u in updates if u.session_update == "tool_call"}
    assert starts["toolu_task_A"].title == "explore: count alpha lines"
    assert starts["toolu_task_B"].title == "general: check beta"
    progress = [u for u in updates if u.session_update == "tool_call_update" and u.tool_call_id == "toolu_task_A"
                and u.status == "in_progress" and u.content]
    shown = [u.content[0].content.text for u in progress]
    assert any("↳ ✓ read alpha.txt" in text for text in shown), shown  # its own calls, as they happen
    assert len(progress) < 10  # per change of state, not per streamed delta
    final = [u for u in updates if u.session_update == "tool_call_update" and u.tool_call_id == "toolu_task_A"][-1]
    assert final.status == "completed" and ANSWERS["A"] in final.content[0].content.text


def test_max_concurrent_1_runs_subagents_one_after_the_other(repo, env):
    write_files(repo)
    (repo / "scout.toml").write_text("[subagents]\nmax_concurrent = 1\n")
    model = SubagentModel(hold=0.5)  # the first child waits for a second that cannot start
    with model.server() as server:
        done = scout(["-p", "split the work", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    seen = model.first_seen
    assert seen[:3] == ["parent:1", "A:1", "B:1"] and "A:3" not in seen and "B:3" in seen, seen
    assert "NOT CONCURRENT" in request_texts(server.requests[-1])  # A's answer, given back as it was


def test_a_bad_subagents_setting_names_its_file_and_line(repo, env):
    (repo / "scout.toml").write_text('model = "claude-test"\n[subagents]\nmax_concurrent = 0\n')
    done = scout(["-p", "hi", "--base-url", "http://127.0.0.1:9"], repo, env)
    assert done.returncode != 0
    assert "scout.toml:3: subagents.max_concurrent must be a whole number from 1, got 0" in done.stderr


async def test_esc_stops_the_turn_and_every_subagent_each_recorded_as_interrupted(tmp_home, workdir):
    from tests.app_helpers import SIZE, make_app, send, settle
    from tests.conftest import wait_until

    write_files(workdir)
    model = SubagentModel(child_pieces=40, gate=threading.Event())  # the answers stop halfway: never released
    with model.server() as server:
        app = make_app(workdir, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "split the work")
            await wait_until(pilot, lambda: "A:3" in model.first_seen and "B:3" in model.first_seen,
                             what="both subagents streaming their answers")
            await pilot.press("escape")
            await wait_until(pilot, lambda: not app.busy, what="the turn stopped")
            model.gate.set()  # the server's threads need not wait out the cap
            await settle(app, pilot)
            from scout_tui.widgets import ToolActivity

            pane = app.query_one(ToolActivity)
            rows = [pane.row_text(call) for call in ("toolu_task_A", "toolu_task_B")]
            assert all(r.startswith("■ ⚙") and "interrupted · 1 tool call" in r for r in rows), rows  # not failed
            store_path = app.store.path
    with Store(store_path) as store:
        sessions = store.sessions()
        children = [s for s in sessions if s.kind == "subagent"]
        assert len(children) == 2
        assert [s.last_stop_reason for s in sessions if s.kind is None] == ["interrupted"]
        assert [c.last_stop_reason for c in children] == ["interrupted", "interrupted"]


def test_subagents_cost_counts_to_their_sessions_and_rolls_up_in_the_run_result(repo, env):
    import json

    done, _, _ = split_the_work(repo, env, "--output-format", "json")
    result = json.loads(done.stdout.splitlines()[-1])
    with Store(Path(env["SCOUT_HOME"]) / "sessions.db") as store:
        sessions = store.sessions()
    parent = next(s for s in sessions if s.kind is None)
    children = [s for s in sessions if s.kind == "subagent"]
    assert parent.cost > 0 and all(c.cost > 0 for c in children)  # each session its own requests
    assert result["cost"] == pytest.approx(parent.cost + sum(c.cost for c in children))


def test_stream_json_tags_each_event_with_its_session_and_a_subagents_with_the_task_call(repo, env):
    import json

    done, _, _ = split_the_work(repo, env, "--output-format", "stream-json")
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    events = [line for line in lines if "data" in line]
    parent = {line["session"] for line in events if "parent_tool_use_id" not in line}
    assert len(parent) == 1 and None not in parent
    child_lines = [line for line in events if "parent_tool_use_id" in line]
    by_call = {}
    for line in child_lines:
        by_call.setdefault(line["parent_tool_use_id"], set()).add(line["session"])
    assert set(by_call) == {"toolu_task_A", "toolu_task_B"}
    assert all(len(ids) == 1 for ids in by_call.values()) and len(set.union(*by_call.values()) | parent) == 3
    reads = [line for line in child_lines if line["type"] == "tool.start"]
    assert {line["data"]["input"]["path"] for line in reads} == {"alpha.txt", "beta.txt"}


async def test_each_running_subagent_is_a_live_row_with_its_step_and_calls(tmp_home, workdir):
    from scout_tui.widgets import ToolActivity
    from tests.app_helpers import SIZE, make_app, send, settle
    from tests.conftest import wait_until

    write_files(workdir)
    model = SubagentModel(child_pieces=30, gate=threading.Event())  # the answers stop halfway until released
    with model.server() as server:
        app = make_app(workdir, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "split the work")
            pane = app.query_one(ToolActivity)

            def rows() -> list[str]:
                try:
                    return [pane.row_text("toolu_task_A"), pane.row_text("toolu_task_B")]
                except KeyError:
                    return ["", ""]

            await wait_until(pilot, lambda: all("writing…" in row for row in rows()), what="both subagents writing")
            from scout_tui.widgets import SessionTree

            tree = app.query_one(SessionTree)
            await wait_until(pilot, lambda: [len(list(n.children)) for n in tree.root.children] == [2],
                             what="the children in the sessions pane while they run")
            a, b = rows()
            assert "⚙ explore · count alpha lines" in a and "↳ ✓ read alpha.txt" in a
            assert "⚙ general · check beta" in b and "↳ ✓ read beta.txt" in b
            assert pane.status_of("toolu_task_A") == pane.status_of("toolu_task_B") == "running"
            model.gate.set()
            await settle(app, pilot)
            a, b = rows()
            assert "done · 1 tool call" in a and ANSWERS["A"] in a and "writing…" not in a
            assert "done · 1 tool call" in b and ANSWERS["B"] in b


async def test_a_subagents_approval_prompt_says_which_subagent_asks(tmp_home, workdir):
    import json as _json

    from tests.app_helpers import SIZE, make_app, rendered, send, settle
    from tests.loopback import Reply
    from tests.subagent_helpers import tool_stream
    from tests.test_app_permissions import prompt_up

    def handler(recorded):
        messages = recorded.json()["messages"]
        if "CHILD" in _json.dumps(messages[0]):
            if len(messages) == 1:
                return Reply(tool_stream([], [("toolu_sh", "bash", {"command": "touch made-by-child.txt"})]))
            return Reply(tool_stream(["made it"], []))
        if len(messages) == 1:
            return Reply(tool_stream([], [("toolu_task", "task", {"description": "make a file", "prompt": "CHILD: go"})]))
        return Reply(tool_stream(["ok"], []))

    from tests.loopback import LoopbackServer

    with LoopbackServer(handler=handler) as server:
        app = make_app(workdir, server, checkpoints="off")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "go")
            screen = await prompt_up(app, pilot, "toolu_sh")
            assert screen.request.agent == "make a file (general)"
            assert "Subagent make a file (general) asks" in rendered(screen.query_one("#subagent"))
            await pilot.press("y")
            await settle(app, pilot)
    assert (workdir / "made-by-child.txt").exists()


async def test_the_tui_runs_two_subagents_at_once_and_the_sessions_pane_opens_and_forks_them(tmp_home, workdir):
    from scout_tui.widgets import SessionTree
    from scout_tui.widgets.chat_messages import UserMessage
    from scout_tui.widgets.chat_view import ChatView
    from tests.app_helpers import SIZE, make_app, send, settle

    write_files(workdir)
    model = SubagentModel()
    with model.server() as server:
        app = make_app(workdir, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "split the work")
            await settle(app, pilot)
            check_run(model, server.requests, app.store.path)
            parent = app.session.id
            tree = app.query_one(SessionTree)
            await pilot.pause()
            roots = list(tree.root.children)
            assert [n.data.id for n in roots] == [parent]
            children = list(roots[0].children)
            assert sorted(n.data.title for n in children) == ["check beta", "count alpha lines"]
            assert {n.data.kind for n in children} == {"subagent"}  # drawn ⚙ AGENT (test_store_subagents)
            child = next(n for n in children if n.data.agent == "explore")
            await pilot.press("ctrl+t")
            tree.select_node(child)
            tree.move_cursor(child)
            await pilot.press("enter")
            await settle(app, pilot)
            assert app.session.id == child.data.id  # its whole transcript, read like any session
            assert [str(u.content) for u in app.query(UserMessage)][0].startswith("CHILD-A")
            chat = app.query_one(ChatView)
            chat.focus()
            await pilot.pause()
            await pilot.press("k")
            await pilot.press("f")  # fork it like any session
            await settle(app, pilot)
            assert app.session.id not in (parent, child.data.id)
    with Store(store_path := Path(tmp_home / ".scout-data" / "sessions.db")) as store:
        fork = store.session(app.session.id)
        assert fork.parent == child.data.id and fork.kind is None, store_path
