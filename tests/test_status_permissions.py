"""``/status`` (what the session runs with: model, provider, where the key comes from but never the
key, window, sandbox, mode, MCP servers, memory files, session), ``/permissions`` (the rules in
force with their file and line; a session rule added and removed changes what the next tool call
does) and ``/clear`` (a new session, the old one kept), in the app and with ``-p``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scout_tui.config.layers import load_config
from scout_tui.session.permission_rules import rule_text
from scout_tui.tui.app import ScoutApp
from scout_tui.widgets.approval import ApprovalScreen
from scout_tui.widgets.chat_messages import Notice, UserMessage
from tests.app_helpers import SIZE, make_app, rendered, send, settle
from tests.conftest import wait_until
from tests.headless_helpers import SECRET, env, scout  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer, Reply, anthropic_stream

KEY = "sk-ant-status-test-key-0123456789"
CONFIG = 'model = "claude-status-test"\n\n[permissions]\nallow = ["bash:git status *"]\ndeny = ["bash:rm *"]\n'


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    (workdir / "scout.toml").write_text(CONFIG)
    (workdir / "AGENTS.md").write_text("Run the tests with make test.\n")
    return workdir


def notices(app: ScoutApp) -> list[str]:
    """The notices as drawn (a long path wraps, losing a character at the cut)."""
    return [rendered(n) for n in app.query(Notice)]


def said(app: ScoutApp) -> str:
    """The Markdown of the newest notice."""
    return app.query(Notice).last().text


def keyed_app(repo: Path, server: LoopbackServer) -> ScoutApp:
    """The app with its key from ``ANTHROPIC_API_KEY`` (set by the test), as a person has it."""
    return ScoutApp(load_config(repo, flags={"provider": "anthropic", "base_url": server.url}), cwd=repo)


async def test_status_names_model_provider_key_variable_mode_and_memory_never_the_key(repo, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with LoopbackServer([]) as server:
        app = keyed_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "/status")
            await wait_until(pilot, lambda: any("Status" in n for n in notices(app)), what="the /status notice")
            await settle(app, pilot)
            shown = "\n".join(notices(app))
            source = "\n".join(n.text for n in app.query(Notice))
            screen = app.export_screenshot()
    for fact in ("claude-status-test", f"from {repo / 'scout.toml'}:1", f"anthropic (from flag --provider), at {server.url} (from flag --base-url)",
                 "from env ANTHROPIC_API_KEY", "never shown", "ask (default)", "AGENTS.md", "MCP servers",
                 "new, stored with its first prompt"):
        assert fact in source, (fact, source)  # the notice's Markdown: its long paths wrap on screen
    assert all(word in shown for word in ("Model:", "Provider:", "API key:", "Permission mode:", "Memory files:"))
    assert KEY not in shown and KEY not in source and KEY not in screen
    assert not server.requests  # /status asks no model


async def test_permissions_lists_a_files_rule_with_its_line_and_a_session_rule_added_then_removed(repo):
    call = ("toolu_1", "bash", [json.dumps({"command": "echo hi"})])
    replies = [Reply(anthropic_stream([], call)), Reply(anthropic_stream(["Ran it."])),
               Reply(anthropic_stream([], ("toolu_2", "bash", [json.dumps({"command": "echo hi"})]))),
               Reply(anthropic_stream(["Asked."]))]
    with LoopbackServer(replies) as server:
        app = make_app(repo, server)
        app.permissions.unsandboxed = True  # the rule alone decides, whether bwrap runs here or not
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "/permissions")
            await pilot.pause()
            listing = said(app)
            assert f"1. deny `bash:rm *` · {repo / 'scout.toml'}:5" in listing, listing
            assert f"2. allow `bash:git status *` · {repo / 'scout.toml'}:4" in listing, listing

            await send(app, pilot, "/permissions allow bash(echo *)")
            await pilot.pause()
            assert "Allowed for this session: `bash:echo *`" in said(app)
            assert "3. allow `bash:echo *` · this session" in said(app)
            await send(app, pilot, "run echo")
            await settle(app, pilot)
            assert not isinstance(app.screen, ApprovalScreen)  # ran without asking
            assert "hi" in json.dumps(server.requests[1].json()["messages"][-1])

            await send(app, pilot, "/permissions remove 3")
            await pilot.pause()
            assert "Removed the session's allow rule `bash:echo *`" in said(app)
            assert app.permissions.session == []
            await send(app, pilot, "run echo again")
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="the call to ask again")
            await wait_until(pilot, lambda: app.screen.armed, what="the prompt to take keys")
            await pilot.press("escape")
            await settle(app, pilot)


async def test_a_session_deny_rule_denies_the_next_call_and_a_files_rule_is_not_removed_here(repo):
    with LoopbackServer([]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "/permissions deny Bash(git push:*)")
            await pilot.pause()
            assert "Denied for this session: `bash:git push *`" in said(app)
            check = app.permissions.check("bash", {"command": "git push origin main"}, repo)
            assert check.verdict == "deny" and "bash:git push *" in check.reason
            await send(app, pilot, "/permissions remove 1")
            await pilot.pause()
            assert f"comes from {repo / 'scout.toml'}:5: remove it from that file" in said(app)
            await send(app, pilot, "/permissions deny bsh:rm *")
            await pilot.pause()
            assert "'bsh' names no tool; did you mean 'bash'?" in said(app)
            assert [r.text for r in app.permissions.deny] == ["bash:rm *", "bash:git push *"]


async def test_clear_starts_a_new_session_and_keeps_the_old_one(repo):
    with LoopbackServer([Reply(anthropic_stream(["Hello."]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "hello")
            await settle(app, pilot)
            first = app.session.id
            await send(app, pilot, "/clear")
            await settle(app, pilot)
            assert app.session.id != first and not app.query(UserMessage)
            assert first in [s.id for s in app.store.sessions(repo)]


def test_rules_in_claude_codes_form():
    assert rule_text("Bash(git commit:*)") == "bash:git commit *"
    assert rule_text("Edit(src/**)") == "edit:src/**"
    assert rule_text("Read") == "read"
    assert rule_text("bash:git   status *") == "bash:git status *"
    assert rule_text("mcp__github(x)") == "mcp__github:x"


def test_print_mode_status_and_permissions_print_the_same_markdown_and_ask_no_model(tmp_path, env):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "scout.toml").write_text(CONFIG)
    with LoopbackServer([]) as server:
        status = scout(["-p", "/status", "--base-url", server.url], repo, env)
        rules = scout(["-p", "/permissions", "--base-url", server.url], repo, env)
    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith("**Status**") and "from env ANTHROPIC_API_KEY" in status.stdout
    assert "- **Hooks**: none configured" in status.stdout
    assert SECRET not in status.stdout + status.stderr
    assert rules.returncode == 0 and f"1. deny `bash:rm *` · {repo / 'scout.toml'}:5" in rules.stdout
    assert not server.requests
