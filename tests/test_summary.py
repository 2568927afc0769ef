"""Summary compaction: where the cut goes, what the model sees after it, summary requests over
real HTTP, plugins supplying or vetoing a summary, auto-compaction at its threshold, and the
store's view of compactions and spending along branches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from cache_emulator import AnthropicCache, anthropic_sse, loopback_handler
from loopback import LoopbackServer
from scripted_model import is_summary_request

from scout_tui.engine import summary
from scout_tui.engine.agent import Agent, user_message
from scout_tui.engine.settings import AgentSettings
from scout_tui.backends import make_backend
from scout_tui.core.bus import TRANSIENT, Bus, Event
from scout_tui.engine.compaction import estimate_tokens
from scout_tui.core.errors import ScoutError
from scout_tui.engine.history import problems
from scout_tui.extensions.plugins import load_plugins
from scout_tui.store.event_log import Store
from scout_tui.engine.summary import INSTRUCTIONS, SUMMARY_HEADER, Compaction, cut_point, view
from scout_tui.tools import builtin_registry

SUMMARY_TEXT = "## Current task\n\"Fix the parser.\"\n\n## Next steps\nRun the tests."


def text(role: str, words: str) -> dict:
    return {"role": role, "content": [{"type": "text", "text": words}]}


def tool_round(i: int, size: int) -> list[dict]:
    return [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "read", "input": {"path": f"f{i}"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": f"{i}:" + "r" * size,
                                          "is_error": False}]}]


def turn(n: int, first: int, size: int, ask: str) -> list[dict]:
    """A person's request, ``n`` tool rounds with results of ``size`` characters, an answer."""
    out = [text("user", ask)]
    for i in range(first, first + n):
        out += tool_round(i, size)
    return out + [text("assistant", f"done with {ask}")]


def tail_tokens(messages: list[dict], cut: int) -> int:
    return estimate_tokens(messages[cut:])


# --- cut_point ---------------------------------------------------------------------------------


def test_the_cut_goes_at_a_turn_start_keeping_about_keep_tokens():
    messages = turn(5, 0, 4_000, "first") + turn(5, 5, 4_000, "second") + turn(5, 10, 4_000, "third")
    cut = cut_point(messages, keep_tokens=4_000)
    assert messages[cut]["content"][0]["text"] == "third"
    assert 4_000 <= tail_tokens(messages, cut) <= 8_000


def test_the_cut_prefers_the_latest_turn_start_that_keeps_enough():
    messages = turn(5, 0, 4_000, "first") + turn(5, 5, 4_000, "second") + turn(5, 10, 4_000, "third")
    cut = cut_point(messages, keep_tokens=7_000)  # "third" alone is ~5,000 tokens
    assert messages[cut]["content"][0]["text"] == "second"


def test_one_long_turn_is_cut_at_a_tool_round():
    messages = turn(40, 0, 4_000, "do it all")
    cut = cut_point(messages, keep_tokens=5_000)
    assert messages[cut]["role"] == "assistant" and messages[cut]["content"][0]["type"] == "tool_use"
    assert 5_000 <= tail_tokens(messages, cut) <= 6_100  # the smallest tail of at least keep_tokens


def test_a_turn_start_whose_tail_is_over_twice_keep_tokens_loses_to_a_round():
    messages = turn(2, 0, 400, "small") + turn(30, 2, 4_000, "big")
    cut = cut_point(messages, keep_tokens=3_000)
    assert messages[cut]["role"] == "assistant"  # "big" would keep ~30,000 tokens
    assert tail_tokens(messages, cut) < 6_000


