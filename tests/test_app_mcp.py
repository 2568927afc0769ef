"""MCP servers in the running app, driven with Pilot against a loopback model and a FastMCP server
over stdio configured in scout.toml: a tool call whose result the next request carries, a deny
rule, a crash, Esc during a slow call, /mcp, prompts as commands, and consent to a project's
.mcp.json."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from scout_tui.engine.history import problems
from scout_tui.mcp.tools import mcp_tools
from scout_tui.store.event_log import Store
from scout_tui.widgets import ToolActivity
from scout_tui.widgets.approval import ApprovalScreen
from scout_tui.widgets.composer import Composer
from scout_tui.widgets.chat_messages import Notice
from scout_tui.widgets.dialogs import ConfirmScreen
from tests.app_helpers import SIZE, make_app, running_and_printed, send, settle
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream

FAST_SERVER = Path(__file__).parent / "mcp_servers" / "fast_server.py"


def configure(home: Path, *, allow: tuple[str, ...] = (), deny: tuple[str, ...] = ()) -> None:
    folder = home / ".config" / "scout"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scout.toml").write_text(
        f"[mcp.servers.notes]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(FAST_SERVER))}]\n"
        f"[permissions]\nallow = {json.dumps(list(allow))}\ndeny = {json.dumps(list(deny))}\n")


def call(tool_id: str, name: str, arguments: dict) -> Reply:
    return Reply(anthropic_stream([], (tool_id, name, [json.dumps(arguments)])))


def answer(text: str = "Done.") -> Reply:
    return Reply(anthropic_stream([text]))


def results(request) -> list[dict]:
    """The tool_result blocks of the last user message a request sent."""
    last = [m for m in request.json()["messages"] if m["role"] == "user"][-1]
    return [b for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def result_text(block: dict) -> str:
    content = block["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def notices(app) -> str:
    return "\n".join(n.text for n in app.query(Notice))


async def ready(app, pilot, name: str = "notes") -> None:
    await wait_until(pilot, lambda: app.session.mcp is not None and name in app.session.mcp.servers
                     and app.session.mcp.servers[name].state != "starting", what=f"MCP server {name} started")
    assert app.session.mcp.servers[name].state == "ready", app.session.mcp.servers[name].why()


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    return workdir


async def test_a_turn_calls_an_mcp_tool_and_the_next_request_carries_its_result(tmp_home, repo):
    configure(tmp_home, allow=("mcp__notes",))
    with LoopbackServer([call("toolu_1", "mcp__notes__add_note", {"text": "buy milk"}), answer()]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "note that I need milk")
            await settle(app, pilot)
            first, second = server.requests
            assert "mcp__notes__add_note" in [t["name"] for t in first.json()["tools"]]
            [block] = results(second)
            assert result_text(block) == "noted (1): buy milk" and not block.get("is_error")
            tools = app.query_one(ToolActivity)
            assert tools.status_of("toolu_1") == "ok"
        assert app.session.mcp.servers["notes"].state == "stopped"  # ended with the app


async def test_an_mcp_tool_asks_by_default_naming_its_server(tmp_home, repo):
    configure(tmp_home)
    with LoopbackServer([call("toolu_1", "mcp__notes__add_note", {"text": "asked"}), answer()]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "note it")
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the approval prompt")
            assert app.screen.request.tool == "mcp__notes__add_note"
            assert "its MCP server does not mark it read-only" in app.screen.request.reason
            await wait_until(pilot, lambda: app.screen.armed, what="the prompt to take keys")
            await pilot.press("y")
            await settle(app, pilot)
            [block] = results(server.requests[1])
            assert result_text(block) == "noted (1): asked"


async def test_a_deny_rule_for_the_server_refuses_its_tools(tmp_home, repo):
    configure(tmp_home, deny=("mcp__notes",))
    with LoopbackServer([call("toolu_1", "mcp__notes__add_note", {"text": "x"}), answer()]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "note x")
            await settle(app, pilot)
            [block] = results(server.requests[1])
            assert block["is_error"] and "denied by the rule 'mcp__notes'" in result_text(block)


async def test_a_crashing_server_is_reported_and_the_session_goes_on(tmp_home, repo):
    configure(tmp_home, allow=("mcp__notes",))
    replies = [call("toolu_1", "mcp__notes__crash", {}), answer("It crashed."), answer("Still here.")]
    with LoopbackServer(replies) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "crash it")
            await settle(app, pilot)
            [block] = results(server.requests[1])
            assert block["is_error"] and "'notes'" in result_text(block)
            await wait_until(pilot, lambda: "MCP server notes failed" in notices(app), what="the crash in the chat")
            assert "the server is going down" in notices(app)  # the tail of its stderr
            await send(app, pilot, "are you there?")
            await settle(app, pilot)
            assert len(server.requests) == 3 and app.session.messages[-1]["content"][0]["text"] == "Still here."
            # its tools are no longer offered: the model would only call them in vain (seen by a new user)
            assert not [t for t in server.requests[2].json()["tools"] if t["name"].startswith("mcp__notes__")]


async def test_esc_during_a_slow_mcp_call_cancels_it_and_closes_the_turn(tmp_home, repo):
    configure(tmp_home, allow=("mcp__notes",))
    with LoopbackServer([call("toolu_1", "mcp__notes__slow", {}), call("toolu_2", "mcp__notes__add",
                                                                        {"a": 1, "b": 2}), answer()]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "be slow")
            runner = None

            def slow_running() -> bool:
                nonlocal runner
                runner = app.session.mcp._runners.get("notes") if app.session.mcp else None
                return runner is not None and "slow: started" in runner._stderr_tail()

            await wait_until(pilot, slow_running, what="the slow call running on the server")
            await pilot.press("escape")
            await settle(app, pilot)
            assert not app.busy and app.session.mcp.servers["notes"].state == "ready"
            store = Store()
            assert problems(store.messages(app.session.id)) == []
            # The server still answers: the next turn's call runs.
            await send(app, pilot, "add")
            await settle(app, pilot)
            [block] = results(server.requests[2])
            assert '"sum": 3' in result_text(block)


async def test_slash_mcp_lists_servers_with_their_state_and_tools(tmp_home, repo):
    configure(tmp_home)
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)
        await send(app, pilot, "/mcp")
        await settle(app, pilot)
        shown = notices(app)
        assert "**notes** · ready · stdio:" in shown or "notes · ready · stdio:" in shown
        assert "mcp__notes__add_note" in shown and "mcp__notes__add` (read-only)" in shown
        assert "/mcp__notes__review" in shown


async def test_an_mcp_prompt_is_a_slash_command_whose_messages_are_sent(tmp_home, repo):
    configure(tmp_home)
    with LoopbackServer([answer("Reviewed.")]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await ready(app, pilot)
            await wait_until(pilot, lambda: app.commands.get("mcp__notes__review") is not None,
                             what="the prompt's command")
            await send(app, pilot, "/mcp__notes__review app.py focus=style")
            await wait_until(pilot, lambda: server.requests, what="the request")
            await settle(app, pilot)
            last = server.requests[0].json()["messages"][-1]
            text = json.dumps(last["content"])
            assert "Please review app.py, looking for style." in text


async def test_a_projects_mcp_json_server_starts_only_once_trusted(tmp_home, repo):
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": {
        "command": sys.executable, "args": [str(FAST_SERVER)]}}}))
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "MCP server 'proj' not started" in notices(app), what="the consent notice")
        assert app.session.mcp is None or "proj" not in app.session.mcp.servers
        await send(app, pilot, "/mcp")
        await settle(app, pilot)
        assert "proj** · not trusted" in notices(app)
        await send(app, pilot, "/trust")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the trust dialog")
        assert "MCP server proj" in app.screen.question and sys.executable in app.screen.question
        await pilot.press("y")
        await ready(app, pilot, "proj")
        assert "mcp__proj__add_note" in {t.name for t in mcp_tools(app.session.mcp)}
    # Trusted now: the next start runs it without asking.
    again = make_app(repo, None)
    async with again.run_test(size=SIZE) as pilot:
        await ready(again, pilot, "proj")
        assert "not started" not in notices(again)


async def test_a_servers_env_values_never_reach_the_screen(tmp_home, repo):
    folder = tmp_home / ".config" / "scout"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scout.toml").write_text(
        f"[mcp.servers.leaky]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(FAST_SERVER))}]\n"
        'env = { API_TOKEN = "tok-abcdefgh-1234567", '
        'MCP_TEST_FAIL_AT_START = "token tok-abcdefgh-1234567 refused for /home/me/notes" }\n')
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "MCP server leaky failed" in notices(app), what="the failure in the chat")
        shown = notices(app)  # the text each notice shows
        assert "[redacted]" in shown and "tok-abcdefgh-1234567" not in shown
        # an env value that is not a credential stays: it is what explains the failure (seen by a new user)
        assert "refused for /home/me/notes" in shown


async def test_a_bad_server_entry_fails_with_its_file_and_line_and_the_others_start(tmp_home, repo):
    # seen by a new user: one typo stopped every server ("No MCP servers are configured")
    configure(tmp_home)
    toml = tmp_home / ".config" / "scout" / "scout.toml"
    toml.write_text(toml.read_text() + '[mcp.servers.typo]\ncomand = "x"\n')
    (repo / ".mcp.json").write_text('{"mcpServers": {"proj": {"command": "x",}}}')  # a project's broken file
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await ready(app, pilot)  # the good one starts all the same
        await wait_until(pilot, lambda: app.session.mcp.servers["typo"].state == "failed", what="the typo fails")
        line = toml.read_text().splitlines().index('comand = "x"') + 1
        assert f"{toml}:{line}: unknown key 'comand'" in app.session.mcp.servers["typo"].why()
        await wait_until(pilot, lambda: f"{repo / '.mcp.json'}:1:" in notices(app) and "not JSON" in notices(app),
                         what="the project file's error")

def test_prompt_arguments_by_name_in_order_and_a_misspelt_name_refused():
    # seen by a new user: `city=Paris bogus=1` sent "What's weather in Paris, bogus=1?"
    from types import SimpleNamespace

    from scout_tui.tui.mcp_servers import _first_line, prompt_arguments

    prompt = SimpleNamespace(arguments=[SimpleNamespace(name="city", required=True),
                                        SimpleNamespace(name="state", required=False)])
    assert prompt_arguments(prompt, "city=Paris state=TX") == {"city": "Paris", "state": "TX"}
    assert prompt_arguments(prompt, "Paris TX") == {"city": "Paris", "state": "TX"}
    with pytest.raises(ValueError, match="no argument 'bogus' \\(arguments: city state\\)"):
        prompt_arguments(prompt, "city=Paris bogus=1")
    with pytest.raises(ValueError, match="missing city"):
        prompt_arguments(prompt, "state=TX")
    assert _first_line("word " * 30).endswith("…") and len(_first_line("word " * 30)) == 80


SCRIPTED = Path(__file__).parent / "mcp_servers" / "scripted_server.py"


def configure_scripted(home: Path, wait: float, **servers: list[str]) -> None:
    folder = home / ".config" / "scout"
    folder.mkdir(parents=True, exist_ok=True)
    text = f"[mcp]\nstartup_wait = {wait}\n" + "".join(
        f"[mcp.servers.{name}]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps([str(SCRIPTED), *args])}\nstartup_timeout = 3600\n" for name, args in servers.items())
    (folder / "scout.toml").write_text(text)


async def test_a_prompt_goes_on_without_a_server_still_starting_which_joins_a_later_request(tmp_home, repo, tmp_path):
    gate = tmp_path / "gate"  # the server answers initialize once this file exists
    configure_scripted(tmp_home, 0.3, late=["tasks", str(gate)])
    with LoopbackServer([answer("Hello."), answer("Again.")]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.session.mcp is not None and "late" in app.session.mcp.servers, what="the server starting")
            await send(app, pilot, "hi")
            await settle(app, pilot)  # before: the prompt waited out the server's startup_timeout (an hour)
            assert "MCP server late is still starting after 0.3 s: this request goes on without its tools" in notices(app)
            assert app.session.messages[-1]["content"][0]["text"] == "Hello."
            assert not [t for t in server.requests[0].json()["tools"] if t["name"].startswith("mcp__late__")]
            gate.write_text("go")
            await wait_until(pilot, lambda: "MCP server late is ready: its 1 tool joins the next request" in notices(app),
                             what="the chat saying the server is ready")
            await send(app, pilot, "again")
            await settle(app, pilot)
            assert "mcp__late__echo" in [t["name"] for t in server.requests[1].json()["tools"]]


async def test_esc_while_waiting_for_the_servers_keeps_the_prompt_in_the_composer(tmp_home, repo):
    configure_scripted(tmp_home, 3600, hung=["hang"])
    with LoopbackServer([answer()]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.session.mcp is not None and "hung" in app.session.mcp.servers, what="the server starting")
            await send(app, pilot, "my carefully typed prompt")
            await wait_until(pilot, lambda: "Your prompt “my carefully typed prompt” waits up to 3600 s for MCP server "
                             "hung to start" in notices(app), what="the wait said, with the prompt that waits")
            await pilot.press("escape")
            await settle(app, pilot)
            assert app.query_one(Composer).text == "my carefully typed prompt"
            assert "Not sent (kept in the composer): stopped while waiting for the MCP servers to start" in notices(app)
            assert server.requests == []


async def test_a_running_calls_progress_shows_in_the_tool_pane(tmp_home, repo):
    configure(tmp_home, allow=("mcp__notes",))
    with LoopbackServer([call("toolu_1", "mcp__notes__halfway", {}), answer()]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "work")
            await wait_until(pilot, lambda: running_and_printed(app, "toolu_1", "progress 1/2: halfway there"),
                             what="the server's progress notification in the running call's row")
            await pilot.press("escape")
            await settle(app, pilot)


async def test_slash_mcp_restart_brings_a_crashed_server_back(tmp_home, repo):
    configure(tmp_home, allow=("mcp__notes",))
    with LoopbackServer([call("toolu_1", "mcp__notes__crash", {}), answer("It crashed."), answer("Back.")]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "crash it")
            await settle(app, pilot)
            await wait_until(pilot, lambda: "MCP server notes failed" in notices(app), what="the crash in the chat")
            await send(app, pilot, "/mcp restart nope")
            await pilot.pause()
            assert "/mcp restart: no MCP server 'nope' was started (started: notes" in notices(app)
            await send(app, pilot, "/mcp restart notes")
            await wait_until(pilot, lambda: "MCP server notes is ready" in notices(app), what="the server back")
            await send(app, pilot, "are you there?")
            await settle(app, pilot)
            assert "mcp__notes__add_note" in [t["name"] for t in server.requests[2].json()["tools"]]


async def test_slash_mcp_restart_during_a_running_call_ends_the_call_at_once_and_the_turn_goes_on(tmp_home, repo):
    # Before: the call waited out its tool_timeout (600 s), far past this test's waits.
    configure(tmp_home, allow=("mcp__notes",))
    with LoopbackServer([call("toolu_1", "mcp__notes__halfway", {}), answer("It was restarted.")]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "work")
            await wait_until(pilot, lambda: running_and_printed(app, "toolu_1", "progress 1/2: halfway there"),
                             what="the slow call running")
            await send(app, pilot, "/mcp restart notes")
            await wait_until(pilot, lambda: len(server.requests) == 2, what="the turn going on with the call's result")
            assert result_text(results(server.requests[1])[0]) == "MCP server 'notes' was restarted before answering"
            await wait_until(pilot, lambda: "MCP server notes is ready" in notices(app), what="the server back")
            await settle(app, pilot)


async def test_a_failed_servers_stderr_shows_line_under_line_without_blank_lines_or_indentation(tmp_home, repo):
    from rich.console import Console

    folder = tmp_home / ".config" / "scout"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scout.toml").write_text(
        f"[mcp.servers.bad]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(FAST_SERVER))}, '--mode=*strict*']\n"
        'env = { MCP_TEST_FAIL_AT_START = "# no config: see <docs>" }\n')
    app = make_app(repo, None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: "MCP server bad failed" in notices(app), what="the failure in the chat")
        notice = next(n for n in app.query(Notice) if "MCP server bad failed" in n.text)
        console = Console(width=200, record=True, file=open("/dev/null", "w"))
        console.print(notice.render())
        shown = [line.rstrip() for line in console.export_text().splitlines()]
        at = next(i for i, line in enumerate(shown) if line.endswith("its stderr ended with:"))
        assert shown[at + 1:at + 6] == ["", "# no config: see <docs>", "started as: --mode=*strict*", "",
                                        "The session goes on without it (/mcp lists the servers)."]
