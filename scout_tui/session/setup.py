"""What a front end without a screen (headless ``-p``, the ACP agent) does before its first turn:
configuration notes, skills and plugins, the provider and key checks, and the agent's start-up notes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from scout_tui.engine.agent import Agent
from scout_tui.core.bus import Bus, Event
from scout_tui.config.layers import Config
from scout_tui.core.errors import ScoutError
from scout_tui.extensions.plugins import Plugins, load_plugins
from scout_tui.session.runtime import check_provider, key_problem
from scout_tui.extensions.skills import Skill, discover_skills


@dataclass
class Extensions:
    """What a run adds to the built-ins: the skills found, the plugins loaded, and the bus the
    plugins' ``on`` handlers are attached to (emit each of the turn's events on it)."""

    skills: list[Skill]
    plugins: Plugins
    bus: Bus


def load_extensions(config: Config, cwd: Path, warn: Callable[[str], None],
                    on_notice: Callable[[Event], None] | None = None) -> Extensions:
    """Say ``config.notes``, find the skills and load the plugins of ``cwd`` (their problems
    said too, one ``warn(text)`` each), and check the provider can be reached: a plugin may
    register the configured provider, so this comes after loading them. ``on_notice`` gets the
    ``notice`` events emitted on the bus (the agent's and plugins' ``api.emit("notice")``),
    before the plugins' handlers.

    Raises:
        ScoutError: an unknown provider (naming where it was set), or no API key for a
            provider's hosted URL (saying how to set one).
    """
    for note in config.notes:
        warn(note)
    skills, problems = discover_skills(cwd)
    plugins = load_plugins(cwd, config=config)
    for problem in (*problems, *plugins.problems):
        warn(problem)
    bus = Bus()
    if on_notice is not None:
        bus.on("notice", on_notice)
    plugins.attach(bus, report=warn)
    try:
        check_provider(config)
    except ScoutError as e:
        raise ScoutError(f"{config.where('provider')}: {e}") from None
    # A plugin's provider decides for itself whether it needs a key.
    if config.provider not in plugins.providers and (problem := key_problem(config)):
        raise ScoutError(f"{problem}; or pass --api-key, or use a local server "
                         "(--provider openai --base-url http://localhost:11434/v1)")
    return Extensions(skills, plugins, bus)


def agent_notes(agent: Agent) -> list[str]:
    """What a run says once its agent is built: the permission rules' notes and the rules that
    name unknown tools (``Policy.notes``, ``Policy.unknown_tools``); empty without a policy."""
    if agent.permissions is None:
        return []
    return [*agent.permissions.notes, *agent.permissions.unknown_tools(agent.tools.tools)]
