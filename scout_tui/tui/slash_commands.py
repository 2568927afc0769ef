"""The app's commands: the built-in slash commands and the plugins' in one registry
(``commands.Commands``), run from the composer, listed in the command palette and by ``/help``.

A feature of ``ScoutApp`` (app.py): the handlers are the app's own actions.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Iterator

from textual.app import SystemCommand

from scout_tui.session.commands import Command, literal
from scout_tui.config.layers import PERMISSION_MODES
from scout_tui.core.errors import ScoutError
from scout_tui.tui.theme_picker import ThemeChoice, describe_source
from scout_tui.tui.feature import Feature, feature_work
from scout_tui.tui.memory_commands import init_command, memory_command
from scout_tui.tui.export_command import export_command
from scout_tui.tui.search import search_command
from scout_tui.tui.compare import compare_command

if TYPE_CHECKING:
    from scout_tui.config.trust import PluginFile
    from scout_tui.extensions.md_commands import MarkdownCommand

# The engine's modules (compaction, plugins, skills, trust) are imported where a command uses
# them: none of it is needed for the first frame (see app.py).

KEYS_HELP = """\
**Keys**: Enter send · Shift+Enter / Ctrl+J newline · Up recall · Ctrl+R search earlier prompts (all sessions) ·
Ctrl+G edit the prompt in $EDITOR · `/` a command, `@` a file or folder (Tab or Enter completes) · PageUp/PageDown,
Ctrl+Home/Ctrl+End scroll the chat · Esc interrupt · Ctrl+C interrupt, else clear the composer,
else twice to quit · Alt+R retry a failed or interrupted turn · Ctrl+N new session ·
Ctrl+T sessions pane and back (below 100 columns the side panes are shown over the chat: Ctrl+T again for
the tool pane, again or Esc to close) · Ctrl+O what the model sees · Shift+Tab permission mode (ask → auto-edit →
plan → yolo) · Ctrl+P command palette · Ctrl+Q quit

**While a turn runs**: Enter steers (your prompt goes with the results of the running tool calls) · Tab (or
Alt+Enter) queues it for after the turn · Up in the empty composer takes the newest back · Esc cancels it

**Approval prompt**: `y` allow once · `a` allow the shown rule for the session · `n` deny (type a reason for
the model, Enter) · Esc deny and stop the turn

**Plan mode** (Shift+Tab or `/plan`): only read-only tools run; the model proposes a plan and the plan dialog
asks: `h` run it here (the mode goes back to what it was) · `f` run it in a fresh context (a new branch whose
first message is the plan) · `k` keep planning (type a note for the model, Enter) · `e` edit the plan first (Esc
when done, then `h` or `f`) · Esc keep planning

**In the tool pane** (Tab to it): Enter shows a call's output and diff · `x` stops a running call · `o` opens
the saved full output of a cut result

**In the chat** (Tab to it): Up/Down or j/k select a message · `f` forks there (on your prompt: a
new branch before it, with the prompt ready to edit; on an answer: a branch after it) · `c` copies it ·
`b` copies its code blocks, one per press (to the clipboard by OSC 52: a terminal or tmux may need it allowed) ·
below 100 columns, where each tool call shows its output folded, `o` (or a click on a call) shows all of the
selected turn's

