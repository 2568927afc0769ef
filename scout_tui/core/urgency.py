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

Start-up's background work is mostly imports (the engine for the first turn, markdown rendering,
plugins: ~250 ms of CPU in the first second after the first frame), which cannot pause midway.
Threads that run it mark themselves ``yielding``: each import of a module not loaded yet first
waits while a key is held. The wait hooks CPython's ``import`` audit event (PEP 578), raised
before the import machinery takes any lock, so a paused thread blocks no other thread's imports.
"""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator

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


IMPORT_POLL = 0.005
"""Seconds between looks at ``held`` while a yielding thread's import waits."""

_local = threading.local()  # .yielding: this thread's imports wait while held
_hooked = False
_hook_lock = threading.Lock()


@contextmanager
def yielding() -> Iterator[None]:
    """Within this block, each import of a module not yet loaded, by this thread, first waits
    while a key is held, for at most ``HOLD_MAX`` seconds an import (so a thread waiting for
    that module's import lock is never stuck for longer). No effect on the main thread (the
    UI's event loop never waits for its own keys). Nests; restores the thread's state on exit."""
    if threading.current_thread() is threading.main_thread():
        yield
        return
    _hook()
    before = getattr(_local, "yielding", False)
    _local.yielding = True
    try:
        yield
    finally:
        _local.yielding = before


def _hook() -> None:
    """Add the audit hook, once per process (an audit hook cannot be removed)."""
    global _hooked
    with _hook_lock:
        if not _hooked:
            sys.addaudithook(_on_audit)
            _hooked = True


def _on_audit(event: str, args: tuple) -> None:
    # Runs for every audit event of every thread: the first test is the cheap one. Never raises
    # (an exception here would fail the import).
    if event != "import" or not getattr(_local, "yielding", False):
        return
    deadline = time.monotonic() + HOLD_MAX
    while (pause := held()) and (left := deadline - time.monotonic()) > 0:
        time.sleep(min(pause, left, IMPORT_POLL))
