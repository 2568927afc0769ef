"""API keys stay secret (issue 12, item 3): the key in use and the other providers' keys leave
scout-tui's environment, tools never see them, and every place text goes (screen, stdout,
stderr, store, exports, saved outputs, error text) has them redacted, also when a server or the
model echoes one back, split across stream events."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scout_tui.config import keys
from scout_tui.core.redaction import StreamRedactor, redact_deep
from tests.loopback import LoopbackServer, Reply, anthropic_stream, split

USED = "sk-ant-used-key-0123456789abcdef"  # ANTHROPIC_API_KEY: the provider in use
OTHER = "sk-proj-other-key-9876543210fedcba"  # OPENAI_API_KEY: a provider not in use
FOREIGN = "gsk_groq-key-5555555555aaaaaaaa"  # GROQ_API_KEY: known from the models.dev catalogue
ALL = (USED, OTHER, FOREIGN)


def leaked(text: str) -> list[str]:
    """Which keys (or a 12-character piece of one) ``text`` holds."""
    return [k for k in ALL if any(k[i : i + 12] in text for i in range(len(k) - 11))]


# -- the pieces ----------------------------------------------------------------------------------


def test_key_variables_come_from_our_own_names_and_the_catalogue() -> None:
    names = keys.key_variables()
    assert {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "SCOUT_API_KEY", "GROQ_API_KEY", "MISTRAL_API_KEY",
            "HF_TOKEN", "AWS_SECRET_ACCESS_KEY"} <= names
    # The catalogue also lists settings that are no secret: they stay for the tools.
    assert not {"AWS_REGION", "GOOGLE_VERTEX_PROJECT", "DATABRICKS_HOST"} & names


def test_withhold_takes_keys_out_and_config_still_finds_its_own(monkeypatch, tmp_path) -> None:
    from scout_tui.config.layers import load_config

    environ = {"ANTHROPIC_API_KEY": USED, "GROQ_API_KEY": FOREIGN, "PATH": "/bin"}
    monkeypatch.setattr(os, "environ", environ)
    assert keys.withhold(environ) == ["ANTHROPIC_API_KEY", "GROQ_API_KEY"]
    assert environ == {"PATH": "/bin"}
    assert keys.withheld() == ["ANTHROPIC_API_KEY", "GROQ_API_KEY"]
    # A config read later (a /model switch, `scout-tui doctor`) still gets the key.
    assert load_config(tmp_path).api_key == USED
    assert {USED, FOREIGN} <= set(keys.secrets()) and OTHER not in keys.secrets()


def test_secrets_are_longest_first_and_skip_short_values() -> None:
    found = keys.secrets(["short", USED, USED + "-longer"], {"OPENAI_API_KEY": OTHER, "GROQ_API_KEY": "1234"})
    assert [s for s in found if s in (USED + "-longer", OTHER, USED)] == [USED + "-longer", OTHER, USED]
    assert "short" not in found and "1234" not in found
    assert [len(s) for s in found] == sorted((len(s) for s in found), reverse=True)


def test_a_stream_redactor_holds_back_only_what_may_start_a_key() -> None:
    redactor = StreamRedactor((USED,))
    assert redactor.feed("plain text, nothing held. ") == "plain text, nothing held. "
    assert redactor.feed("key: " + USED[:10]) == "key: "  # the start of the key waits
    assert redactor.feed(USED[10:] + " done") == "[redacted] done"
    assert redactor.feed("ends with sk") == "ends with "
    assert redactor.flush() == "sk"


def test_redact_deep_keeps_objects_without_secrets() -> None:
    message = {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    assert redact_deep(message, (USED,)) is message
    echoed = {"role": "user", "content": [{"type": "text", "text": f"my key is {USED}"}]}
    assert redact_deep(echoed, (USED,))["content"][0]["text"] == "my key is [redacted]"


# -- end to end: -p as a subprocess ------------------------------------------------------------------


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    (home / "config" / "scout").mkdir(parents=True)
    # Unsandboxed, so the tool can read scout-tui's own /proc entry: redaction and withholding
    # must hold without the sandbox's help.
    (home / "config" / "scout" / "scout.toml").write_text('[sandbox]\nmode = "off"\n')
    clean = {k: v for k, v in os.environ.items() if k not in keys.key_variables() and not k.startswith("SCOUT_")}
    return {**clean, "HOME": str(home), "SCOUT_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config"),
            "ANTHROPIC_API_KEY": USED, "OPENAI_API_KEY": OTHER, "GROQ_API_KEY": FOREIGN}


def scout(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scout_tui", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def everything_written(env: dict[str, str], session_ids: list[str], cwd: Path) -> str:
    """The store's bytes, every saved tool output, and every export (md, json, html) of each session."""
    data = Path(env["SCOUT_HOME"])
    texts = [p.read_bytes().decode("utf-8", "replace") for p in data.rglob("*") if p.is_file()]
    for sid in session_ids:
        for form in ("md", "json", "html"):
            texts.append(scout(["export", sid, "--format", form], cwd, env).stdout)
    return "\n".join(texts)


