"""Slash commands: one registry (name, arguments, help, handler) for the built-in and the
plugins' commands, read by the composer (``/name args``), the command palette and ``/help``.

Later registration wins by name, so a plugin can replace a built-in command. The registry
holds no widget: a handler is a callable taking the argument text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterator

Handler = Callable[[str], object]

_COMMAND = re.compile(r"/([A-Za-z][\w-]*(?::[A-Za-z][\w-]*)*)(?:\s+(.*))?\Z", re.DOTALL)  # dir:name too


@dataclass(frozen=True)
class Command:
    """One slash command.

    Attributes:
        name: typed after the slash (``fork`` for ``/fork``).
        args: how its arguments read in help (``[N]``, ``TITLE``; "" for none).
        help: one line saying what it does.
        run: called with the argument text ("" when none; the palette always passes "").
        title: the command palette's name for it (None: listed as ``/name``).
        owner: who registered it ("scout-tui", or a plugin's name).
        aliases: other names that run it (``exit`` for ``quit``).
        sends: ``run`` gives the prompt to send (a markdown command), not text to show.
    """

    name: str
    args: str
    help: str
    run: Handler
    title: str | None = None
    owner: str = "scout-tui"
    aliases: tuple[str, ...] = ()
    sends: bool = False

    @property
    def usage(self) -> str:
        """``/name ARGS`` as help shows it."""
        return f"/{self.name} {self.args}".rstrip()


@dataclass(frozen=True)
class Parsed:
    """What a typed line asks for: a known ``command`` (None when the name is unknown), the
    ``name`` typed, and the argument text (stripped)."""

    command: Command | None
    name: str
    args: str


class Commands:
    """The registry: commands by name, in registration order (a re-registered name keeps its
    first place and takes the new command)."""

    def __init__(self, commands: list[Command] | None = None) -> None:
        self._by_name: dict[str, Command] = {}
        self._aliases: dict[str, str] = {}
        for command in commands or ():
            self.add(command)

    def add(self, command: Command) -> None:
        """Register ``command``; one of the same name (or alias) is replaced."""
        self._by_name[command.name] = command
        self._aliases.pop(command.name, None)
        for alias in command.aliases:
            self._aliases[alias] = command.name

    def get(self, name: str) -> Command | None:
        """The command called ``name`` (or aliased so), else None."""
        return self._by_name.get(name) or self._by_name.get(self._aliases.get(name, ""))

    def __iter__(self) -> Iterator[Command]:
        return iter(self._by_name.values())

    def parse(self, text: str) -> Parsed | None:
        """``text`` read as a slash command, or None when it is a prompt for the model: it does
        not start with ``/name`` (a word), such as ``/usr/bin/env is missing`` or ``//literal``
        (see ``literal``)."""
        match = _COMMAND.match(text.strip())
        if match is None:
            return None
        name = match.group(1)
        return Parsed(self.get(name), name, (match.group(2) or "").strip())

    def help_text(self) -> str:
        """The commands as a Markdown list for ``/help``: ``/name ARGS`` and what each does."""
        return "\n".join(f"- `{c.usage}` {c.help}" + (f" ({c.owner})" if c.owner != "scout-tui" else "")
                          for c in self)


def literal(text: str) -> str | None:
    """The prompt meant by ``//text`` (a message that starts with a slash): ``/text``; None
    when ``text`` does not start with two slashes."""
    stripped = text.lstrip()
    return stripped[1:] if stripped.startswith("//") else None
