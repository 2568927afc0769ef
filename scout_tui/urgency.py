"""Input first, across threads: while a typed key waits for its frame, background threads that
can pause (the network thread's parsing, ``backends/offloop.py``) pause, and Python hands its
lock between threads ten times as often.

Python runs one thread at a time (the GIL). A thread that wants it back after waiting on I/O
waits up to ``sys.getswitchinterval()`` (5 ms) for the running thread to hand it over, and a
key's way to the screen crosses several such waits (the input thread, the event loop's wake-ups,
the writer thread): with the network thread parsing a fast stream (a 200 KB burst is ~0.5 s
of CPU), a worker rendering markdown or one importing the engine, each costs the full interval.
The UI calls ``hold`` when a key arrives and ``release`` once its frame is out; ``held`` is what a
pausing thread reads. Threads that cannot pause (a worker inside one call into Rich, an import)
still hand the GIL over within ``HOLD_SWITCH`` while held. No Textual here (the engine reads it).
"""

from __future__ import annotations

import sys
import time

HOLD_MAX = 0.05
"""Longest pause one key asks for, in seconds (its frame is normally out sooner: ``release``)."""

HOLD_SWITCH = 0.0005
"""``sys.setswitchinterval`` while held, in seconds (a tenth of CPython's default 5 ms): measured
with benchmarks/latency.py, key echo p50 during a 200 KB burst 37 -> 17 ms."""

_until = 0.0  # time.monotonic() until which pausable threads pause; 0.0: none
_SWITCH = sys.getswitchinterval()  # the interval outside holds (read once: a hold on the input
# thread racing a release on the event loop must not take the held interval for the normal one)


def hold(seconds: float | None = None) -> None:
    """Ask pausable threads to pause for at most ``seconds`` from now (None, or more than
    ``HOLD_MAX``: ``HOLD_MAX``), and hand the GIL over every ``HOLD_SWITCH`` until then."""
    global _until
    _until = time.monotonic() + min(HOLD_MAX if seconds is None else seconds, HOLD_MAX)
    sys.setswitchinterval(min(_SWITCH, HOLD_SWITCH))


def release() -> None:
    """End a pause early (the key's frame is on its way to the terminal)."""
    global _until
    if _until:
        _until = 0.0
        sys.setswitchinterval(_SWITCH)


def held() -> float:
    """Seconds a pausable thread should still pause now (0.0: none; a hold that ran out ends here)."""
    left = max(0.0, _until - time.monotonic()) if _until else 0.0
    if _until and not left:
        release()
    return left

