"""Switching model mid-session: after runtime.switch_agent the next request carries the new
model to the new profile's server in its wire format, a request already streaming finishes as
it began, the session stores the switch, and a reopened session (-c, --resume, --fork) goes on
with it unless --model or --provider says otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from scout_tui.core.bus import MessageAssistant, MessageDelta, ModelSwitch
from scout_tui.config.layers import load_config, resumed_config, user_config_dir
from scout_tui.session.runtime import build_agent, switch_agent
from scout_tui.store.event_log import Store
from tests.headless_helpers import SECRET, env, scout  # noqa: F401 — a fixture
from tests.loopback import LoopbackServer, Reply, anthropic_stream, openai_stream

LOCAL_KEY = "local-key-0123456789"


def local_profile(url: str) -> str:
    """A user scout.toml with profile ``local`` (OpenAI-compatible, at ``url``) and the
    figures of its model, so pricing and the window can be seen to follow the switch."""
    return (f'[providers.local]\nkind = "openai"\nbase_url = "{url}/v1"\napi_key_env = "LOCAL_TEST_KEY"\n'
            'headers = { "x-title" = "scout-tui" }\nmodels = ["llama3.1"]\n\n'
            '[models."llama3.1"]\ncontext_window = 32768\ninput = 1.0\noutput = 2.0\n')


def write_user(text: str, config_home: Path | None = None) -> Path:
    path = (config_home / "scout" if config_home else user_config_dir()) / "scout.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


async def turn(agent, store: Store, sid: str, text: str) -> list:
    events = []
    async for event in agent.run(store.messages(sid), text):
        store.append(sid, event)
        events.append(event)
    return events


async def test_after_a_switch_the_next_request_goes_to_the_new_profile_with_the_new_model(tmp_home, workdir) -> None:
    with LoopbackServer([Reply(anthropic_stream(["Hello."]))]) as claude, \
            LoopbackServer([Reply(openai_stream(["Hi from llama."], prompt_tokens=1000, completion_tokens=500))]) as local:
        write_user(local_profile(local.url))
        config = load_config(workdir, flags={"base_url": claude.url, "api_key": "sk-test"},
                             env={"LOCAL_TEST_KEY": LOCAL_KEY})
        agent = build_agent(config, workdir)
        store = Store()
        sid = store.create_session(workdir)
        first = await turn(agent, store, sid, "hello")

        switched = config.for_provider("local", "llama3.1")
        made = switch_agent(agent, switched)
        assert made == ModelSwitch("local", "llama3.1")
        store.append(sid, made)
        second = await turn(agent, store, sid, "and you?")

    assert len(claude.requests) == 1 and claude.requests[0].path == "/v1/messages"
    (sent,) = local.requests
    assert sent.path == "/v1/chat/completions" and sent.json()["model"] == "llama3.1"
    assert sent.headers["authorization"] == f"Bearer {LOCAL_KEY}" and sent.headers["x-title"] == "scout-tui"
    assert [m["role"] for m in sent.json()["messages"]] == ["system", "user", "assistant", "user"]
    answers = [e for e in (*first, *second) if isinstance(e, MessageAssistant)]
    assert [a.model for a in answers] == ["claude-sonnet-4-5", "llama3.1"]
    assert answers[1].cost == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1_000_000)  # the new model's prices
    assert agent.window.context_window == 32768
    stored = [(type_, data) for _, _, type_, data, _ in store.events(sid) if type_ == "session.model"]
    assert stored == [("session.model", {"provider": "local", "model": "llama3.1"})]
    assert store.model_switch(sid) == ModelSwitch("local", "llama3.1")
    store.close()


async def test_a_request_streaming_during_a_switch_finishes_as_it_began(tmp_home, workdir) -> None:
    (workdir / "notes.txt").write_text("the answer is 42\n")
    call = ("toolu_1", "read", ['{"path": "notes.txt"}'])
    with LoopbackServer([Reply(anthropic_stream(["Reading."], call))]) as claude, \
            LoopbackServer([Reply(openai_stream(["It says 42."]))]) as local:
        write_user(local_profile(local.url))
        config = load_config(workdir, flags={"base_url": claude.url, "api_key": "sk-test"},
                             env={"LOCAL_TEST_KEY": LOCAL_KEY})
        agent = build_agent(config, workdir)
        events = []
        async for event in agent.run([], "what do the notes say?"):
            events.append(event)
            if isinstance(event, MessageDelta) and len(events) < 4:  # the first answer is streaming now
                switch_agent(agent, config.for_provider("local", "llama3.1"))

    answers = [e for e in events if isinstance(e, MessageAssistant)]
    assert [a.model for a in answers] == ["claude-sonnet-4-5", "llama3.1"]
    assert answers[0].cost is not None  # priced as the model that wrote it
    assert len(claude.requests) == 1
    (sent,) = local.requests  # the tool result went on to the new model, in its wire format
    assert sent.json()["model"] == "llama3.1" and sent.json()["messages"][-1]["role"] == "tool"
    assert "the answer is 42" in sent.json()["messages"][-1]["content"]


# -- a reopened session goes on with its switch ----------------------------------------------------


def test_a_resumed_session_uses_its_last_switch_unless_a_flag_says_otherwise(tmp_home, workdir) -> None:
    write_user(local_profile("http://127.0.0.1:9"))
    with Store() as store:
        sid = store.create_session(workdir)
        store.append(sid, ModelSwitch("openai", "gpt-4.1"))
        store.append(sid, ModelSwitch("local", "llama3.1"))
        switch = store.model_switch(sid)
    config = load_config(workdir, env={"LOCAL_TEST_KEY": LOCAL_KEY, "SCOUT_MODEL": "claude-opus-4-1"})
    resumed = resumed_config(config, switch)
    assert (resumed.provider, resumed.model, resumed.base_url, resumed.api_key) == (
        "local", "llama3.1", "http://127.0.0.1:9/v1", LOCAL_KEY)
    assert resumed.where("model") == "the session's model switch"
    for flags in ({"model": "claude-opus-4-1"}, {"provider": "openai"}):
        kept = load_config(workdir, flags=flags, env={})
        assert resumed_config(kept, switch) is kept
    assert resumed_config(config, None) is config


def test_continue_with_print_sends_to_the_switched_model(tmp_path: Path, env: dict[str, str]) -> None:
    with LoopbackServer([Reply(openai_stream(["Still llama."])), Reply(openai_stream(["Llama again."]))]) as local, \
            LoopbackServer([Reply(anthropic_stream(["Claude, as asked."]))]) as claude:
        write_user(local_profile(local.url), Path(env["XDG_CONFIG_HOME"]))
        env = {**env, "LOCAL_TEST_KEY": LOCAL_KEY}
        with Store(Path(env["SCOUT_HOME"]) / "sessions.db") as store:
            sid = store.create_session(tmp_path)
            store.append(sid, ModelSwitch("local", "llama3.1"))
        done = scout(["-c", "-p", "go on"], tmp_path, env)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "Still llama.\n"
        assert local.requests[0].json()["model"] == "llama3.1"
        done = scout(["--resume", sid[:8], "-p", "once more"], tmp_path, env)
        assert done.returncode == 0, done.stderr
        assert local.requests[1].json()["model"] == "llama3.1"
        # --model chooses for this run: the configured provider (anthropic) with that model.
        done = scout(["-c", "-p", "you now", "--model", "claude-opus-4-1", "--base-url", claude.url], tmp_path, env)
        assert done.returncode == 0, done.stderr
        assert claude.requests[0].json()["model"] == "claude-opus-4-1"
        assert claude.requests[0].headers["x-api-key"] == SECRET
    assert len(local.requests) == 2


def test_a_fork_made_with_print_goes_on_with_the_model_in_force_at_its_fork_point(tmp_path: Path,
                                                                                  env: dict[str, str]) -> None:
    from tests.test_cli_sessions import say

    with LoopbackServer([Reply(openai_stream(["Forked llama."]))]) as local:
        write_user(local_profile(local.url), Path(env["XDG_CONFIG_HOME"]))
        env = {**env, "LOCAL_TEST_KEY": LOCAL_KEY}
        with Store(Path(env["SCOUT_HOME"]) / "sessions.db") as store:
            sid = store.create_session(tmp_path)
            store.append(sid, say("user", "one"))
            store.append(sid, say("assistant", "two"))
            store.append(sid, ModelSwitch("local", "llama3.1"))
            store.append(sid, say("user", "three"))
            store.append(sid, say("assistant", "four"))
        done = scout(["--fork", f"{sid[:8]}:2", "-p", "again"], tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert local.requests[0].json()["model"] == "llama3.1"
