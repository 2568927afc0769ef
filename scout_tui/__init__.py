"""scout-tui: a full-screen terminal coding assistant built on Textual."""

import signal

__version__ = "0.1.0"

STOP_SIGNALS = (signal.SIGHUP, signal.SIGTERM)
"""Signals that stop scout-tui as Ctrl+Q (the app) or Ctrl+C (a headless turn) does: the
terminal closed, or a process manager asked."""


def stop_signals() -> tuple[signal.Signals, ...]:
    """``STOP_SIGNALS`` less those this process was started ignoring: ``nohup scout-tui -p …``
    ignores SIGHUP so that the run outlives its terminal, and it does (as Python leaves an
    ignored SIGINT ignored). Call before installing a handler: it reads the current disposition."""
    return tuple(s for s in STOP_SIGNALS if signal.getsignal(s) != signal.SIG_IGN)
