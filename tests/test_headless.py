"""`scout-tui -p` as a real subprocess against a loopback model server, in a temporary HOME."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from scout_tui.store.event_log import Store
from tests.conftest import until
from tests.headless_helpers import SECRET, env, repo, scout  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer, Reply, anthropic_stream, openai_stream
from tests.process_helpers import processes_with

def test_print_mode_runs_a_tool_using_turn_and_stores_it(repo, env):
    replies = [
        Reply(anthropic_stream(["Let me look."], ("toolu_1", "read", ['{"path":', ' "notes.txt"}']))),
        Reply(anthropic_stream(["The file says ", "42."])),
    ]
    with LoopbackServer(replies) as server:
        done = scout(["-p", "what is in notes.txt?", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Let me look.\n\nThe file says 42.\n"  # two answers, kept apart
    tool_lines = [line for line in done.stderr.splitlines() if "read" in line]
    assert len(tool_lines) == 1 and tool_lines[0].startswith("✓ read notes.txt")
    assert server.requests[0].headers["x-api-key"] == SECRET
    assert "the answer is 42" in json.dumps(server.requests[1].json()["messages"][-1])
    store = Store(Path(env["SCOUT_HOME"]) / "sessions.db")
    [session] = store.sessions(repo)
    assert session.message_count == 4 and session.title == "what is in notes.txt?"
    assert SECRET not in (Path(env["SCOUT_HOME"]) / "sessions.db").read_bytes().decode("utf-8", "replace")


@pytest.mark.parametrize(("args", "sent"), [
    (["-p", "summarise"], "summarise\n\nline one\nline two"),  # piped text after the prompt
    (["-p"], "line one\nline two"),  # or the prompt itself
])
def test_piped_input_goes_to_the_model_with_the_prompt(repo, env, args, sent):
    with LoopbackServer([Reply(anthropic_stream(["Done."]))]) as server:
        done = scout([*args, "--base-url", server.url], repo, env, piped="line one\nline two\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Done.\n"
    [message] = server.requests[0].json()["messages"]
    assert message["content"][0]["text"] == sent


def test_json_output_is_one_result_object_and_stream_json_one_object_per_event(repo, env):
    replies = [
        Reply(anthropic_stream(["Let me look."], ("toolu_1", "read", ['{"path": "notes.txt"}']))),
        Reply(anthropic_stream(["The file says ", "42."])),
    ] * 2
    with LoopbackServer(replies) as server:
        whole = scout(["-p", "what is in notes.txt?", "--output-format", "json", "--base-url", server.url], repo, env)
        streamed = scout(["-p", "and now?", "--output-format", "stream-json", "--base-url", server.url], repo, env)
    assert whole.returncode == 0 and streamed.returncode == 0, whole.stderr + streamed.stderr
    [result] = [json.loads(line) for line in whole.stdout.splitlines()]
    assert result["type"] == "result" and not result["is_error"] and result["error"] is None
    assert result["text"] == "Let me look.\n\nThe file says 42."
    assert result["session"] in {s.id for s in Store(Path(env["SCOUT_HOME"]) / "sessions.db").sessions(repo)}
    lines = [json.loads(line) for line in streamed.stdout.splitlines()]
    types = [line["type"] for line in lines]
    assert types[0] == "message.user" and types[-1] == "result" and "message.delta" in types
    assert {"tool.start", "tool.end", "message.assistant"} <= set(types)
    end = next(line for line in lines if line["type"] == "tool.end")
    assert end["data"]["id"] == "toolu_1" and "the answer is 42" in json.dumps(end["data"])
    deltas = "".join(line["data"]["text"] for line in lines if line["type"] == "message.delta")
    assert deltas == "Let me look.The file says 42." and lines[-1]["text"] == result["text"]
    assert {line["session"] for line in lines} == {lines[-1]["session"]} != {result["session"]}


def test_a_failed_request_in_json_is_a_result_with_its_error(repo, env):
    done = scout(["-p", "hi", "--output-format", "json", "--base-url", "http://127.0.0.1:9"], repo, env)
    assert done.returncode == 1
    [result] = [json.loads(line) for line in done.stdout.splitlines()]
    assert result["is_error"] and result["error"] and result["text"] == ""


@pytest.mark.parametrize(("flag", "source"), [([], "env ANTHROPIC_API_KEY"), (["--api-key", "sk-other-key-77"], "flag --api-key")])
def test_a_refused_key_says_where_the_key_came_from(repo, env, flag, source):
    body = json.dumps({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
    with LoopbackServer([Reply(body.encode(), 401, {"content-type": "application/json"})]) as server:
        done = scout(["-p", "hi", "--base-url", server.url, *flag], repo, env)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]  # one line, as scripts read it
    assert "invalid x-api-key" in last and f"The key sent came from {source}" in last
    assert SECRET not in done.stderr and "sk-other-key-77" not in done.stderr


def test_print_mode_with_neither_a_prompt_nor_piped_text_says_what_it_needs(repo, env):
    done = scout(["-p"], repo, env, piped="\n")
    assert done.returncode == 1 and "-p needs a prompt" in done.stderr


def test_continue_sends_the_earlier_conversation(repo, env):
    with LoopbackServer([Reply(anthropic_stream(["first answer"])), Reply(anthropic_stream(["second answer"]))]) as server:
        assert scout(["-p", "one", "--base-url", server.url], repo, env).returncode == 0
        done = scout(["-c", "-p", "two", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    sent = server.requests[1].json()["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"][0]["text"] == "first answer"


def test_openai_compatible_server_with_bash(repo, env):
    env = {**env, "OPENAI_API_KEY": SECRET}
    call = ("call_1", "bash", ['{"command": "echo hi-from-', 'bash"}'])
    with LoopbackServer([Reply(openai_stream([], call)), Reply(openai_stream(["ran it"]))]) as server:
        done = scout(["-p", "run echo", "--provider", "openai", "--base-url", server.url, "--model", "llama3.1",
                      "--permission-mode", "yolo"], repo, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ran it"
    assert server.requests[0].path == "/chat/completions"
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    tool = [m for m in server.requests[1].json()["messages"] if m["role"] == "tool"][0]
    assert "hi-from-bash" in tool["content"]


def test_print_mode_denies_what_would_ask_and_says_so_on_stderr(repo, env):
    call = ("toolu_1", "bash", ['{"command": "touch made-by-bash"}'])
    with LoopbackServer([Reply(anthropic_stream([], call)), Reply(anthropic_stream(["I could not."]))]) as server:
        done = scout(["-p", "make a file", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    assert not (repo / "made-by-bash").exists()
    denied = [line for line in done.stderr.splitlines() if line.startswith("scout-tui: denied bash touch made-by-bash")]
    assert denied and "--permission-mode" in denied[0]
    result = server.requests[1].json()["messages"][-1]["content"][0]
    assert result["is_error"] is True and "headless mode (-p) cannot ask" in json.dumps(result)


def test_print_mode_runs_what_an_allow_rule_covers(repo, env):
    (repo / "scout.toml").write_text('[permissions]\nallow = ["bash:touch *"]\n')
    call = ("toolu_1", "bash", ['{"command": "touch made-by-bash"}'])
    with LoopbackServer([Reply(anthropic_stream([], call)), Reply(anthropic_stream(["Done."]))]) as server:
        done = scout(["-p", "make a file", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    assert (repo / "made-by-bash").exists()
    assert "denied" not in done.stderr


def test_a_bad_permission_rule_names_its_file_and_line(repo, env):
    (repo / "scout.toml").write_text('model = "x"\n[permissions]\nallow = [\n  "bash:ls *",\n  ":nothing",\n]\n')
    done = scout(["-p", "hi", "--base-url", "http://127.0.0.1:9"], repo, env)
    assert done.returncode == 1
    assert f"{repo / 'scout.toml'}:5" in done.stderr and "':nothing'" in done.stderr


def test_server_error_exits_1_with_the_status_and_no_key(repo, env):
    body = json.dumps({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
    with LoopbackServer([Reply(body.encode(), 401, {"content-type": "application/json"})]) as server:
        done = scout(["-p", "hi", "--base-url", server.url], repo, env)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("scout-tui: ") and "401" in last and "invalid x-api-key" in last
    assert SECRET not in done.stderr + done.stdout


def test_no_api_key_is_a_clear_error(repo, env):
    env.pop("ANTHROPIC_API_KEY")
    done = scout(["-p", "hi"], repo, env)
    assert done.returncode == 1
    assert "ANTHROPIC_API_KEY is not set: export ANTHROPIC_API_KEY=…" in done.stderr and "11434" in done.stderr


def test_malformed_config_names_the_file_and_line(repo, env):
    (repo / "scout.toml").write_text('model = "x"\nprovider = \n')
    done = scout(["-p", "hi"], repo, env)
    assert done.returncode == 1
    assert f"{repo / 'scout.toml'}:2" in done.stderr


def test_unknown_provider_is_named_as_such(repo, env):
    done = scout(["-p", "hi", "--provider", "bogus"], repo, env)
    assert done.returncode == 1
    assert "unknown provider 'bogus'" in done.stderr and "anthropic" in done.stderr


def test_resume_of_an_unknown_session_is_an_error_before_the_screen_opens(repo, env):
    done = scout(["--resume", "zzzz9999"], repo, env)
    assert done.returncode == 1
    assert done.stderr.startswith("scout-tui: ") and "zzzz9999" in done.stderr


def test_print_mode_names_the_rule_that_denied_a_call(repo, env):
    (repo / "scout.toml").write_text('[permissions]\ndeny = ["bash:rm *"]\n')
    (repo / "keep.txt").write_text("keep\n")
    call = ("toolu_1", "bash", ['{"command": "rm keep.txt"}'])
    with LoopbackServer([Reply(anthropic_stream([], call)), Reply(anthropic_stream(["Refused."]))]) as server:
        done = scout(["-p", "clean up", "--base-url", server.url, "--permission-mode", "yolo"], repo, env)
    assert done.returncode == 0, done.stderr
    assert (repo / "keep.txt").exists()
    assert f"scout-tui: denied bash rm keep.txt: denied by the rule 'bash:rm *' ({repo / 'scout.toml'}:2)" in done.stderr


async def test_on_one_terminal_a_tool_line_starts_its_own_line(repo, env, monkeypatch):
    import io

    from scout_tui.config.layers import load_config
    from scout_tui.frontends.headless import run_headless

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    screen: list[str] = []

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

        def write(self, text: str) -> int:
            screen.append(text)
            return len(text)

    replies = [Reply(anthropic_stream(["calling"], ("toolu_1", "read", ['{"path": "notes.txt"}']))),
               Reply(anthropic_stream(["done"]))]
    with LoopbackServer(replies) as server:
        config = load_config(repo, flags={"base_url": server.url, "api_key": "sk-test"}, env={})
        assert await run_headless(config, repo, "read it", stdout=Terminal(), stderr=Terminal()) == 0
    assert "calling\n✓ read notes.txt" in "".join(screen)


def test_a_bad_models_table_names_its_file_and_line_and_leaves_no_session(repo, env):
    (repo / "scout.toml").write_text('model = "claude-sonnet-4-5"\n\n[models."claude-sonnet-4-5"]\ncontext_window = "big"\n')
    done = scout(["-p", "hi", "--base-url", "http://127.0.0.1:9"], repo, env)
    assert done.returncode == 1
    assert f"{repo / 'scout.toml'}:4" in done.stderr and "context_window" in done.stderr
    assert Store(Path(env["SCOUT_HOME"]) / "sessions.db").sessions() == []


def test_a_character_split_into_utf16_halves_across_events_is_joined_not_a_crash(repo, env):
    # A proxy slicing the stream by UTF-16 code units: 😀 (U+1F600) arrives as "\ud83d" then
    # "\ude00" (JSON escapes), and a lone half stays in the answer.
    replies = [Reply(anthropic_stream(["Smile \ud83d", "\ude00 and a lone \udc80 half."]))]
    with LoopbackServer(replies) as server:
        done = scout(["-p", "smile", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Smile \U0001f600 and a lone \ufffd half.\n"
    store = Store(Path(env["SCOUT_HOME"]) / "sessions.db")
    [session] = store.sessions(repo)
    answer = store.messages(session.id)[-1]
    assert answer["content"][0]["text"] == "Smile \U0001f600 and a lone \ufffd half."


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_hangup_or_term_kills_the_running_tool_and_closes_the_turn(repo, env, signum):
    from scout_tui.engine.history import problems

    started = repo / "started"
    token = f"600.{uuid.uuid4().int % 10**9}"  # found by command line: a sandbox's own pids differ from the host's
    call = ("toolu_1", "bash", [json.dumps({"command": f"sleep {token} & touch {started}; wait"})])
    with LoopbackServer([Reply(anthropic_stream(["Running it."], call))]) as server:
        proc = subprocess.Popen([sys.executable, "-m", "scout_tui", "-p", "run it", "--base-url", server.url,
                                 "--permission-mode", "yolo"], cwd=repo, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            until(lambda: started.exists() and processes_with(token), what="the tool's child to start")
            proc.send_signal(signum)
            out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert proc.returncode == 128 + signum, err
    assert processes_with(token) == []
    from scout_tui.core.messages import TOOL_INTERRUPTED
    # the call cut short gets its line on stderr, as finished calls do
    assert [line for line in err.splitlines() if line.startswith("✗ bash sleep")][0].endswith(f": {TOOL_INTERRUPTED}"), err
    store = Store(Path(env["SCOUT_HOME"]) / "sessions.db")
    [session] = store.sessions(repo)
    messages = store.messages(session.id)
    assert problems(messages) == [] and messages[-1]["content"][0]["tool_use_id"] == "toolu_1"
    assert messages[-1]["content"][0]["is_error"]
    # what the stopped turn changed can be undone: its checkpoint is recorded
    [checkpoint] = [d for kind, d in store.checkpoint_events(session.id) if kind == "checkpoint"]
    assert [f["path"] for f in checkpoint["files"]] == ["started"]



def test_an_answer_the_terminals_encoding_cannot_hold_is_printed_with_replacements(repo, env):
    # A latin-1 or ASCII terminal (PYTHONIOENCODING=ascii, LANG=C on an old system) and a model
    # answering with an emoji: the answer is printed, not a UnicodeEncodeError traceback.
    with LoopbackServer([Reply(anthropic_stream(["café ", "\U0001F600 done"]))]) as server:
        done = scout(["-p", "hi", "--base-url", server.url], repo, {**env, "PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "caf? ? done\n" and "Traceback" not in done.stderr


def test_a_run_the_server_refused_is_listed_as_failed_until_a_later_turn_succeeds(repo, env):
    body = json.dumps({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
    replies = [Reply(body.encode(), 401, {"content-type": "application/json"}), Reply(anthropic_stream(["Hello."]))]
    with LoopbackServer(replies) as server, Store(Path(env["SCOUT_HOME"]) / "sessions.db") as store:
        refused = scout(["-p", "hi", "--base-url", server.url], repo, env)
        assert refused.returncode == 1
        [session] = store.sessions(repo)
        assert session.failed and session.title == "hi"
        again = scout(["-c", "-p", "again", "--base-url", server.url], repo, env)
        assert again.returncode == 0, again.stderr
        [session] = store.sessions(repo)
        assert not session.failed and session.last_stop_reason == "end_turn"


def test_a_run_stopped_by_a_bad_permission_rule_leaves_no_session(repo, env):
    (repo / "scout.toml").write_text('[permissions]\nallow = [":nothing"]\n')
    done = scout(["-p", "hi", "--base-url", "http://127.0.0.1:9"], repo, env)
    assert done.returncode == 1 and f"{repo / 'scout.toml'}:2" in done.stderr
    assert Store(Path(env["SCOUT_HOME"]) / "sessions.db").sessions() == []


def test_a_mention_in_a_p_prompt_carries_the_file_and_a_denied_one_is_said_on_stderr(repo, env):
    (repo / ".env").write_text("TOKEN=abc\n")
    (repo / "scout.toml").write_text('[permissions]\ndeny = ["read:.env"]\n')
    with LoopbackServer([Reply(anthropic_stream(["Read."]))]) as server:
        done = scout(["-p", "compare @notes.txt and @.env", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    [message] = server.requests[0].json()["messages"]
    assert [b["text"] for b in message["content"]] == [
        "compare @notes.txt and @.env", '<mention path="notes.txt" kind="file" size="1 line">\nthe answer is 42\n</mention>']
    assert "@.env not attached: denied by the rule 'read:.env'" in done.stderr


@pytest.mark.parametrize("output_format", ["json", "stream-json"])
def test_a_run_that_cannot_start_still_ends_with_a_result_object(repo, env, output_format):
    done = scout(["-p", "--output-format", output_format], repo, env, piped="\n")  # no prompt at all
    assert done.returncode == 1 and "-p needs a prompt" in done.stderr
    [result] = [json.loads(line) for line in done.stdout.splitlines()]
    assert result["type"] == "result" and result["is_error"] and result["session"] is None
    assert "-p needs a prompt" in result["error"]
