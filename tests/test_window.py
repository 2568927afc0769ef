"""The context window against a small llama.cpp server (issue 28, items 7 to 9): the window is the
model's and its server's, asked of the server on either route; the estimate is calibrated by
the server's own counts across runs; a summary that would not shrink the prompt is not applied;
a prompt that does not fit is compacted first, and when it is refused it is never sent again.

``llama_server.LlamaServer`` stands in for ``llama-server -c N``: its token count is about a third
above scout-tui's estimate, and it refuses a prompt past its window with llama.cpp's error body.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from llama_server import LlamaServer

from scout_tui.agent import Agent
from scout_tui.backends import make_backend
from scout_tui.summary import Compaction
from scout_tui.tools import builtin_registry
from tests.headless_helpers import env, repo  # noqa: F401 — fixtures

TURNS = 15


def run(args: list[str], cwd: Path, environ: dict[str, str]) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """``scout-tui ARGS --output-format stream-json``: the finished process and its events."""
    done = subprocess.run([sys.executable, "-m", "scout_tui", *args, "--output-format", "stream-json"], cwd=cwd,
                          env=environ, capture_output=True, text=True, timeout=120)
    return done, [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def flags(url: str, route: str) -> list[str]:
    return ["--provider", route, "--base-url", url + ("/v1" if route == "openai" else ""), "--model", "small-model",
            "--api-key", "sk-local"]


def of(events: list[dict], kind: str) -> list[dict]:
    return [e["data"] for e in events if e["type"] == kind]


def agent_for(url: str, cwd: Path, route: str = "openai", **kw) -> Agent:
    backend = make_backend(route, model="small-model", api_key="sk-local",
                           base_url=url + ("/v1" if route == "openai" else ""), max_retries=0)
    return Agent(backend, builtin_registry(), system="You are a careful coding assistant.", cwd=cwd, **kw)


def conversation(turns: int, size: int) -> list[dict]:
    """``turns`` questions and answers of about ``size`` characters each."""
    messages: list[dict] = []
    for i in range(turns):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"Question {i}: " + "why? " * (size // 5)}]})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"Answer {i}: " + "so. " * (size // 4)}]})
    return messages


# -- item 7: a one-off window does not stick to the session ---------------------------------------


def test_a_one_off_window_does_not_stick_to_the_session(repo, env):
    llama = LlamaServer(n_ctx=8192)
    with llama.serve() as server:
        done, events = run([*flags(server.url, "openai"), "-p", "first"], repo, {**env, "SCOUT_CONTEXT_WINDOW": "5000"})
        assert done.returncode == 0, done.stderr
        assert [d["context_window"] for d in of(events, "prompt.compacted")] == [5000]
        done, events = run([*flags(server.url, "openai"), "-p", "second", "-c"], repo, env)
        assert done.returncode == 0, done.stderr
    # The next run without the variable: the server's window, not the one the session was sent with.
    assert [d["context_window"] for d in of(events, "prompt.compacted")] == [8192]


# -- item 9: what an overflow teaches --------------------------------------------------------------


async def test_an_overflow_calibrates_the_estimate_with_the_servers_own_count(tmp_path):
    llama = LlamaServer(n_ctx=8_192)
    remembered: list[tuple] = []
    with llama.serve() as server:
        agent = agent_for(server.url, tmp_path, auto_compact=0.85, keep_tokens=1_000)
        agent.remember = lambda *learnt: remembered.append(learnt)
        events = [e async for e in agent.run(conversation(8, 3_000), "and now?")]
    refused = [s for s in llama.seen if s.refused]
    # The window is n_ctx of llama.cpp's error body (its message names none), not a guess.
    assert len(refused) == 1 and agent.context_window == 8_192
    assert remembered[0][0] > 1.2  # learnt from the refusal's n_prompt_tokens, before any usage
    assert remembered[0][2] == 8_192  # the window the server named is kept for later runs


# -- the TUI: the window of the model on its server, whatever session is open ---------------------


async def test_the_tui_shows_the_servers_window_after_a_one_off_window_and_on_a_new_session(repo, tmp_home):
    """A session sent with a one-off ``context_window`` of 5,000, reopened without it on the
    Anthropic route of ``llama-server -c 8192``: the status bar, Ctrl+O and the agent hold the
    server's 8,192 (asked of ``/props`` on that route too), and so does Ctrl+N's new session."""
    from scout_tui.app import ScoutApp
    from scout_tui.config import load_config
    from scout_tui.widgets import StatusBar
    from scout_tui.widgets.prompt_view import PromptView
    from tests.app_helpers import SIZE, send, settle
    from tests.conftest import wait_until

    llama = LlamaServer(n_ctx=8192)
    with llama.serve() as server:
        base = {"provider": "anthropic", "base_url": server.url, "api_key": "sk-local", "model": "small-model"}
        first = ScoutApp(load_config(repo, flags={**base, "context_window": 5000}), cwd=repo)
        async with first.run_test(size=SIZE) as pilot:
            await send(first, pilot, "hello")
            await settle(first, pilot)
            assert first.agent.context_window == 5000
            sid = first.session_id
        again = ScoutApp(load_config(repo, flags=base), cwd=repo, resume=sid)
        async with again.run_test(size=SIZE) as pilot:
            await settle(again, pilot)
            await wait_until(pilot, lambda: again.query_one(StatusBar).context_window, what="the window")
            assert again.query_one(StatusBar).context_window == 8192
            await pilot.press("ctrl+o")
            await wait_until(pilot, lambda: isinstance(again.screen, PromptView), what="the prompt view")
            note = str(again.screen.query_one("#prompt-summary").render())
            assert f"Context window: 8,192 tokens (server {server.url}/props)" in note
            await pilot.press("escape")
            await wait_until(pilot, lambda: not isinstance(again.screen, PromptView), what="the prompt view closed")
            await pilot.press("ctrl+n")
            await send(again, pilot, "a new session")
            await settle(again, pilot)
            assert again.session_id != sid and again.agent.context_window == 8192
            assert again.query_one(StatusBar).context_window == 8192
