"""Why a request cannot reuse the previous request's prompt cache: the first block that differs,
and the reason (model switch, system prompt or tools, strategy change, summary, epoch boundary,
token budget, edited history).

A provider's prompt cache reuses a prefix only when it is byte-identical (Anthropic's and
OpenAI's prompt-caching guides), so comparing the two prompts block by block finds the miss.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from scout_tui.core.messages import blocks


@dataclass(frozen=True)
class PromptRecord:
    """What one request sent, enough to compare it with the next: the model, a fingerprint of
    the system prompt and tools, the strategies, the compaction figures and the messages."""

    model: str
    head: int
    strategies: tuple[str, ...]
    dropped: int
    truncated: int
    budget: int
    budget_from: int | None
    summary_at: int | None
    messages: list[dict] = field(repr=False)

    @classmethod
    def of(cls, request: Any, compacted: Any, compaction: Any) -> "PromptRecord":
        """From a ``backends.base.Request``, its ``compaction.Compacted`` and the summary in force."""
        head = hash(request.system) ^ hash(json.dumps(request.tools, sort_keys=True))
        return cls(request.model, head, tuple(compacted.strategies), compacted.dropped, compacted.truncated,
                   compacted.budget_cut + compacted.budget_dropped, getattr(compacted, "budget_from", None),
                   compaction.at if compaction else None, list(request.messages))


def first_difference(before: list[dict], after: list[dict]) -> tuple[int, int] | None:
    """``(message, block)`` of the first content block of ``after`` that differs from
    ``before``; None when ``after`` begins with the whole of ``before``."""
    for mi, old in enumerate(before):
        if mi >= len(after):
            return (mi, 0)
        new = after[mi]
        if old is new:
            continue
        old_blocks, new_blocks = blocks(old), blocks(new)
        if old.get("role") != new.get("role"):
            return (mi, 0)
        for bi, block in enumerate(old_blocks):
            if bi >= len(new_blocks) or new_blocks[bi] != block:
                # The newest message of ``before`` may have grown (a result appended): still a prefix.
                return (mi, bi)
        if len(new_blocks) > len(old_blocks) and mi < len(before) - 1:
            return (mi, len(old_blocks))
    return None


def explain(previous: PromptRecord | None, current: PromptRecord) -> str:
    """One sentence on why ``current`` cannot read all of ``previous`` from the cache; "" when
    it can (its prompt begins with the whole previous prompt) or there was no previous one."""
    if previous is None:
        return ""
    if previous.model != current.model:
        return f"cache miss: the model changed ({previous.model} → {current.model}); caches are per model"
    if previous.head != current.head:
        return "cache miss from the start: the system prompt or the tools changed"
    where = first_difference(previous.messages, current.messages)
    if where is None:
        return ""
    mi, bi = where
    at = f"message {mi}, block {bi}"
    if previous.summary_at != current.summary_at:
        why = "a summary compaction replaced the older messages (or one was undone)"
    elif previous.strategies != current.strategies:
        why = f"the prompt strategy changed ({', '.join(previous.strategies)} → {', '.join(current.strategies)})"
    elif (previous.dropped, previous.truncated) != (current.dropped, current.truncated):
        why = ("an epoch boundary: the strategy moved its cut "
               f"({previous.dropped} → {current.dropped} calls dropped, {previous.truncated} → {current.truncated} truncated)")
    elif previous.budget != current.budget or any(
            start is not None and mi >= start for start in (previous.budget_from, current.budget_from)):
        why = "the token budget cut tool results to fit the context window"
    else:
        why = "the history before it changed (another branch, a fork, or an edited message)"
    return f"cache miss at {at}: {why}"
