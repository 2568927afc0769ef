"""The slash commands a session runs from a prompt's text, for a front end without the TUI's
dialogs (``-p``, ``acp``): ``/compact [focus]`` (applied at once: no preview), ``/undo`` and
``/redo`` (refusing to overwrite what someone else changed since), ``/cost``, ``/export``, ``/agents``, ``/hooks``,
``/plan [prompt]``, ``/init``, ``/status``, ``/permissions``, the markdown commands (``md_commands``) and
the plugins' commands. Each returns the Markdown that says what it did, except those that become a
prompt (``command_prompt``: ``/plan PROMPT``, ``/init``, a markdown command); another ``/word`` is a
prompt for the model. The work is ``compacting``'s, ``restore``'s and ``cost``'s, as in the TUI.
"""

from __future__ import annotations

import asyncio
from functools import partial
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from scout_tui.session.commands import Command, Commands, Parsed

if TYPE_CHECKING:
    from scout_tui.extensions.md_commands import MarkdownCommand
    from scout_tui.session.session import Session


def session_commands(session: Session, warn: Callable[[str], None] = lambda text: None) -> Commands:
    """The commands ``session`` runs from a prompt, each an async function of the argument text
    that returns the Markdown to show: the built-ins, the markdown commands found now (a built-in
    keeps its name; their problems said through ``warn``), then the plugins' (a plugin's wins over
    a built-in of its name, as in the TUI)."""
    from scout_tui.extensions.md_commands import discover_commands

    commands = Commands([
        Command("compact", "[FOCUS]", "summarise the older messages so each request carries the summary instead "
                "(applied at once; a focus says what to keep)", _runs(_compact, session)),
        Command("undo", "", "put the files the last turn changed back as they were (the conversation stays; "
                "not when someone else changed them since)", _runs(_restore, session, False)),
        Command("redo", "", "change the files again as the turn last undone left them", _runs(_restore, session, True)),
        Command("cost", "", "tokens and dollars by model, cache read and write, and branch", _runs(_cost, session)),
        Command("export", "[html|md|json] [PATH]", "write this session to a file (default html: its whole branch tree "
                "as one page, ./scout-<id>.html)", _runs(_export, session)),
        Command("agents", "", "the agents a task call can run, and problems of their files", _runs(_agents, session)),
        Command("hooks", "", "the hooks configured: event, matcher, command, where each is set, whether it runs",
                _runs(_hooks, session)),
        Command("plan", "[PROMPT]", "plan mode: the model explores read-only and proposes a plan to approve "
                "(with a prompt, sends it)", _runs(_plan, session)),
        Command("init", "[NOTES]", "ask the model to write an AGENTS.md here (commands, layout, conventions) or "
                "improve it; its write is asked first, as any", _runs(_init, session)),
        Command("status", "", "model, provider, key source, context window, sandbox, permission mode, MCP servers, "
                "memory files, session", _runs(_status, session)),
        Command("permissions", "[allow|deny RULE | remove N]", "the permission rules in force and where each comes "
                "from; add or remove a rule for this session", _runs(_permissions, session)),
    ])
    found, problems = discover_commands(session.cwd)
    for problem in problems:
        warn(problem)
    for markdown in found:
        if commands.get(markdown.name) is None:  # a built-in keeps its name
            commands.add(markdown_command(markdown, partial(expand_command, session, markdown)))
    plugins = session.agent_options.get("plugins")
    for name, (_, owner) in (plugins.commands.items() if plugins is not None else ()):
        commands.add(Command(name, "[ARGS]", "a plugin command", _runs(_plugin, session, name), owner=owner))
    return commands


def markdown_command(markdown: MarkdownCommand, run: Callable[[str], object]) -> Command:
    """The registry's entry for a markdown command (``md_commands``), its prompt given by ``run``."""
    return Command(markdown.name, markdown.argument_hint or "[ARGS]", markdown.description, run, owner=markdown.origin,
                   sends=True)


async def command_prompt(session: Session, parsed: Parsed) -> str | None:
    """The prompt a command becomes, to send as the turn's prompt: for ``/plan PROMPT``, PROMPT,
    plan mode switched on (``Session.set_permission_mode``); for ``/init [NOTES]``, the prompt
    asking for an AGENTS.md (``memory.init_prompt``); for a markdown command, its expansion
    (``expand_command``). None for any other line (``/plan`` alone is a command like the others),
    and for a plugin's command of those names."""
    if parsed.command is not None and parsed.command.sends:
        return await parsed.command.run(parsed.args)  # type: ignore[misc]  # a sending command's run is async
    if parsed.command is None or parsed.command.owner != "scout-tui":
        return None
    if parsed.command.name == "plan" and parsed.args:
        session.set_permission_mode("plan")
        return parsed.args
    if parsed.command.name == "init":
        from scout_tui.session.memory import init_prompt

        return init_prompt(session.cwd, parsed.args)
    return None


async def expand_command(session: Session, markdown: MarkdownCommand, args: str) -> str:
    """The prompt ``markdown`` sends with ``args`` (``md_commands.expand``): each ``!`cmd``` run as
    the agent's ``bash`` tool runs a call (hooks, permission rules, sandbox; asking the person when
    the rules say so), with its ``allowed-tools`` allowed meanwhile.

    Raises:
        ScoutError: the command's file cannot be read now.
    """
    from scout_tui.extensions.md_commands import expand

    agent = await asyncio.to_thread(session.ensure_agent)
    policy = agent.permissions

    async def run(command: str) -> str:
        return (await agent.runner.call_alone("bash", {"command": command})).content

    before = list(policy.session) if policy is not None else []
    try:
        if policy is not None and markdown.allowed_tools:
            policy.allow_for_session(markdown.allowed_tools)
        return await expand(markdown, args, run)
    finally:
        if policy is not None:
            policy.session[:] = before


