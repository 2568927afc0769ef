"""Input first, across threads: while a typed key waits for its frame, background threads that
can pause (the network thread's parsing, ``backends/offloop.py``) pause.

Python runs one thread at a time (the GIL). A thread that wants it back after waiting on I/O
waits up to ``sys.getswitchinterval()`` (5 ms) for the running thread to hand it over, and a
key's way to the screen crosses several such waits (the input thread, the event loop's wake-ups,
the writer thread): with the network thread parsing a fast stream (a 200 KB burst is ~0.5 s
of CPU) each costs the full interval. The UI calls ``hold`` when a key arrives and ``release``
once its frame is out; ``held`` is what a pausing thread reads. No Textual here (the engine
reads it).
"""

from __future__ import annotations

import time

HOLD_MAX = 0.05
"""Longest pause one key asks for, in seconds (its frame is normally out sooner: ``release``)."""

_until = 0.0  # time.monotonic() until which pausable threads pause; 0.0: none


def hold(seconds: float = HOLD_MAX) -> None:
    """Ask pausable threads to pause for at most ``seconds`` from now."""
    global _until
    _until = time.monotonic() + min(seconds, HOLD_MAX)


def release() -> None:
    """End a pause early (the key's frame is on its way to the terminal)."""
    global _until
    _until = 0.0


def held() -> float:
    """Seconds a pausable thread should still pause now (0.0: none)."""
    return max(0.0, _until - time.monotonic()) if _until else 0.0
