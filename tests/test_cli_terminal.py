"""The full-screen app started where there is no terminal (a script, a service, a pipe) says so
and ends, instead of spinning on an empty stdin."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from headless_helpers import env, repo  # noqa: F401  (fixtures)


def test_the_app_without_a_terminal_on_stdin_says_how_to_run_a_script_and_ends(env, repo):
    done = subprocess.run([sys.executable, "-m", "scout_tui"], cwd=repo, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "needs a terminal to read keys from, and stdin is not one" in done.stderr
    assert 'scout-tui -p "PROMPT"' in done.stderr
    assert "\x1b[" not in done.stdout + done.stderr  # it never drew: no screen switched, no mouse mode left on


def test_the_app_with_stderr_redirected_says_it_draws_there(env, repo: Path):
    leader, follower = pty.openpty()  # a terminal for stdin, as in `scout-tui 2>log`
    try:
        done = subprocess.run([sys.executable, "-m", "scout_tui"], cwd=repo, env=env, stdin=follower,
                              capture_output=True, text=True, timeout=60)
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 1
    assert "stderr is not a terminal" in done.stderr
