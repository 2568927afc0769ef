"""Tools the model can call, and ``builtin_registry()``: bash, read, write, edit, grep, glob.

The tool shape and the registry live in ``base``; each tool family has its own module.
"""

from __future__ import annotations

from scout_tui.tools.base import Registry, Tool, ToolContext, ToolError, ToolResult
from scout_tui.tools.bash import BASH
from scout_tui.tools.files import EDIT, READ, WRITE
from scout_tui.tools.search import GLOB, GREP

BUILTIN_TOOLS: tuple[Tool, ...] = (BASH, READ, WRITE, EDIT, GREP, GLOB)

__all__ = ["BUILTIN_TOOLS", "Registry", "Tool", "ToolContext", "ToolError", "ToolResult", "builtin_registry"]


def builtin_registry() -> Registry:
    """A new ``Registry`` holding the six built-in tools; plugins may add to or replace them."""
    registry = Registry()
    for tool in BUILTIN_TOOLS:
        registry.add(tool)
    return registry