def test_no_key_reaches_tools_model_screen_store_or_exports(tmp_path, env) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    # The tool tries every way to a key: its own environment, scout-tui's /proc entry (as
    # bytes and base64, which no redaction could catch), and a .env file holding one.
    (repo / ".env").write_text(f"OPENAI_API_KEY={OTHER}\n")
    command = ("env; tr '\\0' '\\n' < /proc/$PPID/environ; base64 -w0 /proc/$PPID/environ; echo; cat .env; "
               "head -c 40000 /dev/zero | tr '\\0' x; echo " + USED)  # long: the whole output is saved to a file
    call = ("toolu_1", "bash", [json.dumps({"command": command})])
    # The model echoes keys back, cut across stream events, in the answer and an error.
    echo = f"The keys are {USED} and {OTHER}."
    replies = [Reply(anthropic_stream(["Looking."], call)),
               Reply(anthropic_stream([echo[i : i + 5] for i in range(0, len(echo), 5)]))]
    with LoopbackServer(replies) as server:
        done = scout(["-p", "find the keys", "--base-url", server.url, "--permission-mode", "yolo"], repo, env)
    assert done.returncode == 0, done.stderr
    assert server.requests[0].headers["x-api-key"] == USED  # the key is used, only never shown
    result = json.dumps(server.requests[1].json()["messages"][-1])
    assert "[redacted]" in result and "PATH=" in result and "xxxx" in result
    import base64
    assert not [k for k in ALL if base64.b64encode(f"{k}".encode())[:16].decode() in result]
    assert leaked(result) == []
    assert done.stdout.startswith("Looking.") and "The keys are [redacted] and [redacted]." in done.stdout
    assert leaked(done.stdout + done.stderr) == []
    from scout_tui.store.event_log import Store

    [session] = Store(Path(env["SCOUT_HOME"]) / "sessions.db").sessions(repo)
    written = everything_written(env, [session.id], repo)
    assert list((Path(env["SCOUT_HOME"]) / "tool-output").iterdir())  # a saved output was checked
    assert "[redacted]" in written and leaked(written) == []


def test_a_key_echoed_in_a_server_error_is_redacted(tmp_path, env) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    body = json.dumps({"type": "error", "error": {"type": "authentication_error",
                                                  "message": f"invalid x-api-key: {USED} (also tried {OTHER})"}})
    with LoopbackServer([Reply(body.encode(), status=401, headers={"content-type": "application/json"})]) as server:
        done = scout(["-p", "hello", "--base-url", server.url], repo, env)
    assert done.returncode != 0
    assert "invalid x-api-key: [redacted]" in done.stderr and leaked(done.stdout + done.stderr) == []
    from scout_tui.store.event_log import Store

    sessions = Store(Path(env["SCOUT_HOME"]) / "sessions.db").sessions(repo)
    assert leaked(everything_written(env, [s.id for s in sessions], repo)) == []


def test_the_agent_redacts_a_key_split_across_deltas(tmp_path) -> None:
    from scout_tui.engine.agent import Agent
    from scout_tui.engine.settings import AgentSettings
    from scout_tui.backends import make_backend
    from scout_tui.tools import builtin_registry

    answer = f"Here: {USED}."
    with LoopbackServer([Reply(split(anthropic_stream([answer[:12], answer[12:20], answer[20:]]), 7))]) as server:
        backend = make_backend("anthropic", model="m", api_key="x", base_url=server.url, max_retries=0)
        agent = Agent(backend, builtin_registry(), AgentSettings(cwd=tmp_path, secrets=[USED]))

        async def run() -> list:
            return [e async for e in agent.run([], f"remember {USED}")]

        import asyncio
        events = asyncio.run(run())
    deltas = "".join(e.data["text"] for e in events if e.type == "message.delta")
    assert deltas == "Here: [redacted]."
    assert leaked(json.dumps([e.data for e in events])) == [] and leaked(json.dumps(agent.messages)) == []
    assert agent.messages[0]["content"][0]["text"] == "remember [redacted]"


def test_the_diff_shown_when_asking_has_keys_redacted(tmp_path) -> None:
    # The preview diff went to the approval prompt as it was; only the result's was redacted.
    import asyncio

    from scout_tui.engine.agent import Agent
    from scout_tui.engine.settings import AgentSettings
    from scout_tui.backends import make_backend
    from scout_tui.tools import builtin_registry
    from scout_tui.tools.permissions import Policy
    from scout_tui.tools.approvals import Approval

    (tmp_path / ".env").write_text(f"KEY={USED}\nDEBUG=0\n")  # a key in a file being edited
    read = ("toolu_r", "read", [json.dumps({"path": ".env"})])
    edit = ("toolu_e", "edit", [json.dumps({"path": ".env", "old_string": "DEBUG=0", "new_string": "DEBUG=1"})])
    asked = []

    async def approve(request):
        asked.append(request)
        return Approval("deny", "test")

    replies = [Reply(anthropic_stream(["Reading."], read)), Reply(anthropic_stream(["Editing."], edit)),
               Reply(anthropic_stream(["Ok."]))]
    with LoopbackServer(replies) as server:
        backend = make_backend("anthropic", model="m", api_key="x", base_url=server.url, max_retries=0)
        settings = AgentSettings(cwd=tmp_path, secrets=[USED], approve=approve,
                                 permissions=Policy(mode="ask", workspace=tmp_path))
        agent = Agent(backend, builtin_registry(), settings)

        async def run() -> list:
            return [e async for e in agent.run([], "turn debug on")]

        asyncio.run(run())
    [request] = [r for r in asked if r.tool == "edit"]
    assert " KEY=[redacted]" in request.diff and leaked(request.diff) == []


