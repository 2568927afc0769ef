"""What scout-tui learnt of a model as one server serves it: how the server's token counts compare
with the characters / 4 estimate, and a context window the server named in an overflow error.

Both are facts of the model and its server, never of a session: they are kept per (provider kind,
server URL, model) in ``calibration.json`` in the data dir, so a later run (``-c``, another
session, Ctrl+N) starts calibrated. A window set by the person (``context_window``,
``SCOUT_CONTEXT_WINDOW``, ``[models."ID"]``) is never written here.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from scout_tui.config.layers import data_dir

CALIBRATION_FILE = "calibration.json"


@dataclass(frozen=True)
class Learnt:
    """One model on one server: ``ratio`` (server tokens / estimated tokens) learnt from
    ``samples`` requests, and ``window`` (tokens) when an overflow error named it (None: never)."""

    ratio: float = 1.0
    samples: int = 0
    window: int | None = None


def server_key(kind: str, base_url: str | None, model: str) -> str:
    """The key of a model on a server: ``"kind model@url"`` (url "" for the provider's own API)."""
    return f"{kind} {model}@{(base_url or '').rstrip('/')}"


def calibration_file() -> Path:
    """``calibration.json`` in the data dir (``config.data_dir``)."""
    return data_dir() / CALIBRATION_FILE


def read_learnt(key: str, path: Path | None = None) -> Learnt:
    """What ``calibration.json`` (default ``calibration_file()``) holds for ``key``; an empty
    ``Learnt`` when nothing is known, or the file is missing or unreadable (it is only a head
    start: a run learns again from its first request)."""
    entry = _read(path or calibration_file()).get(key)
    if not isinstance(entry, dict):
        return Learnt()
    ratio, samples, window = entry.get("ratio"), entry.get("samples"), entry.get("window")
    named = window if isinstance(window, int) and not isinstance(window, bool) and window > 0 else None
    if isinstance(ratio, (int, float)) and 0.5 <= ratio <= 3.0 and isinstance(samples, int) and samples > 0:
        return Learnt(float(ratio), samples, named)
    return Learnt(1.0, 0, named)


def write_learnt(key: str, learnt: Learnt, path: Path | None = None) -> None:
    """Keep ``learnt`` for ``key``: the file is read again just before writing (another run may
    have added to it) and replaced atomically. A file that cannot be written is left as it is:
    the next run simply starts uncalibrated (never an error in the middle of a turn)."""
    path = path or calibration_file()
    table = _read(path)
    table[key] = {"ratio": round(learnt.ratio, 4), "samples": learnt.samples,
                  **({"window": learnt.window} if learnt.window else {})}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{CALIBRATION_FILE}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(dict(sorted(table.items())), out, indent=2)
                out.write("\n")
            os.replace(temp, path)
        except BaseException:
            os.unlink(temp)
            raise
    except OSError:
        pass


def remember(key: str, ratio: float, samples: int, window: int | None = None, path: Path | None = None) -> None:
    """Keep what a run learnt of ``key``: the estimator's ``ratio`` and ``samples``, and
    ``window`` when an overflow error named one (None keeps the window kept before)."""
    window = window or read_learnt(key, path).window
    write_learnt(key, Learnt(ratio, samples, window), path)


def window_text(window: int | None, source: str, ratio: float, samples: int) -> str:
    """The context window and the estimator's calibration as ``doctor`` and Ctrl+O show them:
    "8,192 tokens (server http://…/props); token estimates ×1.35, calibrated by 12 requests"."""
    told = f"{window:,} tokens ({source})" if window else "unknown until a server's overflow error names it"
    calibration = (f"token estimates ×{ratio:.2f}, calibrated by {samples:,} request{'s' if samples != 1 else ''}"
                   if samples else "token estimates not calibrated yet (characters / 4 until the first answer)")
    return f"{told}; {calibration}"


def _read(path: Path) -> dict:
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return table if isinstance(table, dict) else {}