def test_a_later_cut_comes_after_the_previous_one_and_none_when_nothing_is_left():
    messages = turn(20, 0, 4_000, "do it")
    first = cut_point(messages, keep_tokens=5_000)
    longer = messages + turn(20, 20, 4_000, "more")
    second = cut_point(longer, keep_tokens=5_000, start=first)
    assert second is not None and second > first
    assert 5_000 <= tail_tokens(longer, second) <= 6_100
    # Everything after the previous cut is newer than keep_tokens: the cut still moves on (half way).
    again = cut_point(messages, keep_tokens=5_000, start=first)
    assert first < again < len(messages) - 1
    assert cut_point([text("user", "hi")], keep_tokens=10) is None
    assert cut_point(messages, keep_tokens=5_000, start=len(messages) - 1) is None


# --- view ----------------------------------------------------------------------------------------


def test_the_summary_comes_first_and_the_messages_after_the_cut_follow():
    messages = turn(10, 0, 1_000, "first") + turn(3, 10, 1_000, "second")
    cut = messages.index(text("user", "second"))
    seen = view(messages, Compaction(cut, len(messages), SUMMARY_TEXT))
    first = seen[0]["content"]
    assert first[0]["text"].startswith(SUMMARY_HEADER) and first[0]["text"].endswith(SUMMARY_TEXT)
    assert first[1] == {"type": "text", "text": "second"}  # the turn's own text follows it
    assert seen[1:] == messages[cut + 1:]
    assert problems(seen) == []


def test_a_cut_at_a_tool_round_starts_with_the_summary_as_its_own_user_message():
    messages = turn(10, 0, 1_000, "first")
    cut = 7  # an assistant message with a tool call
    seen = view(messages, Compaction(cut, len(messages), SUMMARY_TEXT))
    assert [m["role"] for m in seen[:2]] == ["user", "assistant"]
    assert summary.is_summary_block(seen[0]["content"][0])
    assert problems(seen) == []


def test_no_compaction_or_one_past_the_end_shows_the_messages_as_they_are():
    messages = turn(3, 0, 100, "first")
    assert view(messages, None) is messages
    assert view(messages, Compaction(len(messages) + 5, 99, SUMMARY_TEXT)) is messages


@st.composite
def conversations(draw) -> list[dict]:
    messages: list[dict] = []
    for t in range(draw(st.integers(1, 5))):
        messages.append(text("user", f"turn {t} " + "w" * draw(st.integers(0, 2000))))
        n = draw(st.integers(0, 6))
        for r in range(n):
            calls = draw(st.integers(1, 3))
            ids = [f"t{t}_{r}_{c}" for c in range(calls)]
            messages.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": i, "name": "bash", "input": {"command": "ls"}} for i in ids]})
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": i, "content": "o" * draw(st.integers(0, 6000)), "is_error": False}
                for i in ids]})
        messages.append(text("assistant", f"answer {t}"))
    return messages


@hsettings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.integers(100, 8_000))
def test_any_cut_gives_a_valid_view_that_keeps_every_message_after_it(messages, keep):
    cut = cut_point(messages, keep)
    if cut is None:
        return
    assert 0 < cut < len(messages)
    seen = view(messages, Compaction(cut, len(messages), SUMMARY_TEXT))
    assert problems(seen) == []
    assert summary.is_summary_block(seen[0]["content"][0])
    after = messages[cut + 1:]
    assert seen[len(seen) - len(after):] == after


# --- summaries written by the model over HTTP ------------------------------------------------------


def replies(body: dict, usage: dict) -> bytes:
    """A model that answers summary requests with ``SUMMARY_TEXT`` and anything else with "ok"."""
    return anthropic_sse(usage, [SUMMARY_TEXT] if is_summary_request(body) else ["ok"])


def make_agent(url: str, cwd: Path, **kw) -> Agent:
    backend = make_backend("anthropic", model="claude-sonnet-4-5", api_key="sk-test", base_url=url, max_retries=0)
    return Agent(backend, builtin_registry(), AgentSettings(system="You are a test.", cwd=cwd, **kw))


def long_history(rounds: int = 30, size: int = 4_000) -> list[dict]:
    return turn(rounds, 0, size, "Fix the parser.") + [text("user", "go on")] + [text("assistant", "going")]


