"""Slash commands written as Markdown files, as Claude Code's custom commands
(https://docs.anthropic.com/en/docs/claude-code/slash-commands#custom-slash-commands): the file's
body is a prompt template, sent when the person types ``/NAME ARGS``.

Found in ``~/.claude/commands``, ``~/.agents/commands`` (the person's), then a project's
``.claude/commands`` and ``.agents/commands`` (a later folder's command replaces an earlier one of
its name); ``NAME.md``, and in a subfolder ``DIR/NAME.md`` as ``DIR:NAME``. Front matter (optional):
``description``, ``argument-hint``, ``model``, ``allowed-tools``. The body's expansions, in order:

- ``$ARGUMENTS``: the argument text; ``$1`` … ``$9``: its words (quotes group, as a shell's);
  without either, arguments typed are added after the body as ``ARGUMENTS: …`` (Claude Code's way);
- ``!`cmd```: the command's output, run as the ``bash`` tool would run it (the permission rules,
  the sandbox; ``allowed-tools`` lets its commands run without asking);
- ``@path``: left as typed: the prompt's mentions attach the file, as for a typed prompt.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from scout_tui.core.errors import ScoutError
from scout_tui.extensions.skills import first_line, parse_front_matter, read_markdown
from scout_tui.tools.permissions import parse_rule, rule_text

FOLDERS = (Path(".claude") / "commands", Path(".agents") / "commands")
"""Where commands are found, under the home folder and then the project's (in this order: the
later one of a name wins)."""

LISTS = frozenset({"allowed-tools"})
"""The front matter keys that may be a YAML list (``allowed-tools:`` then ``- Bash(git add:*)`` lines)."""

_NAME = re.compile(r"[A-Za-z][\w-]*(?::[A-Za-z][\w-]*)*\Z")
_BANG = re.compile(r"!`([^`\n]+)`")
_PLACEHOLDER = re.compile(r"\$ARGUMENTS|\$([1-9])(?!\d)")


@dataclass(frozen=True)
class MarkdownCommand:
    """One command file.

    Attributes:
        name: typed after the slash (``review``, ``git:commit`` for ``git/commit.md``).
        path: its file.
        description: for ``/help`` and the palette (the front matter's, else the body's first line).
        argument_hint: how its arguments read (``[FILE]``).
        model: the model its front matter asks for ("" for none; scout-tui sends the command with the
            session's model, and ``discover_commands`` says so).
        allowed_tools: permission rules (``bash:git status *``) its ``!`cmd``` lines run under.
        project: it is a project's, not the person's own.
    """

    name: str
    path: Path
    description: str
    argument_hint: str = ""
    model: str = ""
    allowed_tools: tuple[str, ...] = ()
    project: bool = False

    @property
    def origin(self) -> str:
        """Where it comes from, as ``/help`` says it: the folder and file (``.agents/commands/greet.md``)."""
        parts = self.path.parts
        for n in range(len(parts) - 1, 0, -1):
            if parts[n] == "commands" and parts[n - 1] in (".claude", ".agents"):
                return ("" if self.project else "~/") + "/".join(parts[n - 1:])
        return str(self.path)

    def body(self) -> str:
        """The template, read now (an edit shows without a restart).

        Raises:
            ScoutError: the file is gone or unreadable, or its front matter became bad (naming file and line).
        """
        return parse_front_matter(read_markdown(self.path, "command"), self.path)[1]


def command_files(cwd: Path, home: Path | None = None) -> list[tuple[str, Path, bool]]:
    """``(name, file, project)`` for each command file, in ``FOLDERS`` order under ``home`` then
    ``cwd`` (a folder reached twice, cwd being home, counts once as the person's), each folder by path."""
    home = Path.home() if home is None else home
    found: list[tuple[str, Path, bool]] = []
    seen: set[Path] = set()
    for root, project in ((home, False), (cwd, True)):
        for folder in FOLDERS:
            folder = root / folder
            if not folder.is_dir() or folder.resolve() in seen:
                continue
            seen.add(folder.resolve())
            for path in sorted(folder.rglob("*.md")):
                relative = path.relative_to(folder)
                if path.is_file() and not any(part.startswith(".") for part in relative.parts):
                    found.append((":".join([*relative.parts[:-1], path.stem]), path, project))
    return found


def discover_commands(cwd: Path, home: Path | None = None) -> tuple[list[MarkdownCommand], list[str]]:
    """The commands of ``command_files`` (a later one of a name replaces an earlier one), sorted by
    name, and a line per problem, naming file and line: a bad name, an unreadable file, bad front
    matter (that command is left out), a tool in ``allowed-tools`` that is not a rule."""
    commands: dict[str, MarkdownCommand] = {}
    problems: list[str] = []
    for name, path, project in command_files(cwd, home):
        if not _NAME.match(name):
            problems.append(f"{path}: /{name} is not a command name (a letter, then letters, digits, - and _; "
                            ": between folders); left out")
            continue
        try:
            fields, body = parse_front_matter(read_markdown(path, "command"), path, lists=LISTS)
            allowed, notes = allowed_rules(fields.get("allowed-tools", ""), path)
        except ScoutError as exc:
            problems.append(f"{exc} (command /{name} left out)")
            continue
        problems += notes
        if fields.get("model", "").strip():
            problems.append(f"{path}: model {fields['model'].strip()!r} is not applied: /{name} runs on the session's "
                            "model (/model switches it)")
        description = " ".join((fields.get("description") or first_line(body) or f"the prompt in {path.name}").split())
        commands[name] = MarkdownCommand(name, path, description, fields.get("argument-hint", "").strip(),
                                         fields.get("model", "").strip(), allowed, project)
    return sorted(commands.values(), key=lambda c: c.name), problems


def allowed_rules(value: str, path: Path) -> tuple[tuple[str, ...], list[str]]:
    """``allowed-tools`` (Claude Code's ``Bash(git add:*), Read``, or scout-tui's ``bash:git add *``)
    as scout-tui permission rules, and a note per entry that is not one (left out)."""
    rules: list[str] = []
    notes: list[str] = []
    for entry in _split_entries(value):
        try:
            rules.append(parse_rule(rule_text(entry), f"{path}: allowed-tools").text)
        except ScoutError:
            notes.append(f"{path}: allowed-tools: {entry.strip()!r} is not a tool or rule; left out")
    return tuple(rules), notes


def _split_entries(value: str) -> list[str]:
    """``value``'s entries, split at commas outside parentheses."""
    entries, depth, current = [], 0, ""
    for char in value.strip().strip("[]"):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            entries.append(current)
            current = ""
        else:
            current += char
    entries.append(current)
    return [e.strip().strip("'\"") for e in entries if e.strip()]


async def expand(command: MarkdownCommand, args: str, run: Callable[[str], Awaitable[str]]) -> str:
    """The prompt ``command`` sends with argument text ``args``: its body with ``$ARGUMENTS`` and
    ``$1``…``$9`` replaced (arguments typed without either in the body go after it), and each
    ``!`cmd``` of the body (its placeholders filled) replaced by ``await run(cmd)`` (the command's
    output, or why it did not run). The body is read once: what the person typed is sent as
    typed, a ``$1`` or ``!`cmd``` in it is neither filled nor run.

    Raises:
        ScoutError: the file cannot be read now.
    """
    body = command.body().strip()
    args = args.strip()
    try:
        words = shlex.split(args)
    except ValueError:  # an unclosed quote: plain words
        words = args.split()

    def fill(text: str) -> str:  # one pass: the typed text is never read as a placeholder again
        return _PLACEHOLDER.sub(lambda m: args if m[0] == "$ARGUMENTS" else
                                (words[int(m[1]) - 1] if int(m[1]) <= len(words) else ""), text)

    used = _PLACEHOLDER.search(body) is not None
    pieces: list[str] = []
    last = 0
    for match in _BANG.finditer(body):
        pieces += [fill(body[last:match.start()]), (await run(fill(match[1]))).rstrip("\n")]
        last = match.end()
    body = "".join([*pieces, fill(body[last:])])
    return f"{body}\n\nARGUMENTS: {args}" if args and not used else body
