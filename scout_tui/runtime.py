"""Wiring shared by the TUI and headless mode: config → backend, tools, system prompt, agent."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from scout_tui import keys
from scout_tui.agent import Agent
from scout_tui.backends import PROVIDERS, make_backend
from scout_tui.compaction import configured_settings
from scout_tui.config import Config, data_dir, share_setting
from scout_tui.models import ModelInfo, cost, model_info, probe_context_window
from scout_tui.errors import ScoutError
from scout_tui.prompt import system_prompt
from scout_tui.skills import Skill, skill_tool
from scout_tui.summary import Compaction
from scout_tui.tomlpos import key_line
from scout_tui.tools import builtin_registry
from scout_tui.tools.permission_config import policy_from_config
from scout_tui.tools.approvals import Approver
from scout_tui.tools.permissions import Policy
from scout_tui.tools.sandbox import SandboxSettings
from scout_tui.tools.sandbox_config import sandbox_from_config

if TYPE_CHECKING:
    from scout_tui.plugins import Plugins

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
    """The configured model, or the provider's default model."""
    if config.model:
        return config.model
    cls = PROVIDERS.get(config.provider)
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
    """``model_metadata``, and when nothing knows the window of an OpenAI-compatible server of
    our own (``base_url`` set), what the server says (llama.cpp ``/props``, vLLM ``/v1/models``).

    Raises:
        ScoutError: as ``model_metadata``.
    """
    info = model_metadata(config)
    if info.context_window is None and config.provider == "openai" and config.base_url:
        server = await probe_context_window(config.base_url, info.id, api_key=config.api_key)
        if server is not None:
            info = model_metadata(config, server)
    return info


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
                line = key_line(layer.text, ("compaction",) if key == "compaction" else ("compaction", key))
                return f"{layer.path}:{line}: [compaction]" if line else f"{layer.path}: [compaction]"
        return "[compaction]"

    return configured_settings(config.extra.get("compaction", {}), os.environ if env is None else env, place)


def needs_key(config: Config) -> bool:
    """True when no key is set and the provider's hosted default URL would be used.

    A custom ``base_url`` (Ollama, vLLM, llama.cpp on localhost) may need no key at all.
    """
    return not config.api_key and not config.base_url


def tool_environment(config: Config, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for processes tools start: ``environ`` (default this process's) without
    any provider key variable (``keys.key_variables``) nor any variable holding a known secret
    (the configured key under another name): a model could otherwise `env` them onto the screen."""
    return keys.without_keys(os.environ if environ is None else environ, keys.secrets([config.api_key], environ))


def check_provider(config: Config) -> None:
    """Raise ScoutError when ``config.provider`` names no known backend."""
    if config.provider not in PROVIDERS:
        raise ScoutError(f"unknown provider {config.provider!r} (known: {', '.join(sorted(PROVIDERS))})")


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
    force (``Store.compactions``); ``cache_key`` the branch id for OpenAI's prompt cache.
    First the provider key variables leave this process's environment (``keys.withhold``); the
    agent redacts every known key (``keys.secrets``) from what it passes on.

    Raises:
        ScoutError: for an unknown provider, a bad permission rule, ``[sandbox]``, ``[compaction]`` value or
            ``[models."ID"]`` table (naming file and line).
    """
    keys.withhold()  # from here on no process started sees a key, not even in /proc/$PPID/environ
    keys.blank_command_line([config.api_key])  # nor in /proc/$PPID/cmdline (--api-key)

    def backend_for(model: str):
        backend = make_backend(config.provider, model=model, api_key=config.api_key, base_url=config.base_url,
                               timeout=config.timeout, transport=transport)
        if hasattr(backend, "send_cache_key"):
            backend.send_cache_key = config.prompt_cache_key
        return backend

    backend = backend_for(model_name(config))
    info = info if info is not None else model_metadata(config)
    summary_backend = backend_for(config.compaction_model) if config.compaction_model else None

    def pricing(usage: dict, model: str) -> float | None:
        return cost(usage, info if model == info.id else model_info(config, model))

    tools = builtin_registry()
    if skills:
        tools.add(skill_tool(skills))
    for tool in (plugins.tools.values() if plugins is not None else ()):
        tools.add(tool)
    system = system_prompt(cwd, list(tools.tools), skills=skills or (),
                           extra=plugins.prompts if plugins is not None else ())
    return Agent(
        backend,
        tools,
        system=system,
        cwd=cwd,
        max_turns=config.max_turns,
        max_tokens=config.max_tokens,
        tool_env=tool_environment(config),
        sandbox=sandbox if sandbox is not None else sandbox_from_config(config, cwd),
        secrets=list(keys.secrets([config.api_key])),
        permissions=permissions if permissions is not None else policy_from_config(config, cwd),
        approve=approve,
        output_dir=tool_output_dir(),
        compaction_settings=compaction_settings(config),
        context_window=info.context_window,
        auto_compact=share_setting(config.auto_compact),
        compaction=compaction,
        summary_backend=summary_backend,
        pricing=pricing,
        cache_key=cache_key,
        cache_ttl=config.cache_ttl,
        key_source=key_source(config),
    )


def tool_output_dir() -> Path:
    """Where whole outputs of cut tool results are saved: ``tool-output`` in the data dir."""
    return data_dir() / "tool-output"