async def test_summarize_asks_with_the_focus_fits_the_window_and_returns_the_models_summary(tmp_path):
    window = 20_000
    handler = loopback_handler(AnthropicCache(context_window=window), replies)
    with LoopbackServer(handler=handler) as server:
        agent = make_agent(server.url, tmp_path, context_window=window, keep_tokens=window // 4)
        agent.messages = long_history()  # ~30,000 tokens: summarised whole, it would be refused
        data = await agent.window.summarize(focus="the failing test")
    assert data["summary"] == SUMMARY_TEXT and data["focus"] == "the failing test" and data["by"] == "user"
    assert data["model"] == "claude-sonnet-4-5" and data["usage"]["cache_write_tokens"] > 0
    assert data["count"] == len(agent.messages) and 0 < data["at"] < data["count"]
    assert data["tokens_after"] < data["tokens_before"]
    [request] = handler.billed
    assert request.rejected is None
    asked = json.dumps(request.body["messages"][-1])
    assert json.dumps(INSTRUCTIONS)[1:80] in asked
    assert "The user asked the summary to focus on: the failing test" in asked
    assert "cut to fit the context window" in json.dumps(request.body["messages"])  # fitted by the budget
    sent = request.usage["input_tokens"] + request.usage["cache_creation_input_tokens"] + request.usage["cache_read_input_tokens"]
    assert sent <= window
    assert agent.window.compaction is None  # summarize only proposes; apply_compaction applies
    agent.window.apply_compaction(data)
    assert summary.is_summary_block(agent.window.preview().messages[0]["content"][0])


async def test_summarize_with_nothing_to_summarise_says_so_without_a_request(tmp_path):
    handler = loopback_handler(AnthropicCache(), replies)
    with LoopbackServer(handler=handler) as server:
        agent = make_agent(server.url, tmp_path)
        agent.messages = [text("user", "hi")]
        with pytest.raises(ScoutError, match="nothing to compact"):
            await agent.window.summarize()
    assert server.requests == []


PLUGIN = '''
def scout(api):
    def before(event):
        if event.data["focus"] == "veto":
            event.data["veto"] = "the team keeps whole transcripts"
        else:
            event.data["summary"] = "Summary from the plugin: " + event.data["focus"]
    api.on("session.before_compact", before)
'''


def plugin_bus(tmp_path: Path) -> Bus:
    folder = tmp_path / "home" / ".agents" / "plugins"  # the user's: runs without being trusted
    folder.mkdir(parents=True)
    (folder / "keeper.py").write_text(PLUGIN)
    plugins = load_plugins(tmp_path, home=tmp_path / "home")
    assert plugins.problems == []
    bus = Bus()
    plugins.attach(bus)
    return bus


async def compact_through(bus: Bus, agent: Agent, focus: str) -> list[Event]:
    """``agent.window.compact_now`` with every event delivered to ``bus`` before the next is asked for."""
    events = []
    async for event in agent.window.compact_now(focus, by="user"):
        bus.emit(event)
        events.append(event)
    return events


async def test_a_plugin_supplies_the_summary_and_no_model_is_asked(tmp_path):
    bus = plugin_bus(tmp_path)
    with LoopbackServer(handler=loopback_handler(AnthropicCache(), replies)) as server:
        agent = make_agent(server.url, tmp_path, keep_tokens=5_000)
        agent.messages = long_history()
        events = await compact_through(bus, agent, "the parser")
    [done] = [e.data for e in events if e.type == "session.compacted"]
    assert done["summary"] == "Summary from the plugin: the parser" and done["model"] == "plugin"
    assert done["usage"] == {} and done["cost"] is None
    assert server.requests == []
    assert agent.window.compaction == Compaction(done["at"], done["count"], done["summary"])


async def test_a_plugin_veto_stops_the_compaction(tmp_path):
    bus = plugin_bus(tmp_path)
    with LoopbackServer(handler=loopback_handler(AnthropicCache(), replies)) as server:
        agent = make_agent(server.url, tmp_path, keep_tokens=5_000)
        agent.messages = long_history()
        events = await compact_through(bus, agent, "veto")
    assert not [e for e in events if e.type == "session.compacted"]
    assert any("vetoed by a plugin: the team keeps whole transcripts" in e.data.get("text", "") for e in events)
    assert server.requests == [] and agent.window.compaction is None


# --- auto-compaction -----------------------------------------------------------------------------


def sized_history(agent: Agent, target: int, ask: str) -> list[dict]:
    """Ten tool rounds, the first result sized so the next request (with ``ask``) is estimated
    at ``target`` tokens (calibrated, system and tools included)."""
    history = turn(10, 0, 2_000, "Fix the parser.")
    base = agent.window.context_tokens(agent.window.preview(history + [user_message(ask)]))
    grown = history[:2] + tool_round(0, 2_000 + (target - base) * 4)[1:] + history[3:]
    assert abs(agent.window.context_tokens(agent.window.preview(grown + [user_message(ask)])) - target) <= 2
    return grown


@pytest.mark.parametrize("offset, compacts", [(-20, False), (20, True)])
async def test_auto_compaction_triggers_past_its_share_of_the_window_and_not_before(tmp_path, offset, compacts):
    window, share = 40_000, 0.5
    handler = loopback_handler(AnthropicCache(), replies)
    with LoopbackServer(handler=handler) as server:
        agent = make_agent(server.url, tmp_path, context_window=window, auto_compact=share, keep_tokens=4_000)
        history = sized_history(agent, int(window * share) + offset, "go on")
        events = [e async for e in agent.run(history, "go on")]
    done = [e.data for e in events if e.type == "session.compacted"]
    asked = [is_summary_request(b.body) for b in handler.billed]
    if compacts:
        assert [d["by"] for d in done] == ["auto"]
        assert asked == [True, False]  # the summary first, then the turn's request, which starts with it
        first = handler.billed[1].body["messages"][0]["content"][0]
        assert first["text"].startswith(SUMMARY_HEADER)
    else:
        assert done == [] and asked == [False]
    assert [e.data for e in events if e.type == "turn.end"] == [{"stop_reason": "end_turn"}]


async def test_auto_compaction_is_off_without_a_share_or_a_window(tmp_path):
    handler = loopback_handler(AnthropicCache(), replies)
    with LoopbackServer(handler=handler) as server:
        for kw in ({"context_window": 40_000, "auto_compact": None}, {"context_window": None, "auto_compact": 0.5}):
            agent = make_agent(server.url, tmp_path, keep_tokens=4_000, **kw)
            events = [e async for e in agent.run(long_history(), "go on")]
            assert not [e for e in events if e.type == "session.compacted"]
    assert not [b for b in handler.billed if is_summary_request(b.body)]


# --- the store: compactions and spending along branches --------------------------------------------


def assistant(words: str, model: str, input_tokens: int, cost: float, read: int = 0) -> Event:
    usage = {"input_tokens": input_tokens, "output_tokens": 10, "cache_read_tokens": read, "cache_write_tokens": 0}
    return Event.of("message.assistant", {"message": text("assistant", words), "usage": usage, "stop_reason": "end_turn",
                                       "model": model, "interrupted": False, "cost": cost})


def compacted(at: int, count: int, words: str, model: str = "claude-haiku-4-5", cost: float = 0.001) -> Event:
    usage = {"input_tokens": 900, "output_tokens": 100, "cache_read_tokens": 0, "cache_write_tokens": 0}
    return Event.of("session.compacted", summary.event_data(Compaction(at, count, words), model=model, tokens_before=9_000,
                                                         tokens_after=2_000, usage=usage, cost=cost, focus="", by="user"))


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "sessions.db") as s:
        yield s


