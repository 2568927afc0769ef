"""The MCP client against real MCP servers started by the tests: a FastMCP server (the SDK's own
server API) over stdio and over streamable HTTP on loopback, and, where Node is, the reference
server ``@modelcontextprotocol/server-everything`` from the npm registry. Config reading, tool
names, results, failures, cancellation and the permission rules for MCP tools."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from scout_tui.config.layers import load_config
from scout_tui.core.errors import ScoutError
from scout_tui.mcp.client import McpClient
from scout_tui.mcp.config import ServerConfig, mcp_settings
from scout_tui.mcp.resources import RESOURCE_TOOLS
from scout_tui.mcp.tools import mcp_tools, tool_name
from scout_tui.tools.base import ToolContext
from scout_tui.tools.permissions import Policy, parse_rule
from scout_tui.config.trust import record_trust
from tests.conftest import until

FAST_SERVER = Path(__file__).parent / "mcp_servers" / "fast_server.py"


def stdio(name: str = "notes", **env: str) -> ServerConfig:
    return ServerConfig(name, "stdio", "test:1", command=sys.executable, args=(str(FAST_SERVER),), env=env)


async def started(*servers: ServerConfig, cwd: Path) -> McpClient:
    client = McpClient(list(servers), cwd=cwd)
    client.start()
    await client.wait_started()
    return client


def tools_of(client: McpClient) -> dict:
    return {t.name: t for t in mcp_tools(client)}


def user_toml(home: Path, text: str) -> Path:
    folder = home / ".config" / "scout"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scout.toml").write_text(text)
    return folder / "scout.toml"


# -- configuration ----------------------------------------------------------------------------


def test_servers_come_from_scout_toml_and_a_projects_mcp_json(tmp_home, workdir):
    user_toml(tmp_home, '[mcp.servers.notes]\ncommand = "python"\nargs = ["server.py"]\nenv = { TOKEN = "t" }\n'
                        'tool_timeout = 5\n')
    (workdir / ".mcp.json").write_text('{"mcpServers": {\n  "docs": {"type": "http", "url": "http://127.0.0.1:1/mcp",'
                                       ' "headers": {"Authorization": "Bearer ${DOCS_TOKEN:-none}"}}\n}}\n')
    settings = mcp_settings(load_config(workdir), workdir, environ={})
    notes, docs = settings.servers["notes"], settings.servers["docs"]
    assert (notes.transport, notes.command, notes.args, notes.env, notes.tool_timeout) == ("stdio", "python", ("server.py",), {"TOKEN": "t"}, 5.0)
    assert notes.trusted and notes.origin.endswith("scout.toml:1")
    assert (docs.transport, docs.url, docs.headers) == ("http", "http://127.0.0.1:1/mcp", {"Authorization": "Bearer none"})
    assert not docs.trusted and docs.origin == f"{workdir / '.mcp.json'}:2"
    assert [s.name for s in settings.startable()] == ["notes"]
    assert any("'docs'" in n and "scout-tui trust" in n for n in settings.notes)


def test_a_trusted_project_server_starts_until_its_entry_changes(tmp_home, workdir):
    mcp_json = workdir / ".mcp.json"
    mcp_json.write_text('{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}')
    settings = mcp_settings(load_config(workdir), workdir)
    record_trust([s.trust for s in settings.servers.values()])
    assert [s.name for s in mcp_settings(load_config(workdir), workdir).startable()] == ["a", "b"]
    mcp_json.write_text('{"mcpServers": {"a": {"command": "x", "args": ["--evil"]}, "b": {"command": "y"}}}')
    again = mcp_settings(load_config(workdir), workdir)
    assert [s.name for s in again.startable()] == ["b"] and again.servers["a"].trust.state == "changed"


def _said(settings) -> str:
    return "\n".join([*settings.notes, *(s.problem for s in settings.servers.values())])


GOOD = '[mcp.servers.ok]\ncommand = "ok"\n'


@pytest.mark.parametrize("text, line, words, others_start", [
    (GOOD + '[mcp.servers.x]\ncommand = "a"\nargz = []\n', 5, "unknown key 'argz'", True),
    ('x = 1\n' + GOOD + '[mcp.servers.x]\nargs = ["a"]\n', 4, "either a command", True),
    (GOOD + '[mcp.servers.x]\nurl = "http://h"\nheaders = { A = 1 }\n', 5, "table of strings", True),
    (GOOD + '[mcp.servers.x]\ncommand = "a"\ntool_timeout = 0\n', 5, "positive number", True),
    ('[mcp]\nserver = {}\n', 2, "unknown key 'server'", False),
])
def test_a_bad_mcp_entry_fails_with_its_file_and_line_and_the_others_stay(tmp_home, workdir, text, line, words,
                                                                         others_start):
    path = user_toml(tmp_home, text)
    settings = mcp_settings(load_config(workdir), workdir)  # never raises: one entry does not stop the rest
    assert f"{path}:{line}:" in _said(settings) and words in _said(settings)
    if others_start:
        assert settings.servers["ok"].problem == "" and settings.servers["x"].problem


@pytest.mark.parametrize("text, where, words", [
    ('{\n  "mcpServers": {\n    "x": {"url": 3}\n  }\n}', ":3:", "non-empty string"),
    ('{\n  "mcpServers": {\n    "x": {"type": "websocket", "url": "ws://h"}\n  }\n}', ":3:", "\"sse\", got 'websocket'"),
    ('{\n  "mcpServers": {,\n}', ":2:18:", "not JSON"),
])
def test_a_bad_mcp_json_is_said_with_its_line_and_the_person_s_servers_stay(tmp_home, workdir, text, where, words):
    user_toml(tmp_home, GOOD)
    (workdir / ".mcp.json").write_text(text)
    settings = mcp_settings(load_config(workdir), workdir)
    assert f"{workdir / '.mcp.json'}{where}" in _said(settings) and words in _said(settings)
    assert settings.servers["ok"].problem == ""


def test_keys_other_agents_write_in_mcp_json_are_left_alone_and_a_disabled_server_is_not_started(tmp_home, workdir):
    (workdir / ".mcp.json").write_text('{"mcpServers": {"a": {"command": "x", "cwd": "/", "autoApprove": []},'
                                       ' "b": {"command": "y", "disabled": true}}}')
    settings = mcp_settings(load_config(workdir), workdir)
    assert list(settings.servers) == ["a"] and settings.servers["a"].problem == ""


def test_tool_names_follow_the_providers_rules():
    assert tool_name("notes", "add_note") == "mcp__notes__add_note"
    assert tool_name("my-server", "files/read.v2") == "mcp__my-server__files_read_v2"
    long = tool_name("s", "x" * 100)
    assert len(long) == 64 and long != tool_name("s", "x" * 99)


def test_a_rule_for_mcp_server_covers_each_of_its_tools(tmp_path):
    policy = Policy(deny=[parse_rule("mcp__notes")], allow=[parse_rule("mcp__docs__search")], workspace=tmp_path)
    assert policy.check("mcp__notes__add_note", {}, tmp_path).verdict == "deny"
    assert policy.check("mcp__notes2__add", {}, tmp_path).verdict == "ask"
    assert policy.check("mcp__docs__search", {}, tmp_path).verdict == "allow"
    assert policy.check("mcp__docs__delete", {}, tmp_path).verdict == "ask"
    assert policy.check("mcp__docs__lookup", {}, tmp_path, read_only=True).verdict == "allow"
    assert policy.unknown_tools(["bash"]) == []  # MCP tools are known only once servers start


# -- a FastMCP server over stdio --------------------------------------------------------------


async def test_a_stdio_servers_tools_run_with_their_results_mapped(tmp_path):
    client = await started(stdio(), cwd=tmp_path)
    try:
        tools = tools_of(client)
        assert {"mcp__notes__add_note", "mcp__notes__add", "mcp__notes__picture"} <= set(tools)
        assert tools["mcp__notes__add"].read_only and not tools["mcp__notes__add_note"].read_only
        ctx = ToolContext(cwd=tmp_path)
        noted = await tools["mcp__notes__add_note"].run({"text": "buy milk"}, ctx)
        assert (noted.content, noted.is_error) == ("noted (1): buy milk", False)
        assert '"sum": 5' in (await tools["mcp__notes__add"].run({"a": 2, "b": 3}, ctx)).content  # structured
        assert (await tools["mcp__notes__picture"].run({}, ctx)).content == "[image: image/png, 70 bytes]"
        failed = await tools["mcp__notes__fail"].run({"why": "testing"}, ctx)
        assert failed.is_error and "failing as asked: testing" in failed.content
        assert [p.name for p in client.servers["notes"].prompts] == ["review"]
    finally:
        await asyncio.to_thread(client.close)
    assert client.servers["notes"].state == "stopped"


async def test_a_server_that_fails_to_start_is_reported_with_its_stderr(tmp_path):
    client = await started(stdio("broken", MCP_TEST_FAIL_AT_START="config file missing: /etc/x"), stdio("ok"),
                           cwd=tmp_path)
    try:
        broken = client.servers["broken"]
        assert broken.state == "failed" and "config file missing: /etc/x" in broken.stderr_tail
        assert "config file missing" in broken.why()
        assert client.servers["ok"].state == "ready"  # the others go on
        assert all(t.startswith("mcp__ok__") or t in RESOURCE_TOOLS for t in tools_of(client))
    finally:
        await asyncio.to_thread(client.close)


async def test_a_missing_command_fails_naming_it(tmp_path):
    client = await started(ServerConfig("gone", "stdio", "test:1", command="no-such-mcp-server-xyz"), cwd=tmp_path)
    try:
        assert client.servers["gone"].state == "failed"
        assert "no-such-mcp-server-xyz" in client.servers["gone"].error
    finally:
        await asyncio.to_thread(client.close)


async def test_a_call_to_a_server_that_died_is_an_error_naming_it(tmp_path):
    client = await started(stdio(), cwd=tmp_path)
    try:
        tools, ctx = tools_of(client), ToolContext(cwd=tmp_path)
        crashed = await tools["mcp__notes__crash"].run({}, ctx)
        assert crashed.is_error and "'notes'" in crashed.content
        await asyncio.to_thread(until, lambda: client.servers["notes"].state == "failed", what="the crash noticed")
        assert "the server is going down" in client.servers["notes"].stderr_tail
        later = await tools["mcp__notes__add"].run({"a": 1, "b": 1}, ctx)
        assert later.is_error and "MCP server 'notes' is not running" in later.content
    finally:
        await asyncio.to_thread(client.close)


async def test_cancelling_a_slow_call_leaves_the_server_usable(tmp_path):
    client = await started(stdio(), cwd=tmp_path)
    try:
        tools, ctx = tools_of(client), ToolContext(cwd=tmp_path)
        call = asyncio.ensure_future(tools["mcp__notes__slow"].run({}, ctx))
        runner = client._runners["notes"]
        await asyncio.to_thread(until, lambda: "slow: started" in runner._stderr_tail(), what="the slow call running")
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await asyncio.to_thread(until, lambda: "slow: cancelled" in runner._stderr_tail(),
                                what="the server told to cancel the call (notifications/cancelled)")
        assert (await tools["mcp__notes__add"].run({"a": 1, "b": 2}, ctx)).content.count("3") == 1
    finally:
        await asyncio.to_thread(client.close)


async def test_stopping_a_call_from_the_tool_pane_returns_at_once(tmp_path):
    client = await started(stdio(), cwd=tmp_path)
    try:
        ctx = ToolContext(cwd=tmp_path)
        call = asyncio.ensure_future(tools_of(client)["mcp__notes__slow"].run({}, ctx))
        await asyncio.to_thread(until, lambda: "slow: started" in client._runners["notes"]._stderr_tail(),
                                what="the slow call running")
        ctx.stop.set()
        stopped = await call
        assert stopped.is_error and "stopped by the user" in stopped.content
    finally:
        await asyncio.to_thread(client.close)


async def test_a_changed_tool_list_is_read_again(tmp_path):
    changes = []
    client = McpClient([stdio()], cwd=tmp_path, on_change=lambda status: changes.append(len(status.tools)))
    client.start()
    await client.wait_started()
    try:
        assert "mcp__notes__extra" not in tools_of(client)
        assert (await tools_of(client)["mcp__notes__grow"].run({}, ToolContext(cwd=tmp_path))).content == "grown"
        await asyncio.to_thread(until, lambda: "mcp__notes__extra" in tools_of(client), what="the new tool listed")
        assert changes[-1] == len(client.servers["notes"].tools)  # the front end was told
    finally:
        await asyncio.to_thread(client.close)


# -- the same server over streamable HTTP on loopback -----------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(params=["http"])
def http_server(request):
    """The FastMCP server in a subprocess on a free loopback port: its URL (``/mcp`` for
    streamable HTTP, ``/sse`` for the older SSE transport, by the fixture's param)."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(FAST_SERVER), request.param, str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        until(lambda: answers(port) or process.poll() is not None, what="the HTTP MCP server to listen")
        assert process.poll() is None, "the HTTP MCP server exited"
        yield f"http://127.0.0.1:{port}/{'mcp' if request.param == 'http' else 'sse'}"
    finally:
        process.terminate()
        process.wait(10)


async def test_a_streamable_http_servers_tools_run(tmp_path, http_server):
    server = ServerConfig("web", "http", "test:1", url=http_server, headers={"X-Test": "1"})
    client = await started(server, cwd=tmp_path)
    try:
        assert client.servers["web"].state == "ready", client.servers["web"].why()
        tools, ctx = tools_of(client), ToolContext(cwd=tmp_path)
        assert (await tools["mcp__web__add_note"].run({"text": "over http"}, ctx)).content == "noted (1): over http"
        assert (await tools["mcp__web__picture"].run({}, ctx)).content.startswith("[image: image/png")
    finally:
        await asyncio.to_thread(client.close)


@pytest.mark.parametrize("http_server", ["sse"], indirect=True)
async def test_an_sse_servers_tools_run(tmp_path, http_server):
    client = await started(ServerConfig("old", "sse", "test:1", url=http_server), cwd=tmp_path)
    try:
        assert client.servers["old"].state == "ready", client.servers["old"].why()
        tool = tools_of(client)["mcp__old__add_note"]
        assert (await tool.run({"text": "over sse"}, ToolContext(cwd=tmp_path))).content == "noted (1): over sse"
    finally:
        await asyncio.to_thread(client.close)


def test_an_sse_server_in_mcp_json_is_read(tmp_home, workdir):
    (workdir / ".mcp.json").write_text('{"mcpServers": {"old": {"type": "sse", "url": "http://127.0.0.1:1/sse"}}}')
    old = mcp_settings(load_config(workdir), workdir).servers["old"]
    assert (old.transport, old.describe()) == ("sse", "sse: http://127.0.0.1:1/sse")


async def test_an_http_server_that_does_not_answer_fails_naming_its_url(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/mcp"
    client = await started(ServerConfig("down", "http", "test:1", url=url, startup_timeout=10), cwd=tmp_path)
    try:
        assert client.servers["down"].state == "failed" and url in client.servers["down"].error
    finally:
        await asyncio.to_thread(client.close)


# -- the reference server from the npm registry -------------------------------------------------


async def test_the_reference_server_everything(tmp_path):
    npx = shutil.which("npx")
    if npx is None:
        print("skipped: npx (Node) is not installed")
        pytest.skip("npx (Node) is not installed")
    server = ServerConfig("everything", "stdio", "test:1", command=npx,
                          args=("-y", "@modelcontextprotocol/server-everything"), startup_timeout=120)
    client = await started(server, cwd=tmp_path)
    try:
        status = client.servers["everything"]
        if status.state != "ready":
            reason = f"@modelcontextprotocol/server-everything could not start (offline?): {status.why()[:300]}"
            print(f"skipped: {reason}")
            pytest.skip(reason)
        tools, ctx = tools_of(client), ToolContext(cwd=tmp_path)
        echoed = await tools["mcp__everything__echo"].run({"message": "hello MCP"}, ctx)
        assert not echoed.is_error and "hello MCP" in echoed.content
        image = next((t for name, t in tools.items() if "image" in name.lower() and "tiny" in name.lower()), None)
        if image is not None:
            shown = await image.run({}, ctx)
            assert "[image: image/png" in shown.content
    finally:
        await asyncio.to_thread(client.close)


# -- start-up does not pay for it ---------------------------------------------------------------


def test_the_app_and_the_engine_import_no_mcp_sdk_and_the_client_no_textual():
    code = ("import sys, scout_tui.tui.app, scout_tui.frontends.headless, scout_tui.session.runtime\n"
            "assert 'mcp' not in sys.modules, 'mcp imported'\n"
            "for name in [m for m in sys.modules if m.startswith('textual')]: del sys.modules[name]\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    engine = ("import sys, scout_tui.mcp.config, scout_tui.mcp.client, scout_tui.mcp.tools\n"
              "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'mcp')))")
    done = subprocess.run([sys.executable, "-c", engine], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_projects_own_scout_toml_servers_need_trust_too(tmp_home, workdir):
    (workdir / "scout.toml").write_text('[mcp.servers.local]\ncommand = "run-me"\n')
    settings = mcp_settings(load_config(workdir), workdir)
    assert not settings.servers["local"].trusted and settings.startable() == []
    assert settings.servers["local"].origin == f"{workdir / 'scout.toml'}:1"


async def test_a_server_that_never_answers_fails_once_its_startup_timeout_passes(tmp_path):
    silent = ServerConfig("silent", "stdio", "test:1", command=sys.executable,
                          args=("-c", "import sys; sys.stdin.read()"), startup_timeout=0.5)
    client = await started(silent, cwd=tmp_path)
    try:
        assert client.servers["silent"].state == "failed"
        assert client.servers["silent"].error == "it did not answer within 0.5 s"
    finally:
        await asyncio.to_thread(client.close)


async def test_a_server_that_exits_at_once_is_said_to_have_exited_not_with_an_exception_name(tmp_path):
    # seen by a new user: "BrokenResourceError: BrokenResourceError" for `sh -c 'echo … >&2; exit 1'`
    quick = ServerConfig("quick", "stdio", "test:1", command="sh", args=("-c", "echo 'no database here' >&2; exit 1"))
    client = await started(quick, cwd=tmp_path)
    try:
        server = client.servers["quick"]
        assert server.state == "failed" and "Error" not in server.why()
        assert "it exited" in server.why() and "no database here" in server.stderr_tail
    finally:
        await asyncio.to_thread(client.close)


def test_only_env_values_that_name_or_look_like_a_credential_are_kept_secret():
    from scout_tui.mcp.config import looks_secret

    assert looks_secret("GITHUB_TOKEN", "x") and looks_secret("OPENAI_API_KEY", "x")
    assert looks_secret("DATABASE_URL", "postgres://u:p@h/db") and looks_secret("X", "ghp_" + "a" * 36)
    assert not looks_secret("NOTES_DIR", "/home/me/notes") and not looks_secret("PATH", "/usr/bin:/bin")
    assert not looks_secret("MODE", "read only please")
    server = ServerConfig("s", "stdio", "t:1", command="x", env={"NOTES_DIR": "/n", "API_KEY": "k"},
                          )
    assert server.secrets == ["k"]


def test_credentials_in_a_url_its_headers_or_the_arguments_are_redacted_when_shown_and_kept_secret():
    from scout_tui.mcp.hidden import looks_like_token

    web = ServerConfig("web", "http", "t:1", url="https://me:pa55word-x@h.example/mcp?key=QUERYSECRET999&v=2",
                       headers={"Authorization": "Bearer HEADERSECRET-abc123"})
    assert web.describe() == "http: https://me:[redacted]@h.example/mcp?key=[redacted]&v=[redacted]"
    assert {"QUERYSECRET999", "pa55word-x", "Bearer HEADERSECRET-abc123", "HEADERSECRET-abc123"} <= set(web.secrets)
    token = "ghp_" + "Ab1" * 12
    cli = ServerConfig("cli", "stdio", "t:1", command="srv", args=(
        "-y", "@scope/server-github", "--api-key=ARGSECRET-zzz999", "--token", "TOK-1", "--password", "pw-2",
        "--secret=s-3", "api_key=k-4", "--client-secret", "s-5", token, "--url", "https://h/x?token=t-6",
        "mcp-server-postgres-v2", "--read-only", "/home/me/notes"))
    assert cli.describe() == (
        "stdio: srv -y @scope/server-github --api-key=[redacted] --token [redacted] --password [redacted] "
        "--secret=[redacted] api_key=[redacted] --client-secret [redacted] [redacted] --url https://h/x?token=[redacted] "
        "mcp-server-postgres-v2 --read-only /home/me/notes")
    assert {"ARGSECRET-zzz999", "TOK-1", "pw-2", "s-3", "k-4", "s-5", token, "t-6"} <= set(cli.secrets)
    assert not {"mcp-server-postgres-v2", "/home/me/notes", "--read-only"} & set(cli.secrets)
    assert looks_like_token("sk-proj-" + "a1B2" * 8) and looks_like_token("0123456789abcdef" * 2)
    assert not looks_like_token("modelcontextprotocol-server-everything")


# -- servers that misbehave: hung, noisy on stdout, busy at exit (tests/mcp_servers/scripted_server.py) ---

SCRIPTED = Path(__file__).parent / "mcp_servers" / "scripted_server.py"


def scripted(name: str, mode: str, *extra: str, **fields) -> ServerConfig:
    return ServerConfig(name, "stdio", "test:1", command=sys.executable, args=(str(SCRIPTED), mode, *extra), **fields)


async def test_a_server_that_prints_what_is_not_json_on_stdout_fails_at_once_naming_it(tmp_path, caplog):
    # Before: the line was dropped with a pydantic traceback on stderr, and the server waited out
    # its whole startup_timeout; here that is far beyond the cap of this wait.
    client = McpClient([scripted("noisy", "garbage", startup_timeout=3600)], cwd=tmp_path)
    client.start()
    try:
        assert await asyncio.wait_for(client.wait_started(), 60) == []
        noisy = client.servers["noisy"]
        assert noisy.state == "failed"
        assert "printed something other than MCP messages on its stdout" in noisy.error
        assert "'Starting notes server v1.2 (debug build)'" in noisy.error
        assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    finally:
        await asyncio.to_thread(client.close)


async def test_a_first_request_waits_only_the_short_wait_for_a_server_hung_at_initialize(tmp_path):
    client = McpClient([scripted("hung", "hang", startup_timeout=3600), stdio("ok")], cwd=tmp_path)
    client.start()
    try:
        await asyncio.to_thread(until, lambda: client.servers["ok"].state == "ready", what="the good server ready")
        assert await client.wait_started(0.2) == ["hung"]  # the caller goes on; the hung one is still starting
        assert client.servers["hung"].state == "starting" and set(tools_of(client)) >= {"mcp__ok__add"}
    finally:
        await asyncio.to_thread(client.close)  # a server still starting is cancelled, not waited for
    assert client.servers["hung"].state == "stopped"


async def test_a_call_past_its_tool_timeout_tells_the_server_and_the_busy_server_is_not_waited_for_at_exit(tmp_path):
    client = await started(ServerConfig("notes", "stdio", "test:1", command=sys.executable,
                                        args=(str(FAST_SERVER),), tool_timeout=0.5), cwd=tmp_path)
    runner = client._runners["notes"]
    try:
        assert runner.grace() > 0  # idle: it gets the spec's graceful exit
        timed_out = await tools_of(client)["mcp__notes__slow"].run({}, ToolContext(cwd=tmp_path))
        assert timed_out.is_error and "no answer within 0.5 s (its tool_timeout)" in timed_out.content
        await asyncio.to_thread(until, lambda: "slow: cancelled" in runner._stderr_tail(),
                                what="the server told to cancel the call (notifications/cancelled)")
        assert runner.grace() == 0  # it owes an answer: at exit it is ended at once, not given 2 s
    finally:
        await asyncio.to_thread(client.close)


async def test_a_tool_that_needs_task_augmentation_is_not_offered(tmp_path):
    client = await started(scripted("tasky", "tasks"), cwd=tmp_path)
    try:
        assert client.servers["tasky"].state == "ready"
        assert set(tools_of(client)) == {"mcp__tasky__echo"}  # not mcp__tasky__research: every call would fail
        from scout_tui.tui.mcp_servers import describe_servers
        from scout_tui.mcp.config import McpSettings

        shown = describe_servers(client, McpSettings({"tasky": client.servers["tasky"].config}), True)
        assert "`mcp__tasky__research` (not offered to the model: it runs only as an MCP task" in shown
    finally:
        await asyncio.to_thread(client.close)


# -- progress, resources, restart --------------------------------------------------------------


async def test_a_calls_progress_notifications_reach_the_tool_pane_as_lines(tmp_path):
    client = await started(stdio(), cwd=tmp_path)
    try:
        lines: list[str] = []
        counted = await tools_of(client)["mcp__notes__count"].run({}, ToolContext(cwd=tmp_path, on_output=lines.append))
        assert counted.content == "counted to 3"
        await asyncio.to_thread(until, lambda: len(lines) == 3, what="the three progress lines")
        assert lines == ["progress 1/3: step 1 of 3\n", "progress 2/3: step 2 of 3\n", "progress 3/3: step 3 of 3\n"]
    finally:
        await asyncio.to_thread(client.close)


async def test_the_model_lists_and_reads_a_servers_resources(tmp_path):
    client = await started(stdio(), cwd=tmp_path)
    try:
        tools, ctx = tools_of(client), ToolContext(cwd=tmp_path)
        assert tools["list_mcp_resources"].read_only and tools["read_mcp_resource"].read_only
        listed = (await tools["list_mcp_resources"].run({}, ctx)).content
        assert "notes notes://readme (readme, text/plain): How the notes work." in listed.splitlines()
        assert "notes notes://logo (logo, image/png)" in listed.splitlines()
        read = await tools["read_mcp_resource"].run({"server": "notes", "uri": "notes://readme"}, ctx)
        assert (read.content, read.is_error) == ("Notes are kept in memory until the server ends.", False)
        logo = await tools["read_mcp_resource"].run({"server": "notes", "uri": "notes://logo"}, ctx)
        assert logo.content == "[resource notes://logo: image/png, 70 bytes]"
        from scout_tui.tools.base import Registry

        registry = Registry({t.name: t for t in tools.values()})
        missing = await registry.call("read_mcp_resource", {"server": "notes", "uri": "notes://nope"}, ctx)
        assert missing.is_error and "could not read notes://nope" in missing.content
        other = await registry.call("read_mcp_resource", {"server": "docs", "uri": "notes://readme"}, ctx)
        assert other.is_error and "no MCP server 'docs' offers resources (servers that do: notes)" in other.content
    finally:
        await asyncio.to_thread(client.close)


async def test_a_crashed_server_restarts_and_its_tools_run_again(tmp_path):
    client = await started(stdio(), cwd=tmp_path)
    try:
        ctx = ToolContext(cwd=tmp_path)
        await tools_of(client)["mcp__notes__crash"].run({}, ctx)
        await asyncio.to_thread(until, lambda: client.servers["notes"].state == "failed", what="the crash noticed")
        await client.restart("notes")
        assert await client.wait_started() == [] and client.servers["notes"].state == "ready"
        assert '"sum": 3' in (await tools_of(client)["mcp__notes__add"].run({"a": 1, "b": 2}, ctx)).content
        await client.restart("notes")  # a ready one too
        await client.wait_started()
        assert client.servers["notes"].state == "ready"
    finally:
        await asyncio.to_thread(client.close)


async def test_a_call_running_when_its_server_restarts_ends_at_once_saying_so(tmp_path):
    # tool_timeout only bounds the test if the call were left waiting: it must end long before.
    client = await started(ServerConfig("notes", "stdio", "test:1", command=sys.executable,
                                        args=(str(FAST_SERVER),), tool_timeout=120), cwd=tmp_path)
    try:
        ctx = ToolContext(cwd=tmp_path)
        call = asyncio.ensure_future(tools_of(client)["mcp__notes__slow"].run({}, ctx))
        await asyncio.to_thread(until, lambda: "slow: started" in client._runners["notes"]._stderr_tail(),
                                what="the slow call running")
        await client.restart("notes")
        ended = await call
        assert ended.is_error and ended.content == "MCP server 'notes' was restarted before answering"
        assert await client.wait_started() == [] and client.servers["notes"].state == "ready"
    finally:
        await asyncio.to_thread(client.close)


async def test_a_call_running_when_its_server_is_killed_ends_at_once_saying_so(tmp_path):
    client = await started(ServerConfig("notes", "stdio", "test:1", command=sys.executable,
                                        args=(str(FAST_SERVER),), tool_timeout=120), cwd=tmp_path)
    try:
        ctx = ToolContext(cwd=tmp_path)
        call = asyncio.ensure_future(tools_of(client)["mcp__notes__slow"].run({}, ctx))
        runner = client._runners["notes"]
        await asyncio.to_thread(until, lambda: "slow: started" in runner._stderr_tail(), what="the slow call running")
        pid = int(re.search(r"slow: started \(pid (\d+)\)", runner._stderr_tail())[1])
        os.kill(pid, signal.SIGKILL)
        ended = await call
        assert ended.is_error and ended.content.startswith("MCP server 'notes' exited before answering")
        assert client.servers["notes"].state == "failed"
    finally:
        await asyncio.to_thread(client.close)


def test_the_short_wait_is_read_from_mcp_startup_wait_and_a_bad_one_is_said_with_its_line(tmp_home, workdir):
    user_toml(tmp_home, '[mcp]\nstartup_wait = 2.5\n[mcp.servers.notes]\ncommand = "notes-server"\n')
    settings = mcp_settings(load_config(workdir), workdir)
    assert settings.startup_wait == 2.5 and list(settings.servers) == ["notes"]
    path = user_toml(tmp_home, '[mcp.servers.notes]\ncommand = "notes-server"\n[mcp]\nstartup_wait = "soon"\n')
    settings = mcp_settings(load_config(workdir), workdir)
    assert settings.startup_wait == 5.0 and list(settings.servers) == ["notes"]  # the servers still start
    assert settings.notes == [f"{path}:4: [mcp] startup_wait must be a number of seconds (0 or more), got 'soon'; "
                              "using 5"]
