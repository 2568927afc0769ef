"""``/init`` and ``/memory`` in the TUI: the model asked to write AGENTS.md (a turn like any, so
its write is asked first), and the nearest memory file opened in the person's editor
(``session/memory.py`` finds the files; ``widgets/external_editor.py`` runs the editor)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scout_tui.tui.app import ScoutApp


def init_command(app: ScoutApp, notes: str) -> None:
    """``/init [NOTES]``: send ``memory.init_prompt`` as a prompt typed in the composer would go
    (held for after the turn while one runs); its write goes through the permission policy."""
    from scout_tui.session.memory import init_prompt

    text = init_prompt(app.cwd, notes)
    if app.busy:
        app.queue.hold(text, steer=False)
    else:
        app.turns.run_turn(text)


def memory_command(app: ScoutApp, which: str) -> None:
    """``/memory [user]``: open the nearest memory file (``memory.nearest_file``: the deepest
    project file loaded, else ``AGENTS.md`` here, which the editor creates), or with ``user`` the
    person's own, in ``$VISUAL``/``$EDITOR`` with the TUI suspended; the system prompt takes the
    new text at once (``Session.refresh_memory``), and a notice says what happened."""
    if which.strip() not in ("", "user"):
        app.chat.add_notice("Use `/memory` (the nearest memory file) or `/memory user` (your own, "
                            "~/.agents/AGENTS.md).", "error")
        return
    app.run_worker(_edit_memory(app, which.strip() == "user"), name="memory", group="memory", exclusive=True)


async def _edit_memory(app: ScoutApp, user: bool) -> None:
    from scout_tui.session.memory import load_memory, nearest_file
    from scout_tui.widgets.external_editor import edit_path
    from scout_tui.widgets.welcome import shown_path

    memory = await asyncio.to_thread(load_memory, app.cwd)
    path = nearest_file(memory, user=user)
    await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)  # ~/.agents may not exist yet
    shown = shown_path(path, app.cwd)
    if problem := await edit_path(app, path):
        app.chat.add_notice(f"{problem} {shown} is as the editor left it.", "error")
    elif not await asyncio.to_thread(path.is_file):
        app.chat.add_notice(f"{shown} was not written: no memory file there.")
    else:
        await app.session.refresh_memory()
        app.chat.add_notice(f"Memory file {shown} saved: the next request carries it.")
