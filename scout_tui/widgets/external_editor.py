"""A text edited in the person's own editor: ``$VISUAL``, else ``$EDITOR``, else ``vi``, as
git chooses it (``git var GIT_EDITOR``; git runs the value through the shell, here it is split
with ``shlex``, so ``code --wait`` or ``emacs -nw`` work and no shell runs). The composer's
Ctrl+G (``Composer.action_edit_in_editor``) and ``/memory`` (``edit_path``).

The text goes to a temporary ``.md`` file (with a final newline, as a text file has and as
editors write), the editor runs on it with the terminal handed
over (``App.suspend``, Textual's documented way: the app stops reading keys and drawing, and
waits for the editor), and the file is read back. Where the app cannot be suspended (Textual's
headless driver under Pilot, Textual Web) the editor still runs, as a subprocess without the
terminal (its stdin and stdout /dev/null, its stderr read for the notice), awaited so that the
app goes on: for an ``EDITOR`` that is a script editing the file by itself, as in the tests.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from textual.app import App, SuspendNotSupported

DEFAULT_EDITOR = "vi"
"""The editor when neither ``$VISUAL`` nor ``$EDITOR`` is set (git's and POSIX's default)."""


@dataclass
class Edited:
    """What came back from the editor: ``text`` (the file's content, its trailing newlines
    removed), or None with ``problem`` saying why the text was not taken (said to the person)."""

    text: str | None
    problem: str = ""


def editor_command(environ: dict[str, str] | os._Environ[str] | None = None) -> list[str]:
    """The editor's command line, without the file: ``$VISUAL``, else ``$EDITOR`` (an empty
    value counts as unset, as in git), else ``vi``, split as a POSIX shell would (``shlex``).

    Raises:
        ValueError: the variable cannot be split (an unclosed quote), or is only blanks.
    """
    env = os.environ if environ is None else environ
    name = "VISUAL" if env.get("VISUAL") else "EDITOR" if env.get("EDITOR") else ""
    value = env[name] if name else DEFAULT_EDITOR
    try:
        words = shlex.split(value)
    except ValueError as e:
        raise ValueError(f"${name} ({value!r}) cannot be read as a command: {e}") from None
    if not words:
        raise ValueError(f"${name} holds only blanks")
    return words


async def edit_in_editor(app: App, text: str) -> Edited:
    """Let the person edit ``text`` in their editor (``editor_command``) and return the result.

    With the app suspended (the editor has the terminal), the app waits for the editor, as
    Textual's documentation shows: nothing of the app runs while it is open. Where the app
    cannot be suspended (``SuspendNotSupported``), the editor runs without the terminal and is
    awaited (``asyncio.create_subprocess_exec``). The text is kept (``Edited.text`` None, with
    the reason) when the command cannot be read or run, the editor exits non-zero, the file is
    gone, or it is not UTF-8. The temporary file is removed in any case.
    """
    handle, name = tempfile.mkstemp(prefix="scout-prompt-", suffix=".md")
    path = Path(name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:  # a draft: a few kB at most
            file.write(f"{text}\n" if text and not text.endswith("\n") else text)  # a text file's lines end with one
        if problem := await edit_path(app, path):
            return Edited(None, problem)
        shown = shlex.join(editor_command())
        try:
            edited = path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            return Edited(None, f"The edited file {path} is gone (the editor `{shown}` removed or moved it).")
        except UnicodeDecodeError as e:
            return Edited(None, f"The edited file is not UTF-8 ({e.reason} at byte {e.start}).")
        return Edited(edited.rstrip("\n"))
    finally:
        path.unlink(missing_ok=True)


async def edit_path(app: App, path: Path) -> str:
    """Open ``path`` in the person's editor (``editor_command``) as ``edit_in_editor`` does, and
    wait for it to close: "" when it exited with status 0, else the sentence saying why not (the
    command cannot be read or run, or its exit status and last line of stderr)."""
    try:
        command = editor_command()
    except ValueError as e:
        return str(e)
    shown = shlex.join(command)
    try:
        status, said = await _run(app, [*command, str(path)])
    except OSError as e:
        return f"The editor `{shown}` could not be run ({e.strerror or e}): set $VISUAL or $EDITOR."
    if status != 0:
        return f"The editor `{shown}` exited with status {status}" + (f": {said}." if said else ".")
    return ""


async def _run(app: App, argv: list[str]) -> tuple[int, str]:
    """Run the editor; its exit status and, when run without the terminal, the last line of
    its stderr ("" otherwise: the person saw it in the terminal)."""
    failed: OSError | None = None
    try:
        with app.suspend():  # Textual resumes the app only when the block ends without an exception
            try:
                return subprocess.run(argv, check=False).returncode, ""
            except OSError as e:
                failed = e
    except SuspendNotSupported:
        pass
    if failed is not None:
        raise failed
    process = await asyncio.create_subprocess_exec(
        *argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, err = await process.communicate()
    lines = err.decode("utf-8", "replace").strip().splitlines()
    return process.returncode or 0, lines[-1] if lines else ""
