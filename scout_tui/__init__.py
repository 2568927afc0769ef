"""scout-tui: a full-screen terminal coding assistant built on Textual."""

import signal

__version__ = "0.1.0"

STOP_SIGNALS = (signal.SIGHUP, signal.SIGTERM)
"""Signals that stop scout-tui as Ctrl+Q (the app) or Ctrl+C (a headless turn) does: the
terminal closed, or a process manager asked."""
