"""One MCP server whose tool list changes mid-turn and which then crashes, driven from each front end
(``-p``, ``acp``, the TUI): the request after ``notifications/tools/list_changed`` offers the new
tool, and the request after the crash offers none of that server's tools. They all run their turns
through ``session.Session.turn``, which offers the servers' tools as they are before every request."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.acp_helpers import RecordingClient, acp_process, text
from tests.headless_helpers import env, repo, scout  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer, Reply, anthropic_stream

CHANGING_SERVER = Path(__file__).parent / "mcp_servers" / "changing_server.py"


def configure(config_home: Path) -> None:
    """scout.toml with the changing server as ``notes``, its tools allowed."""
    folder = config_home / "scout"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scout.toml").write_text(
        f"[mcp.servers.notes]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(CHANGING_SERVER))}]\n"
        '[permissions]\nallow = ["mcp__notes"]\n')


def call(tool_id: str, name: str) -> Reply:
    return Reply(anthropic_stream([], (tool_id, name, ["{}"])))


REPLIES = [call("toolu_1", "mcp__notes__grow"), call("toolu_2", "mcp__notes__added"),
           call("toolu_3", "mcp__notes__crash"), Reply(anthropic_stream(["Done."]))]


def offered(request) -> list[str]:
    """The names of the MCP tools a request offered."""
    return [t["name"] for t in request.json()["tools"] if t["name"].startswith("mcp__")]


def check(requests: list) -> None:
    """The four requests of one turn: grow, call the added tool, crash, answer."""
    first, after_grow, after_added, after_crash = requests
    assert offered(first) == ["mcp__notes__grow", "mcp__notes__crash"]
    assert offered(after_grow) == ["mcp__notes__grow", "mcp__notes__crash", "mcp__notes__added"]
    last_results = [b for b in after_added.json()["messages"][-1]["content"] if b.get("type") == "tool_result"]
    assert [b.get("is_error", False) for b in last_results] == [False]  # the added tool ran: not "Unknown tool"
    assert offered(after_crash) == []  # the crashed server's tools are gone


def test_p_offers_a_tool_added_mid_turn_and_drops_a_crashed_servers_tools(repo, env):
    configure(Path(env["XDG_CONFIG_HOME"]))
    with LoopbackServer(REPLIES) as server:
        done = scout(["-p", "grow, use it, crash", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    check(server.requests)
    assert "MCP server notes" in done.stderr and "exited" in done.stderr  # said once it crashed


async def test_acp_offers_a_tool_added_mid_turn_and_drops_a_crashed_servers_tools(repo, env):
    configure(Path(env["XDG_CONFIG_HOME"]))
    client = RecordingClient()
    with LoopbackServer(REPLIES) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            done = await conn.prompt(session_id=session.session_id, prompt=text("grow, use it, crash"))
    assert done.stop_reason == "end_turn"
    check(server.requests)


async def test_the_tui_offers_a_tool_added_mid_turn_and_drops_a_crashed_servers_tools(tmp_home, workdir):
    from tests.app_helpers import SIZE, make_app, send, settle
    from tests.conftest import wait_until

    configure(tmp_home / ".config")
    with LoopbackServer(REPLIES) as server:
        app = make_app(workdir, server)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.session.mcp is not None and app.session.mcp.servers["notes"].state == "ready",
                             what="MCP server notes ready")
            await send(app, pilot, "grow, use it, crash")
            await settle(app, pilot)
            check(server.requests)
