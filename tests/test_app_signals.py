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
import time
import uuid
from pathlib import Path

import pytest

from tests.loopback import LoopbackServer, Reply, anthropic_stream, split
from tests.process_helpers import processes_with


def until(predicate, what: str, seconds: float = 60.0) -> None:
    """Poll ``predicate`` until true; ``seconds`` is only a hang guard."""
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM])
def test_a_signal_during_a_tool_call_kills_it_and_ends_the_app(tmp_home: Path, workdir: Path, signum):
    started = workdir / "started"
    token = f"600.{uuid.uuid4().int % 10**9}"  # found by command line: a sandbox's own pids differ from the host's
    call = ("toolu_1", "bash", [json.dumps({"command": f"sleep {token} & touch {started}; wait"})])
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    screen = bytearray()

    def drain() -> None:  # the app must never block on a full terminal
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            screen.extend(chunk)

    with LoopbackServer([Reply(anthropic_stream(["Running it."], call))]) as server:
        proc = subprocess.Popen([sys.executable, "-m", "scout_tui", "--base-url", server.url, "--api-key", "sk-test",
                                 "--permission-mode", "yolo"], cwd=workdir, stdin=slave, stdout=slave, stderr=slave,
                                env={**os.environ, "TERM": "xterm-256color"}, start_new_session=True)
        os.close(slave)
        threading.Thread(target=drain, daemon=True).start()
        try:
            until(lambda: b"Ask scout" in screen, "the first frame")
            os.write(master, b"run it\r")
            until(lambda: started.exists() and processes_with(token), "the tool's child to start")
            proc.send_signal(signum)
            proc.wait(timeout=60)
        finally:
            proc.kill()
            os.close(master)
    until(lambda: processes_with(token) == [], "the tool's child to be killed", seconds=10)
    assert proc.returncode == 128 + signum


def test_closing_the_terminal_while_an_answer_streams_ends_the_app(tmp_home: Path, workdir: Path):
    # tmux's kill-session: the terminal goes away (writes fail with EIO), then SIGHUP. Textual's
    # writer thread died on the EIO and the app then blocked for ever on its full queue.
    pieces = [f"line {i} of a long answer\n\n" for i in range(4000)]
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    screen = bytearray()
    closed = threading.Event()

    def drain() -> None:
        while not closed.is_set():
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            screen.extend(chunk)

    reply = Reply(split(anthropic_stream(pieces), 300), delay=0.01)  # about 20 s of streaming
    with LoopbackServer([reply]) as server:
        proc = subprocess.Popen([sys.executable, "-m", "scout_tui", "--base-url", server.url, "--api-key", "sk-test"],
                                cwd=workdir, stdin=slave, stdout=slave, stderr=slave,
                                env={**os.environ, "TERM": "xterm-256color"}, start_new_session=True)
        os.close(slave)
        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        try:
            until(lambda: b"Ask scout" in screen, "the first frame")
            os.write(master, b"go\r")
            until(lambda: b"line 20 of" in screen, "the answer to stream")
            closed.set()
            os.close(master)  # the terminal is gone
            master = -1
            # Textual's writer thread dies on the first EIO and its queue fills: the main thread
            # blocks on a lock (a futex), not in its event loop's poll. Then the signal arrives.
            until(lambda: "futex" in Path(f"/proc/{proc.pid}/wchan").read_text(), "the app to block on the dead terminal")
            proc.send_signal(signal.SIGHUP)
            proc.wait(timeout=60)  # a hang guard: it ends well within the app's own stop grace
        finally:
            proc.kill()
            if master != -1:
                os.close(master)
    assert proc.returncode == 128 + signal.SIGHUP
