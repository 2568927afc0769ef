"""Permission prompts in the real app, driven with Pilot against a loopback Anthropic server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scout_tui.tui.app import ScoutApp
from scout_tui.config.layers import load_config
from scout_tui.engine.history import problems
from scout_tui.store.event_log import Store
from scout_tui.widgets import Composer, StatusBar, ToolActivity
from scout_tui.widgets.approval import ApprovalScreen
from tests.app_helpers import SIZE, HeldReply, make_app, running_and_printed, send, settle, type_ahead
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream, sse

ORIGINAL = "def greet():\n    return 'hello'\n"


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    (workdir / "app.py").write_text(ORIGINAL)
    return workdir


def edit_call(tool_id: str, old: str = "'hello'", new: str = "'hi'", path: str = "app.py") -> tuple:
    return (tool_id, "edit", [json.dumps({"path": path, "old_string": old, "new_string": new})])


def tool_reply(call: tuple, text: str = "") -> Reply:
    return Reply(anthropic_stream([text] if text else [], call))


def answer(text: str = "Done.") -> Reply:
    return Reply(anthropic_stream([text]))


async def prompt_up(app, pilot, tool_id: str | None = None) -> ApprovalScreen:
    """The approval prompt (for ``tool_id``, if given) once it is up and takes keys."""
    await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen)
                     and tool_id in (None, app.screen.request.id), what=f"the approval prompt for {tool_id or 'a call'}")
    await wait_until(pilot, lambda: app.screen.armed, what="the prompt to take keys (ARM_SECONDS after it appeared)")
    return app.screen


def results(request) -> list[dict]:
    """The tool_result blocks of the last user message a request sent."""
    last = [m for m in request.json()["messages"] if m["role"] == "user"][-1]
    return [b for b in last["content"] if b.get("type") == "tool_result"]


async def test_ask_mode_shows_the_edit_diff_and_y_applies_it(repo):
    with LoopbackServer([tool_reply(edit_call("toolu_1")), answer()]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "say hi instead")
            screen = await prompt_up(app, pilot)
            diff = screen.request.diff
            assert "--- a/app.py" in diff and "-    return 'hello'" in diff and "+    return 'hi'" in diff
            assert "return 'hi'" in str(screen.query_one("#diff").render())
            assert (repo / "app.py").read_text() == ORIGINAL  # nothing changes before the answer
            await pilot.press("y")
            await settle(app, pilot)
            tools = app.query_one(ToolActivity)
            assert tools.status_of("toolu_1") == "ok"
    assert (repo / "app.py").read_text() == "def greet():\n    return 'hi'\n"
    [result] = results(server.requests[1])
    assert not result["is_error"] and "Edited app.py" in json.dumps(result)


async def test_n_leaves_the_file_untouched_and_the_model_reads_the_reason(repo):
    with LoopbackServer([tool_reply(edit_call("toolu_1")), answer("Understood.")]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "say hi instead")
            await prompt_up(app, pilot)
            await pilot.press("n")
            await pilot.press(*"keep hello")
            await pilot.press("enter")
            await settle(app, pilot)
            assert app.query_one(ToolActivity).status_of("toolu_1") == "error"
            session = app.session.id
    assert (repo / "app.py").read_text() == ORIGINAL
    [result] = results(server.requests[1])
    assert result["is_error"] is True
    assert "The user denied this tool call. They said: keep hello" in json.dumps(result)
    decisions = [data for _, _, type_, data, _ in Store().events(session) if type_ == "permission.decision"]
    assert [(d["decision"], d["reason"]) for d in decisions] == [("deny", "keep hello")]


async def test_a_allows_the_second_matching_call_without_asking(repo):
    first = ("toolu_1", "bash", [json.dumps({"command": "echo one >> log.txt"})])
    second = ("toolu_2", "bash", [json.dumps({"command": "echo two >> log.txt"})])
    with LoopbackServer([tool_reply(first), tool_reply(second), answer()]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "log twice")
            screen = await prompt_up(app, pilot)
            assert screen.request.suggestions == ("bash:echo *", "write:log.txt")
            await pilot.press("a")
            await settle(app, pilot)
            assert not isinstance(app.screen, ApprovalScreen)
            tools = app.query_one(ToolActivity)
            assert tools.status_of("toolu_1") == tools.status_of("toolu_2") == "ok"
            asked = [data for _, _, type_, data, _ in Store().events(app.session.id) if type_ == "permission.ask"]
    assert (repo / "log.txt").read_text() == "one\ntwo\n"
    assert [data["id"] for data in asked] == ["toolu_1"]


async def test_the_prompt_names_the_rule_a_adds_and_a_adds_just_that(repo):
    call = ("toolu_1", "bash", [json.dumps({"command": "python3 -m pytest -q --co"})])
    with LoopbackServer([tool_reply(call), answer()]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "run the tests")
            screen = await prompt_up(app, pilot)
            keys = str(screen.query_one("#keys").render())
            assert "a allow bash:python3 -m pytest * for this session" in keys
            await pilot.press("a")
            await settle(app, pilot)
            assert [rule.text for rule in app.session.agent.permissions.session] == ["bash:python3 -m pytest *"]


async def test_a_write_outside_the_workspace_asks_even_in_auto_edit(repo):
    inside = ("toolu_1", "write", [json.dumps({"path": "inside.txt", "content": "in\n"})])
    outside = ("toolu_2", "write", [json.dumps({"path": "../outside.txt", "content": "out\n"})])
    with LoopbackServer([tool_reply(inside), tool_reply(outside), answer()]) as server:
        app = make_app(repo, server, permission_mode="auto-edit")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "write two files")
            screen = await prompt_up(app, pilot)
            assert screen.request.id == "toolu_2"  # the one inside ran without asking
            assert (repo / "inside.txt").read_text() == "in\n"
            assert "outside the workspace" in screen.request.reason
            assert screen.request.suggestions == ()  # no "allow for the session" outside
            assert "+++ b/../outside.txt" in screen.request.diff and "--- /dev/null" in screen.request.diff
            await pilot.press("n", "enter")
            await settle(app, pilot)
    assert not (repo.parent / "outside.txt").exists()


async def test_a_symlink_out_of_the_workspace_counts_as_outside(repo, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / "link").symlink_to(elsewhere)
    call = ("toolu_1", "write", [json.dumps({"path": "link/x.txt", "content": "x\n"})])
    with LoopbackServer([tool_reply(call), answer()]) as server:
        app = make_app(repo, server, permission_mode="auto-edit")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "write")
            screen = await prompt_up(app, pilot)
            assert str(elsewhere / "x.txt") in screen.request.reason
            await pilot.press("escape")
            await settle(app, pilot)
    assert not (elsewhere / "x.txt").exists()


async def test_escape_on_the_prompt_ends_the_turn_with_a_valid_history(repo):
    # An edit and a write in one message: Esc on the first denies it, the second never runs.
    calls = [("toolu_1", "edit", {"path": "app.py", "old_string": "'hello'", "new_string": "'hi'"}),
             ("toolu_2", "write", {"path": "two.txt", "content": "2\n"})]
    with LoopbackServer([Reply(calls_stream(calls))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "edit and write")
            await prompt_up(app, pilot)
            await pilot.press("escape")
            await settle(app, pilot)
            assert not app.busy and not isinstance(app.screen, ApprovalScreen)
            history = list(app.session.messages)
            session = app.session.id
    assert len(server.requests) == 1  # no model call after the stop
    assert (repo / "app.py").read_text() == ORIGINAL and not (repo / "two.txt").exists()
    stored = Store().messages(session)
    assert stored == history and problems(stored) == []
    assert [m["role"] for m in stored] == ["user", "assistant", "user"]
    contents = [b["content"] for b in stored[2]["content"]]
    assert "stopped the turn" in contents[0] and contents[1] == "Not run: the user stopped the turn."


async def test_shift_tab_cycles_the_mode_shown_in_the_status_bar(repo):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        status = app.query_one(StatusBar)
        assert status.permission_mode == "ask"
        seen = []
        for _ in range(4):
            await pilot.press("shift+tab")
            seen.append((status.permission_mode, app.permissions.mode))
        assert seen == [("auto-edit", "auto-edit"), ("plan", "plan"), ("yolo", "yolo"), ("ask", "ask")]
        await pilot.press("shift+tab")
        await pilot.pause()
        assert "auto-edit" in str(status.render())


async def test_a_deny_rule_refuses_without_asking(repo):
    (repo / "scout.toml").write_text('[permissions]\ndeny = ["edit:app.py"]\n')
    with LoopbackServer([tool_reply(edit_call("toolu_1")), answer()]) as server:
        app = make_app(repo, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "edit")
            await settle(app, pilot)
            assert not isinstance(app.screen, ApprovalScreen)
    assert (repo / "app.py").read_text() == ORIGINAL
    [result] = results(server.requests[1])
    assert "denied by the rule 'edit:app.py'" in result["content"] and "scout.toml:2" in result["content"]


# -- the tool pane: stop a call, the full output of a cut result, diffs ---------------------


async def wait_running(app, pilot, tool_id: str, printed: str = "started") -> None:
    await wait_until(pilot, lambda: running_and_printed(app, tool_id, printed), what=f"{tool_id} runs and prints {printed!r}")


async def test_x_on_a_running_row_kills_that_call_and_the_turn_goes_on(repo):
    call = ("toolu_1", "bash", [json.dumps({"command": "echo started; sleep 30; touch finished"})])
    with LoopbackServer([tool_reply(call), answer("It was stopped.")]) as server:
        app = make_app(repo, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "sleep")
            await wait_running(app, pilot, "toolu_1")
            app.query_one("#tool-list").focus()
            await pilot.pause()
            await pilot.press("x")
            await settle(app, pilot)
            assert app.query_one(ToolActivity).status_of("toolu_1") == "error"
    assert not (repo / "finished").exists()
    [result] = results(server.requests[1])
    assert result["is_error"] and "started" in result["content"]
    assert "[stopped by the user after" in result["content"]
    assert len(server.requests) == 2  # the model was called again with the result


async def test_a_cut_result_is_saved_whole_and_o_opens_it(repo):
    call = ("toolu_1", "bash", [json.dumps({"command": "seq 1 40000"})])
    with LoopbackServer([tool_reply(call), answer()]) as server:
        app = make_app(repo, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "count")
            await settle(app, pilot)
            tools = app.query_one(ToolActivity)
            assert "o opens the full output" in tools.query_one("#tool-list").get_option_at_index(0).prompt.plain
            app.query_one("#tool-list").focus()
            await pilot.pause()
            await pilot.press("o")
            await settle(app, pilot)
            lines = tools.query_one("#tool-detail-body").lines
            assert len(lines) >= 40000 and lines[39999] == "40000"
    [result] = results(server.requests[1])
    content = result["content"]
    assert len(content) < 31_000 and content.startswith("1\n2\n") and "40000" in content
    saved = content.split("is saved in ")[1].split("]")[0]
    assert Path(saved).read_text() == "".join(f"{n}\n" for n in range(1, 40001))
    assert Path(saved).is_relative_to(Path(Store().path).parent)


async def test_edit_and_write_rows_show_their_diff(repo):
    calls = [tool_reply(edit_call("toolu_1")),
             tool_reply(("toolu_2", "write", [json.dumps({"path": "new.txt", "content": "fresh\n"})])), answer()]
    with LoopbackServer(calls) as server:
        app = make_app(repo, server, permission_mode="auto-edit")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "edit and write")
            await settle(app, pilot)
            option_list = app.query_one("#tool-list")
            edit_row = option_list.get_option_at_index(0).prompt.plain
            write_row = option_list.get_option_at_index(1).prompt.plain
    assert "+1 −1" in edit_row and "-    return 'hello'" in edit_row and "+    return 'hi'" in edit_row
    assert "+1 −0" in write_row and "+fresh" in write_row


async def test_a_reopened_session_shows_its_diffs_and_saved_output(repo):
    calls = [tool_reply(edit_call("toolu_1")), tool_reply(("toolu_2", "bash", [json.dumps({"command": "seq 1 40000"})])),
             answer()]
    with LoopbackServer(calls) as server:
        app = make_app(repo, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "edit, then count")
            await settle(app, pilot)
            session = app.session.id
    branch = Store().fork(session, None).id  # through a fork, the parent's events still count
    app = ScoutApp(load_config(repo, flags={"api_key": "sk-test"}), cwd=repo, resume=branch)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        option_list = app.query_one("#tool-list")
        rows = [option_list.get_option_at_index(i).prompt.plain for i in range(option_list.option_count)]
    assert "+1 −1" in rows[0] and "+    return 'hi'" in rows[0]
    assert "o opens the full output" in rows[1]


# -- the prompt's keys, as people (and tmux) type them --------------------------------------


def write_call(tool_id: str, path: str, content: str = "x\n") -> tuple:
    return (tool_id, "write", [json.dumps({"path": path, "content": content})])


async def test_letters_typed_in_the_reason_never_answer_the_prompt(repo):
    with LoopbackServer([tool_reply(write_call("toolu_1", "new.txt")), answer()]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "write")
            screen = await prompt_up(app, pilot)
            await pilot.press("n", *"because", "tab", "y", "a", "n")
            await pilot.pause()
            assert app.screen is screen  # still asking
            await pilot.press("enter")
            await settle(app, pilot)
    assert not (repo / "new.txt").exists()
    [result] = results(server.requests[1])
    assert "denied" in result["content"]


async def test_n_then_enter_at_once_denies(repo):
    with LoopbackServer([tool_reply(write_call("toolu_1", "new.txt")), answer()]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "write")
            await prompt_up(app, pilot)
            await pilot.press("n", "enter")
            await settle(app, pilot)
            assert not isinstance(app.screen, ApprovalScreen)
    assert not (repo / "new.txt").exists()
    assert results(server.requests[1])[0]["content"].startswith("The user denied this tool call.")


async def test_a_key_typed_ahead_does_not_answer_the_next_prompt(repo):
    # The model's second call waits until the keys typed ahead are handled: they are really
    # typed before the prompt they could answer exists, however fast or slow the machine.
    second_call = HeldReply(anthropic_stream([], write_call("toolu_2", "b.txt")))
    with LoopbackServer([tool_reply(write_call("toolu_1", "a.txt")), second_call, answer()]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "write two")
            first = await prompt_up(app, pilot, "toolu_1")
            type_ahead(app, "y", "y", "y")  # at once: one for this prompt, two typed ahead
            await wait_until(pilot, lambda: len(server.requests) == 2, what="the first call ran and the model is asked again")
            await pilot.pause()  # the keys queued behind the first "y" are handled
            assert (repo / "a.txt").exists() and not isinstance(app.screen, ApprovalScreen)
            second_call.release()
            second = await prompt_up(app, pilot, "toolu_2")
            assert second is not first and app.screen is second  # still asking
            assert not (repo / "b.txt").exists()
            await pilot.press("n", "enter")
            await settle(app, pilot)
    assert (repo / "a.txt").exists() and not (repo / "b.txt").exists()
    assert results(server.requests[2])[0]["content"].startswith("The user denied this tool call.")


async def test_the_reason_typed_before_escape_reaches_the_model(repo):
    with LoopbackServer([tool_reply(write_call("toolu_1", "new.txt")), answer()]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "write")
            await prompt_up(app, pilot)
            await pilot.press("n", *"do not touch config", "escape")
            await settle(app, pilot)
            stored = Store().messages(app.session.id)
    assert "stopped the turn. They said: do not touch config." in stored[-1]["content"][0]["content"]


async def test_a_long_command_keeps_the_keys_on_screen(repo):
    command = "echo hi" + " \\\n" * 60 + "; touch hidden"
    with LoopbackServer([tool_reply(("toolu_1", "bash", [json.dumps({"command": command})])), answer()]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "run")
            screen = await prompt_up(app, pilot)
            keys = screen.query_one("#keys")
            assert keys.region.bottom <= SIZE[1] and keys.region.height >= 1
            assert "61 lines: scroll" in str(screen.query_one("#long").render())
            await pilot.press("escape")
            await settle(app, pilot)


async def test_the_prompt_shows_control_characters_instead_of_hiding_what_runs(repo):
    command = "touch pwned; ls #\rls -la"
    with LoopbackServer([tool_reply(("toolu_1", "bash", [json.dumps({"command": command})])), answer()]) as server:
        app = make_app(repo, server, permission_mode="ask")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "list")
            screen = await prompt_up(app, pilot)
            shown = str(screen.query_one("#command").render())
            assert "touch pwned; ls #\\rls -la" in shown
            row = app.query_one("#tool-list").get_option_at_index(0).prompt.plain
            assert "touch pwned" in row
            await pilot.press("escape")
            await settle(app, pilot)
    assert not (repo / "pwned").exists()


def calls_stream(calls: list[tuple[str, str, dict]]) -> bytes:
    """An Anthropic SSE body whose one message holds several tool_use blocks."""
    events = [("message_start", {"type": "message_start", "message": {
        "id": "msg_many", "type": "message", "role": "assistant", "model": "claude-test", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}})]
    for index, (tool_id, name, input) in enumerate(calls):
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index,
                                     "content_block": {"type": "tool_use", "id": tool_id, "name": name, "input": {}}}),
            ("content_block_delta", {"type": "content_block_delta", "index": index,
                                     "delta": {"type": "input_json_delta", "partial_json": json.dumps(input)}}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                                  "usage": {"output_tokens": 5}}),
               ("message_stop", {"type": "message_stop"})]
    return sse(events)


async def test_the_tool_pane_follows_to_the_running_call_after_denied_ones(repo):
    (repo / "scout.toml").write_text('[permissions]\ndeny = ["bash:rm *"]\n')
    calls = [(f"toolu_{c}", "bash", {"command": f"rm {c}"}) for c in "abcd"]
    calls.append(("toolu_run", "bash", {"command": "for i in $(seq 1 20); do echo tick $i; sleep 1; done"}))
    with LoopbackServer([Reply(calls_stream(calls)), answer()]) as server:
        app = make_app(repo, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "go")
            await wait_running(app, pilot, "toolu_run", "tick")
            option_list = app.query_one("#tool-list")
            await wait_until(pilot, lambda: 0 < option_list.max_scroll_y == option_list.scroll_y,
                             what="the running call's row is scrolled into view")
            await pilot.pause()  # and stays there once the denied rows are drawn
            assert option_list.max_scroll_y > 0 and option_list.scroll_y == option_list.max_scroll_y
            await pilot.press("escape")
            await settle(app, pilot)


async def test_ctrl_n_from_the_tool_pane_puts_the_cursor_in_the_composer(repo):
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.tool_pane is not None)  # mounted after the first frame
        app.query_one("#tool-list").focus()
        await pilot.pause()
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert app.focused is app.query_one(Composer)


async def test_ctrl_c_in_the_reason_field_copies_or_clears_it_and_the_turn_runs_on(repo):
    from textual.widgets import Input
    from textual.widgets.input import Selection

    with LoopbackServer([tool_reply(edit_call("toolu_1")), answer("Understood.")]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "say hi instead")
            screen = await prompt_up(app, pilot)
            await pilot.press("n")
            await pilot.press(*"typo")
            reason = screen.query_one("#deny-reason", Input)
            await pilot.press("ctrl+c")  # no selection: clears the field, as in the composer
            assert reason.value == "" and app.screen is screen and app.busy
            await pilot.press(*"keep hello")
            reason.selection = Selection(0, 4)
            await pilot.press("ctrl+c")  # a selection: copied, the field keeps it
            assert app.clipboard == "keep" and reason.value == "keep hello" and app.screen is screen
            await pilot.press("enter")
            await settle(app, pilot)
    [result] = results(server.requests[1])
    assert "The user denied this tool call. They said: keep hello" in json.dumps(result)
