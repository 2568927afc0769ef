"""MCP content as text for the model and the screen: a tool call's result (``tool_result``), a
content block (``block_text``), a resource's contents (``resource_text``) and a prompt's messages
(``prompt_text``).

Shapes: the ``CallToolResult``, ``TextContent``/``ImageContent``/``AudioContent``/``EmbeddedResource``
and ``GetPromptResult`` of the MCP specification (https://modelcontextprotocol.io/specification/2025-06-18).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from scout_tui.tools.base import ToolResult


def tool_result(result: Any) -> ToolResult:
    """A ``CallToolResult`` (content blocks, ``structuredContent``, ``isError``) as a
    ``ToolResult`` whose text holds every block (see the module docstring)."""
    parts = [block_text(block) for block in result.content]
    structured = getattr(result, "structuredContent", None)
    # FastMCP wraps a plain return value as {"result": value}; its text block already says it.
    wrapped = structured.get("result") if isinstance(structured, dict) and len(structured) == 1 else None
    if structured is not None and not any(_same_json(p, structured) or p == wrapped for p in parts):
        parts.append(json.dumps(structured, indent=2, ensure_ascii=False))
    text = "\n".join(p for p in parts if p) or "(no output)"
    return ToolResult(text, bool(result.isError))


def block_text(block: Any) -> str:
    """One content block (text, image, audio, resource, resource link) as text."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        return f"[{kind}: {block.mimeType}, {_size(_decoded_length(block.data))}]"
    if kind == "resource":
        return resource_text(block.resource)
    if kind == "resource_link":
        return f"[resource link: {block.uri}{f' ({block.name})' if block.name else ''}]"
    return f"[{kind or type(block).__name__} content]"


def resource_text(resource: Any) -> str:
    """A resource's contents (embedded in a result, or read): "[resource URI]" and its text, or
    "[resource URI: MIME, SIZE]" for a blob."""
    if getattr(resource, "text", None) is not None:
        return f"[resource {resource.uri}]\n{resource.text}"
    return (f"[resource {resource.uri}: {resource.mimeType or 'binary'}, "
            f"{_size(_decoded_length(getattr(resource, 'blob', '')))}]")


def prompt_text(result: Any) -> str:
    """A ``GetPromptResult``'s messages as one prompt: each message's text (placeholders for
    other content), a blank line between; an assistant message is marked as one."""
    texts = []
    for message in result.messages:
        text = block_text(message.content)
        texts.append(text if message.role == "user" else f"(assistant) {text}")
    return "\n\n".join(texts)


def _decoded_length(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data) * 3 // 4


def _size(n: int) -> str:
    return f"{n} bytes" if n < 1024 else f"{n / 1024:.1f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MB"


def _same_json(text: str, value: Any) -> bool:
    try:
        return json.loads(text) == value
    except (ValueError, TypeError):
        return False
