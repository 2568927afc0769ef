"""Wiring shared by the TUI and headless mode: config → backend, tools, system prompt, agent."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from scout_tui.agent import Agent
from scout_tui.backends import PROVIDERS, make_backend
from scout_tui.config import Config, data_dir
from scout_tui.errors import ScoutError
from scout_tui.prompt import system_prompt
from scout_tui.skills import Skill, skill_tool
from scout_tui.tools import builtin_registry
from scout_tui.tools.permissions import Approver, Policy, policy_from_config

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


# Context windows in tokens, by model-id prefix (providers' model pages); longest prefix wins.
CONTEXT_WINDOWS = {
    "claude": 200_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4": 200_000,
    "llama3": 128_000,
    "qwen": 32_768,
}
DEFAULT_CONTEXT_WINDOW = 128_000


def context_window(config: Config) -> int:
    """The model's context window in tokens: the ``context_window`` setting, else by model id."""
    if config.context_window:
        return config.context_window
    model = model_name(config).lower().rsplit("/", 1)[-1]  # "anthropic/claude-…" on OpenRouter
    matches = [prefix for prefix in CONTEXT_WINDOWS if model.startswith(prefix)]
    return CONTEXT_WINDOWS[max(matches, key=len)] if matches else DEFAULT_CONTEXT_WINDOW


def needs_key(config: Config) -> bool:
    """True when no key is set and the provider's hosted default URL would be used.

    A custom ``base_url`` (Ollama, vLLM, llama.cpp on localhost) may need no key at all.
    """
    return not config.api_key and not config.base_url


# Environment variables that hold provider keys: never handed to the processes tools start.
KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "SCOUT_API_KEY", "OPENROUTER_API_KEY")


def tool_environment(config: Config, environ: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without API keys: the known key variables and any variable
    holding the configured key are left out (a model could otherwise `env` them onto screen)."""
    environ = dict(os.environ if environ is None else environ)
    return {k: v for k, v in environ.items()
            if k not in KEY_VARIABLES and not (config.api_key and v == config.api_key)}


def check_provider(config: Config) -> None:
    """Raise ScoutError when ``config.provider`` names no known backend."""
    if config.provider not in PROVIDERS:
        raise ScoutError(f"unknown provider {config.provider!r} (known: {', '.join(sorted(PROVIDERS))})")


def build_agent(
    config: Config,
    cwd: Path,
    *,
    transport: object = None,
    skills: Sequence[Skill] | None = None,
    plugins: Plugins | None = None,
    permissions: Policy | None = None,
    approve: Approver | None = None,
) -> Agent:
    """An Agent for ``config`` working in ``cwd``.

    Tools: the built-ins, then the ``skill`` tool when ``skills`` is not empty, then the
    plugins' tools (a plugin tool replaces a built-in of the same name). The system prompt
    lists the skills' names and descriptions and adds the plugins' prompt texts. Every tool
    call is checked against ``permissions`` (default: the config's mode and rules, with
    ``cwd`` as the workspace); ``approve`` answers the calls that ask (None: they are denied).
    Results cut to fit the model are saved whole under ``tool_output_dir()``.

    Raises:
        ScoutError: for an unknown provider, or a bad permission rule (naming file and line).
    """
    backend = make_backend(
        config.provider,
        model=model_name(config),
        api_key=config.api_key,
        base_url=config.base_url,
        timeout=config.timeout,
        transport=transport,
    )
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
        secrets=[config.api_key] if config.api_key else [],
        permissions=permissions if permissions is not None else policy_from_config(config, cwd),
        approve=approve,
        output_dir=tool_output_dir(),
    )


def tool_output_dir() -> Path:
    """Where whole outputs of cut tool results are saved: ``tool-output`` in the data dir."""
    return data_dir() / "tool-output"
