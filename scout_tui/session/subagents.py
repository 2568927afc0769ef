"""Subagents: the ``task`` tool, by which the model hands a self-contained sub-task to a fresh
agent that works in a child session of the store and gives back only its final answer.

A ``task`` call (``{"description", "prompt", "agent"?}``) starts a child ``Session``
(``Store.create_subagent``: its parent and the call recorded) running the named agent
(``extensions.agents``): that agent's prompt first in its system prompt, its tools (by default
every tool of the parent but ``task``: no nesting unless ``[subagents] max_depth`` allows it),
its model, the parent's permission policy (its mode and the rules allowed this session), the
parent's sandbox and MCP servers. The child's events pass up the parent's turn wrapped in
``SubagentEvent`` (the front ends show them live); the child's own session stores them. Several
``task`` calls of one reply run at once (``Tool.delegates``), at most ``max_concurrent`` at a time.
Cancelling the parent's turn cancels each running child's, which records it as interrupted.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from contextlib import aclosing

from scout_tui.core.errors import ScoutError
from scout_tui.tools.base import Tool, ToolContext, ToolError, ToolResult, object_schema, string

if TYPE_CHECKING:
    from scout_tui.config.layers import Config
    from scout_tui.extensions.agents import AgentDefinition
    from scout_tui.session.session import Session
    from scout_tui.tools.approvals import Approval, PermissionRequest

TASK = "task"
NOT_IN_SUBAGENTS = ("exit_plan",)
"""Tools a subagent never has: only the person's own agent proposes a plan."""

KEYS = ("max_concurrent", "max_depth")


@dataclass(frozen=True, slots=True)
class SubagentSettings:
    """``[subagents]``: ``max_concurrent`` subagents of one session running at once (more wait
    their turn); ``max_depth`` levels of subagents (1: a subagent has no ``task`` tool)."""

    max_concurrent: int = 4
    max_depth: int = 1


def subagent_settings(config: Config) -> SubagentSettings:
    """The ``[subagents]`` tables of ``config``'s files, later files winning key by key.

    Raises:
        ScoutError: not a table, an unknown key, or a value that is not a whole number from 1
            (naming the file and line).
    """
    from scout_tui.config.tomlpos import where

    values: dict[str, int] = {}
    for layer in config.layers:
        table = layer.table.get("subagents")
        if table is None:
            continue
        if not isinstance(table, dict):
            raise ScoutError(f"{where(layer.path, layer.text, ('subagents',))}: [subagents] must be a table")
        for key, value in table.items():
            at = where(layer.path, layer.text, ("subagents", key), table=("subagents",))
            if key not in KEYS:
                continue  # the config's own check says so (``layers.TABLE_KEYS``)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ScoutError(f"{at}: subagents.{key} must be a whole number from 1, got {value!r}")
            values[key] = value
    return SubagentSettings(**values)


def subagent_tools(session: Session) -> list[Tool]:
    """``session``'s ``task`` tool, unless it is as deep as ``[subagents] max_depth`` lets
    subagents go; reads the agents (``discover_agents``) the first time.

    Raises:
        ScoutError: a bad ``[subagents]`` value (``subagent_settings``).
    """
    settings = subagent_settings(session.config)
    if session.depth > settings.max_depth:
        return []
    if session.agents is None:
        from scout_tui.extensions.agents import discover_agents

        session.agents, session.agent_problems = discover_agents(session.cwd)
    return [Subagents(session, session.agents, settings, session.depth).tool()]


def task_input_schema() -> dict[str, Any]:
    """The ``task`` tool's input schema: ``description``, ``prompt``, optional ``agent``."""
    return object_schema(
        description=string("A short (3-5 words) description of the task, shown to the user."),
        prompt=string("The whole task for the subagent: it sees nothing of this conversation, so say "
                      "everything it needs, and what its answer should contain."),
        agent=string("Which agent runs it (default: general)."),
        required=("description", "prompt"),
    )


