"""The terminal out of line mode from the first instant of a TUI run, so that keys typed while
scout-tui starts reach the app as keys.

Textual's driver sets the terminal's mode once the app runs, ~0.2 s after the process starts
(importing Textual alone takes ~0.15 s). Until then the terminal is in the shell's line mode,
where the line discipline acts on each key as it arrives: Enter (CR) becomes a newline (ICRNL),
which the app reads as Ctrl+J; Ctrl+Q and Ctrl+S are flow control (IXON) and never reach it; keys
are echoed onto the shell's screen. ``leave_line_mode`` sets those flags as the driver will
(``LinuxDriver._patch_lflag`` and ``_patch_iflag`` in textual/drivers/linux_driver.py, Textual 8)
before anything slow runs; Ctrl+C stays a signal until the app runs, so a start-up that hangs
can still be stopped. The person's own mode is kept, for the driver to restore at exit and
while the app is suspended (``saved_mode``; ``App.suspend`` hands the terminal to another
program), and ``restore_line_mode`` puts it back should the app never start.
POSIX only: elsewhere (no ``termios``) these do nothing.
"""

from __future__ import annotations

import os
from typing import Any

try:
    import termios
except ImportError:  # Windows: Textual's driver there reads keys its own way
    termios = None  # type: ignore[assignment]  # no such module on Windows: None says so

_IFLAG, _LFLAG, _CC = 0, 3, 6  # indexes into termios.tcgetattr's list (the ``tty`` module's names)

_saved: tuple[int, list[Any]] | None = None
"""The terminal's file descriptor and its mode before ``leave_line_mode``, until restored."""


def leave_line_mode(fd: int = 0) -> bool:
    """Put the terminal on ``fd`` (default stdin) in the mode Textual's driver sets: no line
    editing (ICANON), echo, IEXTEN, flow control (IXON, IXOFF) nor CR/NL translation (ICRNL,
    INLCR, IGNCR), reads of one byte (VMIN 1). Nothing when ``fd`` is no terminal, when this
    process runs in the background (setting the mode would stop it with SIGTTOU, as Textual's
    driver avoids too), or when the mode cannot be read or set.

    Returns whether the mode was changed (then ``saved_mode`` holds the one before).
    """
    global _saved
    if termios is None or _saved is not None or not os.isatty(fd):
        return False
    try:
        if os.tcgetpgrp(fd) != os.getpgrp():
            return False
    except OSError:
        pass  # not this process's controlling terminal: no job control applies to it
    try:
        before = termios.tcgetattr(fd)
        mode = termios.tcgetattr(fd)
        mode[_LFLAG] &= ~(termios.ECHO | termios.ICANON | termios.IEXTEN)
        mode[_IFLAG] &= ~(termios.IXON | termios.IXOFF | termios.ICRNL | termios.INLCR | termios.IGNCR)
        mode[_CC][termios.VMIN] = 1
        termios.tcsetattr(fd, termios.TCSANOW, mode)
    except termios.error:
        return False
    _saved = (fd, before)
    return True


def saved_mode() -> list[Any] | None:
    """The terminal's mode from before ``leave_line_mode`` (``termios.tcgetattr``'s list), or
    None when it changed nothing."""
    return _saved[1] if _saved is not None else None


def restore_line_mode() -> None:
    """Put back the mode ``leave_line_mode`` found, once written output is out (TCSADRAIN);
    nothing when it changed nothing or was restored already."""
    global _saved
    if _saved is None:
        return
    fd, before = _saved
    _saved = None
    try:
        termios.tcsetattr(fd, termios.TCSADRAIN, before)
    except termios.error:
        pass  # the terminal is gone (closed window): nothing to restore
