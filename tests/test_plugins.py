"""Plugins: .agents/plugins/*.py with scout(api) adding tools, commands, strategies, providers, handlers.

Project plugins run only once trusted (tests/test_trust.py pins that gate): the tests here trust
theirs explicitly with ``trust_project``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scout_tui.backends import PROVIDERS, make_backend
from scout_tui.core.bus import Bus, Event
from scout_tui.engine.compaction import prepare_prompt, strategy_names
from scout_tui.config.layers import Config, load_config
from scout_tui.core.errors import ScoutError
from scout_tui.extensions.plugins import load_plugins, project_plugin_files
from scout_tui.session.runtime import build_agent
from scout_tui.config.trust import check_file, record_trust
from scout_tui.extensions.skills import discover_skills
from tests.headless_helpers import env  # noqa: F401 — a fixture
from tests.loopback import LoopbackServer, Reply, anthropic_stream

SHOUT = '''
from scout_tui.tools import Tool

def scout(api):
    async def run(input, ctx):
        return "SHOUTED: " + input["text"].upper()
    api.tool(Tool("shout", "Upper-case a text.", {"type": "object",
             "properties": {"text": {"type": "string"}}, "required": ["text"]}, run, read_only=True))
    api.prompt("Use shout when the user wants emphasis.")
'''


@pytest.fixture(autouse=True)
def _registries():
    """Plugins register strategies and providers process-wide: put the registries back after."""
    from scout_tui.engine import compaction

    strategies, providers = dict(compaction._REGISTRY), dict(PROVIDERS)
    yield
    compaction._REGISTRY.clear()
    compaction._REGISTRY.update(strategies)
    PROVIDERS.clear()
    PROVIDERS.update(providers)


def plugin(root: Path, name: str, source: str) -> Path:
    path = root / ".agents" / "plugins" / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def trust_project(cwd: Path, trust_file: Path | None = None) -> None:
    """Trust every project plugin of ``cwd`` as it is now, as ``scout-tui trust --yes`` would
    (in the data folder of ``tmp_home``, or in ``trust_file``)."""
    record_trust([check_file(path, {}) for path in project_plugin_files(cwd)], trust_file)


async def test_a_plugin_tool_is_called_by_the_model_and_its_result_goes_back(tmp_home, workdir):
    plugin(workdir, "shout", SHOUT)
    trust_project(workdir)
    plugins = load_plugins(workdir)
    assert plugins.problems == [] and [name for name, _ in plugins.loaded] == ["shout"]
    replies = [Reply(anthropic_stream([], ("toolu_1", "shout", ['{"text": "hi"}']))), Reply(anthropic_stream(["done"]))]
    with LoopbackServer(replies) as server:
        agent = build_agent(Config(api_key="sk-test-key-123", base_url=server.url), workdir, plugins=plugins)
        events = [event async for event in agent.run([], "shout hi")]
    first = server.requests[0].json()
    assert "shout" in [tool["name"] for tool in first["tools"]]
    assert "Use shout when the user wants emphasis." in json.dumps(first["system"])
    [result] = server.requests[1].json()["messages"][-1]["content"]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1"
    assert "SHOUTED: HI" in json.dumps(result["content"])
    assert events[-1] == Event.of("turn.end", {"stop_reason": "end_turn"})


def test_build_agent_adds_the_skill_tool_and_lists_the_skills(tmp_home, workdir):
    skill = workdir / ".agents" / "skills" / "deploy.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\ndescription: Ship it\n---\nbody\n")
    skills, _ = discover_skills(workdir)
    agent = build_agent(Config(api_key="sk-test-key-123"), workdir, skills=skills)
    assert "skill" in agent.tools and agent.tools.tools["skill"].read_only
    assert "- deploy: Ship it" in agent.window.system


def test_a_project_plugin_tool_replaces_a_user_one_and_a_builtin(tmp_home, workdir):
    for root, who in ((tmp_home, "user"), (workdir, "project")):
        plugin(root, "reader", f'''
            from scout_tui.tools import Tool
            def scout(api):
                async def run(input, ctx):
                    return "{who}"
                api.tool(Tool("read", "{who} read", {{"type": "object", "properties": {{}}}}, run))
        ''')
    trust_project(workdir)
    plugins = load_plugins(workdir)
    agent = build_agent(Config(api_key="sk-test-key-123"), workdir, plugins=plugins)
    assert agent.tools.tools["read"].description == "project read"
    assert list(agent.tools.tools)[:2] == ["bash", "read"]  # replaced in place, not appended


def test_commands_run_and_the_later_registration_wins(tmp_home, workdir):
    plugin(tmp_home, "greet", 'def scout(api):\n    api.command("/hello", lambda args: "user hello")\n')
    plugin(workdir, "greet2", '''
        def scout(api):
            api.command("hello", lambda args: f"hello {args}!")
            api.command("quiet", lambda args: None)
    ''')
    trust_project(workdir)
    plugins = load_plugins(workdir)
    assert plugins.commands["hello"][1] == "greet2"
    assert plugins.run_command("hello", "  world ") == "hello world!"
    assert plugins.run_command("quiet") is None
    assert "command `/hello`" in plugins.describe()


def test_a_failing_command_names_the_plugin_and_line(tmp_home, workdir):
    path = plugin(workdir, "oops", 'def scout(api):\n    api.command("boom", lambda args: 1 / 0)\n')
    trust_project(workdir)
    plugins = load_plugins(workdir)
    with pytest.raises(ScoutError, match=rf"^/boom \(plugin oops\) failed at {path}:2: ZeroDivisionError"):
        plugins.run_command("boom")


def test_a_plugin_strategy_is_usable_by_name(tmp_home, workdir):
    plugin(workdir, "strat", '''
        def scout(api):
            api.strategy("plugin_last_two", lambda messages: messages[-2:])
    ''')
    trust_project(workdir)
    plugins = load_plugins(workdir)
    assert plugins.strategies == {"plugin_last_two": "strat"}
    assert "plugin_last_two" in strategy_names()
    messages = [{"role": "user", "content": [{"type": "text", "text": str(i)}]} for i in range(5)]
    assert prepare_prompt(messages, "plugin_last_two", settings={}) == messages[-2:]


def test_a_plugin_provider_builds_backends(tmp_home, workdir):
    plugin(workdir, "prov", '''
        from scout_tui.backends import AnthropicBackend
        def scout(api):
            api.provider("plugin-echo", lambda **kw: AnthropicBackend(**{**kw, "base_url": "http://127.0.0.1:9"}))
    ''')
    trust_project(workdir)
    load_plugins(workdir)
    backend = make_backend("plugin-echo", model="m", api_key=None)
    assert backend.base_url == "http://127.0.0.1:9"


def test_handlers_see_bus_events_and_emit_reaches_the_bus(tmp_home, workdir):
    plugin(workdir, "watch", '''
        seen = []
        def scout(api):
            api.on("tool.end", lambda event: seen.append(event.data["name"]))
            api.on("tool.end", lambda event: api.emit("watch.counted", count=len(seen)))
            api.emit("watch.loaded", version=1)
    ''')
    trust_project(workdir)
    plugins = load_plugins(workdir)
    bus, got = Bus(), []
    bus.on("*", got.append)
    plugins.attach(bus)
    bus.emit(Event.of("tool.end", {"id": "t1", "name": "read", "content": "", "is_error": False, "elapsed": 0.1}))
    assert [e.type for e in got] == ["watch.loaded", "watch.counted", "tool.end"]
    assert got[0].data == {"version": 1} and got[1].data == {"count": 1}


def test_a_failing_handler_is_reported_and_the_emit_goes_on(tmp_home, workdir):
    path = plugin(workdir, "fragile", 'def scout(api):\n    api.on("usage", lambda event: event.data["missing"])\n')
    trust_project(workdir)
    plugins = load_plugins(workdir)
    bus, notices = Bus(), []
    bus.on("notice", lambda event: notices.append(event.data["text"]))
    plugins.attach(bus)
    bus.emit(Event.of("usage", {}))
    assert notices == [f"plugin fragile: handler for 'usage' failed at {path}:2: KeyError: 'missing'"]


def test_config_defaults_are_overlaid_by_the_plugin_table(tmp_home, workdir):
    (workdir / "scout.toml").write_text("[plugins.notify]\nsound = false\n")
    plugin(workdir, "notify", '''
        settings = None
        def scout(api):
            global settings
            settings = api.config({"sound": True, "volume": 3})
    ''')
    config = load_config(workdir, env={})
    trust_project(workdir)
    plugins = load_plugins(workdir, config=config)
    assert plugins.settings["notify"] == {"sound": False, "volume": 3}
    assert config.extra["plugins"]["notify"] is plugins.settings["notify"]


def test_broken_plugins_are_skipped_with_file_line_and_error_and_the_rest_load(tmp_home, workdir):
    syntax = plugin(workdir, "a_syntax", "def scout(api)\n    pass\n")
    raising = plugin(workdir, "b_raising", '''
        from scout_tui.tools import Tool
        def scout(api):
            async def run(input, ctx):
                return ""
            api.tool(Tool("half", "", {"type": "object"}, run))
            api.strategy("plugin_half_registered", lambda m: m)
            api.provider("plugin-half", lambda **kw: None)
            api.command("half", lambda args: None)
            raise RuntimeError("no config file")
    ''')
    missing = plugin(workdir, "c_missing", "x = 1\n")
    plugin(workdir, "d_good", SHOUT)
    trust_project(workdir)
    plugins = load_plugins(workdir)
    assert [name for name, _ in plugins.loaded] == ["d_good"]
    assert plugins.problems == [
        f"{syntax}:1: plugin a_syntax skipped: SyntaxError: expected ':'",
        f"{raising}:10: plugin b_raising skipped: RuntimeError: no config file",
        f"{missing}: plugin c_missing skipped: it defines no scout(api) function",
    ]
    assert list(plugins.tools) == ["shout"] and plugins.commands == {}
    assert "plugin_half_registered" not in strategy_names() and "plugin-half" not in PROVIDERS


def test_an_import_error_names_the_plugin_line(tmp_home, workdir):
    path = plugin(tmp_home, "needs", "import not_a_module_anywhere\ndef scout(api):\n    pass\n")
    trust_project(workdir)
    plugins = load_plugins(workdir)
    assert plugins.problems == [f"{path}:1: plugin needs skipped: ModuleNotFoundError: "
                                "No module named 'not_a_module_anywhere'"]


def test_headless_run_uses_a_project_plugin_tool_and_reports_a_broken_one(tmp_path):
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    repo.mkdir()
    plugin(repo, "shout", SHOUT)
    broken = plugin(repo, "broken", "def scout(api):\n    raise ValueError('bad')\n")
    plugin(repo, "log", '''
        def scout(api):
            api.on("tool.end", lambda event: api.emit("notice", text="plugin saw " + event.data["name"]))
    ''')
    trust_project(repo, trust_file=home / "data" / "trusted.json")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SCOUT_", "ANTHROPIC_", "OPENAI_"))}
    env = {**clean, "HOME": str(home), "SCOUT_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config"),
           "ANTHROPIC_API_KEY": "sk-test-key-123"}
    replies = [Reply(anthropic_stream([], ("toolu_1", "shout", ['{"text": "hey"}']))), Reply(anthropic_stream(["ok"]))]
    with LoopbackServer(replies) as server:
        done = subprocess.run([sys.executable, "-m", "scout_tui", "-p", "shout hey", "--base-url", server.url],
                              cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n"
    assert f"scout-tui: {broken}:2: plugin broken skipped: ValueError: bad" in done.stderr.splitlines()
    assert "plugin saw shout" in done.stderr.splitlines()
    assert "SHOUTED: HEY" in json.dumps(server.requests[1].json()["messages"][-1])


BOOM = '''
from scout_tui.tools import Tool

def helper(x):
    raise RuntimeError("kaboom " + x)

def scout(api):
    async def run(input, ctx):
        return helper(input["x"])
    api.tool(Tool("boomtool", "Boom.", {"type": "object", "properties": {"x": {"type": "string"}}}, run))
'''
BOOM_FAILED = "boomtool failed at .agents/plugins/boom.py:5: RuntimeError: kaboom y"


async def test_a_plugin_tool_that_raises_shows_its_file_and_line_in_the_pane_and_to_the_model(tmp_home, workdir):
    from scout_tui.widgets import ToolActivity
    from tests.app_helpers import SIZE, make_app, send, settle

    plugin(workdir, "boom", BOOM)
    trust_project(workdir)
    replies = [Reply(anthropic_stream([], ("toolu_1", "boomtool", ['{"x": "y"}']))), Reply(anthropic_stream(["done"]))]
    with LoopbackServer(replies) as server:
        app = make_app(workdir, server, permission_mode="yolo")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "boom")
            await settle(app, pilot)
            tools = app.query_one(ToolActivity)
            assert tools.status_of("toolu_1") == "error"
            row = str(tools.query_one("#tool-list").get_option("row-1").prompt)
            assert BOOM_FAILED in row
    [result] = server.requests[1].json()["messages"][-1]["content"]
    assert result["is_error"] and result["content"] == BOOM_FAILED  # one line: no traceback


def test_headless_names_why_a_plugin_tool_failed(tmp_path, env):
    from tests.headless_helpers import scout

    repo = tmp_path / "repo"
    repo.mkdir()
    plugin(repo, "boom", BOOM)
    trust_project(repo, trust_file=Path(env["SCOUT_HOME"]) / "trusted.json")
    replies = [Reply(anthropic_stream([], ("toolu_1", "boomtool", ['{"x": "y"}']))), Reply(anthropic_stream(["ok"]))]
    with LoopbackServer(replies) as server:
        done = scout(["-p", "boom", "--base-url", server.url, "--permission-mode", "yolo"], repo, env)
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("✗ boomtool")]
    assert line.endswith(f"s): {BOOM_FAILED}"), line
    assert "Traceback" not in done.stderr


async def test_a_plugin_s_own_key_error_is_its_failure_not_the_model_s_arguments(tmp_path):
    from scout_tui.tools import Tool
    from scout_tui.tools.base import Registry, ToolContext

    def lookup(table: dict) -> str:
        return table["zzz"]  # the plugin's bug: the model's arguments are fine

    async def run(input: dict, ctx: ToolContext) -> str:
        return lookup({"x": input["x"]})

    registry = Registry()
    registry.add(Tool("fragile", "", {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
                      run))
    context = ToolContext(cwd=tmp_path)
    failed = await registry.call("fragile", {"x": "y"}, context)
    assert failed.is_error and failed.content.startswith("fragile failed at ")
    assert "test_plugins.py" in failed.content and failed.content.endswith("KeyError: 'zzz'")
    missing = await registry.call("fragile", {}, context)  # what the schema requires, missing: the model's
    assert missing.is_error and missing.content == "fragile: missing required argument 'x' (got: nothing)"
