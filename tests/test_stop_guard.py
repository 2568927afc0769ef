"""The stop guard: a process that does not end after a stop signal exits regardless."""

from __future__ import annotations

import subprocess
import sys

STUCK = """
import threading
from scout_tui.core.stop_guard import start_stop_guard
start_stop_guard(130, grace=0.2)
threading.Event().wait()  # a turn that never closes
"""


def test_a_process_stuck_after_a_stop_signal_exits_with_its_status_and_says_why():
    done = subprocess.run([sys.executable, "-c", STUCK], capture_output=True, text=True, timeout=60)
    assert done.returncode == 130
    assert "still running 0.2 s after the stop signal; exiting" in done.stderr
