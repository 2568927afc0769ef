"""The last resort after a stop signal (Ctrl+C, SIGTERM, SIGHUP): if the process has not ended
``STOP_GRACE`` seconds later, it exits there and then, so a turn stuck while it closes can
never keep a stopped scout-tui alive. The store has every event written by then (each one is
its own transaction), and an open turn is repaired when the session is next loaded."""

from __future__ import annotations

import os
import threading
import time

STOP_GRACE = 10.0
"""Seconds a stopped process has to end on its own before it exits regardless."""


def start_stop_guard(code: int, grace: float = STOP_GRACE) -> None:
    """Start a daemon thread that, ``grace`` seconds from now, says so on stderr and ends the
    process with exit status ``code`` (``os._exit``: no cleanup runs, none is waited for)."""

    def exit_later() -> None:
        time.sleep(grace)
        try:
            os.write(2, f"scout-tui: still running {grace:g} s after the stop signal; exiting\n".encode())
        finally:
            os._exit(code)

    threading.Thread(target=exit_later, daemon=True, name="stop-guard").start()
