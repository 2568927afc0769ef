"""Wiring shared by the TUI and headless mode: config → backend, tools, system prompt, agent."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from scout_tui.config import keys
from scout_tui.engine.agent import Agent
from scout_tui.engine.settings import AgentSettings
from scout_tui.backends import PROVIDERS, Backend, make_backend
from scout_tui.core.bus import ModelSwitch
from scout_tui.engine.compaction import configured_settings
from scout_tui.config.layers import CONFIG_FILE, Config, data_dir, share_setting, user_config_dir
from scout_tui.engine.budget import Estimator
from scout_tui.config.calibration import read_learnt, remember, server_key
from scout_tui.config.models import ModelInfo, asks_the_server, cost, model_info, probe_context_window
from scout_tui.core.errors import ScoutError
from scout_tui.session.prompt import system_prompt
from scout_tui.extensions.skills import Skill, skill_tool
from scout_tui.engine.summary import Compaction
from scout_tui.config.tomlpos import where
from scout_tui.tools import builtin_registry
from scout_tui.tools.permission_config import policy_from_config
from scout_tui.tools.approvals import Approver
from scout_tui.tools.permissions import Policy
from scout_tui.tools.sandbox import SandboxSettings
from scout_tui.tools.sandbox_config import sandbox_from_config

if TYPE_CHECKING:
    from scout_tui.checkpoints.snapshots import Checkpoints
    from scout_tui.tools.base import Tool
    from scout_tui.mcp.client import McpClient
    from scout_tui.extensions.plugins import Plugins
    from scout_tui.session.memory import Memory

SETUP_HELP = """\
**No API key is configured**, so scout can't reach a model yet. Pick one:

- Anthropic: `export ANTHROPIC_API_KEY=sk-ant-…` then restart `scout-tui`
- OpenAI: `export OPENAI_API_KEY=sk-…` and run `scout-tui --provider openai`
- A local OpenAI-compatible server such as **Ollama** (no key needed):
  `scout-tui --provider openai --base-url http://localhost:11434/v1 --model llama3.1`

Or put the same settings in `~/.config/scout/scout.toml` or `./scout.toml`:

```toml
provider = "openai"
base_url = "http://localhost:11434/v1"
model = "llama3.1"
```
"""


def model_name(config: Config) -> str:
    """The configured model, else the profile's default (the first of its ``models``), else its
    kind's default model."""
    if config.model:
        return config.model
    profile = config.profile
    if profile.models:
        return profile.models[0]
    cls = PROVIDERS.get(profile.kind)
    return getattr(cls, "default_model", "") or "default"


def model_metadata(config: Config, server: tuple[int, str] | None = None) -> ModelInfo:
    """What is known of the configured model (``models.model_info``): window and prices from
    models.dev, ``server`` (a probe's ``(tokens, source)``), ``[models."ID"]`` and the
    ``context_window`` setting. The first call reads the models.dev data (~80 ms): call it off
    the UI's event loop.

    Raises:
        ScoutError: a bad ``[models."ID"]`` table, naming the file and line.
    """
    return model_info(config, model_name(config), server=server)


async def model_metadata_asking_the_server(config: Config) -> ModelInfo:
    """``model_metadata``, with the window of the model on its server: what a server of one's
    own says (``models.asks_the_server``: llama.cpp ``/props``, vLLM ``/v1/models``, on the
    OpenAI and the Anthropic route alike), else a window an earlier overflow error of this
    server named (``calibration.read_learnt``); a ``context_window`` setting or
    ``[models."ID"]`` still wins over both.

    Raises:
        ScoutError: as ``model_metadata``.
    """
    info = model_metadata(config)
    server = None
    if asks_the_server(config) and not config.context_window:  # the setting wins anyway
        server = await probe_context_window(config.base_url or "", info.id, api_key=config.api_key,
                                            kind=config.profile.kind)
    if server is None:
        learnt = read_learnt(learnt_key(config)).window
        if learnt:
            where = config.base_url or f"the {config.provider} API"
            server = (learnt, f"learnt from an overflow error of {where}")
    return model_metadata(config, server) if server is not None else info


def learnt_key(config: Config, model: str | None = None) -> str:
    """The ``calibration`` key of ``model`` (None: the configured one) on ``config``'s server."""
    return server_key(config.profile.kind, config.base_url, model or model_name(config))


def context_window(config: Config) -> int | None:
    """The model's context window in tokens (see ``model_metadata``); None when nothing says,
    never a guess."""
    return model_metadata(config).context_window