def exchange(store: Store, sid: str, n: int, model: str = "claude-sonnet-4-5", tokens: int = 100, cost: float = 0.01) -> None:
    for i in range(n):
        store.append(sid, Event.of("message.user", {"message": text("user", f"ask {i}")}))
        store.append(sid, assistant(f"answer {i}", model, tokens, cost))


def test_a_fork_at_the_compactions_count_undoes_it_and_a_later_fork_keeps_it(store, tmp_path):
    sid = store.create_session(tmp_path)
    exchange(store, sid, 5)  # 10 messages
    store.append(sid, compacted(6, 10, "the summary"))
    exchange(store, sid, 2)  # 14 messages
    [made] = store.compactions(sid)
    assert (made["at"], made["count"], made["summary"]) == (6, 10, "the summary")
    undo = store.fork(sid, made["count"]).id
    assert store.compactions(undo) == []
    later = store.fork(sid, 12).id
    assert [c["summary"] for c in store.compactions(later)] == ["the summary"]
    # A branch's own compaction comes after the inherited one: the last is the one in force.
    exchange(store, later, 1)
    store.append(later, compacted(12, 14, "the branch's summary"))
    assert [c["summary"] for c in store.compactions(later)] == ["the summary", "the branch's summary"]
    assert store.compactions(sid)[-1]["summary"] == "the summary"


