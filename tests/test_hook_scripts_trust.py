"""A project's hook is trusted with the scripts of the project it runs: a script changed since it
was trusted (by a pull) is not run until trusted again. ``scout-tui -p`` and ``scout-tui trust``
as real subprocesses against a loopback Anthropic server."""

from __future__ import annotations

import json
import sys

from tests.headless_helpers import env, repo, scout  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer, Reply, anthropic_stream


def test_a_trusted_hooks_script_changed_since_is_not_run_until_trusted_again(repo, env, tmp_path):
    marker = tmp_path / "ran"
    hooks = repo / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    guard = hooks / "mark.py"
    guard.write_text(f"open({str(marker)!r}, 'a').write('v1 ')\n")
    command = f'{sys.executable} "$CLAUDE_PROJECT_DIR"/.claude/hooks/mark.py'
    settings = {"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": command}]}]}}
    (repo / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2))

    def run() -> str:
        replies = [Reply(anthropic_stream(["Reading."], ("toolu_1", "read", ['{"path": "notes.txt"}']))),
                   Reply(anthropic_stream(["42."]))]
        with LoopbackServer(replies) as server:
            done = scout(["-p", "read notes.txt", "--base-url", server.url], repo, env)
        assert done.returncode == 0, done.stderr
        return done.stderr

    assert scout(["trust", "--yes"], repo, env).returncode == 0
    run()
    assert marker.read_text() == "v1 "
    guard.write_text(f"open({str(marker)!r}, 'a').write('v2 ')\n")  # as a pull would change it
    said = run()
    assert marker.read_text() == "v1 "
    assert "PreToolUse hook" in said and "not run" in said and "scout-tui trust" in said
    listed = scout(["trust", "--list"], repo, env)
    assert "changed" in listed.stdout and "mark.py" in listed.stdout
    assert scout(["trust", "--yes"], repo, env).returncode == 0
    run()
    assert marker.read_text() == "v1 v2 "
