"""Tools the model can call, and ``builtin_registry()``: bash, read, write, edit, grep, glob.

The tool shape and the registry live in ``base``; each tool family has its own module.

The names below are imported on first use (PEP 562 ``__getattr__``): the widgets import
``tools.output`` (``redact``) for the first frame, which must not pay for every tool module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scout_tui.tools.base import Registry, Tool, ToolContext, ToolError, ToolResult

__all__ = ["BUILTIN_TOOLS", "Registry", "Tool", "ToolContext", "ToolError", "ToolResult", "builtin_registry"]

_FROM_BASE = frozenset({"Registry", "Tool", "ToolContext", "ToolError", "ToolResult"})

BUILTIN_TOOLS: tuple[Tool, ...]
"""The six built-in tools, in the order the model is shown them."""


def __getattr__(name: str) -> Any:
    if name in _FROM_BASE:
        from scout_tui.tools import base

        return getattr(base, name)
    if name == "BUILTIN_TOOLS":
        from scout_tui.tools.bash import BASH
        from scout_tui.tools.files import EDIT, READ, WRITE
        from scout_tui.tools.search import GLOB, GREP

        global BUILTIN_TOOLS
        BUILTIN_TOOLS = (BASH, READ, WRITE, EDIT, GREP, GLOB)
        return BUILTIN_TOOLS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def builtin_registry() -> Registry:
    """A new ``Registry`` holding the six built-in tools; plugins may add to or replace them."""
    from scout_tui.tools.base import Registry

    registry = Registry()
    for tool in __getattr__("BUILTIN_TOOLS"):
        registry.add(tool)
    return registry
