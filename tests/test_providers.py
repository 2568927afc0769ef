"""What the model picker offers: list_models against loopback servers speaking OpenAI's and
Anthropic's documented model lists (Anthropic's paged), its one-line errors, and the
configured (profile, model) choices."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from scout_tui.config.layers import load_config, user_config_dir
from scout_tui.core.errors import ScoutError
from scout_tui.session.providers import configured_models, list_models
from tests.loopback import send_json

KEY = "sk-test-models-0123456789"


@dataclass
class Seen:
    path: str
    query: dict[str, str]
    headers: dict[str, str]


@dataclass
class GetServer:
    """A GET-only server on 127.0.0.1 answering with ``answer(seen) -> (status, body)``; a
    body that is not bytes is sent as JSON. ``seen`` lists the requests."""

    answer: Callable[[Seen], tuple[int, object]]
    seen: list[Seen] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def get_server() -> Iterator[Callable[[Callable[[Seen], tuple[int, object]]], GetServer]]:
    servers: list[ThreadingHTTPServer] = []

    def start(answer: Callable[[Seen], tuple[int, object]]) -> GetServer:
        state = GetServer(answer)

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                seen = Seen(parts.path, {k: v[-1] for k, v in parse_qs(parts.query).items()},
                            {k.lower(): v for k, v in self.headers.items()})
                state.seen.append(seen)
                status, body = state.answer(seen)
                send_json(self, status, body)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        servers.append(server)
        state.url = f"http://127.0.0.1:{server.server_address[1]}"
        return state

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def write_user(text: str) -> Path:
    path = user_config_dir() / "scout.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def profile(name: str, kind: str, url: str, extra: str = "") -> str:
    return f'[providers.{name}]\nkind = "{kind}"\nbase_url = "{url}"\napi_key_env = "TEST_MODELS_KEY"\n{extra}'


# -- OpenAI-compatible ---------------------------------------------------------------------------


async def test_an_openai_compatible_server_lists_its_models(tmp_home, workdir, get_server) -> None:
    server = get_server(lambda seen: (200, {"object": "list", "data": [
        {"id": "llama3.1", "object": "model", "owned_by": "library"},
        {"id": "qwen2.5-coder", "object": "model"}, {"object": "model"}]}))
    write_user(profile("local", "openai", server.url + "/v1", 'headers = { "x-title" = "scout" }\n'))
    config = load_config(workdir, env={"TEST_MODELS_KEY": KEY})
    assert await list_models(config, "local") == ["llama3.1", "qwen2.5-coder"]
    (seen,) = server.seen
    assert seen.path == "/v1/models"
    assert seen.headers["authorization"] == f"Bearer {KEY}" and seen.headers["x-title"] == "scout"


# -- Anthropic -----------------------------------------------------------------------------------


def anthropic_pages(seen: Seen) -> tuple[int, object]:
    """Three models served one page of two, then one, following ``after_id``."""
    models = [{"type": "model", "id": f"claude-{n}", "display_name": f"Claude {n}", "created_at": "2025-01-01T00:00:00Z"}
              for n in ("opus-4-1", "sonnet-4-5", "haiku-4-5")]
    start = 0 if "after_id" not in seen.query else [m["id"] for m in models].index(seen.query["after_id"]) + 1
    page = models[start : start + 2]
    return 200, {"data": page, "has_more": start + 2 < len(models), "first_id": page[0]["id"], "last_id": page[-1]["id"]}


async def test_anthropic_lists_every_page_with_its_headers(tmp_home, workdir, get_server) -> None:
    server = get_server(anthropic_pages)
    write_user(profile("claude", "anthropic", server.url))
    config = load_config(workdir, env={"TEST_MODELS_KEY": KEY})
    assert await list_models(config, "claude") == ["claude-opus-4-1", "claude-sonnet-4-5", "claude-haiku-4-5"]
    assert [seen.query.get("after_id") for seen in server.seen] == [None, "claude-sonnet-4-5"]
    assert all(seen.path == "/v1/models" and seen.query["limit"] == "1000" for seen in server.seen)
    assert server.seen[0].headers["x-api-key"] == KEY and server.seen[0].headers["anthropic-version"] == "2023-06-01"


async def test_the_profile_in_use_is_listed_by_default(tmp_home, workdir, get_server) -> None:
    server = get_server(lambda seen: (200, {"data": [{"id": "claude-x"}], "has_more": False, "last_id": "claude-x"}))
    config = load_config(workdir, flags={"base_url": server.url, "api_key": KEY}, env={})
    assert await list_models(config) == ["claude-x"]


async def test_a_server_saying_has_more_without_a_new_last_id_is_an_error(tmp_home, workdir, get_server) -> None:
    server = get_server(lambda seen: (200, {"data": [{"id": "a"}], "has_more": True, "last_id": "a"}))
    config = load_config(workdir, flags={"base_url": server.url}, env={})
    with pytest.raises(ScoutError, match="has_more without a new last_id"):
        await list_models(config)
    assert len(server.seen) == 2


# -- errors: one line, never the key -------------------------------------------------------------


async def test_an_http_error_says_status_url_and_the_servers_message_never_the_key(tmp_home, workdir, get_server) -> None:
    server = get_server(lambda seen: (401, {"type": "error", "error": {
        "type": "authentication_error", "message": f"invalid x-api-key {KEY}"}}))
    write_user(profile("claude", "anthropic", server.url))
    config = load_config(workdir, env={"TEST_MODELS_KEY": KEY})
    with pytest.raises(ScoutError) as caught:
        await list_models(config, "claude")
    message = str(caught.value)
    assert message == (f"provider 'claude' (Anthropic): cannot list models (HTTP 401 from {server.url}/v1/models): "
                       "invalid x-api-key [redacted]")
    assert "\n" not in message


async def test_an_answer_that_is_no_model_list_is_an_error(tmp_home, workdir, get_server) -> None:
    server = get_server(lambda seen: (200, b"<html>proxy login</html>"))
    config = load_config(workdir, flags={"provider": "openai", "base_url": server.url}, env={})
    with pytest.raises(ScoutError, match=r"^provider 'openai' \(OpenAI-compatible API\): cannot list models: "
                                         rf"{server.url}/models answered with no model list .*got <html>proxy login"):
        await list_models(config)


async def test_a_closed_port_is_an_error_naming_the_url(tmp_home, workdir) -> None:
    import socket

    with socket.socket() as sock:  # a port just freed: nothing listens there
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = load_config(workdir, flags={"provider": "openai", "base_url": closed + "/v1"}, env={})
    with pytest.raises(ScoutError, match=rf"cannot list models: cannot connect to {closed}/v1/models: ConnectError"):
        await list_models(config)


async def test_no_answer_in_time_is_an_error(tmp_home, workdir) -> None:
    import httpx

    def hang(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    config = load_config(workdir, flags={"provider": "openai", "base_url": "http://127.0.0.1:9/v1"}, env={})
    with pytest.raises(ScoutError, match=r"cannot list models: no answer from http://127.0.0.1:9/v1/models within 2 s"):
        await list_models(config, transport=httpx.MockTransport(hang), timeout=2)


async def test_a_plugin_provider_has_no_model_list(tmp_home, workdir) -> None:
    config = load_config(workdir, flags={"provider": "plugin-echo"}, env={})
    with pytest.raises(ScoutError, match="provider 'plugin-echo' \\(kind 'plugin-echo'\\) has no model list"):
        await list_models(config)


# -- the configured choices ------------------------------------------------------------------------


def test_the_configured_choices_are_the_model_in_use_then_every_profiles_models(tmp_home, workdir) -> None:
    write_user('model = "claude-sonnet-4-5"\n[providers.anthropic]\nmodels = ["claude-opus-4-1", "claude-sonnet-4-5"]\n'
               + profile("local", "openai", "http://localhost:11434/v1", 'models = ["llama3.1"]\n'))
    # a profile listing no models offers its default one: the picker can always go back to it
    assert configured_models(load_config(workdir, env={})) == [
        ("anthropic", "claude-sonnet-4-5"), ("anthropic", "claude-opus-4-1"), ("openai", "gpt-4.1"),
        ("local", "llama3.1")]
    assert configured_models(load_config(workdir, flags={"provider": "openai", "model": "gpt-4.1"}, env={}))[0] == \
        ("openai", "gpt-4.1")
