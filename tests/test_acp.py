"""`scout-tui acp` driven as an editor drives it: the ``agent-client-protocol`` package's client over
a real subprocess's stdio, the model a loopback server, HOME a temporary folder."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path

import pytest

from scout_tui.engine.history import problems
from scout_tui.core.messages import is_turn_marker
from scout_tui.store.event_log import Store
from tests.acp_helpers import RecordingClient, acp_process, fold, text, transcript_lines
from tests.conftest import wait_until
from tests.headless_helpers import SECRET, env, repo  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer, Reply, anthropic_stream
from tests.process_helpers import processes_with


def write_call(path: str = "hello.py", content: str = "print('hello')\n") -> Reply:
    return Reply(anthropic_stream(["Writing it."], ("toolu_w", "write", [json.dumps({"path": path, "content": content})])))


def store_of(env: dict[str, str]) -> Store:
    return Store(Path(env["SCOUT_HOME"]) / "sessions.db")


async def test_a_prompt_streams_the_models_chunks_and_ends_with_end_turn(repo, env):
    client = RecordingClient()
    with LoopbackServer([Reply(anthropic_stream(["Hello", " from", " the model."]))]) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, transcript):
            session = await conn.new_session(cwd=str(repo))
            done = await conn.prompt(session_id=session.session_id, prompt=text("say hello"))
    assert done.stop_reason == "end_turn"
    chunks = [u for u in client.of(session.session_id) if u.session_update == "agent_message_chunk"]
    assert "".join(c.content.text for c in chunks) == "Hello from the model."
    assert server.requests[0].json()["messages"][0]["content"][0]["text"] == "say hello"
    # the session is the TUI's: stored in the same sqlite file, in the session tree of the folder
    [stored] = store_of(env).sessions(repo)
    assert stored.id == session.session_id and stored.message_count == 2 and stored.title == "say hello"
    assert SECRET not in "\n".join(transcript_lines(transcript))  # the key never reaches the client
    [titled] = [u for u in client.of(session.session_id) if u.session_update == "session_info_update"]
    assert titled.title == "say hello"  # the editor's session list shows what the TUI's tree shows


async def test_initialize_says_the_protocol_version_and_what_the_agent_offers(repo, env):
    async with acp_process(repo, env, RecordingClient()) as (conn, _, transcript):
        pass
    answer = next(e.message["result"] for e in transcript if e.message.get("id") == 0 and "result" in e.message)
    assert answer["protocolVersion"] == 1
    assert answer["agentCapabilities"]["loadSession"] is True
    assert answer["agentCapabilities"]["promptCapabilities"] == {"image": False, "audio": False, "embeddedContext": True}
    assert set(answer["agentCapabilities"]["sessionCapabilities"]) == {"list", "fork", "resume", "close"}


async def test_a_write_asks_permission_and_once_allowed_reports_its_diff(repo, env):
    client = RecordingClient(answer="allow_once")
    with LoopbackServer([write_call(), Reply(anthropic_stream(["Done."]))]) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, transcript):
            session = await conn.new_session(cwd=str(repo))
            done = await conn.prompt(session_id=session.session_id, prompt=text("write hello.py"))
    assert done.stop_reason == "end_turn"
    assert (repo / "hello.py").read_text() == "print('hello')\n"
    [asked] = client.asked
    assert [o.kind for o in asked["options"]] == ["allow_once", "allow_always", "reject_once"]
    assert asked["tool_call"].tool_call_id == "toolu_w" and asked["tool_call"].kind == "edit"
    [diff] = [c for c in asked["tool_call"].content if c.type == "diff"]
    assert (diff.path, diff.old_text, diff.new_text) == (str(repo / "hello.py"), None, "print('hello')\n")
    calls = [u for u in client.of(session.session_id) if getattr(u, "tool_call_id", None) == "toolu_w"]
    assert [u.status for u in calls] == ["pending", "in_progress", "completed"]
    assert calls[0].kind == "edit" and [loc.path for loc in calls[0].locations] == [str(repo / "hello.py")]
    [written] = [c for c in calls[-1].content if c.type == "diff"]
    assert (written.path, written.old_text, written.new_text) == (str(repo / "hello.py"), None, "print('hello')\n")
    for line in transcript_lines(transcript):  # the note's transcript: pytest -s shows it
        print(line)


async def test_a_rejected_write_leaves_the_file_unwritten_and_the_model_is_told(repo, env):
    client = RecordingClient(answer="reject_once")
    with LoopbackServer([write_call(), Reply(anthropic_stream(["Fine, I won't."]))]) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            done = await conn.prompt(session_id=session.session_id, prompt=text("write hello.py"))
    assert done.stop_reason == "end_turn"
    assert not (repo / "hello.py").exists()
    last = [u for u in client.of(session.session_id) if getattr(u, "tool_call_id", None) == "toolu_w"][-1]
    assert last.status == "failed"
    [result] = server.requests[1].json()["messages"][-1]["content"]
    assert result["is_error"] and "denied" in json.dumps(result)


async def test_allow_always_adds_the_rule_for_the_run_so_the_next_write_runs_unasked(repo, env):
    client = RecordingClient(answer="allow_always")
    replies = [write_call("a.txt", "a\n"), Reply(anthropic_stream(["One."])),
               write_call("a.txt", "b\n"), Reply(anthropic_stream(["Two."]))]
    with LoopbackServer(replies) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            await conn.prompt(session_id=session.session_id, prompt=text("write a"))
            await conn.prompt(session_id=session.session_id, prompt=text("again"))
    assert len(client.asked) == 1 and (repo / "a.txt").read_text() == "b\n"


async def test_set_mode_yolo_runs_a_command_unasked_and_cancel_stops_it_validly(repo, env):
    token = f"600.{uuid.uuid4().int % 10**9}"  # found by command line, to see the process start and go
    call = ("toolu_b", "bash", [json.dumps({"command": f"sleep {token}"})])
    client = RecordingClient()
    with LoopbackServer([Reply(anthropic_stream(["Running it."], call)), Reply(anthropic_stream(["Still here."]))]) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            await conn.set_session_mode(session_id=session.session_id, mode_id="yolo")
            turn = asyncio.create_task(conn.prompt(session_id=session.session_id, prompt=text("run it")))
            await wait_until(None, lambda: processes_with(token), what="the command to start")
            await conn.cancel(session_id=session.session_id)
            done = await asyncio.wait_for(turn, 60)  # only a guard against a hang
            assert processes_with(token) == []
            again = await conn.prompt(session_id=session.session_id, prompt=text("are you there?"))
    assert client.asked == [] and done.stop_reason == "cancelled" and again.stop_reason == "end_turn"
    last = [u for u in client.of(session.session_id) if getattr(u, "tool_call_id", None) == "toolu_b"][-1]
    assert last.status == "failed"
    messages = store_of(env).messages(session.session_id)
    # the cancelled turn is closed as Esc closes it: every call answered, so the next request is valid
    assert problems(messages[:3]) == [] and len(messages) == 5  # prompt, call, interrupted result; prompt, answer
    assert messages[2]["content"][0]["tool_use_id"] == "toolu_b" and messages[2]["content"][0]["is_error"]
    sent = server.requests[1].json()["messages"]
    assert problems(sent) == [] and sent[2]["content"][0]["tool_use_id"] == "toolu_b"


async def test_cancel_during_a_slow_stream_keeps_the_partial_answer(repo, env):
    body = anthropic_stream(["first words ", "never sent"])
    cut = body.index(b"event: content_block_delta", body.index(b"first words"))
    client = RecordingClient()
    # the rest of the answer waits far longer than any test: the cancel comes first, whatever the load
    with LoopbackServer([Reply([body[:cut], body[cut:]], delay=600)]) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            turn = asyncio.create_task(conn.prompt(session_id=session.session_id, prompt=text("talk")))
            await wait_until(None, lambda: any(u.session_update == "agent_message_chunk"  # not the commands
                                               for u in client.of(session.session_id)), what="the first chunk")
            await conn.cancel(session_id=session.session_id)
            done = await asyncio.wait_for(turn, 60)  # only a guard against a hang
    assert done.stop_reason == "cancelled"
    messages = store_of(env).messages(session.session_id)
    assert problems(messages) == [] and messages[-2].get("incomplete") is True and is_turn_marker(messages[-1])
    assert messages[-2]["content"][0]["text"] == "first words "


async def test_load_replays_the_stored_session_as_it_was_shown(repo, env):
    live = RecordingClient(answer="allow_once")
    with LoopbackServer([write_call(), Reply(anthropic_stream(["Done."]))]) as server:
        async with acp_process(repo, env, live, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            await conn.prompt(session_id=session.session_id, prompt=text("write hello.py"))
    later = RecordingClient()
    async with acp_process(repo, env, later) as (conn, _, _):
        listed = await conn.list_sessions(cwd=str(repo))
        await conn.load_session(cwd=str(repo), session_id=session.session_id)
    assert [s.session_id for s in listed.sessions] == [session.session_id]
    shown_live = [("user_message_chunk", "write hello.py"), *fold(live.of(session.session_id))]
    replayed = fold(later.of(session.session_id))
    assert replayed == shown_live
    assert [kind for kind, _ in replayed] == ["user_message_chunk", "agent_message_chunk", "tool_call",
                                              "agent_message_chunk"]
    assert replayed[2][1]["status"] == "completed" and replayed[2][1]["content"][1]["type"] == "diff"


async def test_fork_makes_a_branch_the_session_tree_shows_under_its_parent(repo, env):
    with LoopbackServer([Reply(anthropic_stream(["First."])), Reply(anthropic_stream(["Second."]))]) as server:
        async with acp_process(repo, env, RecordingClient(), "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            await conn.prompt(session_id=session.session_id, prompt=text("one"))
            branch = await conn.fork_session(session_id=session.session_id, cwd=str(repo))
            await conn.prompt(session_id=branch.session_id, prompt=text("two"))
    store = store_of(env)
    forked = store.session(branch.session_id)
    assert forked.parent == session.session_id and forked.fork_at == 2
    assert [m["content"][0]["text"] for m in store.messages(branch.session_id)] == ["one", "First.", "two", "Second."]
    assert len(server.requests[1].json()["messages"]) == 3  # the branch's request carries the shared history


@pytest.mark.parametrize("mode", ["auto-edit", "nonsense"])
async def test_set_mode_takes_the_permission_modes_only(repo, env, mode):
    from acp import RequestError

    async with acp_process(repo, env, RecordingClient()) as (conn, _, _):
        session = await conn.new_session(cwd=str(repo))
        if mode == "nonsense":
            with pytest.raises(RequestError):
                await conn.set_session_mode(session_id=session.session_id, mode_id=mode)
        else:
            await conn.set_session_mode(session_id=session.session_id, mode_id=mode)


async def test_a_failed_request_is_a_json_rpc_error_naming_it_without_the_key(repo, env):
    from acp import RequestError

    refused = Reply(json.dumps({"type": "error", "error": {"type": "authentication_error",
                                                          "message": f"invalid x-api-key {SECRET}"}}).encode(),
                    401, {"content-type": "application/json"})
    with LoopbackServer([refused]) as server:
        async with acp_process(repo, env, RecordingClient(), "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            with pytest.raises(RequestError) as failed:
                await conn.prompt(session_id=session.session_id, prompt=text("hi"))
    assert "401" in str(failed.value) and "invalid x-api-key" in str(failed.value)
    assert SECRET not in str(failed.value)  # a server echoing the key does not pass it on
    [stored] = store_of(env).sessions(repo)
    assert stored.failed  # listed as failed, as a -p run that failed is


async def test_what_a_plugin_prints_goes_to_stderr_not_into_the_protocol(repo, env):
    plugins = Path(env["HOME"]) / ".agents" / "plugins"
    plugins.mkdir(parents=True)
    (plugins / "loud.py").write_text("def scout(api):\n    print('loaded')\n"
                                     "    api.on('message.user', lambda event: print('heard it'))\n")
    stderr = repo.parent / "loud-stderr.txt"
    with LoopbackServer([Reply(anthropic_stream(["Quiet."]))]) as server:
        async with acp_process(repo, env, RecordingClient(), "--base-url", server.url, stderr=stderr) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            done = await conn.prompt(session_id=session.session_id, prompt=text("hi"))
    assert done.stop_reason == "end_turn"
    assert "loaded" in stderr.read_text() and "heard it" in stderr.read_text()


@pytest.mark.parametrize("how", ["sigterm", "stdin closed"])
async def test_sigterm_or_the_editor_going_away_kills_the_command_and_closes_the_turn(repo, env, how):
    token = f"600.{uuid.uuid4().int % 10**9}"
    call = ("toolu_b", "bash", [json.dumps({"command": f"sleep {token}"})])
    with LoopbackServer([Reply(anthropic_stream(["Running it."], call))]) as server:
        async with acp_process(repo, env, RecordingClient(), "--base-url", server.url,
                               "--permission-mode", "yolo") as (conn, proc, _):
            session = await conn.new_session(cwd=str(repo))
            turn = asyncio.create_task(conn.prompt(session_id=session.session_id, prompt=text("run it")))
            await wait_until(None, lambda: processes_with(token), what="the command to start")
            proc.terminate() if how == "sigterm" else proc.stdin.close()
            assert await asyncio.wait_for(proc.wait(), 60) == 0  # the wait only guards against a hang
            await asyncio.gather(turn, return_exceptions=True)
    assert processes_with(token) == []
    messages = store_of(env).messages(session.session_id)
    assert problems(messages) == [] and messages[-1]["content"][0]["tool_use_id"] == "toolu_b"


async def test_the_editors_mcp_server_is_started_and_its_tool_runs_once_allowed(repo, env):
    from acp.schema import McpServerStdio

    server_file = Path(__file__).parent / "mcp_servers" / "fast_server.py"
    call = ("toolu_m", "mcp__notes__add_note", [json.dumps({"text": "buy milk"})])
    client = RecordingClient(answer="allow_once")
    with LoopbackServer([Reply(anthropic_stream(["Noting."], call)), Reply(anthropic_stream(["Noted."]))]) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo), mcp_servers=[
                McpServerStdio(name="notes", command=sys.executable, args=[str(server_file)], env=[])])
            done = await conn.prompt(session_id=session.session_id, prompt=text("note: buy milk"))
    assert done.stop_reason == "end_turn"
    assert "mcp__notes__add_note" in {t["name"] for t in server.requests[0].json()["tools"]}
    [asked] = client.asked
    assert asked["tool_call"].title.startswith("mcp__notes__add_note") and asked["tool_call"].kind == "other"
    last = [u for u in client.of(session.session_id) if getattr(u, "tool_call_id", None) == "toolu_m"][-1]
    assert last.status == "completed" and "1" in last.content[0].content.text
    [result] = server.requests[1].json()["messages"][-1]["content"]
    assert result["tool_use_id"] == "toolu_m" and not result.get("is_error")


async def test_a_key_in_a_file_being_edited_is_redacted_from_the_diffs_the_editor_sees(repo, env):
    (repo / "settings.txt").write_text(f"key={SECRET}\nname=a\n")
    edit = {"path": "settings.txt", "old_string": "name=a", "new_string": "name=b"}
    replies = [Reply(anthropic_stream(["Editing."], ("toolu_e", "edit", [json.dumps(edit)]))),
               Reply(anthropic_stream(["Done."]))]
    client = RecordingClient(answer="allow_once")
    with LoopbackServer(replies) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, transcript):
            session = await conn.new_session(cwd=str(repo))
            await conn.prompt(session_id=session.session_id, prompt=text("rename"))
    assert (repo / "settings.txt").read_text() == f"key={SECRET}\nname=b\n"
    [diff] = [c for c in client.asked[0]["tool_call"].content if c.type == "diff"]
    assert "name=a" in diff.old_text and "name=b" in diff.new_text and "[redacted]" in diff.old_text
    assert SECRET not in "\n".join(transcript_lines(transcript))


class CancellingClient(RecordingClient):
    """An editor whose person presses its stop button while a permission request is up: it sends
    ``session/cancel`` and answers the request ``cancelled``, as the spec asks of a client."""

    conn = None

    async def request_permission(self, options, session_id, tool_call, **kwargs):
        await self.conn.cancel(session_id=session_id)
        return await super().request_permission(options, session_id, tool_call, **kwargs)


async def test_cancel_while_a_permission_request_is_up_leaves_the_file_unwritten_and_the_turn_closed(repo, env):
    client = CancellingClient(answer=None)
    with LoopbackServer([write_call()]) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            client.conn = conn
            session = await conn.new_session(cwd=str(repo))
            done = await asyncio.wait_for(conn.prompt(session_id=session.session_id, prompt=text("write")), 60)
    assert len(client.asked) == 1 and done.stop_reason == "cancelled" and not (repo / "hello.py").exists()
    messages = store_of(env).messages(session.session_id)
    assert problems(messages) == [] and messages[-1]["content"][0]["is_error"]


async def test_resume_goes_on_with_the_stored_conversation_without_replaying_it(repo, env):
    with LoopbackServer([Reply(anthropic_stream(["First."])), Reply(anthropic_stream(["Second."]))]) as server:
        async with acp_process(repo, env, RecordingClient(), "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            await conn.prompt(session_id=session.session_id, prompt=text("one"))
        later = RecordingClient()
        async with acp_process(repo, env, later, "--base-url", server.url) as (conn, _, _):
            await conn.resume_session(session_id=session.session_id, cwd=str(repo))
            await conn.prompt(session_id=session.session_id, prompt=text("two"))
            await conn.close_session(session_id=session.session_id)
    shown = fold(later.of(session.session_id))
    assert shown == [("agent_message_chunk", "Second.")]  # nothing of the first turn is replayed
    sent = server.requests[1].json()["messages"]
    assert [m["content"][0]["text"] for m in sent] == ["one", "First.", "two"]


async def test_a_prompt_of_only_an_image_is_refused_with_why(repo, env):
    from acp import RequestError
    from acp.schema import ImageContentBlock

    async with acp_process(repo, env, RecordingClient()) as (conn, _, _):
        session = await conn.new_session(cwd=str(repo))
        with pytest.raises(RequestError) as refused:
            await conn.prompt(session_id=session.session_id,
                              prompt=[ImageContentBlock(type="image", data="aGk=", mime_type="image/png")])
    assert "image block is not supported" in str(refused.value)


async def test_each_answer_reports_the_context_used_of_the_window(repo, env):
    env = {**env, "SCOUT_CONTEXT_WINDOW": "200000"}
    client = RecordingClient()
    replies = [Reply(anthropic_stream(["One."], input_tokens=1200, output_tokens=30)),
               Reply(anthropic_stream(["Two."], input_tokens=1300, output_tokens=40))]
    with LoopbackServer(replies) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            await conn.prompt(session_id=session.session_id, prompt=text("one"))
            await conn.prompt(session_id=session.session_id, prompt=text("two"))
    usage = [u for u in client.of(session.session_id) if u.session_update == "usage_update"]
    assert [(u.used, u.size) for u in usage] == [(1230, 200000), (1340, 200000)]
    spent = sum(row["cost"] for row in store_of(env).spending(session.session_id).values())
    assert 0 < usage[0].cost.amount < usage[1].cost.amount == pytest.approx(spent)  # summed as /cost sums it
    assert usage[1].cost.currency == "USD"


async def test_the_model_option_switches_the_next_request_and_the_session_keeps_it(repo, env):
    with LoopbackServer([Reply(anthropic_stream(["Hi."]))]) as server:
        async with acp_process(repo, env, RecordingClient(), "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            [offered] = session.config_options
            assert offered.id == "model" and offered.category == "model"
            changed = await conn.set_config_option(config_id="model", session_id=session.session_id,
                                                   value="anthropic/claude-haiku-4-5")
            await conn.prompt(session_id=session.session_id, prompt=text("hi"))
    assert changed.config_options[0].current_value == "anthropic/claude-haiku-4-5"
    assert server.requests[0].json()["model"] == "claude-haiku-4-5"
    switch = store_of(env).model_switch(session.session_id)
    assert (switch.provider, switch.model) == ("anthropic", "claude-haiku-4-5")  # a reopened session goes on with it


async def test_a_file_the_client_embeds_reaches_the_model_once_not_again_as_a_mention(repo, env):
    from acp.schema import EmbeddedResourceContentBlock, TextResourceContents

    (repo / "NOTES.md").write_text("the launch code is tangerine\n")
    # As Toad sends `@NOTES.md`: the text keeps the mention, the file comes as an embedded resource.
    prompt = [*text("what does @NOTES.md say?"), EmbeddedResourceContentBlock(type="resource", resource=TextResourceContents(
        uri=(repo / "NOTES.md").as_uri(), text="the launch code is tangerine\n", mime_type="text/markdown"))]
    with LoopbackServer([Reply(anthropic_stream(["Tangerine."]))]) as server:
        async with acp_process(repo, env, RecordingClient(), "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            await conn.prompt(session_id=session.session_id, prompt=prompt)
    sent = json.dumps(server.requests[0].json()["messages"][-1])
    assert sent.count("the launch code is tangerine") == 1  # before: the client's copy and a <mention> of it
    assert "@NOTES.md" in sent


class NoPermissionClient(RecordingClient):
    """A client that does not implement ``session/request_permission`` (a minimal one, a script)."""

    async def request_permission(self, options: list, session_id: str, tool_call, **kwargs):
        from acp import RequestError

        raise RequestError.method_not_found("session/request_permission")


async def test_a_client_that_cannot_ask_permission_gets_the_call_denied_saying_so(repo, env):
    with LoopbackServer([write_call(), Reply(anthropic_stream(["I could not."]))]) as server:
        async with acp_process(repo, env, NoPermissionClient(), "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            done = await conn.prompt(session_id=session.session_id, prompt=text("write hello.py"))
    assert done.stop_reason == "end_turn" and not (repo / "hello.py").exists()
    [result] = server.requests[1].json()["messages"][-1]["content"]
    said = result["content"] if isinstance(result["content"], str) else result["content"][0]["text"]
    assert result["is_error"] and "RequestError" not in said and "Method not found" not in said
    assert "the editor (ACP client) cannot ask for it: it does not support permission requests. The call was denied" in said


async def test_a_session_does_not_wait_for_a_hung_mcp_server_and_the_first_answer_says_so(repo, env):
    folder = Path(env["XDG_CONFIG_HOME"]) / "scout"
    folder.mkdir(parents=True, exist_ok=True)
    scripted = Path(__file__).parent / "mcp_servers" / "scripted_server.py"
    (folder / "scout.toml").write_text(f"[mcp]\nstartup_wait = 0.3\n[mcp.servers.hung]\ncommand = {json.dumps(sys.executable)}\n"
                                       f"args = {json.dumps([str(scripted), 'hang'])}\nstartup_timeout = 3600\n")
    client = RecordingClient()
    with LoopbackServer([Reply(anthropic_stream(["Hello."]))]) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await asyncio.wait_for(conn.new_session(cwd=str(repo)), 60)  # before: an hour
            await conn.prompt(session_id=session.session_id, prompt=text("hi"))
    shown = fold(client.of(session.session_id))
    assert shown[0][0] == "agent_message_chunk"
    assert shown[0][1].startswith("> MCP server hung is still starting after 0.3 s: this request goes on without its tools")
    assert shown[0][1].endswith("Hello.")
