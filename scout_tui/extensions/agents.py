"""Agents a ``task`` call can hand a sub-task to: the built-in ones, and custom agents from
markdown files (``.agents/agents/NAME.md`` of the project, ``~/.agents/agents/NAME.md``,
``.claude/agents/NAME.md``), each with front matter ``name``, ``description``, ``tools``,
``model`` and the body as its system prompt (Claude Code's subagent file format:
https://docs.anthropic.com/en/docs/claude-code/sub-agents).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from scout_tui.config.trust import UNTRUSTED, PluginFile, check_file, check_files, read_trusted
from scout_tui.core.errors import ScoutError
from scout_tui.extensions.skills import parse_front_matter
from scout_tui.tools.permissions import CLAUDE_TOOLS

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


AGENT_FOLDERS = (Path(".claude") / "agents", Path(".agents") / "agents")
"""Where agent files are read, in each of home (the user's) and the working directory (the
project's), in this order: a later file of the same name wins."""

KNOWN_TOOLS = ("bash", "read", "write", "edit", "grep", "glob", "skill", "task")
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}\Z")
MODEL_ALIASES = ("sonnet", "opus", "haiku")
"""Claude Code's model aliases: the newest model of that family the catalogue lists."""


def agent_files(cwd: Path, home: Path | None = None) -> list[tuple[Path, bool]]:
    """``(file, is the project's)`` for each ``*.md`` of ``AGENT_FOLDERS``, the user's (under
    ``home``) first, then the project's (under ``cwd``), each folder sorted by name. A folder
    reached twice (cwd is home) counts once, as the user's."""
    home = Path.home() if home is None else home
    found: list[tuple[Path, bool]] = []
    seen: set[Path] = set()
    for root, project in ((home, False), (cwd, True)):
        for folder in (root / f for f in AGENT_FOLDERS):
            if not folder.is_dir() or folder.resolve() in seen:
                continue
            seen.add(folder.resolve())
            found += [(p, project) for p in sorted(folder.glob("*.md")) if p.is_file() and not p.name.startswith(".")]
    return found


def project_agent_trust(cwd: Path, home: Path | None = None) -> tuple[list[PluginFile], list[str]]:
    """Each project agent file read now with its trust state (``trust.check_file``), and the
    problems met (an unreadable trust file or agent file), for ``scout-tui trust`` and ``/trust``:
    a project's agents load only once trusted, as its plugins do. Never raises."""
    return check_files([path for path, project in agent_files(cwd, home) if project])


def discover_agents(cwd: Path, home: Path | None = None) -> tuple[list[AgentDefinition], list[str]]:
    """The agents for workspace ``cwd``: ``BUILTIN_AGENTS``, then those of ``agent_files`` (a
    later one of the same name replaces an earlier one), and a line per problem, naming its file
    and line: a file that cannot be read or whose front matter is bad (that agent is skipped), a
    tool name scout-tui does not have (left out), a project file not trusted (not loaded)."""
    agents = {agent.name: agent for agent in BUILTIN_AGENTS}
    problems: list[str] = []
    trusted: dict[str, str] | None = None
    for path, project in agent_files(cwd, home):
        try:
            data = path.read_bytes()
            if project:
                if trusted is None:
                    trusted, problem = read_trusted()
                    problems += [problem] if problem else []
                if not check_file(path, trusted).trusted:
                    problems.append(f"{path}: agent not loaded: {UNTRUSTED}")
                    continue
            agent, notes = parse_agent(data, path)
        except OSError as exc:
            problems.append(f"{path}: cannot read agent: {exc.strerror or exc}")
            continue
        except ScoutError as exc:
            problems.append(f"{exc} (agent skipped)")
            continue
        problems += notes
        agents[agent.name] = agent
    return list(agents.values()), problems


