"""The ``[compaction]`` table of scout.toml: the prompt strategy's name and its numeric settings,
their defaults and smallest allowed values (``engine/strategies.py`` applies them; configuration
checks a file's keys against ``SETTING_NAMES`` without importing the strategies)."""

from __future__ import annotations

from typing import Any

DEFAULT_STRATEGY = "shorten_tools_epoch"

# Every numeric setting and its smallest allowed value. ``max_tool_outputs`` defaults to
# ``max_tool_calls`` (so it has no entry in DEFAULTS).
MINIMUM: dict[str, int] = {
    "full_tool_outputs": 0,
    "max_tool_calls": 0,
    "max_tool_outputs": 0,
    "max_tool_chars": 0,
    "epoch_tool_call_threshold": 0,
    "epoch_full_tool_calls": 0,
    "epoch_compacted_tool_calls": 0,
    "epoch_size": 1,
}
DEFAULTS: dict[str, Any] = {
    "strategy": DEFAULT_STRATEGY,
    "full_tool_outputs": 10,
    "max_tool_calls": 40,
    "max_tool_chars": 100_000,
    "epoch_tool_call_threshold": 50,
    "epoch_full_tool_calls": 10,
    "epoch_compacted_tool_calls": 40,
    "epoch_size": 10,
}
SETTING_NAMES: tuple[str, ...] = ("strategy", *MINIMUM)
"""Every key of the ``[compaction]`` table scout-tui itself reads (a plugin strategy may read more)."""
