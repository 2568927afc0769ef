"""MCP servers outside the TUI: ``scout-tui -p`` starts them before the first request (a failed
one said on stderr, the run goes on), and ``scout-tui trust`` lists and trusts a project's
``.mcp.json`` servers."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
from pathlib import Path

from scout_tui.cli import trust_command
from scout_tui.mcp.config import project_server_trust
from tests.conftest import until
from tests.headless_helpers import env, repo, scout  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer, Reply, anthropic_stream

FAST_SERVER = Path(__file__).parent / "mcp_servers" / "fast_server.py"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def servers_toml(env: dict[str, str], servers: dict[str, dict], extra: str = "") -> None:
    folder = Path(env["XDG_CONFIG_HOME"]) / "scout"
    folder.mkdir(parents=True, exist_ok=True)
    def toml(value: object) -> str:
        if isinstance(value, dict):
            return "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items()) + " }"
        return json.dumps(value)

    text = "".join(f"[mcp.servers.{name}]\n" + "".join(f"{k} = {toml(v)}\n" for k, v in entry.items())
                   for name, entry in servers.items())
    (folder / "scout.toml").write_text(text + extra)


def test_print_mode_starts_the_servers_before_the_first_request(repo, env):
    servers_toml(env, {
        "notes": {"command": sys.executable, "args": [str(FAST_SERVER)]},
        "broken": {"command": sys.executable, "args": [str(FAST_SERVER)],
                   "env": {"DB_TOKEN": "tok-abcdefgh-1234567", "MCP_TEST_FAIL_AT_START": "no db for tok-abcdefgh-1234567"}},
    }, '[permissions]\nallow = ["mcp__notes__add_note"]\n')
    replies = [Reply(anthropic_stream([], ("toolu_1", "mcp__notes__add_note", ['{"text": "from -p"}']))),
               Reply(anthropic_stream(["Noted."]))]
    with LoopbackServer(replies) as server:
        done = scout(["-p", "note it", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    assert "mcp__notes__add_note" in [t["name"] for t in server.requests[0].json()["tools"]]
    assert "noted (1): from -p" in json.dumps(server.requests[1].json()["messages"][-1])
    assert "scout-tui: MCP server broken failed" in done.stderr and "its stderr ended with:\nno db for [redacted]" in done.stderr
    assert "tok-abcdefgh-1234567" not in done.stderr  # what it printed was a credential in its env: kept off the screen
    assert done.stdout == "Noted.\n"


def test_print_mode_does_not_start_an_untrusted_project_server(repo, env):
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": {"command": sys.executable,
                                                                        "args": [str(FAST_SERVER)]}}}))
    with LoopbackServer([Reply(anthropic_stream(["ok"]))]) as server:
        done = scout(["-p", "hi", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    assert "MCP server 'proj' not started" in done.stderr and "scout-tui trust" in done.stderr
    assert not any(t["name"].startswith("mcp__") for t in server.requests[0].json()["tools"])


def test_print_mode_never_shows_a_urls_query_an_arguments_credential_or_a_header_a_server_echoes(repo, env):
    from tests.test_mcp import answers, free_port

    port = free_port()
    web = subprocess.Popen([sys.executable, str(FAST_SERVER), "http", str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        until(lambda: answers(port) or web.poll() is not None, what="the HTTP MCP server to listen")
        servers_toml(env, {
            "web": {"url": f"http://127.0.0.1:{port}/mcp", "headers": {"Authorization": "Bearer HEADERSECRET-abc123"}},
            "gone": {"url": "http://127.0.0.1:9/mcp?key=QUERYSECRET999"},
            "cli": {"command": sys.executable, "args": [str(FAST_SERVER), "--api-key=ARGSECRET-zzz999", "--token",
                                                         "TOKSECRET-yyy888", "--verbose"],
                    "env": {"MCP_TEST_FAIL_AT_START": "cannot start"}},
        }, '[permissions]\nallow = ["mcp__web__whoami"]\n')
        replies = [Reply(anthropic_stream([], ("toolu_1", "mcp__web__whoami", ["{}"]))), Reply(anthropic_stream(["Ok."]))]
        with LoopbackServer(replies) as server:
            done = scout(["-p", "who am i", "--base-url", server.url], repo, env)
    finally:
        web.terminate()
        web.wait(10)
    assert done.returncode == 0, done.stderr
    echoed = json.dumps(server.requests[1].json()["messages"][-1])
    assert "you are the holder of [redacted]" in echoed and "HEADERSECRET" not in echoed
    assert "MCP server gone failed: http://127.0.0.1:9/mcp?key=[redacted]: ConnectError" in done.stderr
    assert "started as: --api-key=[redacted] --token [redacted] --verbose" in done.stderr
    assert not any(s in done.stderr for s in ("QUERYSECRET999", "ARGSECRET-zzz999", "TOKSECRET-yyy888"))


def test_scout_tui_trust_lists_and_trusts_mcp_json_servers_one_by_one(tmp_home, workdir, capsys):
    (workdir / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "a": {"command": "server-a", "args": ["--token", "ARGSECRET-zzz999"]},
        "b": {"url": "http://127.0.0.1:1/mcp?key=QUERYSECRET999",
              "headers": {"Authorization": "Bearer sk-literal-token-123"}}}}))
    assert trust_command(["--list"]) == 0
    listed = capsys.readouterr().out
    assert "new" in listed and "MCP server a (stdio: server-a --token [redacted])" in listed
    assert "MCP server b (http: http://127.0.0.1:1/mcp?key=[redacted])" in listed
    assert trust_command([], stdin=Terminal("y\nn\n")) == 0
    out = capsys.readouterr().out
    assert not any(s in listed + out for s in ("sk-literal-token-123", "QUERYSECRET999", "ARGSECRET-zzz999"))
    assert '"Authorization": "[hidden, sha256' in out and '?key=[hidden, sha256' in out
    assert '"command": "server-a"' in out and "trusted MCP server a (recorded in" in out
    assert [(f.label.split(" (")[0], f.state) for f in project_server_trust(workdir)[0]] == [
        ("MCP server a", "trusted"), ("MCP server b", "new")]


def test_an_unset_variable_in_a_servers_command_is_said_with_its_file_and_line(tmp_home, workdir, capsys, monkeypatch):
    monkeypatch.delenv("NOPE", raising=False)
    (workdir / ".mcp.json").write_text('{"mcpServers": {\n  "x": {\n    "command": "${NOPE}"\n  }\n}}\n')
    assert trust_command(["--list"]) == 0
    listed = capsys.readouterr().out
    assert f"MCP server x (stdio: (no command)) in {workdir / '.mcp.json'}: it cannot start: " \
           f"{workdir / '.mcp.json'}:3: ${{NOPE}} is not set" in listed


def test_doctor_lists_the_mcp_servers_without_their_header_values(tmp_home, workdir):
    from scout_tui.frontends.doctor import report

    (workdir / ".mcp.json").write_text(json.dumps({"mcpServers": {"docs": {
        "url": "http://127.0.0.1:1/mcp", "headers": {"X-Api-Key": "hdr-secret-value-123"}},
        "web": {"url": "http://127.0.0.1:9/mcp?key=QUERYSECRET999"},
        "zcli": {"command": "tool", "args": ["--api-key=ARGSECRET-zzz999", "--token", "TOKSECRET-yyy888", "-v"]}}}))
    lines = list(report(workdir))
    at = lines.index("mcp servers (started after the first frame; header and env values never shown)")
    assert lines[at + 1].split()[:3] == ["docs", "http:", "http://127.0.0.1:1/mcp"]
    assert lines[at + 2].split()[:3] == ["web", "http:", "http://127.0.0.1:9/mcp?key=[redacted]"]
    assert "stdio: tool --api-key=[redacted] --token [redacted] -v" in lines[at + 3]
    assert "not trusted yet: `scout-tui trust`" in lines[at + 1]
    assert not any(s in line for line in lines for s in ("hdr-secret-value-123", "QUERYSECRET999", "ARGSECRET-zzz999",
                                                          "TOKSECRET-yyy888"))


SCRIPTED = Path(__file__).parent / "mcp_servers" / "scripted_server.py"


def test_print_mode_waits_only_the_short_wait_for_a_hung_server_and_names_a_noisy_one(repo, env):
    # Both would have held the request for their startup_timeout (an hour here: scout's cap is 60 s).
    servers_toml(env, {
        "hung": {"command": sys.executable, "args": [str(SCRIPTED), "hang"], "startup_timeout": 3600},
        "noisy": {"command": sys.executable, "args": [str(SCRIPTED), "garbage"], "startup_timeout": 3600},
    }, "[mcp]\nstartup_wait = 3\n")
    with LoopbackServer([Reply(anthropic_stream(["Hello."]))]) as server:
        done = scout(["-p", "hi", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello.\n"
    # The noisy one fails at its first line, well within the wait; on a very busy machine it may
    # not have printed yet, and is then named as still starting beside the hung one.
    still = [line for line in done.stderr.splitlines() if "still starting after 3 s" in line]
    assert len(still) == 1 and still[0].startswith("scout-tui: MCP server") and "hung" in still[0]
    assert "this request goes on without" in still[0] and "join a later request once ready" in still[0]
    assert ("scout-tui: MCP server noisy failed: it printed something other than MCP messages on its stdout: "
            "'Starting notes server v1.2 (debug build)'") in done.stderr
    assert "Traceback" not in done.stderr and "pydantic" not in done.stderr
    offered = {t["name"] for t in server.requests[0].json()["tools"]}
    assert not any(name.startswith(("mcp__hung__", "mcp__noisy__")) for name in offered)


def test_print_mode_a_server_ready_after_the_wait_joins_a_later_request_of_the_turn(repo, env, tmp_path):
    gate = tmp_path / "gate"  # the server answers initialize only once this file exists
    servers_toml(env, {"late": {"command": sys.executable, "args": [str(SCRIPTED), "tasks", str(gate)]}},
                 "[mcp]\nstartup_wait = 0.2\n")
    stderr: list[str] = []

    def reply(recorded) -> Reply:
        if not gate.exists():
            gate.write_text("go")
            until(lambda: any("MCP server late is ready" in line for line in stderr), what="the late server ready")
            return Reply(anthropic_stream([], ("toolu_1", "read", ['{"path": "notes.txt"}'])))
        return Reply(anthropic_stream(["Done."]))

    with LoopbackServer(handler=reply) as server:
        proc = subprocess.Popen([sys.executable, "-m", "scout_tui", "-p", "hi", "--base-url", server.url], cwd=repo,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        reader = threading.Thread(target=lambda: stderr.extend(proc.stderr), daemon=True)
        reader.start()
        proc.wait(timeout=60)
        reader.join(10)
    assert proc.returncode == 0, "".join(stderr)
    first, second = (set(t["name"] for t in r.json()["tools"]) for r in server.requests)
    assert "mcp__late__echo" not in first and "mcp__late__echo" in second
    said = "".join(stderr)
    assert "MCP server late is still starting after 0.2 s" in said
    assert "MCP server late is ready: its 1 tool joins the next request" in said  # research needs tasks: not offered