# -- the TUI -----------------------------------------------------------------------------------------


async def test_the_tui_takes_keys_out_of_its_environment_and_off_the_screen(tmp_home, workdir, monkeypatch) -> None:
    from tests.app_helpers import SIZE, make_app, rendered, send, settle

    monkeypatch.setenv("OPENAI_API_KEY", OTHER)  # the provider not in use
    echo = f"The other key is {OTHER}."
    with LoopbackServer([Reply(anthropic_stream([echo[:22], echo[22:]]))]) as server:
        app = make_app(workdir, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "echo it")
            await settle(app, pilot)
            assert "OPENAI_API_KEY" not in os.environ and OTHER in app.secrets
            # Text the app shows itself, not passed on by an agent: a toast and a chat notice.
            app.notify(f"the server said {OTHER}")
            app.chat.add_notice(f"the server said {OTHER}", "error")
            await pilot.pause()
            chat = rendered(app.chat)
            toast = "\n".join(n.message for n in app._notifications)
            screen = app.export_screenshot()
    assert "The other key is [redacted]." in chat and "the server said [redacted]" in chat
    assert "the server said [redacted]" in toast
    assert leaked(chat) == [] and leaked(toast) == [] and leaked(screen) == [] and leaked(screen.replace("&#160;", " ")) == []


def test_an_error_scout_tui_prints_has_every_key_redacted(monkeypatch, capsys) -> None:
    from scout_tui import cli
    from scout_tui.core.errors import ScoutError

    monkeypatch.setenv("GROQ_API_KEY", FOREIGN)

    def fail() -> int:
        raise ScoutError(f"the server said: bad key {FOREIGN}")

    assert cli._run(fail) == 1
    assert capsys.readouterr().err == "scout-tui: the server said: bad key [redacted]\n"


def test_doctor_says_which_key_variables_tools_never_see(tmp_home, workdir, monkeypatch, capsys) -> None:
    from scout_tui import cli

    monkeypatch.setenv("OPENAI_API_KEY", OTHER)
    monkeypatch.setenv("GROQ_API_KEY", FOREIGN)
    assert cli.main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "tools never see GROQ_API_KEY, OPENAI_API_KEY" in out and leaked(out) == []


@pytest.mark.parametrize("before", ["", "x", "xy", "export OPENAI_API_KEY="])
def test_a_key_printed_in_base64_or_hex_is_redacted_too(before: str) -> None:
    import base64

    from scout_tui.core.redaction import redact

    found = keys.secrets([OTHER], {})
    for encoded in (base64.b64encode(f"{before}{OTHER}\n".encode()).decode(), f"{before}{OTHER}".encode().hex()):
        shown = redact(encoded, found)
        assert "[redacted]" in shown
        # What is left around the mark encodes at most two characters of the key.
        assert all(len(piece) <= len(before) * 2 + 8 for piece in shown.split("[redacted]"))


def test_a_projects_base_url_cannot_send_your_key_to_a_server_it_names(tmp_home, workdir, monkeypatch) -> None:
    from scout_tui.config.layers import load_config

    monkeypatch.setenv("ANTHROPIC_API_KEY", USED)
    (workdir / "scout.toml").write_text('model = "m"\nbase_url = "http://attacker.example"\n')
    config = load_config(workdir)
    assert config.base_url is None and config.api_key == USED
    assert any("scout.toml:2: base_url is not used from a project's scout.toml" in n for n in config.notes)
    # The user's own base_url stays; a flag or the variable is the person's choice too.
    user = tmp_home / ".config" / "scout"
    user.mkdir(parents=True)
    (user / "scout.toml").write_text('base_url = "http://my-proxy.example"\n')
    assert load_config(workdir).base_url == "http://my-proxy.example"
    assert load_config(workdir, flags={"base_url": "http://flag.example"}).base_url == "http://flag.example"
    # A project's own local server with no key at all is fine (Ollama, llama.cpp).
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    (user / "scout.toml").unlink()
    assert load_config(workdir).base_url == "http://attacker.example"


def test_a_key_given_with_api_key_is_blanked_in_proc_cmdline() -> None:
    script = ("import sys, time\nfrom scout_tui.config import keys\nkeys.blank_command_line([sys.argv[2]])\n"
              "print('ready', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", script, "--api-key", USED], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
    finally:
        proc.kill()
        proc.wait()
    assert b"--api-key" in cmdline and USED.encode() not in cmdline and b"*" * len(USED) in cmdline
