"""Skills: Markdown instructions found in ``.agents/skills/``, loaded by the model on demand.

Only each skill's name and description go into the system prompt; the ``skill`` tool returns
the body when the model asks for it (the seed agent's design, and the Agent Skills layout).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from scout_tui.core.errors import ScoutError
from scout_tui.tools.base import Tool, ToolContext, ToolError, object_schema, string

SKILLS_DIR = Path(".agents") / "skills"
SKILL_FILE = "SKILL.md"
DESCRIPTION_LIMIT = 300  # characters of a description shown in the prompt and in /skills


@dataclass
class Skill:
    """One skill: ``name`` and ``description`` for the prompt, ``path`` of its Markdown file,
    and ``source``: ``"user"`` (``~/.agents/skills``) or ``"project"`` (``./.agents/skills``)."""

    name: str
    description: str
    path: Path
    source: Literal["user", "project"]

    def body(self) -> str:
        """The file's text after its front matter, read now (so edits show without a restart).

        Raises:
            ScoutError: the file is gone, unreadable, not UTF-8, or its front matter became
                malformed; the message names the file (and line).
        """
        text = read_markdown(self.path)
        _, body = parse_front_matter(text, self.path)
        return body


def parse_front_matter(text: str, path: Path, lists: frozenset[str] = frozenset()) -> tuple[dict[str, str], str]:
    """Split a skill file into its front matter (``key: value`` pairs) and its body.

    The front matter is optional: the file's first line is ``---`` and a later line is ``---``.
    Between them, each top-level line is ``key: value``; the value may be quoted ("..." with
    JSON-style escapes, or '...' with '' for a quote) or plain (`` # comment`` cut off). Indented
    lines continue the previous value (YAML's folded style, joined with spaces; ``key: >`` starts
    one); list items (``- x``) are skipped, but those of a key in ``lists``, which are joined to
    its value with ", " (``tools:`` then ``- Read`` and ``- Grep`` reads "Read, Grep"); so are
    blank lines and ``#`` comments. This is the simple subset skill and agent files use, not YAML.

    Returns:
        (fields, body): keys as written, values as strings; the body without the front matter.

    Raises:
        ScoutError: "<path>:<line>: ..." for an unterminated front matter, a line that is not
            ``key: value``, or an unterminated quote.
    """
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise ScoutError(f"{path}:1: front matter: no closing '---' line")
    fields: dict[str, str] = {}
    last: str | None = None
    for number, line in enumerate(lines[1:end], 2):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if line[0] in " \t" or stripped == "-" or stripped.startswith("- "):
            if last is None:
                raise ScoutError(f"{path}:{number}: front matter: {stripped[:60]!r} belongs to no key")
            if line[0] in " \t" and not stripped.startswith("- "):
                fields[last] = f"{fields[last]} {stripped}" if fields[last] else stripped
            elif last in lists and stripped.startswith("- "):
                item = _value(stripped[2:].strip(), path, number)
                fields[last] = f"{fields[last]}, {item}" if fields[last] else item
            continue  # another list item: only string values are read here
        key, colon, raw = line.partition(":")
        key = key.strip()
        if not colon or not key:
            raise ScoutError(f"{path}:{number}: front matter: expected 'key: value', got {stripped[:60]!r}")
        raw = raw.strip()
        # YAML block scalars ("description: >"): the value is on the indented lines after it.
        fields[key] = "" if raw in (">", "|", ">-", "|-", ">+", "|+") else _value(raw, path, number)
        last = key
    return fields, "".join(lines[end + 1 :])


def _value(raw: str, path: Path, number: int) -> str:
    """A front-matter value: quotes removed (escapes decoded), or a plain value without its
    trailing `` # comment``."""
    if raw.startswith('"'):
        end = _closing_double_quote(raw)
        if end < 0:
            raise ScoutError(f"{path}:{number}: front matter: unterminated double-quoted value")
        try:
            return json.loads(raw[: end + 1])
        except json.JSONDecodeError:
            return raw[1:end]
    if raw.startswith("'"):
        i = 1
        while True:
            j = raw.find("'", i)
            if j < 0:
                raise ScoutError(f"{path}:{number}: front matter: unterminated single-quoted value")
            if raw[j + 1 : j + 2] == "'":
                i = j + 2
                continue
            return raw[1:j].replace("''", "'")
    cut = raw.find(" #")
    return (raw if cut < 0 else raw[:cut]).strip()


def _closing_double_quote(raw: str) -> int:
    i = 1
    while i < len(raw):
        if raw[i] == "\\":
            i += 2
            continue
        if raw[i] == '"':
            return i
        i += 1
    return -1


def read_markdown(path: Path, what: str = "skill") -> str:
    """The text of a skill's (or command's, ``what``) file.

    Raises:
        ScoutError: "<path>: cannot read skill: <why>", or "<path>:<line>: skill is not UTF-8 text".
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ScoutError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ScoutError(f"{path}:{line}: {what} is not UTF-8 text") from None


def first_line(body: str) -> str:
    """The first non-empty line of ``body``, without Markdown heading marks."""
    for line in body.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line
    return ""


def _candidates(folder: Path) -> list[tuple[str, Path]]:
    """(default name, file) for ``folder/NAME/SKILL.md`` and ``folder/NAME.md``, by path."""
    if not folder.is_dir():
        return []
    found = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir() and (entry / SKILL_FILE).is_file():
            found.append((entry.name, entry / SKILL_FILE))
        elif entry.is_file() and entry.suffix.lower() == ".md":
            found.append((entry.stem, entry))
    return found


def load_skill(path: Path, default_name: str, source: Literal["user", "project"]) -> Skill:
    """The ``Skill`` in ``path``: name and description from its front matter, else the
    ``default_name`` and the first non-empty body line.

    Raises:
        ScoutError: as ``parse_front_matter`` and ``Skill.body`` (naming file and line).
    """
    fields, body = parse_front_matter(read_markdown(path), path)
    name = fields.get("name", "").strip() or default_name
    description = " ".join((fields.get("description") or first_line(body)).split())
    return Skill(name, description, path, source)


def discover_skills(cwd: Path, home: Path | None = None) -> tuple[list[Skill], list[str]]:
    """Every skill in ``home/.agents/skills`` (user) then ``cwd/.agents/skills`` (project).

    ``home`` defaults to ``Path.home()``. A project skill replaces a user skill of the same
    name. Within one folder, two files claiming one name: the first by path is kept and the
    other reported. A skill that cannot be read or has malformed front matter is skipped and
    reported; the others still load.

    Returns:
        (skills sorted by name, problem messages such as "<path>:<line>: front matter: ...").
    """
    home = Path.home() if home is None else home
    skills: dict[str, Skill] = {}
    problems: list[str] = []
    seen: set[Path] = set()
    roots: tuple[tuple[Literal["user", "project"], Path], ...] = (("user", home), ("project", cwd))
    for source, root in roots:
        folder = root / SKILLS_DIR
        resolved = folder.resolve()
        if resolved in seen:  # cwd is the home directory: the same folder once, as "user"
            continue
        seen.add(resolved)
        here: dict[str, Skill] = {}
        for default_name, path in _candidates(folder):
            try:
                skill = load_skill(path, default_name, source)
            except ScoutError as exc:
                problems.append(f"{exc} (skill skipped)")
                continue
            if skill.name in here:
                problems.append(f"{path}: skill {skill.name!r} is also defined by {here[skill.name].path}; "
                                "this one is skipped")
                continue
            here[skill.name] = skill
        skills.update(here)
    return sorted(skills.values(), key=lambda s: s.name), problems


def clip_description(text: str, limit: int = DESCRIPTION_LIMIT) -> str:
    """``text`` cut to ``limit`` characters (ending in "…" when cut)."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def describe_skills(skills: Sequence[Skill]) -> str:
    """Markdown for ``/skills``: one line per skill with its source and file."""
    if not skills:
        return ("No skills found. Add `NAME/SKILL.md` or `NAME.md` to `~/.agents/skills/` "
                "or `./.agents/skills/`.")
    lines = ["**Skills** (the model loads one with the `skill` tool):", ""]
    for s in skills:
        what = f": {clip_description(s.description)}" if s.description else ""
        lines.append(f"- **{s.name}**{what} ({s.source}, `{s.path}`)")
    return "\n".join(lines)


def skill_tool(skills: Sequence[Skill]) -> Tool:
    """The read-only ``skill`` tool: input ``{"name": str}``, result the skill's body.

    The skills are looked up by name when the tool runs; the body is read from disk then. For
    a ``NAME/SKILL.md`` skill the result starts with the skill's folder, since a skill often
    names scripts or files beside it. An unknown name is a ``ToolError`` listing the known ones.
    """
    by_name = {s.name: s for s in skills}

    async def run(input: dict[str, Any], ctx: ToolContext) -> str:
        name = input["name"]
        skill = by_name.get(name) if isinstance(name, str) else None
        if skill is None:
            known = ", ".join(sorted(by_name)) or "none"
            raise ToolError(f"unknown skill {name!r}. Known skills: {known}.")
        try:
            body = skill.body()
        except ScoutError as exc:
            raise ToolError(str(exc)) from None
        body = body.strip("\n") or f"(skill {name!r} has no body)"
        if skill.path.name == SKILL_FILE:
            return f"Skill folder: {skill.path.parent} (paths in this skill are relative to it)\n\n{body}"
        return body

    return Tool(
        name="skill",
        description=(
            "Load the full instructions of a skill by name. The available skills and what they "
            "are for are listed in the system prompt; load one when the task matches it, and "
            "follow its instructions."
        ),
        input_schema=object_schema(name=string("The skill's name, as listed."), required=["name"]),
        run=run,
        read_only=True,
    )
