"""One short line describing a tool call, for the chat, the tool-activity pane and stderr."""

from __future__ import annotations

import json
from typing import Any

# The argument that says most about a call of each built-in tool.
KEY_ARGUMENT = {"bash": "command", "read": "path", "write": "path", "edit": "path", "grep": "pattern", "glob": "pattern"}


def summarize_call(name: str, input: Any, width: int = 80) -> str:
    """``name`` and its most telling argument on one line, at most ``width`` characters.

    The text is raw (not sanitized); callers that display it sanitize it.
    """
    if isinstance(input, dict):
        key = KEY_ARGUMENT.get(name)
        if key and isinstance(input.get(key), str):
            arg = input[key]
        elif input:
            arg = json.dumps(input, ensure_ascii=False)
        else:
            arg = ""
    else:
        arg = str(input)
    line = f"{name} {' '.join(arg.split())}".strip()
    return line if len(line) <= width else line[: width - 1] + "…"
