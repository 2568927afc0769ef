"""Markdown commands (``.agents/commands``, ``.claude/commands``) run through ``scout-tui -p`` against
a loopback Anthropic server, and the expansion rules on their own."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

from scout_tui.extensions.md_commands import discover_commands, expand
from tests.headless_helpers import env, repo, scout  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer, Reply, anthropic_stream


def first_prompt(server: LoopbackServer) -> str:
    return "\n".join(b["text"] for b in server.requests[0].json()["messages"][0]["content"] if b["type"] == "text")


@pytest.mark.parametrize("folder", [".agents/commands", ".claude/commands"])
def test_a_markdown_command_sends_its_body_with_the_arguments(repo, env, folder):
    (repo / folder).mkdir(parents=True)
    (repo / folder / "greet.md").write_text("Say hello to $ARGUMENTS\n")
    with LoopbackServer([Reply(anthropic_stream(["Hello, Bob!"]))]) as server:
        done = scout(["-p", "/greet Bob", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    assert first_prompt(server) == "Say hello to Bob"
    assert done.stdout == "Hello, Bob!\n"


def test_a_bang_command_runs_through_the_bash_tool_and_its_output_is_inlined(repo, env):
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "one"],
                   cwd=repo, check=True)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    (repo / ".agents" / "commands" / "git").mkdir(parents=True)
    (repo / ".agents" / "commands" / "git" / "where.md").write_text(
        "---\ndescription: where we are\nallowed-tools: Bash(git rev-parse:*)\n---\n"
        "We are at commit !`git rev-parse --short HEAD`. Review $1 then $2.\n")
    with LoopbackServer([Reply(anthropic_stream(["Noted."]))]) as server:
        done = scout(["-p", '/git:where "src dir" tests', "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    assert first_prompt(server) == f"We are at commit {head}. Review src dir then tests."


def test_a_bang_command_the_rules_deny_is_not_run(repo, env):
    (repo / ".agents" / "commands").mkdir(parents=True)
    (repo / ".agents" / "commands" / "wipe.md").write_text("Output: !`rm notes.txt`\n")
    with LoopbackServer([Reply(anthropic_stream(["ok"]))]) as server:
        done = scout(["-p", "/wipe", "--base-url", server.url], repo, env)  # ask mode: -p cannot ask
    assert done.returncode == 0, done.stderr
    assert (repo / "notes.txt").exists()
    assert "needs the user's approval" in first_prompt(server)


def test_commands_are_found_with_their_front_matter_and_problems(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".agents" / "commands").mkdir(parents=True)
    (home / ".agents" / "commands" / "review.md").write_text("Review the diff.\n")
    (project / ".claude" / "commands").mkdir(parents=True)
    (project / ".claude" / "commands" / "review.md").write_text(
        "---\ndescription: the project's review\nargument-hint: [FILE]\nmodel: opus\n---\nReview $ARGUMENTS\n")
    (project / ".claude" / "commands" / "bad.md").write_text("---\ndescription: never closed\n")
    found, problems = discover_commands(project, home)
    [review] = found
    assert (review.description, review.argument_hint, review.model, review.project) == \
        ("the project's review", "[FILE]", "opus", True)
    assert review.origin == ".claude/commands/review.md"
    assert len(problems) == 2 and "bad.md:1" in problems[0] and "/bad left out" in problems[0]
    assert "model 'opus' is not applied: /review runs on the session's model" in problems[1]


def test_arguments_without_a_placeholder_follow_the_body(tmp_path):
    path = tmp_path / "note.md"
    path.write_text("Write release notes.")
    [command] = [c for c in discover_commands(tmp_path, tmp_path / "none")[0]] or [None]
    from scout_tui.extensions.md_commands import MarkdownCommand

    command = MarkdownCommand("note", path, "notes")

    async def never(cmd: str) -> str:
        raise AssertionError(cmd)

    assert asyncio.run(expand(command, "for v2", never)) == "Write release notes.\n\nARGUMENTS: for v2"
    assert asyncio.run(expand(command, "", never)) == "Write release notes."


def test_the_typed_arguments_are_sent_as_typed_not_expanded_again(repo, env):
    (repo / ".claude" / "commands").mkdir(parents=True)
    (repo / ".claude" / "commands" / "note.md").write_text("Note for $1: $ARGUMENTS\n")
    typed = 'Ann costs $2 or $ARGUMENTS, see !`touch pwned`'
    with LoopbackServer([Reply(anthropic_stream(["Noted."]))]) as server:
        done = scout(["-p", f"/note {typed}", "--base-url", server.url, "--permission-mode", "yolo"], repo, env)
    assert done.returncode == 0, done.stderr
    assert first_prompt(server) == f"Note for Ann: {typed}"
    assert not (repo / "pwned").exists()


def test_allowed_tools_written_as_a_yaml_list_let_the_bang_commands_run(repo, env):
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / ".claude" / "commands").mkdir(parents=True)
    (repo / ".claude" / "commands" / "branch.md").write_text(
        "---\ndescription: where we are\nallowed-tools:\n  - Bash(git branch:*)\n  - Read\n---\n"
        "Branch: !`git branch --show-current`\n")
    branch = subprocess.run(["git", "branch", "--show-current"], cwd=repo, capture_output=True, text=True).stdout.strip()
    with LoopbackServer([Reply(anthropic_stream(["Noted."]))]) as server:
        done = scout(["-p", "/branch", "--base-url", server.url], repo, env)  # ask mode: only allowed-tools let it run
    assert done.returncode == 0, done.stderr
    assert first_prompt(server) == f"Branch: {branch}"
