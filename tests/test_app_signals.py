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

from tests.loopback import LoopbackServer, Reply, anthropic_stream
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
