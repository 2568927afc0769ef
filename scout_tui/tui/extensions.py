"""Skills and plugins in the TUI: found and loaded after the first frame, in a thread (a plugin's
code runs there, off the event loop), then what depends on them checked (permission rules naming
a tool no one provides, a misspelt prompt strategy), said, and the plugins' commands registered.

A feature of ``ScoutApp`` (app.py); ``-p`` and ``acp`` load them with the session's runtime.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from textual.message import Message

from scout_tui.core import urgency
from scout_tui.core.errors import ScoutError
from scout_tui.tui.feature import Feature, feature_work

if TYPE_CHECKING:
    from scout_tui.extensions.hook_config import HookSettings
    from scout_tui.extensions.md_commands import MarkdownCommand
    from scout_tui.extensions.plugins import Plugins
    from scout_tui.extensions.skills import Skill


@dataclass
class ExtensionsLoaded(Message):
    """Skills and plugins were discovered and loaded, and what depends on them checked (off the
    event loop, which so imports none of the engine for it)."""

    skills: list[Skill]
    plugins: Plugins
    problems: list[str]
    """Skills and plugins skipped, each a sentence naming the file."""
    unknown_tools: list[str]
    """Permission rules naming a tool no one provides (``PermissionPolicy.unknown_tools``)."""
    strategy_problem: str | None
    """Why the configured prompt strategies are invalid, or None."""
    hooks: HookSettings | None = None
    """The hooks configured (None: an entry cannot be read; a problem says which)."""
    commands: list[MarkdownCommand] = field(default_factory=list)
    """The markdown commands found (``md_commands``)."""


class Extensions(Feature):
    """Loading skills and plugins for ``ScoutApp`` (which holds them: ``skills``, ``plugins``)."""

    @feature_work(thread=True, exclusive=True, group="extensions")
    def load(self) -> None:
        """Find skills and load plugins (their code runs here, off the event loop), then check
        what plugins may supply: tools named by permission rules, prompt strategies; posts
        ``ExtensionsLoaded``. Its imports wait for typed keys (``urgency.yielding``)."""
        with urgency.yielding():
            self.app.post_message(self._found())

    def _found(self) -> ExtensionsLoaded:
        from scout_tui.extensions.hook_config import hook_settings
        from scout_tui.extensions.md_commands import discover_commands
        from scout_tui.extensions.plugins import load_plugins
        from scout_tui.extensions.skills import discover_skills
        from scout_tui.session.runtime import compaction_settings
        from scout_tui.tools.permissions import BUILTIN_TOOL_NAMES

        app = self.app
        skills, problems = discover_skills(app.cwd)
        plugins = load_plugins(app.cwd, config=app.session.config)
        unknown = app.permissions.unknown_tools([*BUILTIN_TOOL_NAMES, *plugins.tools])
        try:  # now that plugins registered theirs, a misspelt strategy name is known to be one
            compaction_settings(app.session.config)
            strategy_problem = None
        except ScoutError as e:
            strategy_problem = f"{e}. Requests cannot be sent until it is fixed."
        try:
            hooks = hook_settings(app.session.config, app.cwd)
            problems += hooks.said()
        except ScoutError as e:
            hooks = None
            strategy_problem = "\n\n".join(filter(None, [strategy_problem, f"{e}. Requests cannot be sent until it "
                                                                              "is fixed."]))
        commands, command_problems = discover_commands(app.cwd)
        return ExtensionsLoaded(skills, plugins, problems + command_problems + plugins.problems, unknown,
                                strategy_problem, hooks, commands)

    def loaded(self, message: ExtensionsLoaded) -> None:
        """Take the skills and plugins loaded: the plugins join the bus and their commands the
        registry; what was skipped is said; the agent is built again with them (between turns)."""
        app = self.app
        app.skills, app.plugins = message.skills, message.plugins
        if message.hooks is not None:
            app.session.hook_settings = message.hooks
        message.plugins.attach(app.bus)
        app.slash.add_markdown_commands(message.commands)
        app.slash.add_plugin_commands()
        for problem in message.problems:
            app.notify(problem, title="Skipped", severity="error", timeout=10)
        for problem in message.unknown_tools:
            app.notify(problem, title="Permissions", severity="warning", timeout=15)
        if message.strategy_problem:
            app.chat.add_notice(message.strategy_problem, "error")
        if not app.busy:
            app.session.agent = None  # built again with the skills and plugin tools
        app.extensions_ready.set()
        app.long_session.estimate_context()