class Subagents:
    """The ``task`` tool of one session (``tool``) and the subagents it runs.

    Args:
        session: the parent session (its store, config, policy, approver, MCP servers).
        agents: the agents a call may name (``discover_agents``).
        settings: ``[subagents]``.
        depth: how deep ``session`` is (1: the person's own agent).
    """

    def __init__(self, session: Session, agents: list[AgentDefinition], settings: SubagentSettings,
                 depth: int = 1) -> None:
        self.session = session
        self.agents = {agent.name: agent for agent in agents}
        self.settings = settings
        self.depth = depth
        self._slots = asyncio.Semaphore(settings.max_concurrent)
        self._asking = asyncio.Lock()  # one subagent's approval prompt at a time

    def tool(self) -> Tool:
        """The ``task`` tool (``Tool.delegates``: several calls of a reply run at once)."""
        from scout_tui.extensions.agents import task_description

        return Tool(TASK, task_description(list(self.agents.values())), task_input_schema(), self.run,
                    delegates=True)

    async def run(self, input: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """One ``task`` call: the subagent's final answer (an error result when it failed, with
        what it said). Raises CancelledError when the turn is cancelled (the child's turn is
        closed and recorded as interrupted first)."""
        from scout_tui.extensions.agents import DEFAULT_AGENT

        description, prompt = _text(input, "description"), _text(input, "prompt")
        name = input.get("agent") or DEFAULT_AGENT
        definition = self.agents.get(name) if isinstance(name, str) else None
        if definition is None:
            raise ToolError(f"no agent {name!r} (known: {', '.join(self.agents)})")
        async with self._slots:
            child = await self._child(definition, description, ctx.call_id)
            return await self._work(child, definition, description, prompt, ctx)

    async def _child(self, definition: AgentDefinition, description: str, call: str) -> Session:
        """The child session, stored, with its agent's options (built on its first turn)."""
        from scout_tui.extensions.agents import resolve_model

        parent = self.session
        parent_id = await parent.stored()
        child_id = await asyncio.to_thread(parent.store.create_subagent, parent_id, call=call,
                                           agent=definition.name, description=description, cwd=parent.cwd)
        config = dataclasses.replace(parent.config, checkpoints="off")  # the parent's turn snapshots the workspace
        options = dict(parent.agent_options)
        model = resolve_model(definition.model, config.profile.kind)
        if model:
            config = config.for_provider(config.provider, model, origin=f"agent {definition.name}")
            options.pop("info", None)  # the child's model's, read when its agent is built
        agent = parent.ensure_agent()
        label = f"{description} ({definition.name})"
        options.pop("review_plan", None)  # only the person's own agent proposes a plan
        options.update(permissions=agent.permissions, sandbox=agent.sandbox, approve=_labelled(agent.approve, label, self._asking),
                       keep_tools=_keeping(definition, self.settings, self.depth), preamble=definition.prompt)
        child = type(parent)(parent.store, parent.cwd, config, mcp=parent.mcp, **options)
        child.id = child_id
        child.depth = self.depth + 1
        child.hook_settings = parent.hook_settings
        child.memory = parent.memory  # the same files: read once
        child.agents = list(self.agents.values())
        return child

    async def _work(self, child: Session, definition: AgentDefinition, description: str, prompt: str,
                    ctx: ToolContext) -> ToolResult:
        """Run the child's one turn, passing its events up; its answer as the result."""
        from scout_tui.core.bus import Error, SubagentEvent, TurnEnd

        assert child.id is not None
        emit = ctx.emit or (lambda event: None)
        await asyncio.to_thread(child.ensure_agent)  # reads files (the system prompt): off the caller's loop
        failed, stop = "", ""
        try:
            async with aclosing(child.turn([{"type": "text", "text": prompt}])) as stream_:
                async for event in stream_:
                    emit(SubagentEvent(ctx.call_id, child.id, definition.name, description, event))
                    if isinstance(event, Error):
                        failed = event.message
                    elif isinstance(event, TurnEnd):
                        stop = event.stop_reason
        finally:
            await child.close_backend()
        answer = final_answer(child.messages)
        if failed:
            return ToolResult(f"The subagent failed: {failed}" + (f"\n\nWhat it said before:\n{answer}" if answer else ""),
                              True)
        if not answer:
            return ToolResult(f"The subagent ended ({stop or 'no answer'}) without an answer.", True)
        if stop == "max_turns":
            answer += "\n\n[the subagent stopped at its max_turns limit: this may be incomplete]"
        return ToolResult(answer)


def final_answer(messages: list[dict | None]) -> str:
    """The text of the last assistant message of ``messages`` ("" when there is none): what a
    subagent gives back."""
    from scout_tui.core.messages import message_text

    for message in reversed(messages):
        if message is not None and message.get("role") == "assistant":
            return message_text(message).strip()
    return ""


def _text(input: dict[str, Any], key: str) -> str:
    value = input.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ToolError(f"{key!r} must be a non-empty string")
    return value.strip()


def _keeping(definition: AgentDefinition, settings: SubagentSettings, depth: int) -> Any:
    """Which tool names a subagent of ``definition`` at ``depth + 1`` may have."""
    allowed = set(definition.tools) if definition.tools is not None else None
    nests = depth + 1 <= settings.max_depth

    def keep(name: str) -> bool:
        if name in NOT_IN_SUBAGENTS or name == TASK and not nests:
            return False
        return allowed is None or name in allowed

    return keep


def _labelled(approve: Any, label: str, lock: asyncio.Lock) -> Any:
    """``approve`` with each request saying which subagent asks (``PermissionRequest.agent``),
    one at a time (``lock``: the subagents of one parent share it)."""
    if approve is None:
        return None

    async def asking(request: PermissionRequest) -> Approval:
        async with lock:
            return await approve(dataclasses.replace(request, agent=label))

    return asking
