"""Opening a file in the person's editor (``$VISUAL``, else ``$EDITOR``, else ``vi``) with the TUI
suspended, for ``/memory``. One function, ``edit_file``."""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from scout_tui.core.errors import ScoutError

if TYPE_CHECKING:
    from textual.app import App


def editor_command(environ: dict[str, str] | None = None) -> list[str]:
    """The person's editor as an argument list: ``$VISUAL``, else ``$EDITOR``, else ``vi``, split
    as a shell would (``shlex``: ``code --wait`` is two words), as git picks and runs its editor.

    Raises:
        ScoutError: the variable cannot be split (an unclosed quote), naming it.
    """
    environ = dict(os.environ) if environ is None else environ
    for name in ("VISUAL", "EDITOR"):
        if value := environ.get(name, "").strip():
            try:
                return shlex.split(value)
            except ValueError as e:
                raise ScoutError(f"${name} ({value!r}) cannot be read as a command: {e}") from None
    return ["vi"]


async def edit_file(app: App, path: Path) -> bool:
    """Open ``path`` in the person's editor (``editor_command``) and wait for it to close.

    With the TUI suspended (``App.suspend``, Textual's documented way: the editor has the
    terminal; the app's event loop waits for the editor, as the app is not shown meanwhile).
    Where the app cannot suspend (Pilot's headless driver, Textual Web) the editor runs without
    the terminal (stdin and output to /dev/null), awaited as a subprocess: a non-interactive
    ``EDITOR`` script works, a terminal editor would see no terminal.

    Returns:
        Whether the editor exited with status 0.

    Raises:
        ScoutError: no editor could be started, naming the command and the variable to set.
    """
    from textual.app import SuspendNotSupported

    command = [*editor_command(), str(path)]
    try:
        try:
            with app.suspend():
                return subprocess.run(command).returncode == 0
        except SuspendNotSupported:
            process = await asyncio.create_subprocess_exec(*command, stdin=subprocess.DEVNULL,
                                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return await process.wait() == 0
    except OSError as e:
        raise ScoutError(f"cannot start the editor {command[0]!r} ({e.strerror or e}): set $VISUAL or $EDITOR "
                         "to one that is installed") from None
