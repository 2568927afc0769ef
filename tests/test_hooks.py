"""Hooks in Claude Code's protocol, driven through ``scout-tui -p`` (a real subprocess) against a
loopback Anthropic server: each hook is a real command reading its event as JSON on stdin."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from scout_tui.store.event_log import Store
from tests.headless_helpers import env, repo, scout  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer, Reply, anthropic_stream

PYTHON = sys.executable


def user_config(env: dict[str, str], text: str) -> Path:
    """Write the person's own scout.toml (always trusted)."""
    path = Path(env["XDG_CONFIG_HOME"]) / "scout" / "scout.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def script(tmp_path: Path, name: str, body: str) -> str:
    """A Python hook script in ``tmp_path``; the command line that runs it."""
    path = tmp_path / name
    path.write_text("import json, sys\nevent = json.load(sys.stdin)\n" + body)
    return f"{PYTHON} {path}"


def bash_call(command: str, id: str = "toolu_1") -> bytes:
    return anthropic_stream(["On it."], (id, "bash", [json.dumps({"command": command})]))


def sent_results(request) -> str:
    """The tool results of a recorded request's last message, as text."""
    return json.dumps(request.json()["messages"][-1]["content"])


def test_a_pre_tool_use_hook_exiting_2_keeps_the_file_and_the_model_reads_why(repo, env, tmp_path):
    guard = script(tmp_path, "guard.py", """
command = event["tool_input"].get("command", "")
if event["tool_name"] == "bash" and command.startswith("rm "):
    print("rm is not allowed here: move files to trash/ instead", file=sys.stderr)
    sys.exit(2)
""")
    user_config(env, f'[[hooks.PreToolUse]]\nmatcher = "bash|write"\ncommand = {json.dumps(guard)}\n')
    replies = [Reply(bash_call("rm notes.txt")), Reply(anthropic_stream(["Kept it."]))]
    with LoopbackServer(replies) as server:
        done = scout(["-p", "delete notes.txt", "--base-url", server.url, "--permission-mode", "yolo"], repo, env)
    assert done.returncode == 0, done.stderr
    assert (repo / "notes.txt").exists()
    results = sent_results(server.requests[1])
    assert "rm is not allowed here: move files to trash/ instead" in results and "PreToolUse hook" in results


