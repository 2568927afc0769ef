"""The system prompt: who the assistant is, its tools, where it runs, and AGENTS.md."""

from __future__ import annotations

import datetime as _dt
import platform
from pathlib import Path

AGENTS_MD_LIMIT = 8000  # characters of ./AGENTS.md included


def system_prompt(cwd: Path, tool_names: list[str], *, today: _dt.date | None = None) -> str:
    """The system prompt for a session in ``cwd`` offering ``tool_names``.

    Includes the first ``AGENTS_MD_LIMIT`` characters of ``cwd/AGENTS.md`` when it exists.
    """
    today = today or _dt.date.today()
    parts = [
        "You are scout, a coding assistant working in a terminal on the user's repository. "
        "Answer concisely in Markdown. Use the tools to look before you claim: read files, search "
        "with grep and glob, run commands with bash. Change files with edit (exact, unique "
        "old_string) or write. Paths are relative to the working directory. When a tool fails, "
        "read its error and adjust instead of repeating the same call.",
        f"Tools: {', '.join(tool_names) or 'none'}.",
        f"Working directory: {cwd}\nPlatform: {platform.system()} {platform.release()}\n"
        f"Date: {today.isoformat()}",
    ]
    agents = cwd / "AGENTS.md"
    if agents.is_file():
        text = agents.read_text(encoding="utf-8", errors="replace")
        clipped = text[:AGENTS_MD_LIMIT]
        note = "" if len(text) <= AGENTS_MD_LIMIT else f"\n[AGENTS.md clipped at {AGENTS_MD_LIMIT} characters]"
        parts.append(f"Project instructions from AGENTS.md:\n<agents_md>\n{clipped}\n</agents_md>{note}")
    return "\n\n".join(parts)
