"""Keys typed while scout-tui starts reach the app as keys: the terminal leaves line mode before
the slow part of start-up (issue 28, item 11: Enter typed in the first ~0.2 s came as a newline,
Ctrl+Q was eaten as flow control), and gets the person's own mode back at exit.

The app runs for real in a pseudo-terminal that is its controlling terminal. The slow part of
start-up is held where it begins, at the first import of Textual, until the test has looked at
the terminal's mode and typed: no timing, the order is fixed."""

from __future__ import annotations

import errno
import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import threading
import tty
from pathlib import Path

import pytest

from tests.conftest import until
from tests.headless_helpers import env, repo  # noqa: F401 — fixtures

HELD_AT_TEXTUAL = r"""
import os, sys

class HoldTextual:
    # The first import of Textual (the slow part of start-up) waits until the test closes the FIFO.
    def find_spec(self, name, path=None, target=None):
        if name == "textual":
            sys.meta_path.remove(self)
            with open(os.environ["HOLD_FIFO"], "rb") as fifo:
                fifo.read()
        return None

sys.meta_path.insert(0, HoldTextual())
from scout_tui.cli import main
sys.exit(main([]))
"""


class Terminal:
    """A pseudo-terminal of 100x30 with a process on it as its controlling terminal; what the
    process writes is read (and kept) on a thread, so it never blocks on a full terminal."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.master, self.slave = pty.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        self.mode_before = termios.tcgetattr(self.slave)
        self.output = bytearray()
        self.process = subprocess.Popen(args, stdin=self.slave, stdout=self.slave, stderr=self.slave, cwd=cwd,
                                        env={**env, "TERM": "xterm-256color"}, start_new_session=True,
                                        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.output += data

    def mode(self) -> list:
        return termios.tcgetattr(self.slave)

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=60)
        os.close(self.slave)
        os.close(self.master)
        self.reader.join(timeout=60)


def open_for_writing(fifo: Path, process: subprocess.Popen) -> int:
    """The FIFO's write end, once the process has opened it to read (it is then held there)."""
    opened: list[int] = []

    def reader_there() -> bool:
        assert process.poll() is None, f"scout-tui ended ({process.returncode}) before importing Textual"
        try:
            opened.append(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError as e:
            if e.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
        return bool(opened)

    until(reader_there, what="scout-tui reaches its first import of Textual")
    return opened[0]


@pytest.mark.parametrize("keys", [b"\x11", b"/quit\r"], ids=["ctrl+q", "enter"])
def test_keys_typed_before_textual_is_imported_reach_the_app_as_keys(repo, env, tmp_path, keys):
    fifo = tmp_path / "hold"
    os.mkfifo(fifo)
    terminal = Terminal([sys.executable, "-c", HELD_AT_TEXTUAL], repo, {**env, "HOLD_FIFO": str(fifo)})
    try:
        hold = open_for_writing(fifo, terminal.process)
        mode = terminal.mode()
        assert not mode[tty.LFLAG] & (termios.ICANON | termios.ECHO)  # no line editing, no echo
        assert not mode[tty.IFLAG] & (termios.IXON | termios.ICRNL)  # Ctrl+Q a key, Enter a CR
        terminal.type(keys)  # taken in now, by the mode now
        os.close(hold)  # Textual's import goes on; the app starts, reads the keys and quits
        until(lambda: terminal.process.poll() is not None, what="the app quits on the keys typed")
        assert terminal.process.returncode == 0, terminal.output.decode(errors="replace")[-2000:]
        assert terminal.mode() == terminal.mode_before  # the person's mode back
    finally:
        terminal.close()


def test_a_start_that_fails_before_the_app_runs_gives_the_terminal_its_mode_back(repo, env):
    (repo / "scout.toml").write_text("provider = \n")  # malformed: an error before any screen
    terminal = Terminal([sys.executable, "-m", "scout_tui"], repo, env)
    try:
        until(lambda: terminal.process.poll() is not None, what="scout-tui stops at the bad config")
        assert terminal.process.returncode == 1
        assert terminal.mode() == terminal.mode_before
    finally:
        terminal.close()


SUSPENDED = r"""
import termios
from textual.app import App
from scout_tui.tui import line_mode
from scout_tui.tui.input_first import noting_input

before = termios.tcgetattr(0)
assert line_mode.leave_line_mode()

class Suspends(App):
    def get_driver_class(self):
        return noting_input(super().get_driver_class())

    def on_mount(self):
        self.call_after_refresh(self.hand_over)

    def hand_over(self):
        with self.suspend():  # as for an editor run in the terminal
            self.seen = termios.tcgetattr(0)
        self.exit()

app = Suspends()
app.run()
print("person's mode while suspended:", app.seen == before)
"""


def test_a_suspended_app_hands_over_the_terminal_in_the_person_s_mode(repo, env):
    # Textual restores the mode it found when the app started; the CLI had left line mode by then
    terminal = Terminal([sys.executable, "-c", SUSPENDED], repo, env)
    try:
        until(lambda: terminal.process.poll() is not None, what="the app exits after its suspension")
        assert b"person's mode while suspended: True" in terminal.output, terminal.output.decode(errors="replace")
    finally:
        terminal.close()