def test_a_post_tool_use_hook_reads_the_call_and_its_response(repo, env, tmp_path):
    seen = tmp_path / "seen.json"
    logger = script(tmp_path, "log.py", f"open({str(seen)!r}, 'w').write(json.dumps(event))\n")
    user_config(env, f'[[hooks.PostToolUse]]\ncommand = {json.dumps(logger)}\n')
    replies = [Reply(anthropic_stream(["Reading."], ("toolu_1", "read", ['{"path": "notes.txt"}']))),
               Reply(anthropic_stream(["It says 42."]))]
    with LoopbackServer(replies) as server:
        done = scout(["-p", "read notes.txt", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    event = json.loads(seen.read_text())
    [session] = Store(Path(env["SCOUT_HOME"]) / "sessions.db").sessions(repo)
    assert event["hook_event_name"] == "PostToolUse" and event["session_id"] == session.id
    assert event["tool_name"] == "read" and event["tool_input"] == {"path": "notes.txt"}
    assert "the answer is 42" in event["tool_response"]["content"] and event["tool_response"]["is_error"] is False
    assert event["cwd"] == str(repo) and event["tool_use_id"] == "toolu_1"


def test_a_user_prompt_submit_hooks_stdout_is_sent_and_exit_2_sends_nothing(repo, env, tmp_path):
    hook = script(tmp_path, "prompt.py", """
if "secret plan" in event["prompt"]:
    print("prompts about the secret plan are not sent", file=sys.stderr)
    sys.exit(2)
print("Today's on-call engineer is Ada.")
""")
    user_config(env, f'[[hooks.UserPromptSubmit]]\ncommand = {json.dumps(hook)}\n')
    with LoopbackServer([Reply(anthropic_stream(["Ada."]))]) as server:
        done = scout(["-p", "who is on call?", "--base-url", server.url], repo, env)
        blocked = scout(["-p", "tell me the secret plan", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    sent = json.dumps(server.requests[0].json()["messages"][0])
    assert "who is on call?" in sent and "Today's on-call engineer is Ada." in sent
    assert len(server.requests) == 1  # the blocked prompt never reached the model
    assert blocked.returncode == 1 and "prompts about the secret plan are not sent" in blocked.stderr


def test_a_hook_past_its_timeout_is_named_and_the_turn_goes_on(repo, env, tmp_path):
    user_config(env, '[[hooks.PreToolUse]]\ncommand = "sleep 30"\ntimeout = 1\n')
    replies = [Reply(anthropic_stream(["Reading."], ("toolu_1", "read", ['{"path": "notes.txt"}']))),
               Reply(anthropic_stream(["It says 42."]))]
    with LoopbackServer(replies) as server:
        done = scout(["-p", "read notes.txt", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    assert "PreToolUse hook `sleep 30`" in done.stderr and "timeout of 1 s" in done.stderr
    assert "the answer is 42" in sent_results(server.requests[1])  # the call ran after all
    assert done.stdout.endswith("It says 42.\n")


def read_notes(repo: Path, env: dict[str, str]) -> str:
    """``scout-tui -p "read notes.txt"`` in ``repo``, the model calling ``read`` once; its stderr."""
    replies = [Reply(anthropic_stream(["Reading."], ("toolu_1", "read", ['{"path": "notes.txt"}']))),
               Reply(anthropic_stream(["42."]))]
    with LoopbackServer(replies) as server:
        done = scout(["-p", "read notes.txt", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_a_projects_hook_runs_only_once_trusted(repo, env, tmp_path):
    marker = tmp_path / "ran"
    settings = {"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [
        {"type": "command", "command": f"{PYTHON} -c \"open({str(marker)!r}, 'w').write(open(0).read())\""}]}]}}
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2))

    said = read_notes(repo, env)
    assert not marker.exists()
    assert ".claude/settings.json:3: PreToolUse hook" in said and "scout-tui trust" in said
    listed = scout(["trust", "--list"], repo, env)
    assert "new" in listed.stdout and "PreToolUse hook" in listed.stdout
    assert scout(["trust", "--yes"], repo, env).returncode == 0
    read_notes(repo, env)
    event = json.loads(marker.read_text())  # a .claude hook is told Claude Code's names
    assert event["tool_name"] == "Read" and event["tool_input"]["file_path"] == str(repo / "notes.txt")
    assert event["permission_mode"] == "default"


def test_a_trusted_hooks_script_changed_since_is_not_run_until_trusted_again(repo, env, tmp_path):
    marker = tmp_path / "ran"
    hooks = repo / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    guard = hooks / "mark.py"
    guard.write_text(f"open({str(marker)!r}, 'a').write('v1 ')\n")
    command = f'{PYTHON} "$CLAUDE_PROJECT_DIR"/.claude/hooks/mark.py'
    settings = {"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": command}]}]}}
    (repo / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2))

    assert scout(["trust", "--yes"], repo, env).returncode == 0
    read_notes(repo, env)
    assert marker.read_text() == "v1 "
    guard.write_text(f"open({str(marker)!r}, 'a').write('v2 ')\n")  # as a pull would change it
    said = read_notes(repo, env)
    assert marker.read_text() == "v1 "
    assert "PreToolUse hook" in said and "not run" in said and "scout-tui trust" in said
    listed = scout(["trust", "--list"], repo, env)
    assert "changed" in listed.stdout and "mark.py" in listed.stdout
    assert scout(["trust", "--yes"], repo, env).returncode == 0
    read_notes(repo, env)
    assert marker.read_text() == "v1 v2 "


