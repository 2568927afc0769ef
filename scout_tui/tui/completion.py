"""The composer's completions: slash commands from the registry, workspace paths after ``@``.

A feature the app holds (``ScoutApp.completion``) and calls from its ``Composer.Completing``
handler. The list is mounted the first time something can be completed (the first frame does
not import ``OptionList``). Commands are matched on the event loop (a few dozen names); paths in
a worker thread, as the workspace may hold 100,000 files: listed once
(``workspace_files.list_files``, again after ``FILES_FRESH`` seconds), ranked per keystroke, the
newest query winning.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from textual.dom import DOMNode
from textual.widget import Widget

from scout_tui.session.commands import Commands
from scout_tui.session.completion import Choice, Token, file_choice
from scout_tui.widgets import Composer

if TYPE_CHECKING:
    from scout_tui.session.workspace_files import WorkspaceFiles

FILES_FRESH = 10.0
"""Seconds a listing of the workspace is used before it is made again (files come and go)."""

SHOWN_CHOICES = 50


class Completion:
    """``/`` and ``@`` completion in the composer.

    Args:
        host: the node whose workers rank the paths (the app), one at a time (group
            ``complete-files``: a newer search cancels the one before).
        commands: the slash-command registry, read at each keystroke (plugins' commands join it).
        cwd: the workspace whose paths complete after ``@``.
    """

    def __init__(self, host: DOMNode, commands: Commands, cwd: Path) -> None:
        self.host = host
        self.commands = commands
        self.cwd = cwd
        self._files: tuple[float, WorkspaceFiles] | None = None

    def completing(self, composer: Composer, token: Token | None) -> None:
        """The composer's word at the cursor is ``token`` (None: nothing to complete): show its
        choices in the completion list above the composer (mounted on first use), or hide it."""
        from scout_tui.widgets.completion_list import CompletionList

        completion = composer.completion
        if token is None:
            if completion is not None:
                completion.hide()
            return
        if completion is None:
            completion = composer.completion = CompletionList(id="completion")
            parent = composer.parent
            assert isinstance(parent, Widget)  # the composer is mounted: it posted the message
            parent.mount(completion, before=composer)
        if token.kind == "command":
            completion.show(token, self.command_choices(token.query))
        else:
            self.host.run_worker(lambda: self._find_files(composer, token), thread=True, exclusive=True,
                                 group="complete-files")

    def command_choices(self, query: str) -> list[Choice]:
        """The registry's commands matching ``query`` (fuzzy, as the command palette matches),
        best first (a command named exactly so before all), registry order among equals."""
        from textual.fuzzy import Matcher

        matcher = Matcher(query)
        scored = []
        for n, command in enumerate(self.commands):
            names = (command.name, *command.aliases)
            best = max(matcher.match(name) for name in names) if query else 1.0
            best += 100 * (query in names)
            if best > 0:
                owner = f" ({command.owner})" if command.owner != "scout-tui" else ""
                scored.append((-best, n, Choice(f"/{command.name}", command.usage, command.help + owner,
                                                runs=not command.args or command.args.startswith("["))))
        return [choice for _, _, choice in sorted(scored, key=lambda s: (s[0], s[1]))]

    def _find_files(self, composer: Composer, token: Token) -> None:
        """Rank the workspace's paths for ``token`` (in a thread) and show them, unless the
        person typed on meanwhile (a newer search replaced this one)."""
        from textual.worker import get_current_worker

        from scout_tui.session.workspace_files import list_files

        files = self._files
        if files is None or time.monotonic() - files[0] > FILES_FRESH:
            files = self._files = (time.monotonic(), list_files(self.cwd))
        choices = [file_choice(path) for path in files[1].rank(token.query, SHOWN_CHOICES)]
        if not get_current_worker().is_cancelled:
            self.host.app.call_from_thread(self._show_files, composer, token, choices)

    def _show_files(self, composer: Composer, token: Token, choices: list[Choice]) -> None:
        if composer.completion is not None and composer.token == token:
            composer.completion.show(token, choices)
