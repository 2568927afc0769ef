"""A terminal the latency benchmark can read and type into: one detached tmux pane, driven
through a single tmux control-mode client (no process spawned per screen read or keystroke).

Control mode (``tmux -C``, https://github.com/tmux/tmux/wiki/Control-Mode) answers each command
between ``%begin`` and ``%end``/``%error`` lines; other ``%`` lines are notifications, skipped.
The client attaches with ``-f no-output`` so the pane's output is not copied to it.
"""

from __future__ import annotations

import os
import shlex
import signal
import statistics
import subprocess
import time
from typing import Callable


class TmuxError(RuntimeError):
    """A tmux command failed; the message holds the command and what tmux said."""


class TmuxScreen:
    """One tmux server (its own socket ``-L name``) holding one session of one pane.

    ``run(argv, env, cwd)`` starts a program in the pane; ``lines()`` is what the pane shows
    now (a list of rows, trailing blanks stripped); ``keys``/``text`` type into it;
    ``resize(cols, rows)`` changes the terminal size the program sees (SIGWINCH).
    Use as a context manager: the server is killed on exit.
    """

    def __init__(self, name: str, cols: int = 120, rows: int = 40) -> None:
        self.name = name
        self.target = f"{name}:0.0"
        tmux = ["tmux", "-L", name, "-f", "/dev/null"]
        subprocess.run([*tmux, "new-session", "-d", "-s", name, "-x", str(cols), "-y", str(rows), "sleep 100000"], check=True)
        for option in (["set", "-g", "window-size", "manual"], ["set", "-g", "remain-on-exit", "on"],
                       ["set", "-g", "default-terminal", "tmux-256color"], ["set", "-g", "status", "off"]):
            subprocess.run([*tmux, *option], check=True)
        self._client = subprocess.Popen([*tmux, "-C", "attach-session", "-t", name, "-f", "no-output"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.command("resize-window", "-t", name, "-x", str(cols), "-y", str(rows))

    def __enter__(self) -> TmuxScreen:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill the program in the pane, then the tmux server."""
        self.stop()
        socket = self.command("display-message", "-p", "#{socket_path}")
        subprocess.run(["tmux", "-L", self.name, "kill-server"], capture_output=True)
        for path in socket:  # tmux leaves the socket file behind
            if os.path.exists(path):
                os.unlink(path)
        if self._client.poll() is None:
            self._client.kill()
        self._client.wait()

    # -- commands -------------------------------------------------------------------------

    def command(self, *argv: str) -> list[str]:
        """Run one tmux command through the control client; returns its output lines.

        Raises:
            TmuxError: tmux answered ``%error`` or the client went away.
            ValueError: an argument holds a newline (the protocol is one command a line).
        """
        if any("\n" in a for a in argv):
            raise ValueError(f"a newline in tmux command {argv!r}")
        assert self._client.stdin is not None and self._client.stdout is not None
        self._client.stdin.write((" ".join(shlex.quote(a) for a in argv) + "\n").encode())
        out: list[str] = []
        inside = False
        while True:
            raw = self._client.stdout.readline()
            if not raw:
                raise TmuxError(f"tmux control client ended during {argv!r}")
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if not inside:
                # The flags field is 1 for commands this client sent; notifications are skipped.
                inside = line.startswith("%begin ") and line.endswith(" 1")
                continue
            if line.startswith(("%end ", "%error ")) and line.endswith(" 1"):
                if line.startswith("%error"):
                    raise TmuxError(f"tmux {' '.join(argv)}: {' '.join(out)}")
                return out
            out.append(line)

    def stop(self) -> None:
        """SIGKILL the program in the pane: the SIGHUP of ``respawn-pane -k`` and
        ``kill-server`` does not always end scout-tui (some were left running, orphaned)."""
        for pid in self.command("display-message", "-p", "-t", self.target, "#{pane_pid}"):
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass  # already gone, or the pane is dead (no pid)

    def run(self, argv: list[str], env: dict[str, str], cwd: str) -> None:
        """Replace whatever runs in the pane by ``argv`` with ``env`` added, in ``cwd``."""
        self.stop()
        shell = " ".join(shlex.quote(a) for a in ["env", *(f"{k}={v}" for k, v in env.items()), *argv])
        self.command("respawn-pane", "-k", "-c", cwd, "-t", self.target, shell)

    def lines(self) -> list[str]:
        """The rows the pane shows now (the visible screen, not the scroll-back)."""
        return self.command("capture-pane", "-p", "-t", self.target)

    def text(self, chars: str) -> None:
        """Type ``chars`` literally (no key names)."""
        self.command("send-keys", "-t", self.target, "-l", chars)

    def keys(self, *names: str) -> None:
        """Press keys by tmux name: ``Enter``, ``C-u``, ``Escape``."""
        self.command("send-keys", "-t", self.target, *names)

    def resize(self, cols: int, rows: int) -> None:
        """Give the pane a new size; the program gets SIGWINCH."""
        self.command("resize-window", "-t", self.name, "-x", str(cols), "-y", str(rows))

    # -- waiting by polling ---------------------------------------------------------------

    def wait_for(self, found: Callable[[list[str]], bool], timeout: float, poll: float) -> float | None:
        """Poll the screen every ``poll`` s until ``found(lines)``; returns the perf_counter
        time of the first capture that satisfied it (the middle of its round trip), or None
        after ``timeout`` s."""
        deadline = time.perf_counter() + timeout
        while True:
            start = time.perf_counter()
            lines = self.lines()
            taken = (start + time.perf_counter()) / 2  # the screen was read in between
            if found(lines):
                return taken
            if taken > deadline:
                return None
            time.sleep(poll)

    def capture_cost(self, samples: int = 200) -> float:
        """Median seconds one screen capture takes (the floor of the polling resolution)."""
        times = []
        for _ in range(samples):
            start = time.perf_counter()
            self.lines()
            times.append(time.perf_counter() - start)
        return statistics.median(times)
