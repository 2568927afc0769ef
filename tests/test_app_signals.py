"""The real app in a pseudo-terminal: closing the terminal (SIGHUP) or SIGTERM during a tool
call kills the tool's process group and ends the app, as Ctrl+Q does."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import threading
import uuid
from pathlib import Path

import pytest

from tests.conftest import until
from tests.loopback import LoopbackServer, Reply, anthropic_stream, split
from tests.process_helpers import processes_with


class AppInPty:
    """``python -m scout_tui ARGS`` in ``cwd`` on a 120x40 pseudo-terminal, its own session; what
    it draws is read all the time into ``screen`` (the app must never block on a full terminal).
    ``close_terminal()`` closes the terminal's side as a terminal emulator quitting does."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.screen = bytearray()
        self.proc = subprocess.Popen([sys.executable, "-m", "scout_tui", *args], cwd=cwd, stdin=slave, stdout=slave,
                                     stderr=slave, env={**os.environ, "TERM": "xterm-256color"}, start_new_session=True)
        os.close(slave)
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # closed
                return
            if not chunk:
                return
            self.screen.extend(chunk)

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close_terminal(self) -> None:
        if self.master != -1:
            os.close(self.master)
            self.master = -1

    def __enter__(self) -> "AppInPty":
        until(lambda: b"Ask scout" in self.screen, what="the first frame")
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait()
        self.close_terminal()


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM])
def test_a_signal_during_a_tool_call_kills_it_and_ends_the_app(tmp_home: Path, workdir: Path, signum):
    started = workdir / "started"
    token = f"600.{uuid.uuid4().int % 10**9}"  # found by command line: a sandbox's own pids differ from the host's
    call = ("toolu_1", "bash", [json.dumps({"command": f"sleep {token} & touch {started}; wait"})])
    with LoopbackServer([Reply(anthropic_stream(["Running it."], call))]) as server:
        with AppInPty(["--base-url", server.url, "--api-key", "sk-test", "--permission-mode", "yolo"], workdir) as app:
            app.type("run it\r")
            until(lambda: started.exists() and processes_with(token), what="the tool's child to start")
            app.proc.send_signal(signum)
            app.proc.wait(timeout=60)  # a hang guard
    until(lambda: processes_with(token) == [], what="the tool's child to be killed")
    assert app.proc.returncode == 128 + signum


def test_closing_the_terminal_while_an_answer_streams_ends_the_app(tmp_home: Path, workdir: Path):
    # tmux's kill-session: the terminal goes away (writes fail with EIO), then SIGHUP. Textual's
    # writer thread died on the EIO and the app then blocked for ever on its full queue.
    pieces = [f"line {i} of a long answer\n\n" for i in range(4000)]
    reply = Reply(split(anthropic_stream(pieces), 300), delay=0.01)  # about 20 s of streaming
    with LoopbackServer([reply]) as server:
        with AppInPty(["--base-url", server.url, "--api-key", "sk-test"], workdir) as app:
            app.type("go\r")
            # Rounds show what arrived since the last: which lines are drawn depends on the pace.
            until(lambda: b"of a long answer" in app.screen, what="the answer to stream")
            app.close_terminal()
            # Textual's writer thread dies on the first EIO and its queue fills: the main thread
            # blocks on a lock (a futex), not in its event loop's poll. Then the signal arrives.
            until(lambda: "futex" in Path(f"/proc/{app.proc.pid}/wchan").read_text(),
                  what="the app to block on the dead terminal")
            app.proc.send_signal(signal.SIGHUP)
            app.proc.wait(timeout=60)  # a hang guard: it ends well within the app's own stop grace
    assert app.proc.returncode == 128 + signal.SIGHUP
