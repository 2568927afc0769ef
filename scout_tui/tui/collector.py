"""When the garbage collector's full (generation 2) collections run: not while a turn runs,
at its end instead, when the person reads rather than types.

A full collection walks every object made since start-up (``gc.freeze`` keeps it off the
older ones). During a streamed 200 KB answer CPython's default thresholds ran 22 of them,
50–120 ms each and ~1.9 s in all, each one a frame and the keystrokes behind it held back
(measured in tmux, benchmarks/latency.py). While a turn runs, full collections wait until
``TURN_GEN2`` younger (generation 1) collections have run instead of CPython's 10; the young
generations are still collected as usual. At the turn's end ``collect_and_freeze`` does one.
"""

from __future__ import annotations

import gc

TURN_GEN2 = 1_000
"""Generation-1 collections between two full collections while a turn runs."""

_saved: int | None = None  # the generation-2 threshold to restore, while deferred


def deferred() -> bool:
    """Whether full collections are deferred now (a turn runs, or an app quit during one)."""
    return _saved is not None


def defer_full_collections() -> None:
    """From now until ``collect_and_freeze``, run full collections ``TURN_GEN2`` times less
    often. Calling it again before then changes nothing."""
    global _saved
    if _saved is None:
        gen0, gen1, _saved = gc.get_threshold()
        gc.set_threshold(gen0, gen1, TURN_GEN2)


def collect_and_freeze() -> None:
    """Restore the thresholds, collect everything once, and freeze what survives (it is not
    walked again by later collections)."""
    global _saved
    if _saved is not None:
        gen0, gen1, _ = gc.get_threshold()
        gc.set_threshold(gen0, gen1, _saved)
        _saved = None
    gc.collect()
    gc.freeze()
