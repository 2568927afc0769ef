"""A conversation that outgrows the context window finishes its task (issue 10's acceptance run).

Loopback servers emulate each API's documented overflow answer (``cache_emulator``: Anthropic's
400 "prompt is too long: N tokens > W maximum", OpenAI's 400 ``context_length_exceeded``) for a
small window. A scripted model reads 40 files of 5,000 characters (over three windows in all),
answers summary requests with a summary, then gives its final answer. Each API runs twice: with
the window known to the agent (auto-compaction and the token budget keep every request inside
it) and unknown (the first overflow teaches it, compaction and one retry recover).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cache_emulator import AnthropicCache, OpenAICache, anthropic_sse, loopback_handler, openai_sse
from loopback import LoopbackServer, Reply
from scripted_model import FINAL, ScriptedModel, is_summary_request, write_files

from scout_tui.engine.agent import Agent
from scout_tui.engine.settings import AgentSettings
from scout_tui.backends import make_backend
from scout_tui.core.errors import ModelError
from scout_tui.engine.history import problems
from scout_tui.core.messages import is_turn_marker
from scout_tui.tools import builtin_registry

WINDOW = 16_000
MAX_TOKENS = 1_024
FILES, SIZE = 40, 5_000
MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4.1"}

refusals: dict[str, int] = {}
"""Refused requests per case, for the report printed at the end of the module."""


def emulator(api: str, **kw):
    return AnthropicCache(context_window=WINDOW, **kw) if api == "anthropic" else OpenAICache(context_window=WINDOW)


def make_agent(api: str, url: str, cwd: Path, *, window: int | None, max_tokens: int = MAX_TOKENS) -> Agent:
    """An agent as ``runtime.build_agent`` makes one: a quarter of a known window stays verbatim
    after a summary, the default otherwise."""
    backend = make_backend(api, model=MODELS[api], api_key="sk-test", base_url=url, max_retries=0)
    extra = {"keep_tokens": window // 4} if window else {}
    settings = AgentSettings(system="You are a careful coding assistant.", cwd=cwd,
                             max_tokens=max_tokens, max_turns=200, context_window=window, auto_compact=0.85, **extra)
    return Agent(backend, builtin_registry(), settings)


def input_tokens(api: str, usage: dict) -> int:
    if api == "anthropic":
        return usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
    return usage["prompt_tokens"]


@pytest.mark.parametrize("known", [True, False], ids=["window-known", "window-unknown"])
@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_a_run_three_times_the_window_finishes_its_task(tmp_path, api, known):
    files = write_files(tmp_path, FILES, SIZE)
    script = ScriptedModel(api, files)
    cache = emulator(api)
    handler = loopback_handler(cache, script)
    with LoopbackServer(handler=handler) as server:
        agent = make_agent(api, server.url, tmp_path, window=WINDOW if known else None)
        events = [e async for e in agent.run([], "Read every file in the folder, one at a time, and check them.")]

    billed = handler.billed
    refused = [k for k, b in enumerate(billed) if b.rejected]
    case = f"{api}, window {'known' if known else 'unknown'}"
    refusals[case] = len(refused)
    print(f"\n{case}: {len(billed)} requests, {len(refused)} refused, {script.summaries} summaries")
    errors = [e.data["message"] for e in events if e.type == "error"]
    assert errors == [], f"{case}: {errors}"
    assert [e.data for e in events if e.type == "turn.end"] == [{"stop_reason": "end_turn"}]
    assert agent.messages[-1]["content"] == [{"type": "text", "text": FINAL}]
    assert script.calls == FILES and script.finals == 1
    assert problems(agent.messages) == []
    # The conversation really grew past three windows (every byte of it is kept).
    results = sum(len(b["content"]) for m in agent.messages if m["role"] == "user"
                  for b in m["content"] if b.get("type") == "tool_result")
    assert results / 4 >= 3 * WINDOW
    assert [e for e in events if e.type == "session.compacted"]

    if known:
        assert refused == [], f"{case}: requests {refused} were refused"
    else:
        assert refused, f"{case}: the unknown window was never hit, so nothing was recovered"
        first = refused[0]
        assert billed[first + 1].body["messages"] != billed[first].body["messages"]  # never the same prompt again
        later = refused[1:]
        assert later == [], f"{case}: after the first recovery requests {later} were refused ({len(refused)} in all)"
        assert agent.window.context_window == WINDOW  # learnt from the error message
    recovered = refused[0] + 1 if refused else 0
    over = [(k, input_tokens(api, b.usage)) for k, b in enumerate(billed[recovered:], recovered)
            if input_tokens(api, b.usage) + MAX_TOKENS > WINDOW]
    assert over == [], f"{case}: requests without room for the answer: {over}"


async def test_anthropic_input_plus_max_tokens_over_the_window_is_recovered_too(tmp_path):
    """Older Claude models refuse input + max_tokens over the window ("input length and
    `max_tokens` exceed context limit: I + M > W"): the window is learnt from that message too."""
    files = write_files(tmp_path, FILES, SIZE)
    script = ScriptedModel("anthropic", files)
    handler = loopback_handler(emulator("anthropic", max_tokens_overflow="reject"), script)
    with LoopbackServer(handler=handler) as server:
        agent = make_agent("anthropic", server.url, tmp_path, window=None, max_tokens=4_000)
        events = [e async for e in agent.run([], "Read every file, one at a time.")]
    refused = [b.rejected for b in handler.billed if b.rejected]
    refusals["anthropic, input + max_tokens rule, window unknown"] = len(refused)
    assert "exceed context limit" in str(refused[0])  # the rule under test, not "prompt is too long"
    assert [e.data["message"] for e in events if e.type == "error"] == []
    assert [e.data for e in events if e.type == "turn.end"] == [{"stop_reason": "end_turn"}]
    assert len(refused) == 1 and agent.window.context_window == WINDOW


class WithoutWindow:
    """A handler answering overflows as older llama.cpp servers do: a message without numbers
    ("the request exceeds the available context size, try increasing it")."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.billed = inner.billed

    def __call__(self, recorded):
        reply = self.inner(recorded)
        if reply.status != 400:
            return reply
        body = {"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                          "type": "exceed_context_size_error"}}
        return Reply(json.dumps(body).encode(), 400, {"content-type": "application/json"})


async def test_an_overflow_that_names_no_window_is_recovered_and_the_run_finishes(tmp_path):
    files = write_files(tmp_path, FILES, SIZE)
    script = ScriptedModel("openai", files)
    handler = WithoutWindow(loopback_handler(emulator("openai"), script))
    with LoopbackServer(handler=handler) as server:
        agent = make_agent("openai", server.url, tmp_path, window=None)
        events = [e async for e in agent.run([], "Read every file, one at a time.")]
    refused = [k for k, b in enumerate(handler.billed) if b.rejected]
    refusals["openai, overflow message without the window"] = len(refused)
    assert [e.data["message"] for e in events if e.type == "error"] == []
    assert [e.data for e in events if e.type == "turn.end"] == [{"stop_reason": "end_turn"}]
    assert script.calls == FILES and script.finals == 1
    notices = [e.data["text"] for e in events if e.type == "notice"]
    assert any("did not say how large the window is" in n for n in notices)
    # The window taken from the refused request is an upper bound close to the real one.
    assert WINDOW <= agent.window.context_window < WINDOW * 1.3
    assert len(refused) <= 2, refused


@pytest.mark.parametrize("message, window", [
    ("prompt is too long: 210000 tokens > 200000 maximum", 200_000),
    ("input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000, decrease input length "
     "or `max_tokens` and try again", 200_000),
    ("This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens "
     "(129000 in the messages, 1000 in the functions). Please reduce the length of the messages or functions.", 128_000),
    ("This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (5000 in the "
     "messages, 4000 in the completion). Please reduce the length of the messages or completion.", 8_192),  # vLLM
    ("request (4476 tokens) exceeds the available context size (4096 tokens)", 4_096),  # llama.cpp
])
def test_an_overflow_message_is_classified_and_its_window_learnt_only_downwards(message, window):
    from scout_tui.backends.failures import classify

    assert classify(400, "invalid_request_error", None, message)[0] == "context_overflow"
    agent = Agent(make_backend("openai", model="m", api_key="k"), builtin_registry())
    assert agent.window._learn_window(ModelError(message, kind="context_overflow")) is False
    assert agent.window.context_window == window
    agent.window._learn_window(ModelError(message.replace(str(window), str(window * 2)), kind="context_overflow"))
    assert agent.window.context_window == window  # a larger figure never widens a known window


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_an_overflow_compaction_cannot_answer_ends_with_advice_and_no_resend_loop(tmp_path, api):
    """The person's own message is over the window: nothing can be summarised or cut, so the
    turn ends with what to do, after one refused request and without sending it again."""
    reply = (lambda body, usage: anthropic_sse(usage, ["never"])) if api == "anthropic" else (
        lambda body, usage: openai_sse(usage, ["never"]))
    handler = loopback_handler(emulator(api), reply)
    with LoopbackServer(handler=handler) as server:
        agent = make_agent(api, server.url, tmp_path, window=None)
        events = [e async for e in agent.run([], "Here is the whole log:\n" + "E" * (WINDOW * 5))]
        first_turn = len(handler.billed)
        again = [e async for e in agent.run(agent.messages, "and what about this?")]
    errors = [e.data for e in events if e.type == "error"]
    assert len(errors) == 1 and errors[0]["kind"] == "context_overflow"
    # It names the culprit, the person's own message, and the fork that leaves it out.
    assert "Message 0, which you typed" in errors[0]["message"] and "`/fork 0`" in errors[0]["message"]
    assert [e.data for e in events if e.type == "turn.end"] == [{"stop_reason": "error"}]
    assert first_turn == 1, "the refused prompt was sent again"
    # The refused message stays in the session, marked, and is never sent again: the next turn
    # sends only its own prompt, and the person reads that the first was not sent.
    assert [e.data for e in events if e.type == "message.refused"] == [{"index": 0}]
    assert "not sent" in errors[0]["message"]
    assert [e.data for e in again if e.type == "turn.end"] == [{"stop_reason": "end_turn"}]
    assert len(server.requests) == 2 and "EEEE" not in server.requests[1].body.decode()
    # No summary request was sent: what it would summarise is the person's own text, over the window.
    assert not [b for b in handler.billed if is_summary_request(b.body)]
    assert agent.messages[0].get("incomplete") is True
    assert [m["content"][0]["text"][:20] for m in agent.messages[:2]] == ["Here is the whole lo", "and what about this?"]


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_a_summary_request_is_never_sent_over_the_learnt_window(tmp_path, api):
    files = write_files(tmp_path, FILES, SIZE)
    script = ScriptedModel(api, files)
    handler = loopback_handler(emulator(api), script)
    with LoopbackServer(handler=handler) as server:
        agent = make_agent(api, server.url, tmp_path, window=None)
        [e async for e in agent.run([], "Read every file, one at a time.")]
    summaries = [b for b in handler.billed if is_summary_request(b.body)]
    assert summaries and not [b for b in summaries if b.rejected]


def teardown_module() -> None:
    if refusals:
        print("\nrefused requests per overflow run: " + "; ".join(f"{k}: {v}" for k, v in refusals.items()))


async def test_a_configured_window_larger_than_the_servers_is_corrected_by_its_first_refusal(tmp_path):
    files = write_files(tmp_path, FILES, SIZE)
    script = ScriptedModel("openai", files)
    handler = WithoutWindow(loopback_handler(emulator("openai"), script))
    with LoopbackServer(handler=handler) as server:
        agent = make_agent("openai", server.url, tmp_path, window=200_000)
        events = [e async for e in agent.run([], "Read every file, one at a time.")]
    refused = [k for k, b in enumerate(handler.billed) if b.rejected]
    refusals["openai, configured window 200k, server 16k naming none"] = len(refused)
    assert [e.data["message"] for e in events if e.type == "error"] == []
    assert [e.data for e in events if e.type == "turn.end"] == [{"stop_reason": "end_turn"}]
    assert WINDOW <= agent.window.context_window < WINDOW * 1.3
    assert len(refused) == 1, refused


async def test_text_that_costs_more_tokens_than_estimated_is_calibrated_for(tmp_path):
    """Escaped text (quotes, backslashes, newlines) costs the server twice the estimated tokens:
    the estimator learns it from the reported usage, so only the first overflow is refused."""
    files = write_files(tmp_path, 10, SIZE)
    for i in range(10, FILES):
        name = f"file_{i:03d}.json"
        (tmp_path / name).write_text(('"\\"\n' * SIZE)[: SIZE * 2])
        files.append(name)
    script = ScriptedModel("anthropic", files)
    handler = loopback_handler(emulator("anthropic"), script)
    with LoopbackServer(handler=handler) as server:
        agent = make_agent("anthropic", server.url, tmp_path, window=None)
        events = [e async for e in agent.run([], "Read every file, one at a time.")]
    refused = [k for k, b in enumerate(handler.billed) if b.rejected]
    refusals["anthropic, escaped text, window unknown"] = len(refused)
    assert [e.data["message"] for e in events if e.type == "error"] == []
    assert [e.data for e in events if e.type == "turn.end"] == [{"stop_reason": "end_turn"}]
    assert agent.window.estimator.ratio > 1.2
    assert len(refused) == 1, refused


async def test_a_second_overflow_in_the_same_turn_is_recovered_as_the_first(tmp_path):
    """The server's window shrinks mid-turn (a local server restarted with a smaller context):
    each overflow that follows a successful request gets its own compaction and retry."""
    files = write_files(tmp_path, FILES, SIZE)
    script = ScriptedModel("openai", files)
    cache = emulator("openai")
    inner = loopback_handler(cache, script)

    def shrinking(recorded):
        if len(inner.billed) == 25:
            cache.context_window = 12_000
        return inner(recorded)

    with LoopbackServer(handler=shrinking) as server:
        agent = make_agent("openai", server.url, tmp_path, window=None)
        events = [e async for e in agent.run([], "Read every file, one at a time.")]
    refused = [k for k, b in enumerate(inner.billed) if b.rejected]
    refusals["openai, window shrinking mid-turn"] = len(refused)
    assert [e.data["message"] for e in events if e.type == "error"] == []
    assert [e.data for e in events if e.type == "turn.end"] == [{"stop_reason": "end_turn"}]
    assert len(refused) == 2 and refused[0] < 25 <= refused[1], refused
    assert agent.window.context_window == 12_000


@pytest.mark.parametrize("message, window", [
    ("prompt is too long: 210000 tokens > 200000 maximum", 200_000),  # Anthropic
    ("input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000, decrease input length", 200_000),
    ("This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
     128_000),  # OpenAI, vLLM
    ("the request exceeds the available context size (4096 tokens), try increasing it", 4_096),  # llama.cpp
    ("Input is too long for requested model.", None),  # names no window
])
def test_the_window_is_read_from_each_servers_overflow_message(message, window):
    from scout_tui.backends.failures import overflow_window

    assert overflow_window(message) == window


async def test_a_low_auto_compact_share_leaves_room_and_does_not_summarise_before_every_request(tmp_path):
    """auto_compact 0.3 of the window: what a summary keeps verbatim stays well under the
    threshold, so one summary serves several requests (a summary before almost every request
    made the cache useless and cost more than it saved)."""
    files = write_files(tmp_path, 24, SIZE)
    script = ScriptedModel("anthropic", files)
    handler = loopback_handler(AnthropicCache(context_window=60_000), script)
    with LoopbackServer(handler=handler) as server:
        backend = make_backend("anthropic", model=MODELS["anthropic"], api_key="sk-test", base_url=server.url,
                               max_retries=0)
        settings = AgentSettings(system="You are careful.", cwd=tmp_path, max_tokens=MAX_TOKENS,
                                 max_turns=200, context_window=60_000, auto_compact=0.3)
        agent = Agent(backend, builtin_registry(), settings)
        events = [e async for e in agent.run([], "Read every file, one at a time.")]
    assert [e.data for e in events if e.type == "turn.end"] == [{"stop_reason": "end_turn"}]
    requests = len(handler.billed) - script.summaries
    assert script.summaries >= 1
    assert requests >= 3 * script.summaries, (requests, script.summaries)
    compacted = [e.data for e in events if e.type == "session.compacted"]
    assert all(c["tokens_after"] < 0.3 * 60_000 * 0.8 < c["tokens_before"] for c in compacted)


def test_no_automatic_summary_when_it_would_save_little(tmp_path):
    """Past the threshold, but what lies before any cut point is small (the newest tool result
    is most of the prompt): a summary would replace almost nothing, so none is asked for."""
    def round_(i: int, size: int) -> list[dict]:
        return [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "read",
                                                   "input": {"path": f"f{i}"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "r" * size}]}]

    backend = make_backend("anthropic", model=MODELS["anthropic"], api_key="sk-test")
    settings = AgentSettings(system="You are careful.", cwd=tmp_path, max_tokens=MAX_TOKENS,
                             context_window=60_000, auto_compact=0.3)
    agent = Agent(backend, builtin_registry(), settings)
    agent.messages = [{"role": "user", "content": [{"type": "text", "text": "go"}]}, *round_(0, 400), *round_(1, 400),
                      *round_(2, 80_000)]
    assert agent.window.context_tokens(agent.window.preview()) > 0.3 * 60_000  # past the threshold
    assert agent.window.compaction_gain() < 0.2 and not agent.window.over_threshold(agent.window.preview())
    agent.messages[2]["content"][0]["content"] = "r" * 60_000  # now the older result is worth replacing
    assert agent.window.compaction_gain() > 0.2 and agent.window.over_threshold(agent.window.preview())


async def test_a_failed_automatic_summary_is_not_retried_before_every_request(tmp_path):
    files = write_files(tmp_path, 30, SIZE)

    def no_summaries(body: dict, usage: dict) -> bytes:
        if is_summary_request(body):
            return b'event: error\ndata: {"type": "error", "error": {"type": "api_error", "message": "down"}}\n\n'
        return script(body, usage)

    script = ScriptedModel("anthropic", files)
    handler = loopback_handler(AnthropicCache(context_window=WINDOW * 4), no_summaries)
    with LoopbackServer(handler=handler) as server:
        backend = make_backend("anthropic", model=MODELS["anthropic"], api_key="sk-test", base_url=server.url,
                               max_retries=0)
        settings = AgentSettings(system="You are careful.", cwd=tmp_path, max_tokens=MAX_TOKENS,
                                 context_window=WINDOW * 4, auto_compact=0.3, keep_tokens=WINDOW // 2)
        agent = Agent(backend, builtin_registry(), settings)
        events = [e async for e in agent.run([], "Read every file, one at a time.")]
    asked = [b for b in handler.billed if is_summary_request(b.body)]
    failures = [e for e in events if e.type == "notice" and "Could not summarise" in e.data["text"]]
    assert len(asked) == len(failures) == 1  # tried once in the turn, not before every request
    assert [e.data for e in events if e.type == "turn.end"] == [{"stop_reason": "end_turn"}]