def test_spending_sums_by_model_along_the_branch_up_to_the_fork_point(store, tmp_path):
    sid = store.create_session(tmp_path)
    exchange(store, sid, 2, model="claude-sonnet-4-5", tokens=100, cost=0.01)  # messages 0-3
    store.append(sid, compacted(2, 4, "s", model="claude-haiku-4-5", cost=0.001))
    exchange(store, sid, 3, model="gpt-4.1", tokens=1_000, cost=0.1)  # messages 4-9, not shared below
    branch = store.fork(sid, 6).id
    exchange(store, branch, 1, model="claude-sonnet-4-5", tokens=50, cost=0.005)
    spent = store.spending(branch)
    assert spent["claude-sonnet-4-5"]["requests"] == 3
    assert spent["claude-sonnet-4-5"]["input_tokens"] == 250
    assert spent["claude-sonnet-4-5"]["cost"] == pytest.approx(0.025)
    assert spent["claude-haiku-4-5"]["requests"] == 1 and spent["claude-haiku-4-5"]["input_tokens"] == 900
    assert spent["gpt-4.1"]["requests"] == 1 and spent["gpt-4.1"]["cost"] == pytest.approx(0.1)  # only message 5
    whole = store.spending(sid)
    assert whole["gpt-4.1"]["requests"] == 3 and "claude-sonnet-4-5" in whole
    assert whole["claude-sonnet-4-5"]["requests"] == 2


def test_an_agent_turn_stored_event_by_event_keeps_its_compaction_and_costs(store, tmp_path):
    """The events of a real turn (auto-compaction included) give the store its compaction and
    the spending of both requests."""
    sid = store.create_session(tmp_path)

    async def run() -> None:
        handler = loopback_handler(AnthropicCache(), replies)
        with LoopbackServer(handler=handler) as server:
            agent = make_agent(server.url, tmp_path, context_window=40_000, auto_compact=0.5, keep_tokens=4_000,
                               pricing=lambda usage, model: 0.5)
            history = long_history()
            for message in history:
                store.append(sid, Event.of(f"message.{message['role']}", {"message": message}))
            async for event in agent.run(store.messages(sid), "go on"):
                if event.type not in TRANSIENT:
                    store.append(sid, event)
            assert store.messages(sid) == agent.messages

    import asyncio

    asyncio.run(run())
    [made] = store.compactions(sid)
    assert made["summary"] == SUMMARY_TEXT and made["by"] == "auto"
    spent = store.spending(sid)["claude-sonnet-4-5"]
    assert spent["requests"] == 2 and spent["cost"] == pytest.approx(1.0)
    assert store.session(sid).compactions == 1