**In the sessions pane**: Enter open · `n` new · `r` rename · `d` delete · `s` search every session's words ·
type (or `/`) to filter
"""


class SlashCommands(Feature):
    """Slash commands, the palette and ``/help`` for ``ScoutApp``."""

    def builtin_commands(self) -> list[Command]:
        """scout-tui's own commands, in the order ``/help`` lists them."""
        return [
            Command("new", "", "start a new conversation in this directory (also /clear; the old one stays in the tree)",
                    lambda _: self.app.sessions.new_session(), title="New session", aliases=("clear",)),
            Command("fork", "[N]", "a new branch sharing the first N messages of this session (all if omitted)",
                    self._fork_command, title="Fork session"),
            Command("tree", "", "the sessions pane: open, rename, delete, filter (Ctrl+T)",
                    lambda _: self.app.side_panes.focus_tree(), title="Sessions"),
            Command("search", "[QUERY]", "search the words of every session and branch: prompts, answers, tool calls "
                    "and output (s in the sessions pane)", partial(search_command, self.app), title="Search sessions"),
            Command("compare", "[A] B", "two branches of this tree side by side: where they diverge, then each "
                    "one's messages, files changed and cost (one name: this branch and B; none: pick one)",
                    partial(compare_command, self.app), title="Compare branches"),
            Command("rename", "TITLE", "give this session a new title", self._rename_command, title="Rename session"),
            Command("resume", "[ID]", "reopen session ID (a unique prefix), or pick one in the sessions pane",
                    self._resume_command, title="Resume a session"),
            Command("compact", "[FOCUS]", "summarise the older messages (a preview first; u on the marker undoes it)",
                    self._compact_command, title="Compact conversation"),
            Command("copy", "[code]", "copy the last answer's markdown (or its last code block) to the clipboard",
                    self._copy_command, title="Copy the last answer"),
            Command("export", "[html|md|json] [PATH]", "write this session to a file (default html: its whole branch "
                    "tree as one page, ./scout-<id>.html)", partial(export_command, self.app), title="Export session"),
            Command("diff", "", "every file this session changed, by turn and in total, with its diff",
                    self.app.file_changes._diff_command, title="Files changed in this session"),
            Command("undo", "", "put the files the last turn changed back as they were (asks first; the chat stays)",
                    self.app.file_changes._undo_command, title="Undo the last turn's file changes"),
            Command("redo", "", "change the files again as the turn last undone left them",
                    self.app.file_changes._redo_command, title="Redo the file changes undone"),
            Command("rewind", "[N]", "go back to message N (or pick one, then r): the code, the conversation, or both",
                    self.app.file_changes._rewind_command, title="Rewind code and conversation"),
            Command("retry", "", "send the last turn again when it failed or was interrupted (Alt+R)",
                    lambda _: self.app.turn_keys.retry(), title="Retry the last turn"),
            Command("cost", "", "tokens and dollars by model, cache read and write, and branch",
                    lambda _: self.app.long_session.show_cost(), title="Cost"),
            Command("model", "[PROVIDER] [MODEL]", "switch model or provider from the next request (a picker when no name)",
                    self.app.models._model_command, title="Switch model"),
            Command("strategy", "NAME[,NAME]", "the prompt strategy for this session", self.set_strategy),
            Command("theme", "[NAME]", "use a theme (the picker when no name)", self._theme_command),
            Command("skills", "", "the skills found in ~/.agents/skills and ./.agents/skills",
                    lambda _: self._skills_command(), title="Skills"),
            Command("agents", "", "the agents a task call can run: built-in, ./.agents/agents, ~/.agents/agents",
                    lambda _: self._agents_command(), title="Agents"),
            Command("hooks", "", "the hooks configured: event, matcher, command, where each is set, whether it runs",
                    lambda _: self._hooks_command(), title="Hooks"),
            Command("plugins", "", "the plugins loaded from ~/.agents/plugins and ./.agents/plugins",
                    lambda _: self._plugins_command(), title="Plugins"),
            Command("mcp", "[restart NAME]", "the MCP servers: their state, tools and prompts; restart one",
                    self.app.mcp_servers.mcp_command, title="MCP servers"),
            Command("trust", "", "review this project's new or changed plugins, MCP servers, agents and hooks and trust them",
                    lambda _: self.review_plugins(), title="Trust project plugins"),
            Command("plan", "[TEXT]", "plan mode: the model explores read-only and proposes a plan for you to approve; "
                    "TEXT is sent as the request", self._plan_command, title="Plan mode"),
            Command("init", "[NOTES]", "ask the model to write an AGENTS.md here (commands, layout, conventions) or "
                    "improve it; its write is asked first, as any", partial(init_command, self.app), title="Write AGENTS.md"),
            Command("memory", "[user]", "open the nearest memory file (AGENTS.md), or your own, in $VISUAL/$EDITOR; "
                    "the next request carries it", partial(memory_command, self.app), title="Edit memory file"),
            Command("status", "", "model, provider, key source, context window, sandbox, permission mode, MCP servers, "
                    "memory files, session", lambda _: self._status_command(), title="Status"),
            Command("permissions", "[allow|deny RULE | remove N]", "the permission rules in force and where each comes "
                    "from; add or remove a rule for this session", self._permissions_command, title="Permission rules"),
            Command("help", "", "keys and commands", lambda _: self.app.chat.add_notice(self.help_text())),
            Command("quit", "", "quit scout-tui (also /exit)", lambda _: self.app.exit(), aliases=("exit",)),
        ]

    def _skills_command(self) -> None:
        from scout_tui.extensions.skills import describe_skills

        self.app.chat.add_notice(describe_skills(self.app.skills))

    @feature_work(thread=True, exclusive=True, group="agents")
    def _agents_command(self) -> None:
        """``/agents``: the agents files define, read now (in a thread)."""
        from scout_tui.extensions.agents import describe_agents, discover_agents

        agents, problems = discover_agents(self.app.cwd)
        self.app.call_from_thread(self.app.chat.add_notice, describe_agents(agents, problems))

    @feature_work(thread=True, exclusive=True, group="hooks")
    def _hooks_command(self) -> None:
        """``/hooks``: the hooks as configured now (read in a thread)."""
        from scout_tui.extensions.hook_config import hooks_report

        self.app.call_from_thread(self.app.chat.add_notice, hooks_report(self.app.session.config, self.app.cwd))

    @feature_work(thread=True, exclusive=True, group="status")
    def _status_command(self) -> None:
        """``/status``: what this session runs with (``status.status_report``), in a thread: it
        reads memory files and calibration from disk and may run bwrap once."""
        from scout_tui.session.status import status_report

        app = self.app
        text = status_report(app.session, policy=app.permissions, sandbox=app.sandbox, info=app.long_session.model_info,
                             mcp=app.mcp_servers.mcp_settings)
        app.call_from_thread(app.chat.add_notice, text)

    def _permissions_command(self, args: str) -> None:
        """``/permissions [allow|deny RULE | remove N]``: the rules, after adding or removing a
        session rule (``permission_rules.permissions_command``)."""
        from scout_tui.session.permission_rules import permissions_command

        app = self.app
        try:
            app.chat.add_notice(permissions_command(app.permissions, app.session.config, args))
        except ScoutError as e:
            app.chat.add_notice(str(e), "error")

    def _plugins_command(self) -> None:
        if self.app.plugins is None:
            self.app.chat.add_notice("Plugins are still loading; try again in a moment.")
        else:
            self.app.chat.add_notice(self.app.plugins.describe())

    def add_plugin_commands(self) -> None:
        """Register the loaded plugins' commands (a plugin's wins over a built-in of its name)."""
        plugins = self.app.plugins
        for name, (_, owner) in plugins.commands.items() if plugins is not None else ():
            self.app.commands.add(Command(name, "[ARGS]", "a plugin command", partial(self._plugin_command, name),
                                          owner=owner))

    def add_markdown_commands(self, found: list[MarkdownCommand]) -> None:
        """Register the markdown commands found (``md_commands``; a built-in keeps its name, a
        plugin's command wins over one): typed, each is sent as its prompt (``Turns.send_command``)."""
        from scout_tui.session.slash import markdown_command

        builtin = {c.name for c in self.builtin_commands()}
        self.app.markdown_commands = {m.name: m for m in found if m.name not in builtin}
        for markdown in self.app.markdown_commands.values():
            self.app.commands.add(markdown_command(markdown, partial(self.app.turns.send_command, markdown.name)))

    def _plugin_command(self, name: str, args: str) -> None:
        self.run_plugin_command(name, args)

    def help_text(self) -> str:
        """``/help``: the keys, then every command of the registry."""
        return f"{KEYS_HELP}\n**Commands** (`//text` sends text starting with a slash):\n\n{self.app.commands.help_text()}"

    def run_command(self, text: str) -> bool:
        """Run ``text`` when it is a slash command; False when it is a prompt for the model.
        An unknown command is reported, not sent (``//text`` sends ``/text``)."""
        if literal(text) is not None:
            return False
        parsed = self.app.commands.parse(text)
        if parsed is None:
            return False
        if parsed.command is None:
            self.app.chat.add_notice(f"Unknown command `/{parsed.name}`: `/help` lists the commands; "
                                 f"`//{parsed.name}` sends it to the model as text.", "error")
            return True
        parsed.command.run(parsed.args)
        return True

    def system_commands(self) -> Iterator[SystemCommand]:
        """The palette's entries of scout-tui after Textual's own (``App.get_system_commands``):
        the commands with a title and the plugins', the permission modes, the prompt view, the
        prompt strategies and the themes."""
        for command in self.app.commands:
            if command.title or command.owner != "scout-tui":
                yield SystemCommand(command.title or f"/{command.name}", command.help[:1].upper() + command.help[1:]
                                    + (f" ({command.owner})" if command.owner != "scout-tui" else ""),
                                    lambda command=command: command.run(""))
        from scout_tui.engine.compaction import strategy_names

        for mode in PERMISSION_MODES:
            yield SystemCommand(f"Permission mode: {mode}", "What runs without asking (Shift+Tab cycles)",
                                lambda mode=mode: self.app.permission_modes.set_mode(mode))
        yield SystemCommand("What the model sees", "The compacted prompt of the next call beside the stored history",
                            self.app.long_session.show_prompt)
        for name in strategy_names():
            yield SystemCommand(f"Prompt strategy: {name}", "Use this prompt strategy for this session",
                                lambda name=name: self.set_strategy(name))
        for name in sorted(self.app.theme_sources):  # found by typing "theme" or a name; highlighting previews
            yield SystemCommand(f"Theme: {name}", describe_source(name, self.app.theme_sources),
                                ThemeChoice(name, self.app.choose_theme), discover=False)

    # -- handlers taking the argument text -----------------------------------------------------

    def _plan_command(self, args: str) -> None:
        """``/plan``: plan mode from the next tool call on; ``/plan TEXT`` then sends TEXT as a
        prompt typed in the composer would go (held while a turn runs)."""
        app = self.app
        app.permission_modes.set_mode("plan")
        if text := args.strip():
            if app.busy:
                app.queue.hold(text, steer=True)
            else:
                app.turns.run_turn(text)

    def _fork_command(self, args: str) -> None:
        if args and not (args.isascii() and args.isdigit()):
            self.app.chat.add_notice("Use `/fork` (all messages) or `/fork N` (the first N).", "error")
        else:
            self.app.sessions.fork_session(int(args) if args else None)

    def _rename_command(self, title: str) -> None:
        if title:
            self.app.sessions.rename_session(title)
            return
        from scout_tui.widgets.dialogs import PromptScreen

        def done(title: str | None) -> None:
            if title:
                self.app.sessions.rename_session(title)

        self.app.push_screen(PromptScreen("Rename this session", ""), done)

    def _resume_command(self, ref: str) -> None:
        if not ref:
            self.app.side_panes.focus_tree()
        elif not self.app.sessions._refuse_while_busy():
            self.app.sessions.open_session(ref)

    def _compact_command(self, focus: str) -> None:
        if not self.app.sessions._refuse_while_busy():
            self.app.long_session.compact_session(focus)

    def _copy_command(self, what: str) -> None:
        from scout_tui.core.text import code_blocks
        from scout_tui.widgets.clipboard import copy

        answer = self.app.chat.last_answer()
        if answer is None or what not in ("", "code"):
            self.app.chat.add_notice("Use `/copy` (the last answer) or `/copy code` (its last code block); "
                                 "in the chat, `c` copies the selected message and `b` its code blocks."
                                 if answer is not None else "No answer to copy yet.", "error")
        elif what == "code":
            found = code_blocks(answer.source)
            if found:
                copy(self.app, found[-1][1], f"the last answer's last code block{f' ({found[-1][0]})' if found[-1][0] else ''}")
            else:
                self.app.chat.add_notice("The last answer has no code block.", "error")
        else:
            copy(self.app, answer.source, "the last answer")

    def _theme_command(self, name: str) -> None:
        if name:
            self.app.choose_theme(name)
        else:
            self.app.search_themes()

    def set_strategy(self, names: str) -> None:
        """Use the prompt strategies ``names`` ("a,b") for this session; a bad name is reported."""
        from scout_tui.engine.compaction import strategy_names

        wanted = [n.strip() for n in names.split(",") if n.strip()]
        known = strategy_names()
        unknown = [n for n in wanted if n not in known]
        if not wanted or unknown:
            what = f"Unknown strategy {unknown[0]!r}. " if unknown else ""
            self.app.chat.add_notice(f"{what}Use `/strategy NAME[,NAME]` with: {', '.join(known)}.", "error")
            return
        session = self.app.session
        session.strategies = ",".join(wanted)  # an agent built later takes them (``Session.ensure_agent``)
        if session.agent is not None:
            session.agent.window.strategies = session.strategies
        self.app.notify(f"Prompt strategy for this session: {session.strategies}")
        self.app.long_session.estimate_context()

    # -- /trust: project plugins run only once trusted (scout_tui.config.trust) -----------------------

    @feature_work(thread=True, exclusive=True, group="trust")
    def review_plugins(self) -> None:
        """``/trust``: read the project plugins and MCP servers (in a thread) and ask about the
        untrusted ones."""
        from scout_tui.extensions.project_trust import project_trust

        files, problems = project_trust(self.app.cwd)
        what = "project plugin, agent, MCP server and hook" if any(f.label or f.path.suffix == ".md" for f in files) \
            else "project plugin"
        self.app.call_from_thread(self._ask_trust, [f for f in files if not f.trusted], len(files), problems, what)

    def _ask_trust(self, pending: list[PluginFile], found: int, problems: list[str], what: str = "project plugin") -> None:
        from scout_tui.extensions.plugins import PLUGINS_DIR

        for problem in problems:
            self.app.chat.add_notice(problem, "error")
        if not pending:
            self.app.chat.add_notice(f"Every {what} here is trusted ({found})." if found
                                 else f"No project plugins in `{self.app.cwd / PLUGINS_DIR}`.")
            return
        from scout_tui.widgets.dialogs import ConfirmScreen

        def done(yes: bool | None) -> None:
            if yes:
                self.trust_plugins(pending)

        yes = "trust it" if len(pending) == 1 else f"trust all {len(pending)}"
        self.app.clear_notifications()  # the "not loaded" toasts would cover the dialog's keys at 80x24
        self.app.push_screen(ConfirmScreen(trust_question(pending), yes=yes, no="cancel"), done)

    @feature_work(thread=True, group="trust")
    def trust_plugins(self, files: list[PluginFile]) -> None:
        """Record trust in ``files`` as they were read (in a thread: a file write), then load the
        plugins again when nothing was loaded yet; otherwise a restart loads them (a loaded
        plugin's handlers cannot be taken off the bus, so loading all again would double them)."""
        from scout_tui.config.trust import record_trust

        try:
            record_trust(files)
        except ScoutError as e:
            self.app.call_from_thread(self.app.chat.add_notice, str(e), "error")
            return
        from scout_tui.extensions.hook_config import is_hook_entry, reread_hooks

        if any(is_hook_entry(f) for f in files):  # hooks: run from the next event on
            problem = reread_hooks(self.app.session)
            files = [f for f in files if not is_hook_entry(f)]
            if not files:
                self.app.call_from_thread(self.app.chat.add_notice, problem or "Trusted: the hooks run from now on.",
                                          "error" if problem else "info")
                return
        if any(f.label for f in files):  # MCP servers: started now
            self.app.call_from_thread(self.app.mcp_servers.start_trusted_servers)
            files = [f for f in files if not f.label]
            if not files:
                return
        names = ", ".join(f"`{f.path.name}`" for f in files)
        if (self.app.plugins is not None and self.app.plugins.loaded) or self.app.busy:
            self.app.call_from_thread(self.app.chat.add_notice, f"Trusted {names}: restart scout-tui to load "
                                  f"{'it' if len(files) == 1 else 'them'}.")
        else:
            self.app.call_from_thread(self.app.chat.add_notice, f"Trusted {names}: loading the plugins.")
            self.app.call_from_thread(self.app.extensions.load)

    @feature_work(thread=True, group="plugin-command")
    def run_plugin_command(self, name: str, args: str) -> None:
        """A plugin's slash command, in a thread (plugin code may be slow); its text goes to the chat."""
        assert self.app.plugins is not None  # its commands are registered once it is loaded
        try:
            text = self.app.plugins.run_command(name, args)
        except ScoutError as e:
            self.app.call_from_thread(self.app.chat.add_notice, str(e), "error")
            return
        if text:
            self.app.call_from_thread(self.app.chat.add_notice, text)


TRUST_SHOWN_FILES, TRUST_HEAD_LINES = 6, 4
"""``/trust`` shows the first TRUST_HEAD_LINES lines of the first TRUST_SHOWN_FILES files (all are named)."""


def trust_question(files: list[PluginFile]) -> str:
    """The ``/trust`` dialog's text: what trusting means, then each file with its state, size
    and first lines (control characters written out: ``PluginFile.head``)."""
    things = "project plugin" if not any(f.label or f.path.suffix == ".md" for f in files) \
        else "project plugin, agent, MCP server or hook"
    lines = [f"Trust {len(files)} {things}{'s' * (len(files) != 1)}? Each runs with your rights, outside the "
             "sandbox, every time scout-tui starts here. Read them first.", ""]
    for n, f in enumerate(files):
        lines.append(f"{f.state}: {f.shown} ({f.summary()})")
        if n < TRUST_SHOWN_FILES:
            head = f.head(TRUST_HEAD_LINES, width=52)  # with "  │ ", within the dialog's 58 columns
            lines += [f"  │ {line}" for line in head]
            if f.lines > len(head):
                lines.append("  │ …")
    return "\n".join(lines)