def parse_agent(data: bytes, path: Path) -> tuple[AgentDefinition, list[str]]:
    """The agent a file's bytes define, and notes on tools left out ("<path>:<line>: ...").

    Raises:
        ScoutError: "<path>:<line>: ..." for text that is not UTF-8, bad front matter
            (``skills.parse_front_matter``), a missing description, a bad name, or a ``tools``
            value that is not a list of names.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ScoutError(f"{path}:{line}: agent file is not UTF-8 text") from None
    fields, body = parse_front_matter(text, path, lists=frozenset({"tools"}))
    name = fields.get("name") or path.stem
    if not _NAME.match(name):
        raise ScoutError(f"{path}:{_line(text, 'name')}: agent name {name!r}: use lower-case letters, digits, - and _")
    description = " ".join(fields.get("description", "").split())
    if not description:
        raise ScoutError(f"{path}:{_line(text, 'description')}: the front matter needs a description (when to use "
                         "this agent)")
    tools, notes = _tools(fields.get("tools"), path, _line(text, "tools"))
    model = fields.get("model", "").strip() or None
    return AgentDefinition(name, description, body.strip() or BUILTIN_AGENTS[0].prompt, tools,
                           None if model == "inherit" else model, str(path)), notes


def _tools(raw: str | None, path: Path, line: int) -> tuple[tuple[str, ...] | None, list[str]]:
    """The tool names of a ``tools`` value (None: absent, every tool), and notes on names left out."""
    if raw is None or not raw.strip():
        return None, []
    text = raw.strip()
    if text.startswith("[") != text.endswith("]"):
        raise ScoutError(f"{path}:{line}: tools: expected names separated by commas, got {text[:60]!r}")
    names = [n.strip().strip("'\"") for n in text.strip("[]").split(",") if n.strip()]
    tools, notes = [], []
    for name in names:
        ours = CLAUDE_TOOLS.get(name, name)
        if ours in KNOWN_TOOLS or ours.startswith("mcp__"):
            tools.append(ours)
        elif re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            notes.append(f"{path}:{line}: tools: {name!r} is not a tool scout-tui has (known: "
                         f"{', '.join(KNOWN_TOOLS)}, mcp__SERVER__TOOL); left out")
        else:
            raise ScoutError(f"{path}:{line}: tools: {name!r} is not a tool name")
    return tuple(dict.fromkeys(tools)), notes


def _line(text: str, key: str) -> int:
    """The line of front-matter ``key`` in ``text`` (1: the front matter's first line, when absent)."""
    for number, line in enumerate(text.splitlines()[1:], 2):
        if line.strip() == "---":
            break
        if line.split(":", 1)[0].strip() == key:
            return number
    return 1


def resolve_model(model: str | None, provider_kind: str) -> str | None:
    """The model id an agent runs on: ``model`` as written, or for one of Claude Code's aliases
    (``MODEL_ALIASES``) on an Anthropic provider the newest ``claude-ALIAS-X-Y`` of the models.dev
    catalogue (None: that alias is unknown there, so the parent's model)."""
    if model not in MODEL_ALIASES:
        return model
    if provider_kind != "anthropic":
        return None
    from scout_tui.config.catalog import providers

    listed = providers().get("anthropic")
    pattern = re.compile(rf"claude-{model}-(\d+)-(\d+)\Z")
    found = [(int(m.group(1)), int(m.group(2)), i) for i in (listed.models if listed else ()) if (m := pattern.match(i))]
    return max(found)[2] if found else None


def task_description(agents: list[AgentDefinition]) -> str:
    """The ``task`` tool's description: what it does, then each agent as ``- name: description``
    (built-ins first, then by name: the tool list is part of the cached prompt, so its bytes
    stay put)."""
    order = [b.name for b in BUILTIN_AGENTS]
    builtin = sorted((a for a in agents if a.source == "built-in" and a.name in order), key=lambda a: order.index(a.name))
    custom = sorted((a for a in agents if a not in builtin), key=lambda a: a.name)
    listed = "\n".join(f"- {a.name}: {a.description}" for a in [*builtin, *custom])
    return ("Hand a self-contained sub-task to a subagent: a fresh agent with its own context that does the "
            "task with its tools and returns only its final answer (nothing else of its work enters this "
            "conversation). Use it for searches across many files, research, or independent changes, to "
            "keep this context small. Several task calls in one answer run at the same time. The prompt "
            "must say everything the subagent needs: it sees nothing of this conversation.\n\n"
            f"Agents:\n{listed}")


def describe_agents(agents: list[AgentDefinition], problems: list[str]) -> str:
    """``/agents``: each agent (name, where it comes from, its tools and model, its description)
    and the problems of the files read, as Markdown."""
    lines = ["**Agents** a `task` call can run (`.agents/agents/NAME.md`, `.claude/agents/NAME.md`, "
             "`~/.agents/agents/NAME.md`):", ""]
    for agent in agents:
        tools = ", ".join(agent.tools) if agent.tools is not None else "every tool but task"
        model = agent.model or "the session's"
        lines.append(f"- **{agent.name}** ({agent.source}): {agent.description}  \n"
                     f"  tools: {tools or 'none'}; model: {model}")
    if problems:
        lines += ["", "**Problems:**", *(f"- {p}" for p in problems)]
    return "\n".join(lines)