def _runs(run: Callable[..., Awaitable[str]], *bound: object) -> Callable[[str], Awaitable[str]]:
    return lambda args: run(*bound, args)


async def _compact(session: Session, focus: str) -> str:
    """``/compact [focus]``: the summary applied (``compacting.compact``), and what it stands for."""
    from scout_tui.session.compacting import compact, compaction_info
    from scout_tui.session.session import NotCompacted

    try:
        event = await compact(session, focus)
    except NotCompacted as e:
        return str(e)
    quoted = "\n".join(f"> {line}" if line else ">" for line in event.data["summary"].splitlines())
    return (f"Compacted. {compaction_info(event.data)} The next requests send this summary instead of those "
            f"messages (the session keeps them all):\n\n{quoted}")


async def _restore(session: Session, redo: bool, _: str) -> str:
    """``/undo`` or ``/redo``: the files written back (``Session.restore_files``), unless nothing
    is to be done or someone else changed them since the turn (then nothing is written)."""
    from scout_tui.session.restore import NotRestorable, names, plan_restore, restore_lines, restored, turn_name

    try:
        plan, others = await plan_restore(session, redo)
    except NotRestorable as e:
        return str(e)
    turn = turn_name(session, plan.turn)
    if others:
        verb = "redo" if redo else "undo"
        lines = "\n".join(line for line in restore_lines(plan, []) if line)
        return (f"Not {verb}ne: someone else changed {names(others)} since {turn}, and /{verb} would overwrite "
                f"it. Nothing was written. Check those files; scout-tui's /{verb} names them and asks before "
                f"overwriting. What /{verb} would do:\n\n```\n{lines}\n```")
    await asyncio.shield(session.restore_files(plan))  # once written, recorded even if cancelled meanwhile
    return restored(plan, turn)


async def _agents(session: Session, _: str) -> str:
    """``/agents``: the agents (``describe_agents``), read in a thread."""
    from scout_tui.extensions.agents import describe_agents, discover_agents

    agents, problems = await asyncio.to_thread(discover_agents, session.cwd)
    return describe_agents(agents, problems)


async def _hooks(session: Session, _: str) -> str:
    """``/hooks``: the hooks as configured now (``hook_config.hooks_report``), read in a thread."""
    from scout_tui.extensions.hook_config import hooks_report

    return await asyncio.to_thread(hooks_report, session.config, session.cwd)


async def _plan(session: Session, _: str) -> str:
    """``/plan``: plan mode on, and what it means."""
    session.set_permission_mode("plan")
    return ("Plan mode: only read-only tools run; the model explores and proposes a plan with exit_plan for you to "
            f"approve. Approving it goes back to {session.mode_before_plan} mode.")


async def _init(session: Session, notes: str) -> str:
    """``/init`` run as a command, by a front end that did not ask ``command_prompt`` first (both
    of scout-tui's do): what it would send, for the person to send themselves."""
    from scout_tui.session.memory import init_prompt

    return f"`/init` is a prompt for the model; send this:\n\n{init_prompt(session.cwd, notes)}"


async def _status(session: Session, _: str) -> str:
    """``/status``: what the session runs with (``status.session_status``)."""
    from scout_tui.session.status import session_status

    return await session_status(session)


async def _permissions(session: Session, args: str) -> str:
    """``/permissions``: the rules in force and where each comes from, after adding or removing a
    session rule (``permission_rules``); a bad rule or number is said, nothing changed."""
    from scout_tui.core.errors import ScoutError
    from scout_tui.session.permission_rules import permissions_command

    policy = session.agent.permissions if session.agent is not None else session.agent_options.get("permissions")
    if policy is None:
        return "No permission policy: this session runs no tools."
    try:
        return permissions_command(policy, session.config, args)
    except ScoutError as e:
        return str(e)


async def _cost(session: Session, _: str) -> str:
    """``/cost``: the session's spending as Markdown (``cost.cost_report``), read in a thread."""
    from scout_tui.session.cost import cost_report

    session_id = await session.stored()
    return await asyncio.to_thread(cost_report, session.store, session_id, session.cwd,
                                   session.agent_options.get("info"))


async def _export(session: Session, args: str) -> str:
    """``/export [html|md|json] [PATH]``: the session written in a thread (``exporting``), in
    the default theme's colours (a page needs no terminal theme here), and where it went."""
    from scout_tui.config import keys
    from scout_tui.core.errors import ScoutError
    from scout_tui.session.exporting import parse_export_args, write_export

    if session.id is None:
        return "Nothing to export yet: this session has no messages."
    form, path = parse_export_args(args)
    secrets = keys.secrets([session.config.api_key])
    try:
        written = await asyncio.to_thread(write_export, session.store, session.id, form, path, None, secrets)
    except ScoutError as e:
        return f"Not exported: {e}"
    return f"Exported this session ({form}) to `{written}`."


async def _plugin(session: Session, name: str, args: str) -> str:
    """A plugin's command, in a thread (plugin code may be slow); its text ("" for none)."""
    plugins = session.agent_options["plugins"]
    return await asyncio.to_thread(plugins.run_command, name, args) or ""
