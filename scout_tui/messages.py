"""The message shape: the blocks of a message, its text, its tool calls and the text of a result.

A message is a plain dict in the Anthropic Messages content-block shape
(https://docs.anthropic.com/en/api/messages): ``{"role": "user"|"assistant", "content": str |
[blocks]}``. Every module that reads a message's parts uses these functions, so "the text of a
tool result" means the same thing in the prompt, the backends, the panes and the exports.
"""

from __future__ import annotations

from typing import Any


def blocks(message: dict) -> list[dict]:
    """Content blocks of ``message``; a plain-string content becomes one text block."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content or [])


def tool_uses(message: dict) -> list[dict]:
    """The ``tool_use`` blocks of an assistant message, in order."""
    return [b for b in blocks(message) if b.get("type") == "tool_use"]


def tool_results(message: dict) -> list[dict]:
    """The ``tool_result`` blocks of a user message, in order."""
    return [b for b in blocks(message) if b.get("type") == "tool_result"]


def message_text(message: dict) -> str:
    """The text a person wrote or read in ``message``: its ``text`` blocks joined by newlines
    (thinking, tool calls and tool results left out)."""
    return "\n".join(str(b.get("text") or "") for b in blocks(message) if isinstance(b, dict) and b.get("type") == "text")


def thinking_text(message: dict) -> str:
    """The model's visible reasoning in ``message``: its ``thinking`` blocks joined by newlines."""
    return "\n".join(str(b.get("thinking") or "") for b in blocks(message)
                     if isinstance(b, dict) and b.get("type") == "thinking")


def has_text(message: dict) -> bool:
    """Whether ``message`` holds a text block with more than whitespace."""
    return any(isinstance(b, dict) and b.get("type") == "text" and str(b.get("text") or "").strip()
               for b in blocks(message))


def result_text(content: Any) -> str:
    """The text of a ``tool_result``'s ``content``: a string as it is; a list of blocks as its
    text blocks joined by newlines, any other block (an image) as ``[image block]``; None as "".
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) if b.get("type") == "text" else f"[{b.get('type', 'unknown')} block]"
            for b in content if isinstance(b, dict)
        )
    return str(content)
