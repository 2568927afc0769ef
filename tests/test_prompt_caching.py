"""Prompt caching end to end: where the Anthropic breakpoints land, what long agent runs read
from the emulated provider caches over real HTTP, OpenAI's prompt_cache_key, and the reasons
the prompt viewer gives for a cache miss."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from cache_emulator import AnthropicCache, OpenAICache, anthropic_sse, loopback_handler, openai_sse
from loopback import LoopbackServer
from scripted_model import ScriptedModel, write_files

from scout_tui.engine import compaction
from scout_tui.engine.agent import Agent
from scout_tui.engine.settings import AgentSettings
from scout_tui.backends import make_backend
from scout_tui.backends.anthropic import AnthropicBackend
from scout_tui.backends.anthropic_cache import MAX_BREAKPOINTS, place_breakpoints
from scout_tui.backends.base import Request
from scout_tui.engine.compaction import epoch_bounds, resolve_settings
from scout_tui.engine.history import problems
from scout_tui.tools import builtin_registry

MODEL = "claude-sonnet-4-5"
SYSTEM = "You are a careful coding assistant working in a test repository. " * 20
EPOCHS = {"epoch_tool_call_threshold": 20, "epoch_full_tool_calls": 5, "epoch_compacted_tool_calls": 10,
          "epoch_size": 10}
"""Small epochs, so a 64-call run crosses five epoch boundaries (at 21, 31, 41, 51 and 61 calls)."""


def marks(body: dict) -> list[tuple[str, str]]:
    """``(where, ttl)`` of every cache_control in ``body``, in render order (nested ones too)."""
    found = []
    for i, tool in enumerate(body.get("tools") or []):
        if "cache_control" in tool:
            found.append((f"tools.{i}", tool["cache_control"].get("ttl", "5m")))
    system = body.get("system")
    for i, block in enumerate(system if isinstance(system, list) else []):
        if "cache_control" in block:
            found.append((f"system.{i}", block["cache_control"].get("ttl", "5m")))
    for m, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        for b, block in enumerate(content if isinstance(content, list) else []):
            if "cache_control" in block:
                found.append((f"messages.{m}.{b}", block["cache_control"].get("ttl", "5m")))
            nested = block.get("content") if block.get("type") == "tool_result" else None
            for n, inner in enumerate(nested if isinstance(nested, list) else []):
                if isinstance(inner, dict) and "cache_control" in inner:
                    found.append((f"messages.{m}.{b}.{n}", inner["cache_control"].get("ttl", "5m")))
    return found


def tools() -> list[dict]:
    return [{"name": t["name"], "description": t["description"], "input_schema": t["input_schema"]}
            for t in builtin_registry().specs()]


def rounds(n: int, size: int = 2_000, first: int = 0, parallel: int = 1) -> list[dict]:
    """``n`` rounds of ``parallel`` tool calls each, with results of ``size`` characters."""
    out = []
    for r in range(first, first + n):
        ids = [f"t{r}_{p}" for p in range(parallel)]
        out.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": tid, "name": "read", "input": {"path": f"{tid}.py"}} for tid in ids]})
        out.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": f"{tid}: " + "x" * size, "is_error": False}
            for tid in ids]})
    return out


def body_of(messages: list[dict], *, system: str = SYSTEM, with_tools: bool = True) -> dict:
    """A Messages body without any breakpoint yet."""
    body = {"model": MODEL, "max_tokens": 1024, "messages": copy.deepcopy(messages)}
    if system:
        body["system"] = system
    if with_tools:
        body["tools"] = tools()
    return body


TASK = [{"role": "user", "content": [{"type": "text", "text": "Read the files and report."}]}]


# --- place_breakpoints -----------------------------------------------------------------------


def test_breakpoints_land_on_the_last_tool_the_system_the_stable_end_and_the_newest_block():
    messages = TASK + rounds(6)  # 13 messages; the first 7 stay fixed until the next epoch
    body = body_of(messages)
    placed = place_breakpoints(body, stable=7, min_tokens=1024)
    assert placed == ["tools", "system", "stable", "newest"]
    assert [w for w, _ in marks(body)] == [f"tools.{len(body['tools']) - 1}", "system.0", "messages.6.0", "messages.12.0"]


def test_no_breakpoint_goes_where_the_prefix_is_below_the_minimum():
    body = body_of(TASK, system="Be brief.", with_tools=False)
    assert place_breakpoints(body, stable=0, min_tokens=1024) == []
    assert marks(body) == []
    # The same prompt past the minimum gets its breakpoint.
    body = body_of(TASK + rounds(3, size=2_000), system="Be brief.", with_tools=False)
    assert place_breakpoints(body, stable=0, min_tokens=1024) == ["newest"]


def test_a_prefix_short_of_the_minimum_leaves_the_early_breakpoints_out():
    body = body_of(TASK + rounds(8), system="Short.", with_tools=False)
    placed = place_breakpoints(body, stable=3, min_tokens=2048)  # the stable end is ~1,100 tokens in
    assert placed == ["newest"]


def test_there_are_never_more_than_four_breakpoints_even_when_every_block_was_marked():
    messages = TASK + rounds(12, parallel=3)
    for message in messages:
        for block in message["content"]:
            block["cache_control"] = {"type": "ephemeral"}
            if block.get("type") == "tool_result":
                block["content"] = [{"type": "text", "text": block["content"], "cache_control": {"type": "ephemeral"}}]
    body = body_of(messages)
    place_breakpoints(body, stable=5, min_tokens=1024)
    assert 0 < len(marks(body)) <= MAX_BREAKPOINTS, marks(body)
    AnthropicCache().bill(body)  # the emulated API accepts it (it raises the API's 400 otherwise)


def test_1h_breakpoints_go_on_what_stays_put_and_never_after_a_5m_one():
    previous = TASK + rounds(3)
    messages = previous + rounds(1, first=3, parallel=12)  # 24 blocks since the previous request
    body = body_of(messages)
    placed = place_breakpoints(body, stable=3, ttl="1h", min_tokens=1024)
    assert placed == ["system", "stable", "bridge", "newest"]  # the bridge took the tools' place
    ttls = dict(marks(body))
    assert ttls == {"system.0": "1h", "messages.2.0": "1h", "messages.6.0": "5m", "messages.8.11": "5m"}
    usage = AnthropicCache().bill(body)
    assert usage["cache_creation"]["ephemeral_1h_input_tokens"] > 0
    assert usage["cache_creation"]["ephemeral_5m_input_tokens"] > 0


def test_with_5m_every_breakpoint_is_plain_ephemeral():
    body = body_of(TASK + rounds(6))
    place_breakpoints(body, stable=7, min_tokens=1024)
    assert {ttl for _, ttl in marks(body)} == {"5m"}
    assert all("ttl" not in block["cache_control"] for block in body["messages"][6]["content"])


def test_after_many_parallel_calls_a_bridge_at_the_previous_end_reads_the_whole_previous_prompt():
    backend = AnthropicBackend(model=MODEL)
    cache = AnthropicCache()
    previous = TASK + rounds(3)
    first = backend.body(Request(model=MODEL, messages=previous, system=SYSTEM, tools=tools()))
    written = cache.bill(first)
    assert written["cache_creation_input_tokens"] > 0
    current = previous + rounds(1, first=3, parallel=15)  # 30 blocks past the previous end
    body = backend.body(Request(model=MODEL, messages=current, system=SYSTEM, tools=tools()))
    assert (f"messages.{len(previous) - 1}.0", "5m") in marks(body)  # the bridge
    probe = copy.deepcopy(cache)
    usage = cache.bill(body)
    assert usage["cache_read_input_tokens"] == cache.tokens_of(first)
    # Without the bridge the newest breakpoint's 20-block lookback would miss the previous end.
    bare = copy.deepcopy(body)
    del bare["messages"][len(previous) - 1]["content"][0]["cache_control"]
    assert probe.bill(bare)["cache_read_input_tokens"] < cache.tokens_of(first)


# --- agent runs over real HTTP against the emulated caches -------------------------------------


def make_agent(api: str, url: str, cwd: Path, model: str = MODEL, **kw) -> Agent:
    backend = make_backend(api, model=model, api_key="sk-test", base_url=url, max_retries=0)
    if api == "openai":
        backend.send_cache_key = kw.pop("send_cache_key", "on")
    return Agent(backend, builtin_registry(), AgentSettings(system=SYSTEM, cwd=cwd, **kw))


async def run_turn(agent: Agent, history: list[dict], text: str) -> list:
    return [event async for event in agent.run(history, text)]


def prompt_tokens(billed, api: str) -> tuple[int, int]:
    """(every input token, the cache read) of one billed request."""
    u = billed.usage
    if api == "anthropic":
        return u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"], u["cache_read_input_tokens"]
    return u["prompt_tokens"], u["prompt_tokens_details"]["cached_tokens"]


def uncompacted_tokens(api: str, emulator, messages: list[dict], model: str) -> int:
    """Tokens the stored ``messages`` would be sent as without compaction (the baseline)."""
    if api == "anthropic":
        body = AnthropicBackend(model=model).body(Request(model=model, messages=messages, system=SYSTEM, tools=builtin_registry().specs()))
    else:
        from scout_tui.backends.openai import OpenAIBackend
        body = OpenAIBackend(model=model).body(Request(model=model, messages=messages, system=SYSTEM, tools=builtin_registry().specs()))
    return emulator.tokens_of(body)


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_a_long_tool_run_reads_each_previous_prompt_from_the_cache_within_an_epoch(tmp_path, api):
    files = write_files(tmp_path, 64, 4_000)
    model = MODEL if api == "anthropic" else "gpt-4.1"
    emulator = AnthropicCache() if api == "anthropic" else OpenAICache()
    script = ScriptedModel(api, files)
    handler = loopback_handler(emulator, script)
    with LoopbackServer(handler=handler) as server:
        agent = make_agent(api, server.url, tmp_path, model=model, compaction_settings=EPOCHS, max_turns=100,
                           context_window=200_000, cache_key="branch-1")
        events = await run_turn(agent, [], "Read every file in the folder, one at a time, and check them.")
    assert [e.data for e in events if e.type == "turn.end"] == [{"stop_reason": "end_turn"}]
    assert not [e for e in events if e.type == "error"]
    assert script.calls == 64 and script.finals == 1
    billed = handler.billed
    assert len(billed) == 65 and not [b for b in billed if b.rejected]

    settings = resolve_settings(EPOCHS)
    epoch = [epoch_bounds(k, settings)[0] for k in range(65)]  # request k follows k tool calls
    assert len(set(epoch)) == 6  # five boundaries crossed
    short = []
    for k in range(1, 65):
        previous, _ = prompt_tokens(billed[k - 1], api)
        _, read = prompt_tokens(billed[k], api)
        # OpenAI counts hits in 128-token steps, so up to 127 tokens (plus the closing
        # bracket of the previous messages list) may go unread.
        slack = 0 if api == "anthropic" else 130
        if epoch[k] == epoch[k - 1] and read < previous - slack:
            short.append((k, previous, read))
    assert short == [], f"requests that did not read the previous prompt (k, previous, read): {short}"

    reports = [e.data["cache"] for e in events if e.type == "prompt.compacted"]
    boundaries = [k for k in range(1, 65) if epoch[k] != epoch[k - 1]]
    assert [k for k, why in enumerate(reports) if why] == boundaries
    assert all("epoch boundary" in reports[k] for k in boundaries)

    if api == "anthropic":
        cost = sum(b.usage["input_tokens"] + 1.25 * b.usage["cache_creation_input_tokens"]
                   + 0.1 * b.usage["cache_read_input_tokens"] for b in billed)
    else:
        cost = sum(b.usage["prompt_tokens"] - 0.9 * b.usage["prompt_tokens_details"]["cached_tokens"] for b in billed)
        assert {b.body.get("prompt_cache_key") for b in billed} == {"branch-1"}
    baseline = sum(uncompacted_tokens(api, emulator, agent.messages[: 1 + 2 * k], model) for k in range(65))
    share = cost / baseline
    print(f"{api}: effective input cost {share:.3f}x of the uncompacted, uncached run")
    assert share < 0.15, share


async def test_each_branch_sends_its_own_stable_cache_key(tmp_path):
    script = lambda body, usage: openai_sse(usage, ["ok"])  # noqa: E731
    handler = loopback_handler(OpenAICache(), script)
    with LoopbackServer(handler=handler) as server:
        main = make_agent("openai", server.url, tmp_path, model="gpt-4.1", cache_key="session-a")
        await run_turn(main, [], "first")
        await run_turn(main, main.messages, "second")
        fork = make_agent("openai", server.url, tmp_path, model="gpt-4.1", cache_key="session-b")
        await run_turn(fork, main.messages[:2], "another way")
    assert [b.body.get("prompt_cache_key") for b in handler.billed] == ["session-a", "session-a", "session-b"]


async def test_auto_sends_no_cache_key_to_a_server_other_than_openai(tmp_path):
    handler = loopback_handler(OpenAICache(), lambda body, usage: openai_sse(usage, ["ok"]))
    with LoopbackServer(handler=handler) as server:
        agent = make_agent("openai", server.url, tmp_path, model="gpt-4.1", cache_key="s", send_cache_key="auto")
        await run_turn(agent, [], "hi")
    assert "prompt_cache_key" not in handler.billed[0].body


async def test_a_server_that_refuses_prompt_cache_key_still_answers_and_is_not_sent_it_again(tmp_path):
    files = write_files(tmp_path, 1, 500)
    script = ScriptedModel("openai", files)
    handler = loopback_handler(OpenAICache(reject_prompt_cache_key=True), script)
    with LoopbackServer(handler=handler) as server:
        agent = make_agent("openai", server.url, tmp_path, model="gpt-4.1", cache_key="branch-1")
        events = await run_turn(agent, [], "read the file")
        later = await run_turn(agent, agent.messages, "thanks")
    assert not [e for e in events + later if e.type == "error"]
    assert [e.data for e in events if e.type == "turn.end"] == [{"stop_reason": "end_turn"}]
    sent = [("prompt_cache_key" in b.body, b.rejected is not None) for b in handler.billed]
    assert sent == [(True, True), (False, False), (False, False), (False, False)]
    assert len(server.requests) == 4  # one resend, then never the field again


async def test_a_plugin_strategy_that_marks_every_block_still_gets_at_most_four_breakpoints(tmp_path):
    def mark_everything(messages: list[dict]) -> list[dict]:
        out = []
        for message in messages:
            content = []
            for block in message["content"]:
                block = {**block, "cache_control": {"type": "ephemeral", "ttl": "1h"}}
                if block["type"] == "tool_result" and isinstance(block["content"], str):
                    block["content"] = [{"type": "text", "text": block["content"], "cache_control": {"type": "ephemeral"}}]
                content.append(block)
            out.append({**message, "content": content})
        return out

    compaction.register_strategy("mark_everything", mark_everything)
    files = write_files(tmp_path, 6, 3_000)
    handler = loopback_handler(AnthropicCache(), ScriptedModel("anthropic", files))
    with LoopbackServer(handler=handler) as server:
        agent = make_agent("anthropic", server.url, tmp_path, strategies="mark_everything")
        events = await run_turn(agent, [], "read them")
    assert not [e for e in events if e.type == "error"], [e.data for e in events if e.type == "error"]
    assert [b.rejected for b in handler.billed] == [None] * 7
    assert all(len(marks(b.body)) <= MAX_BREAKPOINTS for b in handler.billed)
    assert handler.billed[-1].usage["cache_read_input_tokens"] > 0


# --- cache-miss reasons in the prompt.compacted event ------------------------------------------


def caches(events: list) -> list[str]:
    return [e.data["cache"] for e in events if e.type == "prompt.compacted"]


async def test_a_model_switch_is_reported_as_a_cache_miss(tmp_path):
    handler = loopback_handler(AnthropicCache(), lambda body, usage: anthropic_sse(usage, ["ok"]))
    with LoopbackServer(handler=handler) as server:
        agent = make_agent("anthropic", server.url, tmp_path)
        first = await run_turn(agent, [], "hello " * 800)
        same = await run_turn(agent, agent.messages, "and again")
        agent.backend = make_backend("anthropic", model="claude-opus-4-1", api_key="sk-test", base_url=server.url,
                                     max_retries=0)
        switched = await run_turn(agent, agent.messages, "now with the other model")
    assert caches(first) == [""] and caches(same) == [""]
    [why] = caches(switched)
    assert "model changed" in why and MODEL in why and "claude-opus-4-1" in why
    assert handler.billed[1].usage["cache_read_input_tokens"] > 0
    assert handler.billed[2].usage["cache_read_input_tokens"] == 0  # a real miss at the provider too


async def test_an_epoch_boundary_is_reported_as_such(tmp_path):
    files = write_files(tmp_path, 32, 1_000)
    handler = loopback_handler(AnthropicCache(), ScriptedModel("anthropic", files))
    with LoopbackServer(handler=handler) as server:
        agent = make_agent("anthropic", server.url, tmp_path, compaction_settings=EPOCHS, max_turns=40)
        events = await run_turn(agent, [], "read them all")
    reports = caches(events)
    assert [k for k, why in enumerate(reports) if why] == [21, 31]  # the cut moves at 21 and 31 calls
    assert "epoch boundary" in reports[21] and "0 → 5 calls dropped, 0 → 10 truncated" in reports[21]
    assert "epoch boundary" in reports[31] and "5 → 15 calls dropped" in reports[31]


async def test_a_strategy_change_is_reported_as_such(tmp_path):
    files = write_files(tmp_path, 8, 1_500)
    handler = loopback_handler(AnthropicCache(), ScriptedModel("anthropic", files))
    settings = {"full_tool_outputs": 2, "max_tool_chars": 1_000}
    with LoopbackServer(handler=handler) as server:
        agent = make_agent("anthropic", server.url, tmp_path, strategies="none", compaction_settings=settings)
        await run_turn(agent, [], "read them")
        agent.window.strategies = "shorten_tools"
        events = await run_turn(agent, agent.messages, "once more")
    [why] = caches(events)
    assert "prompt strategy changed (none → shorten_tools)" in why
    assert problems(agent.messages) == []


async def test_a_summary_compaction_is_reported_as_such(tmp_path):
    files = write_files(tmp_path, 12, 2_000)
    script = ScriptedModel("anthropic", files)
    handler = loopback_handler(AnthropicCache(), script)
    with LoopbackServer(handler=handler) as server:
        agent = make_agent("anthropic", server.url, tmp_path, keep_tokens=1_000)
        await run_turn(agent, [], "read them")
        agent.window.apply_compaction(await agent.window.summarize())
        events = await run_turn(agent, agent.messages, "and now?")
    [why] = caches(events)
    assert "a summary compaction replaced the older messages" in why


async def test_a_cut_by_the_token_budget_is_reported_as_such(tmp_path):
    files = write_files(tmp_path, 12, 4_000)
    handler = loopback_handler(AnthropicCache(), ScriptedModel("anthropic", files))
    with LoopbackServer(handler=handler) as server:
        agent = make_agent("anthropic", server.url, tmp_path, context_window=16_000, max_tokens=1_000)
        events = await run_turn(agent, [], "read them")
    compacted = [e.data for e in events if e.type == "prompt.compacted"]
    first_cut = next(k for k, d in enumerate(compacted) if d["budget_cut"])
    assert compacted[first_cut]["cache"].endswith("the token budget cut tool results to fit the context window")
    assert all(d["cache"] == "" for d in compacted[:first_cut])
    assert not [b for b in handler.billed if b.rejected]


async def test_1h_breakpoints_over_a_long_run_are_accepted_and_read(tmp_path):
    files = write_files(tmp_path, 30, 4_000)
    handler = loopback_handler(AnthropicCache(), ScriptedModel("anthropic", files))
    with LoopbackServer(handler=handler) as server:
        agent = make_agent("anthropic", server.url, tmp_path, compaction_settings=EPOCHS, max_turns=40, cache_ttl="1h")
        events = await run_turn(agent, [], "read them")
    assert not [e for e in events if e.type == "error"]
    assert all(r.headers.get("anthropic-beta") == "extended-cache-ttl-2025-04-11" for r in server.requests)
    usages = [b.usage for b in handler.billed]
    assert sum(u["cache_creation"]["ephemeral_1h_input_tokens"] for u in usages) > 0
    assert sum(u["cache_creation"]["ephemeral_5m_input_tokens"] for u in usages) > 0
    assert all(u["cache_read_input_tokens"] > 0 for u in usages[1:])
    # The 1h part is what stays put: tools, system and the epoch-stable end, never the newest block.
    for b in handler.billed:
        ttls = [ttl for _, ttl in marks(b.body)]
        assert ttls == sorted(ttls, key=lambda t: t != "1h")  # every 1h before every 5m
        assert ttls[-1] == "5m"


def test_a_result_the_budget_cut_to_another_size_is_named_as_the_budget():
    """The same number of cuts, but a cut result shorter than last time: still the budget."""
    from scout_tui.engine.cache_report import PromptRecord, explain

    def record(cut_to: int) -> PromptRecord:
        messages = [{"role": "user", "content": [{"type": "text", "text": "go"}]},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "read", "input": {}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x" * cut_to}]}]
        return PromptRecord("m", 1, ("shorten_tools_epoch",), 0, 0, 1, 2, None, messages)

    assert "token budget" in explain(record(2_817), record(2_484))
    # The same change where the budget cut nothing is an edited history.
    untouched = [PromptRecord("m", 1, ("shorten_tools_epoch",), 0, 0, 0, None, None, record(size).messages)
                 for size in (2_484, 100)]
    assert "history before it changed" in explain(*untouched)
