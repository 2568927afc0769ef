"""Prompt compaction: what the model sees of a long conversation, computed before every call.

``prepare_prompt(messages, strategies, settings)`` runs prompt strategies (``none``,
``shorten_tools``, ``shorten_tools_epoch`` from ``strategies.py``, and any registered ones) over
the stored conversation (Anthropic content-block shape) and returns a new list; what is stored is
never changed. This module holds the strategy registry and the entry points; ``tool_calls.py``
finds and edits tool calls, ``tokens.py`` estimates sizes.

The compaction notice is a text block appended to the *first user message* of the prepared
prompt. Both APIs accept a text block there (after any ``tool_result`` blocks, which Anthropic
wants first; the OpenAI backend sends it as a user message after the tool messages); a separate
message would break role alternation, and the system prompt belongs to the agent. Its text
changes only when the counts change, which for ``shorten_tools_epoch`` happens only at epoch
boundaries, where the start of the prompt changes anyway because the cut moves.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scout_tui.core import tokens
from scout_tui.config.layers import did_you_mean
from scout_tui.core.errors import ScoutError
from scout_tui.core.messages import blocks, tool_uses
from scout_tui.engine.strategies import (
    ARGUMENT_SIZE,
    CLEARED_RESULT,
    DEFAULT_STRATEGY,
    DEFAULTS,
    RESULT_SIZE,
    Compacted,
    epoch_bounds,
    forget_memos as _forget_strategy_memos,
    none,
    resolve_settings,
    shorten_tools,
    shorten_tools_epoch,
)
from scout_tui.engine.strategies import configured_settings as _checked_settings
from scout_tui.core.tokens import IMAGE_TOKENS, estimate_tokens
from scout_tui.core.tool_calls import shorten_string

__all__ = [
    # defined here
    "NOTICE", "NOTICE_PREFIX", "Strategy", "compact", "configured_settings", "forget_memos", "prepare_prompt",
    "register_strategy", "strategy_names",
    # the vocabulary of compaction, defined beside the strategies, the tool calls and the token estimate
    "ARGUMENT_SIZE", "CLEARED_RESULT", "DEFAULT_STRATEGY", "DEFAULTS", "IMAGE_TOKENS", "RESULT_SIZE", "Compacted",
    "epoch_bounds", "estimate_tokens", "resolve_settings", "shorten_string",
    "shorten_tools", "shorten_tools_epoch",
]

# The start of the notice, so a viewer ("what the model sees") can recognise the block.
NOTICE_PREFIX = "[Context compaction]"
NOTICE = (
    NOTICE_PREFIX + " To fit the context window, older tool calls in this conversation were "
    "compacted for this request: {truncated} truncated (long arguments and results cut, marked "
    "'Truncated (N): ...'), {dropped} removed with their results. The session itself keeps "
    "everything. If an earlier tool result seems missing, it may have been removed here rather "
    "than never run; run a tool again only if you need its output."
)


# --- the strategy registry ---------------------------------------------------------------------

Strategy = Callable[..., "list[dict] | Compacted"]
# name -> (fn, whether fn takes the settings as its second argument)
_REGISTRY: dict[str, tuple[Strategy, bool]] = {}


def register_strategy(name: str, fn: Strategy) -> None:
    """Make ``fn`` available as the strategy ``name``; a later registration wins.

    ``fn(messages)`` or ``fn(messages, settings)`` (``settings``: the dict from
    ``resolve_settings``, including any extra keys of the ``[compaction]`` table) returns the new
    message list, or a ``Compacted`` whose ``marks`` say what it truncated and dropped. It must
    not mutate ``messages``. Calls missing from a plain list result count as dropped.

    Raises:
        ValueError: ``name`` is empty or holds a comma or whitespace; ``fn`` is not callable.
    """
    if not name or not isinstance(name, str) or re.search(r"[,\s]", name):
        raise ValueError(f"invalid strategy name {name!r}: use a word without commas or spaces")
    if not callable(fn):
        raise ValueError(f"strategy {name!r} must be callable, got {type(fn).__name__}")
    _REGISTRY[name] = (fn, _takes_settings(fn))


def strategy_names() -> list[str]:
    """The registered strategy names, built-ins first, in registration order."""
    return list(_REGISTRY)


def configured_settings(table: Mapping[str, Any], env: Mapping[str, str],
                        place: Callable[[str], str] = lambda key: "[compaction]") -> dict[str, Any]:
    """``strategies.configured_settings``, with each strategy name checked against the registry
    now (call it once plugins have registered theirs), so a misspelt name stops the run with its
    file and line, or ``SCOUT_STRATEGY``, instead of failing each request.

    Raises:
        ScoutError: as ``strategies.configured_settings``; "<file>:<line>: [compaction]: unknown
            prompt strategy 'shorten_tool' (known: ...); did you mean 'shorten_tools'?".
    """
    settings = _checked_settings(table, env, place)
    spec = settings["strategy"]
    for name in [n.strip() for n in spec.split(",")] if isinstance(spec, str) else spec:
        if name and name not in _REGISTRY:
            origin = "SCOUT_STRATEGY" if env.get("SCOUT_STRATEGY") else place("strategy")
            raise ScoutError(f"{origin}: unknown prompt strategy {name!r} (known: {', '.join(_REGISTRY)})"
                             f"{did_you_mean(name, list(_REGISTRY))}")
    return settings


def _takes_settings(fn: Callable) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return (
        len(positional) >= 2
        or any(p.kind == p.VAR_POSITIONAL for p in params)
        or any(p.name == "settings" for p in params)
    )


def _steps(spec: Any) -> list[tuple[str, Strategy, bool]]:
    """``(name, fn, takes_settings)`` for each strategy in ``spec`` (see ``prepare_prompt``)."""
    if callable(spec):
        return [(_callable_name(spec), spec, _takes_settings(spec))]
    items = [n.strip() for n in spec.split(",")] if isinstance(spec, str) else list(spec)
    steps = []
    for item in items:
        if callable(item):
            steps.append((_callable_name(item), item, _takes_settings(item)))
        elif isinstance(item, str):
            if not item:
                continue
            if item not in _REGISTRY:
                raise ValueError(
                    f"unknown prompt strategy {item!r}; known strategies: {', '.join(_REGISTRY)}"
                )
            steps.append((item, *_REGISTRY[item]))
        else:
            raise ValueError(f"a prompt strategy is a name or a callable, got {type(item).__name__}")
    return steps


def _callable_name(fn: Callable) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


register_strategy("none", none)
register_strategy("shorten_tools", shorten_tools)
register_strategy("shorten_tools_epoch", shorten_tools_epoch)


# --- the entry points --------------------------------------------------------------------------


def compact(
    messages: list[dict],
    strategies: str | Sequence[str | Callable] | Callable | None = None,
    settings: Mapping[str, Any] | None = None,
) -> Compacted:
    """``prepare_prompt``, with the figures for the ``prompt.compacted`` event.

    ``tokens_before`` and ``tokens_after`` are ``estimate_tokens`` of the stored and the prepared
    conversation; ``truncated``/``dropped`` count the ``marks`` (tool ids are unique within a
    conversation). Raises what ``prepare_prompt`` raises.
    """
    result = _compact(messages, strategies, settings)
    result.tokens_before = estimate_tokens(messages)
    same = len(result.messages) == len(messages) and all(a is b for a, b in zip(result.messages, messages))
    result.tokens_after = result.tokens_before if same else estimate_tokens(result.messages)
    return result


def forget_memos() -> None:
    """Forget everything compaction remembers between calls (the tool calls, keys and plans of
    recent conversations, their token estimates), so the next call costs what a first one does.
    The results never depend on it; benchmarks use it to time a cold call."""
    _forget_strategy_memos()
    tokens._TOTALS.clear()


def prepare_prompt(
    messages: list[dict],
    strategies: str | Sequence[str | Callable] | Callable | None = None,
    settings: Mapping[str, Any] | None = None,
) -> list[dict]:
    """The conversation the next model call should see; ``messages`` is never mutated.

    Args:
        messages: the stored conversation, Anthropic content-block shape.
        strategies: None (the ``strategy`` setting, default ``"shorten_tools_epoch"``), a
            comma-separated string of names applied in order, a list of names or callables,
            or one callable (``fn(messages)`` or ``fn(messages, settings)``).
        settings: the thresholds on top of ``DEFAULTS`` (None: the defaults; a run's come
            from ``configured_settings``, resolved once).

    Returns:
        A new list; messages compaction did not touch are the stored objects themselves. When
        anything was truncated or dropped, the first user message carries a notice (see the
        module docstring). Same as ``compact(...).messages`` without the token estimates.

    Raises:
        ValueError: an unknown strategy name (the message lists the known ones).
        ScoutError: an invalid setting (see ``resolve_settings``).
    """
    return _compact(messages, strategies, settings).messages


def _compact(messages: list[dict], strategies: Any, settings: Mapping[str, Any] | None) -> Compacted:
    s = resolve_settings(settings)
    steps = _steps(s["strategy"] if strategies is None else strategies)
    current = messages
    names: list[str] = []
    marks: dict[str, str] = {}
    stable: int | None = None  # append-only until a step says otherwise
    for name, fn, takes in steps:
        result = fn(current, s) if takes else fn(current)
        if isinstance(result, Compacted):
            if not marks:
                marks = dict(result.marks)
            else:
                for tid, mark in result.marks.items():
                    if marks.get(tid) != "dropped":
                        marks[tid] = mark
            # A step's stable part counts in its own output; after an earlier step that was
            # not append-only, index spaces differ, so nothing is known to be stable.
            stable = result.stable if stable is None else (0 if result.stable is not None else stable)
            result = result.messages
        elif isinstance(result, list):
            before = {u.get("id") for m in current for u in tool_uses(m)}
            after = {u.get("id") for m in result for u in tool_uses(m)}
            for lost in before - after:
                marks[lost] = "dropped"  # type: ignore[index]  # a call sent without an id is marked under None, as it always was
            stable = 0  # a plain list says nothing about what stays fixed
        else:
            raise TypeError(f"prompt strategy {name!r} returned {type(result).__name__}, not a list")
        current = result
        names.append(name)
    if current is messages:
        current = list(messages)
    truncated = [*marks.values()].count("truncated")
    dropped = len(marks) - truncated
    if marks:
        current = _with_notice(current, truncated, dropped, ends_with_user=bool(messages) and messages[-1].get("role") == "user")
    count = len(current) if stable is None else min(stable, len(current))
    return Compacted(current, names, truncated, dropped, marks=marks, stable=count)


def _with_notice(messages: list[dict], truncated: int, dropped: int, ends_with_user: bool) -> list[dict]:
    """``messages`` with the compaction notice appended to the first user message.

    When the stored conversation ended with a user message but compaction removed it (only
    possible when every recent call was dropped), the notice becomes that last user message, so
    the prompt never ends with an assistant turn the model would continue.
    """
    notice = {"type": "text", "text": NOTICE.format(truncated=truncated, dropped=dropped)}
    out = list(messages)
    if ends_with_user and (not out or out[-1].get("role") != "user"):
        out.append({"role": "user", "content": [notice]})
        return out
    for i, message in enumerate(out):
        if message.get("role") == "user":
            out[i] = {**message, "content": blocks(message) + [notice]}
            return out
    out.insert(0, {"role": "user", "content": [notice]})
    return out
