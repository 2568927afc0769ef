"""The composer's completions: slash commands from the registry, workspace paths after ``@``.

A mixin of ``ScoutApp`` (app.py). The list is mounted the first time something can be
completed (the first frame does not import ``OptionList``). Commands are matched on the event
loop (a few dozen names); paths in a worker thread, as the workspace may hold 100,000 files:
listed once (``workspace_files.list_files``, again after ``FILES_FRESH`` seconds), ranked per
keystroke, the newest query winning.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from textual import work

from scout_tui.session.completion import Choice, Token, file_choice
from scout_tui.widgets import Composer

if TYPE_CHECKING:
    from scout_tui.session.workspace_files import WorkspaceFiles

FILES_FRESH = 10.0
"""Seconds a listing of the workspace is used before it is made again (files come and go)."""

SHOWN_CHOICES = 50


class CompletionMixin:
    """``/`` and ``@`` completion for ``ScoutApp``."""

    _files: tuple[float, WorkspaceFiles] | None = None

    def on_composer_completing(self, message: Composer.Completing) -> None:
        from scout_tui.widgets.completion_list import CompletionList

        composer = message.control if isinstance(message.control, Composer) else self.query_one(Composer)
        completion = composer.completion
        token = message.token
        if token is None:
            if completion is not None:
                completion.hide()
            return
        if completion is None:
            completion = composer.completion = CompletionList(id="completion")
            composer.parent.mount(completion, before=composer)
        if token.kind == "command":
            completion.show(token, self.command_choices(token.query))
        else:
            self.find_files(token)

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

    @work(thread=True, exclusive=True, group="complete-files")
    def find_files(self, token: Token) -> None:
        """Rank the workspace's paths for ``token`` (in a thread) and show them, unless the
        person typed on meanwhile (a newer search replaced this one)."""
        from textual.worker import get_current_worker

        from scout_tui.session.workspace_files import list_files

        files = self._files
        if files is None or time.monotonic() - files[0] > FILES_FRESH:
            files = self._files = (time.monotonic(), list_files(self.cwd))
        choices = [file_choice(path) for path in files[1].rank(token.query, SHOWN_CHOICES)]
        if not get_current_worker().is_cancelled:
            self.call_from_thread(self._show_files, token, choices)

    def _show_files(self, token: Token, choices: list[Choice]) -> None:
        composer = self.query_one(Composer)
        if composer.completion is not None and composer.token == token:
            composer.completion.show(token, choices)
