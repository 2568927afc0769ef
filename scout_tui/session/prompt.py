"""The system prompt: who the assistant is, its tools, where it runs, skills, plugin texts and AGENTS.md."""

from __future__ import annotations

import datetime as _dt
import platform
from collections.abc import Sequence
from pathlib import Path

from scout_tui.extensions.skills import DESCRIPTION_LIMIT, Skill, clip_description

AGENTS_MD_LIMIT = 8000  # characters of AGENTS.md included


def agents_md(cwd: Path, home: Path | None = None) -> Path | None:
    """The instructions file to include: ``cwd/AGENTS.md``, else ``home/.agents/AGENTS.md``
    (``home`` defaults to ``Path.home()``), else None."""
    home = Path.home() if home is None else home
    for path in (cwd / "AGENTS.md", home / ".agents" / "AGENTS.md"):
        if path.is_file():
            return path
    return None


def system_prompt(
    cwd: Path,
    tool_names: list[str],
    *,
    today: _dt.date | None = None,
    skills: Sequence[Skill] = (),
    extra: Sequence[str] = (),
    home: Path | None = None,
) -> str:
    """The system prompt for a session in ``cwd`` offering ``tool_names``.

    Args:
        skills: listed by name and description only (each description cut to
            ``skills.DESCRIPTION_LIMIT`` characters); the ``skill`` tool loads a body.
        extra: texts plugins added with ``api.prompt``, each its own paragraph, in order.
        home: where ``~/.agents/AGENTS.md`` is looked for (default ``Path.home()``).

    Includes the first ``AGENTS_MD_LIMIT`` characters of ``agents_md(cwd, home)`` and names the
    file it came from.
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
    agents = agents_md(cwd, home)
    if agents is not None:
        text = agents.read_text(encoding="utf-8", errors="replace")
        clipped = text[:AGENTS_MD_LIMIT]
        note = "" if len(text) <= AGENTS_MD_LIMIT else f"\n[{agents} clipped at {AGENTS_MD_LIMIT} characters]"
        whose = "Project" if agents.parent == cwd else "The user's own"
        parts.append(f"{whose} instructions from {agents}:\n<agents_md>\n{clipped}\n</agents_md>{note}")
    return "\n\n".join(parts)
