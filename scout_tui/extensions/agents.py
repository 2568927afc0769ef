"""Agents a ``task`` call can hand a sub-task to: the built-in ones, and custom agents from
markdown files (``.agents/agents/NAME.md`` of the project, ``~/.agents/agents/NAME.md``,
``.claude/agents/NAME.md``), each with front matter ``name``, ``description``, ``tools``,
``model`` and the body as its system prompt (Claude Code's subagent file format:
https://docs.anthropic.com/en/docs/claude-code/sub-agents).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_AGENT = "general"
"""The agent a ``task`` call without ``agent`` runs."""

READ_ONLY_TOOLS = ("read", "grep", "glob")


@dataclass(frozen=True, slots=True)
class AgentDefinition:
    """One agent a subagent can run as.

    ``name``: what ``task``'s ``agent`` names. ``description``: when to use it (the ``task``
    tool's description lists it). ``prompt``: its system prompt (a file's body), said before
    the workspace's instructions. ``tools``: the tools it may call (None: every tool of the
    parent but ``task``). ``model``: the model it runs on (None: the parent's). ``source``:
    where it was defined ("built-in", or a file's path).
    """

    name: str
    description: str
    prompt: str
    tools: tuple[str, ...] | None = None
    model: str | None = None
    source: str = "built-in"


BUILTIN_AGENTS = (
    AgentDefinition(
        DEFAULT_AGENT,
        "A general-purpose agent for a self-contained sub-task (research, a focused change, a "
        "search across many files): it has the same tools as you but task.",
        "You are a subagent: another agent handed you one sub-task. Do it fully with your tools, "
        "then answer with what the other agent needs to go on (findings, file paths with line "
        "numbers, what you changed), concisely: only your final answer reaches it.",
    ),
    AgentDefinition(
        "explore",
        "A fast read-only agent for finding things in the code base: which files define or use "
        "something, how a part works. It cannot change files or run commands.",
        "You are a read-only subagent exploring a code base for another agent. Search with grep "
        "and glob, read what matters, and answer with precise findings (file paths with line "
        "numbers, short quotes); only your final answer reaches the other agent.",
        tools=READ_ONLY_TOOLS,
    ),
)
"""The agents every workspace has; a custom agent of the same name replaces one."""


def discover_agents(cwd: Path) -> tuple[list[AgentDefinition], list[str]]:
    """The agents for workspace ``cwd``: ``BUILTIN_AGENTS``, then custom agents from files (a
    later one of the same name replaces an earlier one), and a line per file that could not be
    read, naming its file and line (that agent is skipped)."""
    return list(BUILTIN_AGENTS), []


def task_description(agents: list[AgentDefinition]) -> str:
    """The ``task`` tool's description: what it does, then each agent as ``- name: description``
    (built-ins first, then by name: the tool list is part of the cached prompt, so its bytes
    stay put)."""
    builtin = [a for a in agents if a.source == "built-in"]
    custom = sorted((a for a in agents if a.source != "built-in"), key=lambda a: a.name)
    listed = "\n".join(f"- {a.name}: {a.description}" for a in [*builtin, *custom])
    return ("Hand a self-contained sub-task to a subagent: a fresh agent with its own context that does the "
            "task with its tools and returns only its final answer (nothing else of its work enters this "
            "conversation). Use it for searches across many files, research, or independent changes, to "
            "keep this context small. Several task calls in one answer run at the same time. The prompt "
            "must say everything the subagent needs: it sees nothing of this conversation.\n\n"
            f"Agents:\n{listed}")
