"""``-p`` runs the session's slash commands as ``acp`` does (``session.slash``): ``/cost``,
``/undo``, ``/compact`` print what they did and ask no model; another ``/word`` and ``//text``
are prompts (issue 29: what one front end can do with a session, the others can too)."""

from __future__ import annotations

import json

from tests.headless_helpers import env, repo, scout  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer, Reply, anthropic_stream


def test_cost_and_undo_run_on_the_continued_session_and_ask_no_model(repo, env):
    with LoopbackServer([Reply(anthropic_stream(["Hello there."]))]) as server:
        first = scout(["-p", "hello", "--base-url", server.url], repo, env)
        assert first.returncode == 0, first.stderr
        cost = scout(["-c", "-p", "/cost", "--base-url", server.url], repo, env)
        undo = scout(["-c", "-p", "/undo", "--base-url", server.url], repo, env)
        compact = scout(["-c", "-p", "/compact", "--output-format", "json", "--base-url", server.url], repo, env)
    assert cost.returncode == 0, cost.stderr
    assert cost.stdout.startswith("**What this session cost:")
    assert undo.returncode == 0 and undo.stdout == "Nothing to undo: no turn of this session changed files.\n"
    result = json.loads(compact.stdout)
    assert compact.returncode == 0 and result["text"].startswith("Nothing worth compacting")
    assert result["session"] and not result["is_error"]
    assert len(server.requests) == 1  # only "hello" reached the model


def test_an_unknown_command_and_a_doubled_slash_are_prompts_for_the_model(repo, env):
    replies = [Reply(anthropic_stream(["Reviewed."])), Reply(anthropic_stream(["Literal."]))]
    with LoopbackServer(replies) as server:
        review = scout(["-p", "/review the parser", "--base-url", server.url], repo, env)
        literal = scout(["-p", "//compact is a command", "--base-url", server.url], repo, env)
    assert review.stdout == "Reviewed.\n" and literal.stdout == "Literal.\n"
    sent = [r.json()["messages"][-1]["content"] for r in server.requests]
    texts = [block["text"] for content in sent for block in content if block.get("type") == "text"]
    assert "/review the parser" in texts and "/compact is a command" in texts