def compaction_settings(config: Config, env: Mapping[str, str] | None = None) -> dict:
    """The prompt strategies' settings for this run, resolved once: the config files'
    ``[compaction]`` table, then ``SCOUT_<NAME>`` variables (``compaction.configured_settings``).

    Raises:
        ScoutError: an invalid value, naming the file and line or the variable.
    """
    def place(key: str) -> str:
        for layer in reversed(config.layers):  # the project's file wins, so it is named first
            table = layer.table.get("compaction")
            if isinstance(table, dict) and (key in table or key == "compaction"):
                keys = ("compaction",) if key == "compaction" else ("compaction", key)
                return f"{where(layer.path, layer.text, keys)}: [compaction]"
        return "[compaction]"

    return configured_settings(config.extra.get("compaction", {}), os.environ if env is None else env, place)


def needs_key(config: Config) -> bool:
    """True when no key is set and the provider's hosted default URL would be used.

    A custom ``base_url`` (Ollama, vLLM, llama.cpp on localhost) may need no key at all.
    """
    return not config.api_key and not config.base_url


def missing_key(config: Config) -> str:
    """What keeps ``config`` from its provider for want of a key, naming the variable its profile
    reads ("OPENAI_API_KEY is not set"); "" when it needs none (``needs_key``). Plugin providers
    decide for themselves: the caller skips them."""
    if not needs_key(config):
        return ""
    variable = config.profile.api_key_env
    return f"{variable} is not set" if variable else f"provider {config.provider!r} has no API key"


def how_to_set_key(config: Config) -> str:
    """How to give ``config``'s profile a key: "export VAR=…, or set api_key in <the user's
    scout.toml> (or SCOUT_API_KEY)"; for a profile switched to (``Config.for_provider``), whom a
    top-level api_key does not reach, "export VAR=… and start scout-tui again". Never a key."""
    variable = config.profile.api_key_env
    if "model switch" in config.sources.get("provider", ""):
        return (f"export {variable}=… and start scout-tui again" if variable else
                f"give [providers.{config.provider}] an api_key_env in scout.toml and start scout-tui again")
    how = f"export {variable}=…, or set " if variable else "set "
    return how + f"api_key in {user_config_dir() / CONFIG_FILE} (or SCOUT_API_KEY)"


def key_problem(config: Config) -> str:
    """``missing_key`` and how to set one, for an error ("OPENAI_API_KEY is not set: export
    OPENAI_API_KEY=…, or set api_key in …"); "" when no key is needed."""
    missing = missing_key(config)
    return f"{missing}: {how_to_set_key(config)}" if missing else ""


