"""The system prompt: who the assistant is, its tools, where it runs, skills, plugin texts and the
memory files (``memory.py``: AGENTS.md from the repository root down, CLAUDE.md, imports)."""

from __future__ import annotations

import datetime as _dt
import platform
from collections.abc import Sequence
from pathlib import Path

from scout_tui.extensions.skills import DESCRIPTION_LIMIT, Skill, clip_description
from scout_tui.session.memory import Memory, load_memory


def system_prompt(
    cwd: Path,
    tool_names: list[str],
    *,
    today: _dt.date | None = None,
    skills: Sequence[Skill] = (),
    extra: Sequence[str] = (),
    home: Path | None = None,
    memory: Memory | None = None,
) -> str:
    """The system prompt for a session in ``cwd`` offering ``tool_names``.

    Args:
        skills: listed by name and description only (each description cut to
            ``skills.DESCRIPTION_LIMIT`` characters); the ``skill`` tool loads a body.
        extra: texts plugins added with ``api.prompt``, each its own paragraph, in order.
        home: where the person's own memory file is looked for (default ``Path.home()``).
        memory: the memory files, read (None: ``memory.load_memory(cwd, home)``, read now).

    Ends with the memory files' section (``Memory.prompt_text``: each file named, the cut by
    ``memory.MEMORY_BUDGET`` said), so that ``memory.with_memory`` can replace it.
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
    if skills:
        lines = ["Skills (load one with the skill tool):"]
        for skill in skills:
            text = clip_description(" ".join(skill.description.split()), DESCRIPTION_LIMIT)
            lines.append(f"- {skill.name}: {text}" if text else f"- {skill.name}")
        parts.append("\n".join(lines))
    parts.extend(text.strip() for text in extra if text and text.strip())
    memory = memory if memory is not None else load_memory(cwd, home)
    if memory.prompt_text:
        parts.append(memory.prompt_text)
    return "\n\n".join(parts)
