"""A project's ``.claude/settings.json`` ``permissions``, as Claude Code writes them, hold in
scout-tui: its deny rules refuse (in yolo too), its allow rules and what is not applied are said;
``scout-tui -p`` against a loopback Anthropic server."""

from __future__ import annotations

import json

from tests.headless_helpers import env, repo, scout  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer, Reply, anthropic_stream

SETTINGS = """{
  "permissions": {
    "allow": ["Bash(git status:*)", "WebFetch(domain:github.com)"],
    "deny": ["Read(./.env)", "Edit(/migrations/**)"],
    "ask": ["Bash(git push:*)"]
  }
}
"""


def tool_results(request) -> str:
    blocks = request.json()["messages"][-1]["content"]
    return " ".join(str(b.get("content")) for b in blocks if b.get("type") == "tool_result")


def test_a_claude_settings_deny_rule_refuses_even_in_yolo_mode(repo, env):
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(SETTINGS)
    (repo / ".env").write_text("TOKEN=do-not-read-me\n")
    read = ("toolu_1", "read", [json.dumps({"path": ".env"})])
    write = ("toolu_2", "write", [json.dumps({"path": "migrations/0001.sql", "content": "drop table x;"})])
    with LoopbackServer([Reply(anthropic_stream(["Reading."], read)), Reply(anthropic_stream(["Writing."], write)),
                         Reply(anthropic_stream(["Done."]))]) as server:
        done = scout(["-p", "look around", "--base-url", server.url, "--permission-mode", "yolo"], repo, env)
    assert done.returncode == 0, done.stderr
    assert "do-not-read-me" not in json.dumps([r.json() for r in server.requests])
    assert "read:.env" in tool_results(server.requests[1])
    assert "write:migrations/**" in tool_results(server.requests[2])
    assert not (repo / "migrations").exists()


def test_permissions_lists_the_claude_rules_with_their_lines_and_says_what_is_not_applied(repo, env):
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(SETTINGS)
    with LoopbackServer([]) as server:
        done = scout(["-p", "/permissions", "--base-url", server.url], repo, env)
    settings = repo / ".claude" / "settings.json"
    assert done.returncode == 0, done.stderr
    assert f"deny `read:.env` · {settings}:4" in done.stdout
    assert f"deny `edit:migrations/**` · {settings}:4" in done.stdout
    assert f"allow `bash:git status *` · {settings}:3" in done.stdout
    assert f"{settings}:3: the allow rule 'WebFetch(domain:github.com)' is not applied" in done.stderr
    assert f"{settings}:5: permissions.ask is not applied" in done.stderr
    assert not server.requests

