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

from scout_tui.engine.agent import Agent
from scout_tui.engine.settings import AgentSettings
from scout_tui.backends import make_backend
from scout_tui.engine.summary import Compaction
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
    settings = AgentSettings(system="You are a careful coding assistant.", cwd=cwd, **kw)
    return Agent(backend, builtin_registry(), settings)


def conversation(turns: int, size: int) -> list[dict]:
    """``turns`` questions and answers of about ``size`` characters each."""
    messages: list[dict] = []
    for i in range(turns):
        messages.append({"role": "user", "content": [{"type": "text", "text": f"Question {i}: " + "why? " * (size // 5)}]})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"Answer {i}: " + "so. " * (size // 4)}]})
    return messages


# -- item 9: a long continued run compacts before any refusal -------------------------------------


@pytest.mark.parametrize("route", ["openai", "anthropic"])
def test_a_long_continued_run_compacts_before_the_server_refuses_anything(repo, env, route):
    """Fifteen ``-p`` turns, each a new process continuing the session with ``-c``, against
    ``llama-server -c 8192`` counting ~35 % above the estimate: the window comes from ``/props``
    on either route, the first request calibrates the estimate for every later run, and every
    compaction is automatic, before a refusal, and shrinks the prompt."""
    llama = LlamaServer(n_ctx=8192, answer="All right, here is a long answer. " * 45)
    with llama.serve() as server:
        for i in range(TURNS):
            done, events = run([*flags(server.url, route), "-p", f"Question {i}: what does module {i} do?",
                                *(["-c"] if i else [])], repo, env)
            assert done.returncode == 0, done.stderr
            assert [d["context_window"] for d in of(events, "prompt.compacted")] == [8192]
            for compacted in of(events, "session.compacted"):
                assert compacted["by"] == "auto" and compacted["tokens_after"] < compacted["tokens_before"]
    assert [s.tokens for s in llama.seen if s.refused] == []
    summaries = [k for k, s in enumerate(llama.seen) if s.summary]
    assert len(summaries) >= 2, "the conversation outgrew the window more than once"
    for k in summaries:  # as the server counts: the request after the summary is smaller than the one before
        assert llama.seen[k + 1].tokens < llama.seen[k - 1].tokens
    # Not a summary at every turn: each leaves room for several turns.
    assert all(b - a > 3 for a, b in zip(summaries, summaries[1:])), summaries


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


# -- item 8: a window too small for the history compacts first, and a refused prompt stays unsent --


async def test_a_history_over_a_small_window_is_summarised_before_anything_is_refused(tmp_path):
    llama = LlamaServer(n_ctx=32_768)
    history = conversation(10, 1_400)  # about 7k tokens as estimated
    with llama.serve() as server:
        agent = agent_for(server.url, tmp_path, context_window=9_000, auto_compact=0.85, keep_tokens=2_000)
        events = [e async for e in agent.run(history, "short question")]
    assert [e.data["message"] for e in events if e.type == "error"] == []
    assert [e.type for e in events if e.type in ("session.compacted", "turn.end")] == ["session.compacted", "turn.end"]
    assert [e.data for e in events if e.type == "turn.end"] == [{"stop_reason": "end_turn"}]
    asked = [s for s in llama.seen if not s.summary]
    assert len(asked) == 1 and "short question" in agent.messages[-2]["content"][0]["text"]
    # Plugins are told the cut the summary is written for.
    told = [e.data["at"] for e in events if e.type == "session.before_compact"]
    assert told == [e.data["at"] for e in events if e.type == "session.compacted"]


async def test_on_a_4k_window_the_summary_counted_before_it_is_written_leaves_room_for_it(tmp_path):
    """The system prompt and tools are over a third of a 4,000-token window: a summary is counted
    at an eighth of the window, not 1,500 tokens, so one is written rather than nothing."""
    llama = LlamaServer(n_ctx=32_768)
    with llama.serve() as server:
        agent = agent_for(server.url, tmp_path, context_window=4_000, auto_compact=0.85)
        events = [e async for e in agent.run(conversation(6, 1_000), "short question")]
    assert [e.data["message"] for e in events if e.type == "error"] == []
    assert [e for e in events if e.type == "session.compacted"]
    assert [e.data for e in events if e.type == "turn.end"] == [{"stop_reason": "end_turn"}]


def test_a_refused_prompt_is_never_sent_again_in_a_later_run(repo, env):
    llama = LlamaServer(n_ctx=8192)
    with llama.serve() as server:
        huge = "Here is the whole log: " + "E" * 60_000
        done, events = run([*flags(server.url, "openai"), "-p", huge], repo, env)
        assert done.returncode == 1 and "not sent" in done.stderr
        assert of(events, "message.refused") == [{"index": 0}]
        done, events = run([*flags(server.url, "openai"), "-p", "a short one", "-c"], repo, env)
        assert done.returncode == 0, done.stderr
    assert [s.refused for s in llama.seen] == [False]  # only the second prompt was sent, and fitted
    assert of(events, "turn.end") == [{"stop_reason": "end_turn"}]


# -- item 9: what an overflow teaches, and a summary that would not help --------------------------


async def test_an_overflow_calibrates_the_estimate_with_the_servers_own_count(tmp_path):
    llama = LlamaServer(n_ctx=8_192)
    remembered: list[tuple] = []
    with llama.serve() as server:
        agent = agent_for(server.url, tmp_path, auto_compact=0.85, keep_tokens=1_000)
        agent.window.remember = lambda *learnt: remembered.append(learnt)
        events = [e async for e in agent.run(conversation(8, 3_000), "and now?")]
    refused = [s for s in llama.seen if s.refused]
    # The window is n_ctx of llama.cpp's error body (its message names none), not a guess.
    assert len(refused) == 1 and agent.window.context_window == 8_192
    assert remembered[0][0] > 1.2  # learnt from the refusal's n_prompt_tokens, before any usage
    assert remembered[0][2] == 8_192  # the window the server named is kept for later runs
    assert [e.data for e in events if e.type == "turn.end"] == [{"stop_reason": "end_turn"}]


async def test_an_overflow_summary_would_not_stand_for_the_persons_request(tmp_path):
    """A summary in force, then the person's request, a tool call with a long result and a short
    answer; then a short prompt that the server refuses. A summary of only the request (longer
    than the request) would not make the prompt smaller: it is not applied, and the token
    budget, calibrated by the server's count, makes the retry fit."""
    llama = LlamaServer(n_ctx=5_000, summary="A very long summary. " * 1000)
    history = [*conversation(2, 400),
               {"role": "user", "content": [{"type": "text", "text": "read the log"}]},
               {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read",
                                                  "input": {"path": "log.txt"}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "log line\n" * 1500}]},
               {"role": "assistant", "content": [{"type": "text", "text": "I read it."}]}]
    with llama.serve() as server:
        agent = agent_for(server.url, tmp_path, auto_compact=0.85,
                          compaction=Compaction(4, 4, "Earlier: " + "many things happened. " * 100))
        events = [e async for e in agent.run(history, "and this?")]
    assert [e for e in events if e.type == "session.compacted"] == []
    assert agent.window.compaction.at == 4
    assert [s.refused for s in llama.seen if not s.summary] == [True, False]
    assert [e.data for e in events if e.type == "turn.end"] == [{"stop_reason": "end_turn"}]


async def test_a_summary_that_would_make_each_request_larger_is_not_applied(tmp_path):
    """Past ``auto_compact`` of the window, a plugin supplies a summary longer than what it
    stands for: it is not applied, and the request goes out as it was."""
    from scout_tui.core.bus import BeforeCompact

    llama = LlamaServer(n_ctx=200_000)
    history = conversation(58, 3_000)  # about 88k tokens, past 85 % of 100k
    with llama.serve() as server:
        agent = agent_for(server.url, tmp_path, context_window=100_000, auto_compact=0.85)
        events = []
        async for event in agent.run(history, "and now?"):
            if isinstance(event, BeforeCompact):
                event.data["summary"] = "Everything, at length. " * 20_000
            events.append(event)
    assert [e for e in events if e.type == "session.compacted"] == []
    assert any("not applied" in e.data["text"] for e in events if e.type == "notice")
    assert agent.window.compaction is None
    assert [e.data for e in events if e.type == "turn.end"] == [{"stop_reason": "end_turn"}]


def test_a_window_too_small_for_the_system_prompt_and_tools_says_so(tmp_path):
    import asyncio

    llama = LlamaServer(n_ctx=1_024)
    with llama.serve() as server:
        agent = agent_for(server.url, tmp_path, context_window=1_024, auto_compact=0.85)
        events = asyncio.run(_events(agent, "hello"))
    errors = [e.data["message"] for e in events if e.type == "error"]
    assert len(errors) == 1 and "system prompt and the tool definitions alone" in errors[0]
    assert "which you typed" not in errors[0]
    assert llama.seen == []


async def _events(agent: Agent, text: str) -> list:
    return [e async for e in agent.run([], text)]


# -- item 9: -p and a thinking model ---------------------------------------------------------------


@pytest.mark.parametrize("route", ["openai", "anthropic"])
def test_p_prints_a_thinking_models_answer(repo, env, route):
    llama = LlamaServer(n_ctx=8192, answer="The answer is 42.", thinking=True)
    with llama.serve() as server:
        done = subprocess.run([sys.executable, "-m", "scout_tui", *flags(server.url, route), "-p", "the answer?"],
                              cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "The answer is 42."


# -- the TUI: the window of the model on its server, whatever session is open ---------------------


async def test_the_tui_shows_the_servers_window_after_a_one_off_window_and_on_a_new_session(repo, tmp_home):
    """A session sent with a one-off ``context_window`` of 5,000, reopened without it on the
    Anthropic route of ``llama-server -c 8192``: the status bar, Ctrl+O and the agent hold the
    server's 8,192 (asked of ``/props`` on that route too), and so does Ctrl+N's new session."""
    from scout_tui.tui.app import ScoutApp
    from scout_tui.config.layers import load_config
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
            assert first.session.agent.window.context_window == 5000
            sid = first.session.id
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
            assert again.session.id != sid and again.session.agent.window.context_window == 8192
            assert again.query_one(StatusBar).context_window == 8192


def test_a_model_switch_brings_what_earlier_runs_learnt_of_the_new_model_on_its_server(repo, tmp_home):
    from scout_tui.config.calibration import remember, server_key
    from scout_tui.config.layers import load_config
    from scout_tui.session.runtime import build_agent, switch_agent

    remember(server_key("openai", "http://127.0.0.1:9/v1", "big-model"), 1.4, 9)
    config = load_config(repo, flags={"provider": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "small-model",
                                      "api_key": "sk-local"})
    agent = build_agent(config, repo)
    assert (agent.window.estimator.ratio, agent.window.estimator.samples) == (1.0, 0)
    switch_agent(agent, config.for_provider("openai", "big-model"))
    assert (agent.window.estimator.ratio, agent.window.estimator.samples) == (1.4, 9)


# -- a summary too large for the window: never applied, never dropped unsaid ------------------------


def test_a_summary_too_large_to_help_is_never_applied_and_the_earlier_turns_are_never_lost(repo, env):
    """``llama-server -c 8192`` whose summary model writes about 20,000 characters, and long
    ``-p`` turns continued with ``-c``: that summary would make each request larger, so it is
    never applied nor stored, not in a later turn either; every request carries the earlier
    conversation (or a summary standing for it); and a span the summary model already answered
    too long for is not asked to be summarised again and again."""
    words = " ".join(f"word{k}" for k in range(350))
    llama = LlamaServer(n_ctx=8192, summary="A very detailed account of everything. " * 520)
    bodies: list[dict] = []
    handle = llama.handle

    def recording(recorded):
        bodies.append(recorded.json())
        return handle(recorded)

    llama.handle = recording
    with llama.serve() as server:
        for i in range(1, 9):
            asked = len(llama.seen)
            done, events = run([*flags(server.url, "openai"), "-p", f"turn {i}: {words}", *(["-c"] if i > 1 else [])],
                               repo, env)
            assert of(events, "session.compacted") == [], (i, done.stderr)
            # One summary request a turn at most: not another after the server refused the prompt.
            assert sum(s.summary for s in llama.seen[asked:]) <= 1, (i, done.stderr)
    for body, seen in zip(bodies, llama.seen):
        if seen.summary or seen.refused:
            continue
        text = json.dumps(body["messages"])
        first = text.find("turn 1:")
        assert first >= 0 or "[Conversation summary]" in text, ("the earlier turns were dropped", text[:300])
    assert any(s.summary for s in llama.seen)


async def test_a_span_whose_summary_came_out_too_large_is_not_summarised_again(tmp_path):
    """The same agent, two turns past ``auto_compact``, whose summary model writes more than the
    conversation it stands for: the first turn asks for a summary and does not apply it; the
    second, with the same cut, does not ask again."""
    llama = LlamaServer(n_ctx=200_000, summary="Everything, at length. " * 8_000)
    history = conversation(30, 2_000)
    with llama.serve() as server:
        agent = agent_for(server.url, tmp_path, context_window=60_000, auto_compact=0.5, keep_tokens=1_000)
        first = [e async for e in agent.run(history, "and now?")]
        again = [e async for e in agent.run(history, "and now?")]  # sent again: the same cut
    assert agent.window.compaction is None
    assert any("not applied" in e.data["text"] for e in first if e.type == "notice")
    assert [e.data["text"] for e in again if e.type == "notice" and "too large" in e.data["text"]], [(e.type, e.data) for e in again][:6]
    assert sum(s.summary for s in llama.seen) == 1
    assert [e.data for e in first + again if e.type == "turn.end"] == [{"stop_reason": "end_turn"}] * 2
