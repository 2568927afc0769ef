"""Long sessions in the TUI: /compact with its preview, the marker, undo, auto-compaction, cost and
cache share in the status bar, /cost, and Ctrl+O naming a cache miss. Real app (Pilot), real
sqlite store, a loopback server that bills requests by Anthropic's documented caching rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scout_tui.tui.app import ScoutApp
from scout_tui.config.layers import load_config
from scout_tui.store.event_log import Store
from scout_tui.engine.summary import INSTRUCTIONS, SUMMARY_HEADER
from scout_tui.widgets import StatusBar
from scout_tui.widgets.compaction import CompactionMarker, CompactPreview
from scout_tui.widgets.dialogs import ConfirmScreen
from scout_tui.widgets.cost_view import CostView
from tests.app_helpers import SIZE, rendered, send, settle
from tests.cache_emulator import AnthropicCache, anthropic_sse, loopback_handler
from tests.conftest import wait_until
from tests.loopback import LoopbackServer

SUMMARY = "## Current task\nShip the parser fix.\n\n## Open threads\nThe flaky test."
INSTRUCTION_MARK = INSTRUCTIONS.splitlines()[0][:40]


def is_summary_request(body: dict) -> bool:
    return INSTRUCTION_MARK in json.dumps(body["messages"][-1])


def model_script(turn_texts: list[str], tools_per_turn: int = 0, size: int = 4_000):
    """A reply function for ``loopback_handler``: summary requests get ``SUMMARY``; each user
    turn gets ``tools_per_turn`` bash calls printing ``size`` characters, then its text."""
    state = {"turn": -1, "calls": 0}

    def reply(body: dict, usage: dict) -> bytes:
        if is_summary_request(body):
            return anthropic_sse(usage, [SUMMARY])
        last = body["messages"][-1]["content"]
        typed = any(b.get("type") == "text" and SUMMARY_HEADER not in b.get("text", "") for b in last) and not any(
            b.get("type") == "tool_result" for b in last)
        if typed:
            state["turn"] += 1
            state["calls"] = 0
        if state["calls"] < tools_per_turn:
            state["calls"] += 1
            n = f"{state['turn']}_{state['calls']}"
            command = json.dumps({"command": f"yes x | head -c {size}; echo {n}"})
            return anthropic_sse(usage, [], (f"toolu_{n}", "bash", [command]))
        return anthropic_sse(usage, [turn_texts[min(state["turn"], len(turn_texts) - 1)]])

    return reply


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    return workdir


def make_app(repo: Path, server: LoopbackServer, **flags) -> ScoutApp:
    base = {"provider": "anthropic", "base_url": server.url, "api_key": "sk-test", "model": "claude-sonnet-4-5",
            "permission_mode": "yolo"}
    return ScoutApp(load_config(repo, flags={**base, **flags}), cwd=repo)


async def a_long_conversation(app: ScoutApp, pilot, turns: int) -> None:
    for i in range(turns):
        await send(app, pilot, f"step {i}: look around")
        await settle(app, pilot)


async def open_preview(app: ScoutApp, pilot, command: str = "/compact") -> CompactPreview:
    await send(app, pilot, command)
    await wait_until(pilot, lambda: isinstance(app.screen, CompactPreview), what="the summary preview")
    return app.screen


async def test_compact_previews_edits_and_applies_a_summary(repo):
    emulator = AnthropicCache()
    handler = loopback_handler(emulator, model_script(["done"], tools_per_turn=2, size=12_000))
    with LoopbackServer(handler=handler) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await a_long_conversation(app, pilot, 4)
            before = len(server.requests)
            preview = await open_preview(app, pilot, "/compact the parser")
            summary_request = server.requests[before].json()
            assert "focus on: the parser" in json.dumps(summary_request["messages"][-1])
            area = preview.query_one("TextArea")
            assert "Ship the parser fix." in area.text
            area.move_cursor(area.document.end)
            area.insert("\n\nAlso: keep the changelog.")
            await pilot.press("enter")
            await settle(app, pilot)
            sid = app.session.id
            stored = [e for e in Store().events(sid) if e[2] == "session.compacted"]
            assert len(stored) == 1 and stored[0][3]["summary"].endswith("Also: keep the changelog.")
            assert stored[0][3]["by"] == "user" and stored[0][3]["count"] == len(app.session.messages)
            markers = list(app.query(CompactionMarker))
            assert len(markers) == 1 and markers[0].count == len(app.session.messages)
            # The next request starts with the summary; the stored history keeps every message.
            await send(app, pilot, "carry on")
            await settle(app, pilot)
            first = server.requests[-1].json()["messages"][0]
            assert SUMMARY_HEADER in json.dumps(first) and "keep the changelog" in json.dumps(first)
            assert len(Store().messages(sid)) == len(app.session.messages) > stored[0][3]["at"]


async def test_compact_cancel_changes_nothing_but_keeps_the_cost(repo):
    handler = loopback_handler(AnthropicCache(), model_script(["done"], tools_per_turn=2, size=12_000))
    with LoopbackServer(handler=handler) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await a_long_conversation(app, pilot, 3)
            await open_preview(app, pilot)
            await pilot.press("escape")
            await settle(app, pilot)
            types = [e[2] for e in Store().events(app.session.id)]
            assert "session.compacted" not in types and "session.compact_cancelled" in types
            assert not list(app.query(CompactionMarker)) and app.session.agent.window.compaction is None
            assert Store().session(app.session.id).input_tokens > 0


async def test_the_marker_expands_to_the_summary_and_u_undoes_it_by_forking(repo):
    handler = loopback_handler(AnthropicCache(), model_script(["done"], tools_per_turn=2, size=12_000))
    with LoopbackServer(handler=handler) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await a_long_conversation(app, pilot, 3)
            await open_preview(app, pilot)
            await pilot.press("enter")
            await settle(app, pilot)
            compacted_id, count = app.session.id, len(app.session.messages)
            marker = app.query_one(CompactionMarker)
            marker.query_one("CollapsibleTitle").focus()
            await pilot.press("enter")  # expands to the summary
            await pilot.pause()
            assert not marker.collapsed
            assert "Ship the parser fix." in rendered(marker)
            # A "u" typed into the focused marker by mistake ("run the tests") asks first.
            for key in "run":
                await pilot.press(key)
            await pilot.pause()
            assert app.session.id == compacted_id and not isinstance(app.screen, ConfirmScreen)
            marker.query_one("CollapsibleTitle").focus()
            await pilot.press("u")
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("y")
            await settle(app, pilot)
            assert app.session.id != compacted_id
            branch = Store().session(app.session.id)
            assert branch.parent == compacted_id and branch.fork_at == count
            assert Store().compactions(app.session.id) == [] and app.session.agent.window.compaction is None
            assert not list(app.query(CompactionMarker))
            await send(app, pilot, "go on without the summary")
            await settle(app, pilot)
            assert SUMMARY_HEADER not in json.dumps(server.requests[-1].json()["messages"])
            # The compacted branch keeps its summary.
            assert len(Store().compactions(compacted_id)) == 1


async def test_auto_compaction_triggers_at_the_threshold(repo):
    handler = loopback_handler(AnthropicCache(context_window=40_000),
                               model_script(["done"], tools_per_turn=3, size=8_000))
    with LoopbackServer(handler=handler) as server:
        app = make_app(repo, server, context_window=40_000, auto_compact="0.5")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "step 0")
            await settle(app, pilot)
            assert not any(e[2] == "session.compacted" for e in Store().events(app.session.id))
            await a_long_conversation(app, pilot, 3)
            compacted = [e[3] for e in Store().events(app.session.id) if e[2] == "session.compacted"]
            assert compacted and compacted[0]["by"] == "auto"
            assert list(app.query(CompactionMarker))
            summaries = [r for r in server.requests if is_summary_request(r.json())]
            assert summaries
            assert not [b for b in handler.billed if b.rejected is not None]  # never over the window


async def test_status_bar_shows_cost_and_cache_share_and_cost_command(repo):
    handler = loopback_handler(AnthropicCache(), model_script(["one", "two"], tools_per_turn=1, size=8_000))
    with LoopbackServer(handler=handler) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await a_long_conversation(app, pilot, 2)
            status = app.query_one(StatusBar)
            assert status.cost is not None and status.cost > 0
            assert status.cache_share is not None and status.cache_share > 0.5
            assert "$" in str(status.render()) and "cache" in str(status.render())
            info = Store().session(app.session.id)
            assert info.cost == pytest.approx(status.cost)
            await send(app, pilot, "/cost")
            await wait_until(pilot, lambda: isinstance(app.screen, CostView), what="the cost view")
            text = " ".join(str(s.render()) for s in app.screen.query("Static"))
            assert "claude-sonnet-4-5" in text and "models.dev" in text
            await pilot.press("escape")
            assert not isinstance(app.screen, CostView)


async def test_ctrl_o_reports_a_model_switch_as_a_cache_miss(repo):
    from scout_tui.widgets.prompt_view import PromptView

    handler = loopback_handler(AnthropicCache(), model_script(["one"], tools_per_turn=0))
    with LoopbackServer(handler=handler) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "hello")
            await settle(app, pilot)
            await pilot.press("ctrl+o")
            await wait_until(pilot, lambda: isinstance(app.screen, PromptView), what="the prompt view")
            assert "begins with the whole previous one" in str(app.screen.query_one("#prompt-summary").render())
            await pilot.press("escape")
            await wait_until(pilot, lambda: not isinstance(app.screen, PromptView), what="the prompt view closed")
            app.session.agent.backend.model = "claude-haiku-4-5"
            await pilot.press("ctrl+o")
            await wait_until(pilot, lambda: isinstance(app.screen, PromptView), what="the prompt view again")
            note = str(app.screen.query_one("#prompt-summary").render())
            assert "model changed (claude-sonnet-4-5 → claude-haiku-4-5)" in note


async def test_a_failed_request_leaves_the_app_with_what_the_store_holds(repo):
    from tests.loopback import Reply

    error = json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}).encode()
    replies = [Reply(error, 400, {"content-type": "application/json"})] * 2
    with LoopbackServer(replies) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            for text in ("first", "second"):
                await send(app, pilot, text)
                await settle(app, pilot)
                assert app.session.messages == Store().messages(app.session.id)
            server.replies.append(Reply(anthropic_sse({"input_tokens": 10, "output_tokens": 2}, ["fine"])))
            await send(app, pilot, "third")
            await settle(app, pilot)
            assert app.session.messages == Store().messages(app.session.id)
            assert len(app.session.messages) == 6  # each failed prompt with the record that it failed


async def test_an_overflow_teaches_the_window_and_the_status_bar_shows_it(repo):
    # The app believes claude-sonnet-4-5's 200k window; this server takes 30k.
    handler = loopback_handler(AnthropicCache(context_window=30_000),
                               model_script(["done"], tools_per_turn=3, size=12_000))
    with LoopbackServer(handler=handler) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await a_long_conversation(app, pilot, 3)
            refused = [b for b in handler.billed if b.rejected is not None]
            assert refused, "the conversation never outgrew the server's window"
            assert app.query_one(StatusBar).context_window == 30_000
            notices = list(app.query("Notice"))
            assert any("over the model's context window" in n.text for n in notices)
            assert not [n.text for n in notices if n.has_class("-error")]
            after = handler.billed[handler.billed.index(refused[0]) + 1:]
            assert all(b.rejected is None for b in after)  # the first recovery holds


async def test_compact_on_a_small_session_says_it_would_save_little_and_asks_no_model(repo):
    handler = loopback_handler(AnthropicCache(), model_script(["hello back"]))
    with LoopbackServer(handler=handler) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "hello")
            await settle(app, pilot)
            sent = len(server.requests)
            await send(app, pilot, "/compact")
            await settle(app, pilot)
            assert len(server.requests) == sent and not isinstance(app.screen, CompactPreview)
            assert any("Nothing" in n.text and "compact" in n.text for n in app.query("Notice"))


def test_a_bad_models_table_stops_the_app_with_its_file_and_line(repo):
    from scout_tui.core.errors import ScoutError

    (repo / "scout.toml").write_text('[models."claude-sonnet-4-5"]\ncontext_windw = 1000\n')
    with pytest.raises(ScoutError, match=r"scout\.toml:2: unknown key 'context_windw'"):
        ScoutApp(load_config(repo, flags={"api_key": "sk-test"}), cwd=repo)


async def test_a_window_the_server_named_is_in_force_again_in_a_later_run(repo):
    handler = loopback_handler(AnthropicCache(context_window=30_000),
                               model_script(["done"], tools_per_turn=3, size=12_000))
    with LoopbackServer(handler=handler) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await a_long_conversation(app, pilot, 3)
            assert [b for b in handler.billed if b.rejected is not None]
            sid = app.session.id
        refused = len([b for b in handler.billed if b.rejected is not None])
        base = {"provider": "anthropic", "base_url": server.url, "api_key": "sk-test", "model": "claude-sonnet-4-5",
                "permission_mode": "yolo"}
        again = ScoutApp(load_config(repo, flags=base), cwd=repo, resume=sid)
        async with again.run_test(size=SIZE) as pilot:
            await settle(again, pilot)
            assert again.query_one(StatusBar).context_window == 30_000
            await a_long_conversation(again, pilot, 2)
            assert again.session.agent.window.context_window == 30_000
        # No request of the reopened session was refused: it knew the window from the start.
        assert len([b for b in handler.billed if b.rejected is not None]) == refused


async def test_compact_does_not_apply_a_summary_that_makes_the_prompt_larger_and_a_refused_prompt_offers_no_retry(repo):
    """``llama-server -c 16384`` whose summary model writes about 39,000 characters: ``/compact``
    says the summary would make each request larger and applies nothing (no preview, no
    compaction, its cost kept). A prompt then refused unsent does not offer Alt+R, which would
    only say 'Nothing to retry'."""
    from llama_server import LlamaServer

    from scout_tui.tui.turn_keys import RETRY_HINT

    words = " ".join(f"word{k}" for k in range(100))
    llama = LlamaServer(n_ctx=16_384, answer="Done.", summary="A very detailed account of everything. " * 1_000)
    with llama.serve() as server:
        app = make_app(repo, server, model="small-model", api_key="sk-local", auto_compact="off")
        async with app.run_test(size=SIZE) as pilot:
            for i in range(30):
                await send(app, pilot, f"turn {i}: {words}")
                await settle(app, pilot)
            await send(app, pilot, "/compact")
            await settle(app, pilot)
            await wait_until(pilot, lambda: any("not applied" in n.text for n in app.query("Notice")),
                             what="the notice that the summary was not applied")
            assert [s.summary for s in llama.seen].count(True) == 1
            assert not isinstance(app.screen, CompactPreview) and app.session.agent.window.compaction is None
            types = [e[2] for e in Store().events(app.session.id)]
            assert "session.compacted" not in types and "session.compact_cancelled" in types
            assert not list(app.query(CompactionMarker)) and app.session.compactions == []
            note = next(n.text for n in app.query("Notice") if "not applied" in n.text)
            assert "would make each request larger" in note
            await send(app, pilot, "Here is the whole log: " + "E" * 60_000)
            await settle(app, pilot)
            errors = [n.text for n in app.query("Notice") if n.has_class("-error")]
            assert errors and "not sent" in errors[-1]
            assert RETRY_HINT.replace("`", "") not in errors[-1] and "Alt+R" not in errors[-1]


async def test_an_overflow_after_a_compaction_that_made_the_prompt_larger_points_to_undoing_it(repo):
    """A session whose summary in force made each request larger (applied before summaries were
    checked): the prompt it leaves over the window is refused, and the error says that ``u`` on
    the compaction marker undoes it, not Alt+R."""
    from llama_server import LlamaServer

    from scout_tui.core.bus import SessionCompacted
    from scout_tui.engine.summary import Compaction, event_data

    llama = LlamaServer(n_ctx=16_384, answer="Done.")
    with llama.serve() as server:
        app = make_app(repo, server, model="small-model", api_key="sk-local", auto_compact="off")
        async with app.run_test(size=SIZE) as pilot:
            for i in range(4):
                await send(app, pilot, f"turn {i}: tell me more")
                await settle(app, pilot)
            sid, count = app.session.id, len(app.session.messages)
        huge = Compaction(4, count, "A very detailed account of everything. " * 1_500)
        Store().append(sid, SessionCompacted(**event_data(huge, model="small-model", tokens_before=2_400,
                                                          tokens_after=21_000, usage=None, cost=None, focus="",
                                                          by="user")))
        again = ScoutApp(load_config(repo, flags={"provider": "anthropic", "base_url": server.url,
                                                  "api_key": "sk-local", "model": "small-model",
                                                  "auto_compact": "off"}), cwd=repo, resume=sid)
        async with again.run_test(size=SIZE) as pilot:
            await settle(again, pilot)
            await send(again, pilot, "and now?")
            await settle(again, pilot)
            errors = [n.text for n in again.query("Notice") if n.has_class("-error")]
    assert errors and "not sent" in errors[-1]
    assert "u on its marker" in errors[-1].replace("`", "") and "Alt+R" not in errors[-1]