def test_a_stop_hook_sends_the_model_back_to_work_once(repo, env, tmp_path):
    hook = script(tmp_path, "stop.py", """
if not event["stop_hook_active"]:
    print("run the tests before you stop", file=sys.stderr)
    sys.exit(2)
""")
    user_config(env, f'[[hooks.Stop]]\ncommand = {json.dumps(hook)}\n')
    replies = [Reply(anthropic_stream(["Done."])), Reply(anthropic_stream(["Tests pass."]))]
    with LoopbackServer(replies) as server:
        done = scout(["-p", "fix it", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    assert len(server.requests) == 2
    assert "Stop hook feedback:\\nrun the tests before you stop" in json.dumps(server.requests[1].json()["messages"][-1])
    assert done.stdout.endswith("Tests pass.\n")


def test_a_misspelt_hook_event_stops_the_start_naming_file_and_line(repo, env):
    path = user_config(env, '[[hooks.PreTooluse]]\ncommand = "true"\n')
    done = scout(["-p", "hi", "--base-url", "http://127.0.0.1:9"], repo, env)
    assert done.returncode != 0
    assert f"{path}:1: unknown hook event 'PreTooluse'; did you mean 'PreToolUse'?" in done.stderr


def test_session_start_hooks_add_context_to_the_first_prompt_and_know_a_resume(repo, env, tmp_path):
    log = tmp_path / "sources.txt"
    hook = script(tmp_path, "start.py", f"""
open({str(log)!r}, "a").write(event["source"] + "\\n")
print("Branch: main, 3 commits ahead")
""")
    user_config(env, f'[[hooks.SessionStart]]\ncommand = {json.dumps(hook)}\n')
    replies = [Reply(anthropic_stream(["Noted."])), Reply(anthropic_stream(["Again."]))]
    with LoopbackServer(replies) as server:
        first = scout(["-p", "where are we?", "--base-url", server.url], repo, env)
        again = scout(["-c", "-p", "and now?", "--base-url", server.url], repo, env)
    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    assert "Branch: main, 3 commits ahead" in json.dumps(server.requests[0].json()["messages"][0])
    assert "Branch: main" in json.dumps(server.requests[1].json()["messages"][-1])  # the resumed session's first
    assert log.read_text() == "startup\nresume\n"


def test_subagents_fire_subagent_stop_and_their_tool_calls_the_tool_hooks(repo, env, tmp_path):
    from tests.subagent_helpers import split_the_work

    log = tmp_path / "events.jsonl"
    logger = script(tmp_path, "log.py", f"open({str(log)!r}, 'a').write(json.dumps(event) + '\\n')\n")
    user_config(env, "".join(f'[[hooks.{name}]]\ncommand = {json.dumps(logger)}\n'
                             for name in ("Stop", "SubagentStop", "PreToolUse")))
    split_the_work(repo, env)
    events = [json.loads(line) for line in log.read_text().splitlines()]
    with Store(Path(env["SCOUT_HOME"]) / "sessions.db") as store:
        [parent] = [s.id for s in store.sessions() if s.kind is None]
        children = {s.id for s in store.sessions() if s.kind == "subagent"}
    assert [e["session_id"] for e in events if e["hook_event_name"] == "Stop"] == [parent]
    assert {e["session_id"] for e in events if e["hook_event_name"] == "SubagentStop"} == children
    reads = [e for e in events if e["hook_event_name"] == "PreToolUse" and e["tool_name"] == "read"]
    assert {e["session_id"] for e in reads} == children  # the children's own calls, in their sessions


def test_a_hooks_permission_decision_allows_a_call_the_rules_would_ask_about_but_not_one_they_deny(repo, env, tmp_path):
    approver = script(tmp_path, "approve.py", """
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                         "permissionDecisionReason": "touch is fine"}}))
""")
    user_config(env, f'[permissions]\ndeny = ["bash:rm *"]\n\n[[hooks.PreToolUse]]\ncommand = {json.dumps(approver)}\n')
    replies = [Reply(anthropic_stream(["Making it."], ("toolu_1", "bash", [json.dumps({"command": "touch made.txt"})]))),
               Reply(bash_call("rm notes.txt", "toolu_2")), Reply(anthropic_stream(["Done."]))]
    with LoopbackServer(replies) as server:  # ask mode: -p cannot ask, so the hook's word decides
        done = scout(["-p", "make a file, then remove notes.txt", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    assert (repo / "made.txt").exists() and (repo / "notes.txt").exists()
    assert "Permission denied" in sent_results(server.requests[2])


def test_claude_code_hooks_scout_tui_does_not_run_are_said(tmp_path):
    from scout_tui.extensions.hook_config import json_hooks

    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"permissions": {"allow": ["Bash"]}, "hooks": {
        "Stop": [{"hooks": [{"type": "prompt", "prompt": "is the work done?"}, {"type": "command", "command": "true"}]}],
        "PermissionRequest": [{"hooks": [{"type": "command", "command": "approve.sh"}]}]}}, indent=2))
    notes: list[str] = []
    [hook] = json_hooks(path, lambda: {}, notes)
    assert (hook.event, hook.command, hook.dialect) == ("Stop", "true", "claude")
    assert notes == [f"{path}:8: a Stop hook of type 'prompt' is not run: scout-tui runs command hooks",
                     f"{path}:22: hooks of 'PermissionRequest' are not run: an event scout-tui does not fire"]
