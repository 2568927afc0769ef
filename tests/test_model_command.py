"""/model: switching model or provider profile mid-session from the TUI; the picker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scout_tui.store.event_log import Store
from scout_tui.widgets.chat_messages import Notice
from tests.app_helpers import SIZE, make_app, send, settle, steady, write
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream, openai_stream


@pytest.fixture
def repo(home_project: Path) -> Path:
    return home_project


def _profile(home: Path, url: str) -> None:
    write(home / ".config" / "scout", "scout",
          f'[providers.local]\nkind = "openai"\nbase_url = "{url}/v1"\nmodels = ["small-1", "big-2"]\n')


def _notices(app) -> str:
    return "\n".join(n.text for n in app.query(Notice))


async def test_switching_provider_and_model_mid_session_sends_the_next_request_there(repo, tmp_home):
    with LoopbackServer([Reply(anthropic_stream(["From Claude."]))]) as first, \
            LoopbackServer([Reply(openai_stream(["From local."]))]) as second:
        _profile(tmp_home, second.url)
        app = make_app(repo, first)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "hello")
            await settle(app, pilot)
            await send(app, pilot, "/model local big-2")
            await wait_until(pilot, lambda: "Model: local · big-2" in _notices(app))
            assert (app.status.provider, app.status.model) == ("local", "big-2")
            await send(app, pilot, "and now?")
            await settle(app, pilot)
            assert len(first.requests) == 1 and len(second.requests) == 1
            request = json.loads(second.requests[0].body)
            assert second.requests[0].path == "/v1/chat/completions" and request["model"] == "big-2"
            assert [m["content"] for m in request["messages"] if m["role"] == "user"][:1] == ["hello"]
            switch = Store().model_switch(app.session.id)
            assert (switch.provider, switch.model) == ("local", "big-2")


async def test_a_switch_before_the_first_message_is_stored_with_the_session(repo, tmp_home):
    with LoopbackServer([Reply(openai_stream(["Hi."]))]) as server:
        _profile(tmp_home, server.url)
        app = make_app(repo, None, api_key="sk-test")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "/model local")  # the profile's default model: its first
            await wait_until(pilot, lambda: "Model: local · small-1" in _notices(app))
            await send(app, pilot, "hi")
            await settle(app, pilot)
            assert json.loads(server.requests[0].body)["model"] == "small-1"
            assert Store().model_switch(app.session.id).model == "small-1"


async def test_an_unknown_provider_is_refused_and_nothing_changes(repo):
    app = make_app(repo, None, api_key="sk-test")
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "/model nowhere gpt-x")
        await wait_until(pilot, lambda: "No provider profile `nowhere`" in _notices(app))
        assert app.session.config.provider == "anthropic"


async def test_a_prompt_to_a_profile_without_a_key_names_the_variable_to_set(repo, tmp_home):
    with LoopbackServer([]) as server:
        app = make_app(repo, server)  # a key for anthropic (--api-key), none for openai
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "/model openai")
            await wait_until(pilot, lambda: "Model: openai · gpt-4.1" in _notices(app))
            await send(app, pilot, "hello")
            await wait_until(pilot, lambda: "Not sent" in _notices(app), what="the prompt is refused")
            last = list(app.query(Notice))[-1].text
            assert last == ("Not sent (kept in the composer): OPENAI_API_KEY is not set: export OPENAI_API_KEY=… and "
                            "start scout-tui again")
            assert "above" not in last  # the start-up help is not shown after a switch
            assert not server.requests


@pytest.mark.usefixtures("fixed_ids", "fixed_clock")
def test_snapshot_of_the_model_picker_with_the_server_s_models(snap_compare, repo, tmp_home) -> None:
    with LoopbackServer([], models=["small-1", "served-3", "served-4"]) as server:
        _profile(tmp_home, server.url)
        app = make_app(repo, None, api_key="sk-test", provider="local")

        async def run_before(pilot) -> None:
            await settle(app, pilot)
            await send(app, pilot, "/model")
            await wait_until(pilot, lambda: "local" in app.server_models)
            await steady(app, pilot)

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
        assert app.server_models["local"] == ["small-1", "served-3", "served-4"]


async def test_opening_a_session_goes_on_with_its_model_and_another_with_the_run_s(repo, tmp_home):
    with LoopbackServer([Reply(openai_stream(["Hi."])), Reply(anthropic_stream(["Back."]))]) as server:
        _profile(tmp_home, server.url)
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "/model local big-2")
            await wait_until(pilot, lambda: "Model: local · big-2" in _notices(app))
            await send(app, pilot, "one")
            await settle(app, pilot)
            switched = app.session.id
            await pilot.press("ctrl+n")
            await send(app, pilot, "/model anthropic")
            await wait_until(pilot, lambda: app.status.provider == "anthropic")
            await send(app, pilot, "two")
            await settle(app, pilot)
            plain = app.session.id
            await send(app, pilot, f"/resume {switched}")
            await wait_until(pilot, lambda: app.session.id == switched and app.status.model == "big-2")
            assert app.session.config.provider == "local"
            await send(app, pilot, f"/resume {plain}")
            await wait_until(pilot, lambda: app.session.id == plain and app.status.provider == "anthropic")


async def test_the_session_opened_at_start_keeps_the_model_the_command_line_chose(repo, tmp_home):
    from scout_tui.tui.app import ScoutApp
    from scout_tui.core.bus import ModelSwitch
    from scout_tui.config.layers import load_config

    store = Store()
    sid = store.create_session(repo)
    store.append(sid, ModelSwitch("anthropic", "claude-opus-4-1"))
    app = ScoutApp(load_config(repo, flags={"api_key": "sk-test", "model": "claude-haiku-4-5"}), cwd=repo, resume=sid)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.session.id == sid and app.status.model == "claude-haiku-4-5"
        await send(app, pilot, f"/resume {sid}")  # opened again in the app: the session's own
        await wait_until(pilot, lambda: app.status.model == "claude-opus-4-1")


async def test_a_model_the_server_does_not_list_is_warned_about(repo, tmp_home):
    with LoopbackServer([], models=["small-1", "served-3"]) as server:
        _profile(tmp_home, server.url)
        app = make_app(repo, None, api_key="sk-test", provider="local")
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await send(app, pilot, "/model")
            await wait_until(pilot, lambda: "local" in app.server_models)
            await pilot.press("escape")
            await send(app, pilot, "/model local smal-1")
            await wait_until(pilot, lambda: "Model: local · smal-1" in _notices(app))
            assert "`smal-1` is not among the models local's server lists" in _notices(app)
