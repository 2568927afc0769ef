"""Model metadata: models.dev lookups, [models."ID"] overrides with file:line errors, server probes, cost."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from scout_tui.config.layers import load_config, user_config_dir
from scout_tui.core.errors import ScoutError
from scout_tui.config.models import ModelInfo, cache_hit_share, cost, lookup, model_info, probe_context_window
from tests.headless_helpers import env  # noqa: F401 — a fixture
from tests.loopback import send_json


@pytest.fixture
def get_server() -> Iterator[tuple[str, dict[str, tuple[int, object]], list[str]]]:
    """A GET-only server on 127.0.0.1: ``routes`` maps a path to (status, JSON body or raw bytes);
    any other path is a 404. Yields (url, routes, paths requested)."""
    routes: dict[str, tuple[int, object]] = {}
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            seen.append(self.path)
            status, body = routes.get(self.path, (404, {"error": "not found"}))
            send_json(self, status, body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", routes, seen
    finally:
        server.shutdown()
        server.server_close()


def write_project(workdir: Path, text: str) -> Path:
    path = workdir / "scout.toml"
    path.write_text(text)
    return path


# -- lookup ----------------------------------------------------------------------------------


def test_claude_sonnet_4_5_has_its_window_and_anthropic_prices() -> None:
    info = lookup("anthropic", "claude-sonnet-4-5")
    assert info is not None
    assert (info.context_window, info.max_output) == (200_000, 64_000)
    assert (info.input, info.output, info.cache_read, info.cache_write) == (3.0, 15.0, 0.3, 3.75)
    assert info.cache_write_1h == 6.0
    assert info.source == "models.dev (anthropic/claude-sonnet-4-5)"


def test_gpt_4_1_is_found_in_openai() -> None:
    info = lookup("openai", "gpt-4.1")
    assert info is not None
    assert info.context_window == 1_047_576
    assert (info.input, info.output, info.cache_read) == (2.0, 8.0, 0.5)
    assert info.source == "models.dev (openai/gpt-4.1)"


def test_an_openrouter_style_id_is_found_by_its_last_part() -> None:
    info = lookup("openai", "anthropic/claude-sonnet-4-5")
    assert info is not None and info.id == "anthropic/claude-sonnet-4-5"
    assert info.context_window == 200_000 and info.input == 3.0
    assert info.source == "models.dev (anthropic/claude-sonnet-4-5)"


def test_a_latest_alias_resolves_to_the_newest_dated_version() -> None:
    info = lookup("anthropic", "claude-3-5-sonnet-latest")
    assert info is not None and info.source == "models.dev (anthropic/claude-3-5-sonnet-20241022)"
    unknown_date = lookup("anthropic", "claude-sonnet-4-5-20990101")
    assert unknown_date is not None and unknown_date.source == "models.dev (anthropic/claude-sonnet-4-5)"


def test_an_unknown_model_is_none_not_a_guess() -> None:
    assert lookup("openai", "my-own-finetune-xyz") is None
    assert lookup("anthropic", "") is None


# -- model_info: [models."ID"] and the context_window setting ----------------------------------


def test_a_project_models_table_describes_a_local_model(tmp_home: Path, workdir: Path) -> None:
    text = 'model = "my-local"\n\n[models."my-local"]\ncontext_window = 32768\ninput = 0.5\n'
    path = write_project(workdir, text)
    info = model_info(load_config(workdir), "my-local")
    assert (info.context_window, info.input, info.output) == (32768, 0.5, None)
    assert info.source == f'[models."my-local"] in {path}'


def test_a_models_table_overrides_models_dev_field_by_field(tmp_home: Path, workdir: Path) -> None:
    path = write_project(workdir, '[models]\n"claude-sonnet-4-5" = { output = 10 }\n')
    info = model_info(load_config(workdir), "claude-sonnet-4-5")
    assert (info.input, info.output, info.context_window) == (3.0, 10.0, 200_000)
    assert info.source == f'models.dev (anthropic/claude-sonnet-4-5), [models."claude-sonnet-4-5"] in {path}'


def test_the_project_file_beats_the_user_file(tmp_home: Path, workdir: Path) -> None:
    user = user_config_dir() / "scout.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[models.my-local]\ncontext_window = 8192\noutput = 2\n')
    write_project(workdir, '[models."my-local"]\ncontext_window = 16384\n')
    info = model_info(load_config(workdir), "my-local")
    assert (info.context_window, info.output) == (16384, 2.0)


def test_a_bad_value_names_the_file_and_line(tmp_home: Path, workdir: Path) -> None:
    path = write_project(workdir, 'model = "x"\n\n[models."my-local"]\ninput = 1\ncontext_window = "big"\n')
    with pytest.raises(ScoutError) as caught:
        model_info(load_config(workdir), "x")  # another model's entry is checked too
    message = str(caught.value)
    assert message.startswith(f"{path}:5: ")
    assert "context_window must be a positive integer" in message and "'big'" in message


def test_a_negative_price_is_refused(tmp_home: Path, workdir: Path) -> None:
    path = write_project(workdir, '[models."my-local"]\n\ncache_read = -1\n')
    with pytest.raises(ScoutError, match=rf"^{path}:3: .*cache_read must be a number >= 0"):
        model_info(load_config(workdir), "my-local")


def test_an_unknown_key_names_the_line_and_the_known_keys(tmp_home: Path, workdir: Path) -> None:
    path = write_project(workdir, '[models."my-local"]\ncontext_window = 1000\ncontext_size = 2000\n')
    with pytest.raises(ScoutError) as caught:
        model_info(load_config(workdir), "my-local")
    message = str(caught.value)
    assert message.startswith(f"{path}:3: unknown key 'context_size'")
    assert "context_window, max_output, input, output, cache_read, cache_write" in message


def test_a_key_in_an_inline_table_is_found_on_its_line(tmp_home: Path, workdir: Path) -> None:
    path = write_project(workdir, '[models]\nok = { input = 1 }\nbad = { input = true }\n')
    with pytest.raises(ScoutError, match=rf"^{path}:3: "):
        model_info(load_config(workdir), "ok")


def test_the_context_window_setting_wins(tmp_home: Path, workdir: Path) -> None:
    write_project(workdir, '[models."claude-sonnet-4-5"]\ncontext_window = 100000\n')
    config = load_config(workdir, flags={"context_window": 50_000})
    info = model_info(config, "claude-sonnet-4-5", server=(70_000, "server http://x/props"))
    assert info.context_window == 50_000 and info.input == 3.0
    assert info.source.endswith("setting context_window (flag --context-window)")


def test_a_server_report_beats_models_dev_but_not_the_config(tmp_home: Path, workdir: Path) -> None:
    probed = model_info(load_config(workdir), "gpt-4.1", server=(65_536, "server http://x/props"))
    assert probed.context_window == 65_536 and probed.input == 2.0
    write_project(workdir, '[models."gpt-4.1"]\ncontext_window = 30000\n')
    assert model_info(load_config(workdir), "gpt-4.1", server=(65_536, "server")).context_window == 30_000


def test_an_unknown_model_has_no_figures_and_says_so(tmp_home: Path, workdir: Path) -> None:
    config = load_config(workdir, flags={"provider": "openai", "base_url": "http://127.0.0.1:8080/v1"})
    info = model_info(config, "llama3.1:8b")
    assert (info.context_window, info.input, info.output) == (None, None, None)
    assert info.source.startswith("unknown: 'llama3.1:8b' is not in models.dev")


def test_an_open_weight_model_on_a_loopback_server_has_no_catalog_prices(tmp_home: Path, workdir: Path) -> None:
    config = load_config(workdir, flags={"provider": "openai", "base_url": "http://localhost:8000/v1"})
    info = model_info(config, "deepseek-chat")
    assert info.context_window is not None and info.input is None
    assert cost({"input_tokens": 10, "output_tokens": 10}, info) is None
    hosted = model_info(load_config(workdir, flags={"provider": "openai"}), "deepseek-chat")
    assert hosted.input is not None and hosted.context_window == info.context_window


def test_a_closed_model_behind_a_loopback_proxy_keeps_its_prices(tmp_home: Path, workdir: Path) -> None:
    config = load_config(workdir, flags={"provider": "openai", "base_url": "http://127.0.0.1:4000"})
    info = model_info(config, "gpt-4.1")
    assert (info.context_window, info.input, info.output) == (1_047_576, 2.0, 8.0)


def test_openrouter_base_url_uses_openrouter_figures(tmp_home: Path, workdir: Path) -> None:
    config = load_config(workdir, flags={"provider": "openai", "base_url": "https://openrouter.ai/api/v1/"})
    info = model_info(config, "openai/gpt-4.1")  # without the base URL: openai/gpt-4.1, by its last part
    assert info.source == "models.dev (openrouter/openai/gpt-4.1)"
    assert (info.context_window, info.input, info.output) == (1_047_576, 2.0, 8.0)


def test_a_claude_model_without_cache_prices_gets_anthropics_multipliers(tmp_home: Path, workdir: Path) -> None:
    write_project(workdir, '[models."claude-next"]\ninput = 4\noutput = 20\n')
    info = model_info(load_config(workdir), "claude-next")
    assert (info.cache_write, info.cache_read, info.cache_write_1h) == (5.0, 0.4, 8.0)
    other = model_info(load_config(workdir, flags={"provider": "openai"}), "claude-next")
    assert other.cache_write == 5.0  # a Claude id is priced like Claude wherever it is served


# -- probe_context_window --------------------------------------------------------------------


async def test_probe_reads_llama_cpp_props(get_server) -> None:
    url, routes, seen = get_server
    props = {"default_generation_settings": {"id": 0, "n_ctx": 8192, "params": {}}, "total_slots": 1}
    routes["/props"] = (200, props)
    assert await probe_context_window(f"{url}/v1/", "whatever") == (8192, f"server {url}/props")
    assert seen == ["/props"]


async def test_probe_reads_a_top_level_n_ctx_from_older_llama_cpp(get_server) -> None:
    url, routes, _ = get_server
    routes["/props"] = (200, {"n_ctx": 4096})
    assert await probe_context_window(f"{url}/v1", "m") == (4096, f"server {url}/props")


async def test_probe_reads_vllm_models_for_the_named_model(get_server) -> None:
    url, routes, seen = get_server
    routes["/v1/models"] = (200, {"object": "list", "data": [
        {"id": "Qwen/Qwen2.5-7B", "object": "model", "owned_by": "vllm", "max_model_len": 32768},
        {"id": "my-lora", "object": "model", "root": "Qwen/Qwen2.5-7B", "max_model_len": 16384},
    ]})
    assert await probe_context_window(f"{url}/v1", "my-lora") == (16384, f"server {url}/v1/models")
    assert seen == ["/props", "/v1/models"]
    assert await probe_context_window(f"{url}/v1", "not-served") is None  # two entries, none named


async def test_probe_takes_the_only_vllm_entry(get_server) -> None:
    url, routes, _ = get_server
    routes["/v1/models"] = (200, {"object": "list", "data": [{"id": "served-name", "max_model_len": 131072}]})
    assert await probe_context_window(f"{url}/v1", "other-name") == (131072, f"server {url}/v1/models")


async def test_probe_of_a_server_that_404s_is_none(get_server) -> None:
    url, _, seen = get_server
    assert await probe_context_window(f"{url}/v1", "m") is None
    assert seen == ["/props", "/v1/models"]


async def test_probe_of_junk_is_none(get_server) -> None:
    url, routes, _ = get_server
    routes["/props"] = (200, b"<html>not json</html>")
    routes["/v1/models"] = (200, {"data": [{"id": "m", "max_model_len": "lots"}]})
    assert await probe_context_window(f"{url}/v1", "m") is None


async def test_probe_of_a_closed_port_is_none(get_server) -> None:
    url, _, _ = get_server
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        assert await probe_context_window(f"http://127.0.0.1:{port}/v1", "m", timeout=2) is None
    assert await probe_context_window("not a url", "m") is None


# -- cost and cache share --------------------------------------------------------------------

SONNET = ModelInfo("claude-sonnet-4-5", input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
USAGE = {"input_tokens": 1_000, "output_tokens": 2_000, "cache_read_tokens": 10_000, "cache_write_tokens": 4_000}


def test_cost_with_five_minute_cache_writes() -> None:
    # 1k x $3 + 2k x $15 + 10k x $0.30 + 4k x $3.75, per million tokens
    assert cost(USAGE, SONNET) == pytest.approx((3_000 + 30_000 + 3_000 + 15_000) / 1e6)


def test_cost_with_one_hour_cache_writes_at_twice_input() -> None:
    # Of the 4k written, 3k with a 1-hour TTL ($6 = 2 x input) and 1k with 5 minutes ($3.75).
    mixed = {**USAGE, "cache_write_1h_tokens": 3_000}
    assert cost(mixed, SONNET) == pytest.approx((3_000 + 30_000 + 3_000 + 3_750 + 18_000) / 1e6)


def test_unknown_cache_prices_fall_back_to_input_and_missing_counts_are_zero() -> None:
    plain = ModelInfo("m", input=2.0, output=8.0)
    assert cost({"input_tokens": 500_000, "cache_read_tokens": 500_000, "reasoning_tokens": None}, plain) == 2.0


def test_cost_is_none_without_prices() -> None:
    assert cost(USAGE, None) is None
    assert cost(USAGE, ModelInfo("m", input=3.0)) is None
    assert cost(USAGE, ModelInfo("m", output=3.0, cache_read=0.1)) is None


def test_cache_hit_share() -> None:
    assert cache_hit_share(USAGE) == pytest.approx(10_000 / 15_000)
    assert cache_hit_share({"input_tokens": 0, "output_tokens": 5}) is None


def test_importing_the_module_loads_neither_models_dev_nor_httpx() -> None:
    code = "import sys, scout_tui.config.models; print(sorted(m for m in ('models_dev', 'httpx') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# -- long-context prices (models.dev cost.context_over_200k) ----------------------------------


def test_the_catalogue_carries_a_models_long_context_prices() -> None:
    # OpenRouter lists Claude Sonnet 4.5 at $3/$15, and $6/$22.50 for a prompt over 200K tokens.
    info = lookup("openrouter", "anthropic/claude-sonnet-4.5")
    assert (info.input, info.output) == (3.0, 15.0)
    tier = info.over_200k
    assert tier is not None and (tier.input, tier.output, tier.cache_read, tier.cache_write) == (6.0, 22.5, 0.6, 7.5)


def test_a_prompt_over_200k_tokens_cache_included_is_billed_at_the_long_context_prices() -> None:
    info = lookup("openrouter", "anthropic/claude-sonnet-4.5")
    at_limit = {"input_tokens": 100_000, "cache_read_tokens": 60_000, "cache_write_tokens": 40_000, "output_tokens": 1_000}
    assert cost(at_limit, info) == pytest.approx((100_000 * 3 + 60_000 * 0.3 + 40_000 * 3.75 + 1_000 * 15) / 1e6)
    over = {**at_limit, "cache_read_tokens": 60_001}  # one cached token more: the whole request at the tier
    assert cost(over, info) == pytest.approx((100_000 * 6 + 60_001 * 0.6 + 40_000 * 7.5 + 1_000 * 22.5) / 1e6)


def test_a_claude_tier_without_cache_prices_gets_anthropics_multipliers() -> None:
    from scout_tui.config.models import _with_claude_cache_prices

    info = _with_claude_cache_prices(ModelInfo("claude-x", input=3.0, output=15.0,
                                               over_200k=ModelInfo("claude-x", input=6.0, output=22.5)))
    assert (info.over_200k.cache_read, info.over_200k.cache_write) == (pytest.approx(0.6), 7.5)


def test_prices_of_your_own_hold_at_every_size(tmp_home: Path, workdir: Path) -> None:
    (workdir / "scout.toml").write_text('[models."anthropic/claude-sonnet-4.5"]\ninput = 2.0\n')
    config = load_config(workdir, flags={"provider": "openai", "base_url": "https://openrouter.ai/api/v1",
                                         "model": "anthropic/claude-sonnet-4.5"})
    info = model_info(config, "anthropic/claude-sonnet-4.5")
    assert info.input == 2.0 and info.over_200k is None
    untouched = model_info(load_config(workdir.parent, flags={"provider": "openai", "base_url": "https://openrouter.ai/api/v1"}),
                           "anthropic/claude-sonnet-4.5")
    assert untouched.over_200k is not None and untouched.over_200k.input == 6.0


def test_headless_stores_and_reports_a_long_prompts_cost_at_the_tier(tmp_path: Path, env: dict[str, str],
                                                                     monkeypatch) -> None:
    import json

    from scout_tui.store.event_log import Store
    from tests.headless_helpers import scout
    from tests.loopback import LoopbackServer, Reply, anthropic_stream

    with LoopbackServer([Reply(anthropic_stream(["ok"], input_tokens=250_000, output_tokens=1_000))]) as server:
        done = scout(["-p", "read it all", "--base-url", server.url, "--model", "anthropic/claude-sonnet-4.5",
                      "--output-format", "json"], tmp_path, env)
    assert done.returncode == 0, done.stderr
    tier_cost = (250_000 * 6 + 1_000 * 22.5) / 1e6  # $1.5225, not $0.765 at the base prices
    result = json.loads(done.stdout)
    assert result["cost"] == pytest.approx(tier_cost)
    monkeypatch.setenv("SCOUT_HOME", env["SCOUT_HOME"])
    spent = Store().spending(result["session"])  # what /cost shows
    assert spent["anthropic/claude-sonnet-4.5"]["cost"] == pytest.approx(tier_cost)
