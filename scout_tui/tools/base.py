"""Tools the model can call: the ``Tool`` shape, the run context, a name-keyed registry, and
helpers that write a tool's JSON Schema (``object_schema``, ``string``, ``number``…).

A tool's failure is a ``ToolResult`` with ``is_error=True`` that the model reads; it never
escapes the agent loop as an exception.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Sequence

from scout_tui.core.errors import error_text, raised_at

if TYPE_CHECKING:
    from scout_tui.core.bus import Event
    from scout_tui.tools.sandbox import SandboxSettings


class ToolError(Exception):
    """Raised inside a tool for a failure the model should read (bad path, no match…)."""


@dataclass(slots=True)
class ToolResult:
    """What a tool returns: text for the model, and whether it is an error.

    ``output_path``: the file holding the whole output when ``content`` was cut to fit.
    ``notice``: a line for the person too, not only the model (what the tool did beyond what it
    was asked, e.g. a planted plugin moved aside). ``ends_turn``: no model request follows this
    result (the turn ends once the reply's calls are answered: a plan given to the person).
    """

    content: str
    is_error: bool = False
    output_path: str | None = None
    notice: str | None = None
    ends_turn: bool = False


@dataclass(slots=True)
class ToolContext:
    """What a running tool may use.

    ``cwd`` is the working directory that relative paths resolve against; ``on_output`` receives
    live fragments of output (bash streams through it; the UI shows them); ``env`` is the
    environment for processes a tool starts (None: this process's), without API keys.
    ``stop`` is set when the person stops this one call (the turn goes on): a tool that can
    end early returns what it has. ``output_path`` is where a tool whose result is cut to fit
    the model saves the whole output (None: nowhere; the folder may not exist yet), with each
    of ``secrets`` (API keys) redacted. ``sandbox``: how processes a tool starts are sandboxed
    (``tools.sandbox``; None: unsandboxed). ``call_id``: the ``tool_use`` id of the call.
    ``emit``: passes an event up the running turn (a ``task`` call's subagent events; None:
    nowhere).
    """

    cwd: Path
    on_output: Callable[[str], None] = lambda text: None
    env: dict[str, str] | None = None
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    output_path: Path | None = None
    secrets: tuple[str, ...] = ()
    sandbox: SandboxSettings | None = None
    call_id: str = ""
    emit: Callable[[Event], None] | None = None

    def resolve(self, path: str) -> Path:
        """``path`` (relative to ``cwd``, or absolute, ``~`` expanded) as an absolute Path."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else self.cwd / p


Run = Callable[[dict[str, Any], ToolContext], Awaitable[str | ToolResult]]
Preview = Callable[[dict[str, Any], ToolContext], Awaitable[str]]


@dataclass(slots=True)
class Tool:
    """A named tool: its description and JSON Schema for the model, and its coroutine.

    ``run(input, ctx)`` returns the result text (or a ``ToolResult``); it raises ``ToolError``
    for failures the model should read. ``read_only`` tools change nothing, so several of them
    in one turn may run at once, and they run without asking. ``preview(input, ctx)``, when
    set, returns the unified diff the call would make (shown before approval and in the tool
    pane); it raises ``ToolError`` when the call would fail. ``delegates``: a call of it hands
    work to another agent whose own calls are each checked (``task``): it runs without asking,
    at once with the other such calls of the reply, and may still change files.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    run: Run
    read_only: bool = False
    preview: Preview | None = None
    delegates: bool = False

    def spec(self) -> dict[str, Any]:
        """The ``{"name", "description", "input_schema"}`` dict both APIs are given."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


def may_change_files(tool: Tool | None) -> bool:
    """Whether a call of ``tool`` may change files: any tool not marked read-only, an unknown
    one too (what takes a checkpoint before it and what runs alone, not in a read-only batch)."""
    return not (tool is not None and tool.read_only)


@dataclass
class Registry:
    """Tools by name; a later registration replaces an earlier one of the same name. ``keep``:
    which names this registry takes (None: every one); ``add`` passes over the others, so a
    subagent limited to some tools never gains another (an MCP server's, offered later)."""

    tools: dict[str, Tool] = field(default_factory=dict)
    keep: Callable[[str], bool] | None = None

    def add(self, tool: Tool) -> None:
        if self.keep is None or self.keep(tool.name):
            self.tools[tool.name] = tool

    def specs(self) -> list[dict[str, Any]]:
        return [t.spec() for t in self.tools.values()]

    def __contains__(self, name: str) -> bool:
        return name in self.tools

    async def call(self, name: str, input: Any, ctx: ToolContext) -> ToolResult:
        """Run tool ``name``; every failure becomes an ``is_error`` result naming the tool."""
        tool = self.tools.get(name)
        if tool is None:
            known = ", ".join(sorted(self.tools)) or "none"
            return ToolResult(f"Unknown tool {name!r}. Available tools: {known}.", True)
        if not isinstance(input, dict):
            return ToolResult(f"{name}: arguments must be a JSON object, got {input!r:.200}", True)
        builtin = _builtin(tool)
        missing = [key for key in tool.input_schema.get("required") or () if key not in input]
        if missing and not builtin:  # scout-tui's own tools say it themselves (files.str_arg)
            return ToolResult(f"{name}: {missing_argument(missing[0], input)}", True)
        try:
            out = await tool.run(input, ctx)
        except ToolError as e:
            return ToolResult(f"{name}: {e}", True)
        except asyncio.CancelledError:
            raise
        except (KeyError, TypeError) as e:
            if not builtin:  # a plugin's own KeyError is its bug, not the model's arguments
                return ToolResult(f"{name} failed{_at(e, tool, ctx.cwd, ' at ')}: {error_text(e)}", True)
            return ToolResult(f"{name}: bad arguments ({error_text(e)})", True)
        except Exception as e:  # a tool bug must not end the turn; the model reads it
            return ToolResult(f"{name} failed{_at(e, tool, ctx.cwd, ' at ')}: {error_text(e)}", True)
        return out if isinstance(out, ToolResult) else ToolResult(str(out))


def missing_argument(key: str, input: dict[str, Any]) -> str:
    """What a tool says when the model left out required argument ``key`` of ``input``: the
    key and the arguments it did give (a misspelt name shows)."""
    got = ", ".join(sorted(map(str, input))) or "nothing"
    return f"missing required argument {key!r} (got: {got})"


def _builtin(tool: Tool) -> bool:
    """Whether ``tool`` is scout-tui's own (its ``run`` defined in this package): a KeyError or
    TypeError from it means arguments of the wrong shape, which the model can mend."""
    run = getattr(tool.run, "__func__", tool.run)
    return str(getattr(run, "__module__", "") or "").startswith("scout_tui.")


def _at(exc: BaseException, tool: Tool, cwd: Path, lead: str) -> str:
    """``lead`` and the ``file:line`` where a tool's exception was raised: the deepest line in the
    file that defines its ``run`` (a plugin's own), named relative to ``cwd`` or ``~`` when
    under them; "" without a traceback. One line, not the traceback: the model and the tool
    pane read it, and the traceback's other frames are scout-tui's own."""
    run = getattr(tool.run, "__func__", tool.run)
    where = raised_at(exc, getattr(getattr(run, "__code__", None), "co_filename", None))
    if where is None:
        return ""
    for base, shown in ((Path(cwd), ""), (Path.home(), "~/")):
        if where.startswith(f"{base}/"):
            where = shown + where[len(str(base)) + 1 :]
            break
    return lead + where


# -- JSON Schema for tool input (https://json-schema.org/understanding-json-schema/reference) --
# Each helper returns a plain dict in the key order the built-in tools have always sent: the
# providers cache the tool list by its bytes, so the order is part of the wire form.


def object_schema(*, required: Sequence[str] = (), **properties: dict[str, Any]) -> dict[str, Any]:
    """A tool's ``input_schema``: an object with ``properties`` (name to property schema, in
    the order given) and the ``required`` names, left out when there are none.

    Raises ``ValueError`` for a required name that is not a property. (A property cannot be
    called ``required``; write that schema as a dict.)
    """
    missing = [name for name in required if name not in properties]
    if missing:
        raise ValueError(f"required names that are not properties: {', '.join(map(repr, missing))}")
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


def string(description: str) -> dict[str, Any]:
    """A string property: ``{"type": "string", "description": ...}``."""
    return {"type": "string", "description": description}


def boolean(description: str) -> dict[str, Any]:
    """A true/false property: ``{"type": "boolean", "description": ...}``."""
    return {"type": "boolean", "description": description}


def number(
    description: str,
    *,
    minimum: float | None = None,
    exclusive_minimum: float | None = None,
    maximum: float | None = None,
) -> dict[str, Any]:
    """A number property with the bounds given (``minimum``, ``exclusiveMinimum``,
    ``maximum``), in the unit its description names."""
    return _bounded("number", description, minimum=minimum, exclusiveMinimum=exclusive_minimum, maximum=maximum)


def integer(description: str, *, minimum: int | None = None, maximum: int | None = None) -> dict[str, Any]:
    """A whole-number property with the bounds given (``minimum``, ``maximum``)."""
    return _bounded("integer", description, minimum=minimum, maximum=maximum)


def _bounded(type_name: str, description: str, **bounds: float | None) -> dict[str, Any]:
    """``{"type": type_name, <the bounds that are not None>, "description": description}``."""
    return {"type": type_name, **{k: v for k, v in bounds.items() if v is not None}, "description": description}


def elapsed_since(start: float) -> float:
    """Seconds since ``start`` (a ``time.monotonic()`` reading), rounded to ms."""
    return round(time.monotonic() - start, 3)