def tool_environment(config: Config, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for processes tools start: ``environ`` (default this process's) without
    any provider key variable (``keys.key_variables``) nor any variable holding a known secret
    (the configured key under another name): a model could otherwise `env` them onto the screen."""
    return keys.without_keys(os.environ if environ is None else environ,
                             keys.secrets(secret_settings(config), environ))


def secret_settings(config: Config) -> list[str]:
    """The secrets the settings hold, for ``keys.secrets``: every profile's key
    (``Config.provider_keys``: a switch may use any of them) and the values of the profiles'
    headers whose names say they carry a credential (``authorization``, ``x-api-key``,
    ``…-token``, ``cookie``…). Never shown."""
    credential = re.compile(r"auth|key|token|secret|cookie|session|signature|password", re.IGNORECASE)
    headers = [value for profile in config.profiles.values() for name, value in profile.headers.items()
               if credential.search(name)]
    return [*config.provider_keys(), *headers]


def check_provider(config: Config) -> None:
    """Raise ScoutError when ``config.provider`` names no profile whose kind is a known backend
    (a built-in one, or a plugin's provider)."""
    kind = config.profile.kind
    if kind not in PROVIDERS:
        profiles = sorted(name for name, p in config.profiles.items() if p.kind in PROVIDERS)
        plugins = sorted(set(PROVIDERS) - set(config.profiles))
        known = ", ".join(profiles + [f"{name} (a plugin's)" for name in plugins])
        raise ScoutError(f"unknown provider {config.provider!r} (known: {known}; define others in "
                         "[providers.NAME] with a kind)")


def key_source(config: Config) -> str:
    """What the error of a refused key (HTTP 401 or 403) adds: where the key sent came from
    (``Config.where``: "env ANTHROPIC_API_KEY", "<file>:<line>", "flag --api-key"), or that none
    was sent. Never the key."""
    if not config.api_key:
        return "No API key was sent: none is configured (`scout-tui doctor` says how to set one)."
    return (f"The key sent came from {config.where('api_key')}: check it, or set another "
            "(`scout-tui doctor` shows where each setting comes from).")


def build_agent(
    config: Config,
    cwd: Path,
    *,
    transport: object = None,
    skills: Sequence[Skill] | None = None,
    plugins: Plugins | None = None,
    permissions: Policy | None = None,
    sandbox: SandboxSettings | None = None,
    approve: Approver | None = None,
    info: ModelInfo | None = None,
    compaction: Compaction | None = None,
    cache_key: str | None = None,
    checkpoints: Checkpoints | None = None,
    mcp: McpClient | None = None,
    extra_tools: Sequence[Tool] = (),
    keep_tools: Callable[[str], bool] | None = None,
    preamble: str = "",
    memory: Memory | None = None,
) -> Agent:
    """An Agent for ``config`` working in ``cwd``.

    Tools: the built-ins, then the ``skill`` tool when ``skills`` is not empty, then the
    plugins' tools (a plugin tool replaces a built-in of the same name). The system prompt
    lists the skills' names and descriptions and adds the plugins' prompt texts. Every tool
    call is checked against ``permissions`` (default: the config's mode and rules, with
    ``cwd`` as the workspace); commands run in ``sandbox`` (default: the config's ``[sandbox]``,
    ``tools.sandbox_config.sandbox_from_config``); ``approve`` answers the calls that ask (None: they are denied).
    Results cut to fit the model are saved whole under ``tool_output_dir()``. ``info`` is the
    model's metadata (None: ``model_metadata(config)``, read now); ``compaction`` the summary in
    force (``Store.compactions``); ``cache_key`` the branch id for OpenAI's prompt cache;
    ``checkpoints`` the workspace's snapshot store (None: ``checkpoint_store(config, cwd)``);
    ``mcp`` the running MCP servers, whose ready servers' tools join last (``mcp.tools.mcp_tools``)
    and whose header values and credential-like env values are redacted like keys.
    ``extra_tools`` join after those (the session's ``task`` tool); ``keep_tools`` says which
    names the agent may have at all (``Registry.keep``; None: every one: a subagent's are its
    agent's); ``preamble`` goes first in the system prompt (a subagent's own prompt); ``memory``
    the memory files, last in it (None: ``memory.load_memory(cwd)``, read now).
    First the provider key variables leave this process's environment (``keys.withhold``); the
    agent redacts every known key (``keys.secrets``) from what it passes on.

    Raises:
        ScoutError: for an unknown provider, a bad permission rule, ``[sandbox]``, ``[compaction]`` value or
            ``[models."ID"]`` table (naming file and line).
    """
    keys.withhold()  # from here on no process started sees a key, not even in /proc/$PPID/environ
    keys.blank_command_line([config.api_key])  # nor in /proc/$PPID/cmdline (--api-key)

    backend = model_backend(config, transport=transport)
    info = info if info is not None else model_metadata(config)
    summary_backend = model_backend(config, config.compaction_model, transport=transport) if config.compaction_model else None
    tools = builtin_registry()
    if keep_tools is not None:
        tools.keep = keep_tools
        tools.tools = {name: tool for name, tool in tools.tools.items() if keep_tools(name)}
    if skills:
        tools.add(skill_tool(skills))
    for tool in (plugins.tools.values() if plugins is not None else ()):
        tools.add(tool)
    mcp_secrets: list[str] = []
    if mcp is not None:
        from scout_tui.mcp.tools import mcp_tools

        for tool in mcp_tools(mcp):
            tools.add(tool)
        mcp_secrets = [value for status in mcp.status() for value in status.config.secrets]
    for tool in extra_tools:
        tools.add(tool)
    system = system_prompt(cwd, list(tools.tools), skills=(skills or ()) if "skill" in tools.tools else (),
                           extra=plugins.prompts if plugins is not None else (), memory=memory)
    if preamble:
        system = f"{preamble.strip()}\n\n{system}"
    return Agent(backend, tools, AgentSettings(
        system=system,
        cwd=cwd,
        max_turns=config.max_turns,
        max_tokens=config.max_tokens,
        tool_env=tool_environment(config),
        sandbox=sandbox if sandbox is not None else sandbox_from_config(config, cwd),
        secrets=list(keys.secrets([*secret_settings(config), *mcp_secrets])),
        permissions=permissions if permissions is not None else policy_from_config(config, cwd),
        approve=approve,
        output_dir=tool_output_dir(),
        compaction_settings=compaction_settings(config),
        context_window=info.context_window,
        auto_compact=share_setting(config.auto_compact),
        compaction=compaction,
        summary_backend=summary_backend,
        pricing=pricing_for(config, info),
        cache_key=cache_key,
        cache_ttl=config.cache_ttl,
        key_source=key_source(config),
        summary_provider=config.provider if config.compaction_model else None,
        checkpoints=checkpoints if checkpoints is not None else checkpoint_store(config, cwd),
        **calibrated(config),
    ))


def calibrated(config: Config) -> dict:
    """``Agent``'s ``estimator`` and ``remember`` for the model on ``config``'s server: the token
    estimator as earlier runs calibrated it, and the hook that keeps what this run learns
    (``calibration``; a property of the model and its server, never of a session)."""
    key = learnt_key(config)
    learnt = read_learnt(key)
    return {"estimator": Estimator(learnt.ratio, learnt.samples), "remember": functools.partial(remember, key)}


def checkpoint_store(config: Config, cwd: Path) -> Checkpoints | None:
    """The workspace's checkpoint store, or None with ``checkpoints = "off"``."""
    from scout_tui.checkpoints.snapshots import Checkpoints

    return Checkpoints(cwd) if config.checkpoints == "on" else None


def model_backend(config: Config, model: str | None = None, *, transport: object = None) -> Backend:
    """A backend for ``model`` (None: ``model_name(config)``) of the profile in use: its kind,
    the resolved base_url and key, its headers (``Backend.extra_headers``), the timeout, and
    the ``prompt_cache_key`` setting for an OpenAI-compatible one.

    Raises:
        ScoutError: the profile's kind is no known backend.
    """
    backend = make_backend(config.profile.kind, model=model or model_name(config), api_key=config.api_key,
                           base_url=config.base_url, timeout=config.timeout, transport=transport)
    if config.profile.headers:
        backend.extra_headers = dict(config.profile.headers)
    if hasattr(backend, "send_cache_key"):
        backend.send_cache_key = config.prompt_cache_key
    return backend


def pricing_for(config: Config, info: ModelInfo) -> Callable[[dict, str], float | None]:
    """``Agent.pricing`` for a run with ``config``: dollars for a usage dict of ``model``, by
    ``info`` (the model in use) or, for another model (a summary's, an earlier switch's), by
    ``models.model_info``; None when its prices are unknown."""

    def pricing(usage: dict, model: str) -> float | None:
        return cost(usage, info if model == info.id else model_info(config, model))

    return pricing


def switch_agent(agent: Agent, config: Config, info: ModelInfo | None = None, *, transport: object = None,
                 calibration: dict | None = None) -> ModelSwitch:
    """Make ``agent`` send its next model request with ``config``'s profile and model
    (``Config.for_provider`` gives it): a new backend (``model_backend``), pricing and
    context window from ``info`` (None: ``model_metadata(config)``, ~80 ms the first time:
    call it off the UI's event loop, or pass what ``model_metadata_asking_the_server`` gave).
    A request streaming now finishes on the backend it began with (``Agent.use_backend``). The
    ``compaction_model`` writes summaries only on the profile the agent was built with
    (``Agent.summary_provider``): its id names a model of that provider; on any other the
    session's model writes them. The token estimator and the hook that keeps its calibration
    become the new model's on its server: ``calibration`` (None: ``calibrated(config)``, which
    reads a file: on the UI's event loop, pass what it gave in a thread).

    Call it on the event loop the agent's turns run on (between two of its awaits, as any
    handler there is), never from another thread. Returns the ``session.model`` event to
    record in the session (``Store.append``, or the app's bus), so that a reopened session and
    its later branches go on with this model.

    Raises:
        ScoutError: the profile names no known backend (``check_provider``), or a bad
            ``[models."ID"]`` table (naming file and line).
    """
    check_provider(config)
    info = info if info is not None else model_metadata(config)
    backend = model_backend(config, transport=transport)
    summary = None
    if config.compaction_model and config.provider == agent.summary_provider:
        summary = model_backend(config, config.compaction_model, transport=transport)
    keys.blank_command_line([config.api_key])
    agent.use_backend(backend, context_window=info.context_window, pricing=pricing_for(config, info),
                      key_source=key_source(config), summary_backend=summary)
    learnt = calibration if calibration is not None else calibrated(config)  # earlier runs' of the new model
    agent.window.estimator, agent.window.remember = learnt["estimator"], learnt["remember"]
    return ModelSwitch(config.provider, backend.model)


def tool_output_dir() -> Path:
    """Where whole outputs of cut tool results are saved: ``tool-output`` in the data dir."""
    return data_dir() / "tool-output"
