"""Input first, across threads: while a typed key waits for its frame, background threads that
can pause (the network thread's parsing, ``backends/offloop.py``) pause.

Python runs one thread at a time (the GIL). A thread that wants it back after waiting on I/O
waits up to ``sys.getswitchinterval()`` (5 ms) for the running thread to hand it over, and a
key's way to the screen crosses several such waits (the input thread, the event loop's wake-ups,
the writer thread): with the network thread parsing a fast stream (a 200 KB burst is ~0.5 s
of CPU), a worker rendering markdown or one importing the engine, each costs the full interval.
The UI calls ``hold`` when a key arrives and ``release`` once its frame is out (a streaming
answer's pump too, while the event loop lays out and draws a round); ``held`` is what a
pausing thread reads. No Textual here (the engine reads it).

Handing the GIL over more often while held (``sys.setswitchinterval(0.0005)``) was measured
too, for threads that cannot pause: no gain (benchmarks/latency.py's burst, 10 runs each,
interleaved: key echo p95 56.5 ms with it, 51.7 without).
"""

from __future__ import annotations

import time

HOLD_MAX = 0.05
"""Longest pause one key asks for, in seconds (its frame is normally out sooner: ``release``)."""

_until = 0.0  # time.monotonic() until which pausable threads pause; 0.0: none


def hold(seconds: float | None = None) -> None:
    """Ask pausable threads to pause for at most ``seconds`` from now (None, or more than
    ``HOLD_MAX``: ``HOLD_MAX``)."""
    global _until
    _until = time.monotonic() + min(HOLD_MAX if seconds is None else seconds, HOLD_MAX)


def release() -> None:
    """End a pause early (the key's frame is on its way to the terminal)."""
    global _until
    _until = 0.0


def held() -> float:
    """Seconds a pausable thread should still pause now (0.0: none)."""
    return max(0.0, _until - time.monotonic()) if _until else 0.0
