"""Where a Messages request carries its ``cache_control`` breakpoints (Anthropic prompt caching).

Rules, from Anthropic's "Prompt caching" guide (docs.anthropic.com/en/docs/build-with-claude/
prompt-caching): the prompt is cached as a prefix in the order tools → system → messages; a
breakpoint (``"cache_control": {"type": "ephemeral"}`` on a block) writes the prefix up to it,
and reads an earlier entry found at it or at up to 20 block boundaries before it; at most 4
breakpoints per request; a prefix shorter than the model's minimum is not cached; "1h"
breakpoints must come before "5m" ones; thinking blocks and empty text blocks cannot carry one.

The placement: the last tool definition, the system prompt, the end of the messages the prompt
strategy keeps byte-identical until its next epoch boundary (``Request.stable``), and the last
block of the newest message. When the newest message lies more than 20 blocks past where the
previous request ended (many parallel tool calls), a bridge breakpoint at that end takes the
place of the least useful one, so each request still reads what the previous one wrote.
"""

from __future__ import annotations

import json
from typing import Any

MAX_BREAKPOINTS = 4
LOOKBACK_BLOCKS = 20
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})

# Minimum cacheable prompt length in tokens, by model-id prefix (the guide's "Cache
# limitations" table); the longest matching prefix wins, other models get DEFAULT_MIN_TOKENS.
MIN_TOKENS = {
    "claude-opus-4-5": 4096,
    "claude-opus-4-6": 4096,
    "claude-opus-4-7": 4096,
    "claude-haiku-4-5": 4096,
    "claude-3-haiku": 2048,
    "claude-3-5-haiku": 2048,
}
DEFAULT_MIN_TOKENS = 1024


def min_cacheable_tokens(model: str) -> int:
    """The smallest prefix, in tokens, that ``model`` caches (see ``MIN_TOKENS``)."""
    name = model.lower().rsplit("/", 1)[-1]
    matches = [p for p in MIN_TOKENS if name.startswith(p)]
    return MIN_TOKENS[max(matches, key=len)] if matches else DEFAULT_MIN_TOKENS


def place_breakpoints(body: dict[str, Any], *, stable: int, ttl: str = "5m", min_tokens: int = DEFAULT_MIN_TOKENS,
                      estimate: float = 4.0) -> list[str]:
    """Mark ``body`` (a Messages request, changed in place) with at most 4 cache breakpoints.

    ``stable``: how many leading messages of ``body["messages"]`` stay byte-identical until the
    next epoch boundary (0: none known). ``ttl``: "5m", or "1h" for the breakpoints that stay
    put (tools, system, stable end) while the moving ones (bridge, newest message) stay "5m".
    ``min_tokens``: the model's minimum cacheable length; ``estimate``: characters per token
    (calibrated from the server's usage when known). Any ``cache_control`` already on a message
    block (a plugin strategy's, also inside a tool_result's content) is removed first, so the
    limit of 4 always holds.

    Returns the names of the breakpoints placed, in render order ("tools", "system", "stable",
    "bridge", "newest"), for the request's record.
    """
    messages = body.get("messages") or []
    for message in messages:
        if isinstance(message.get("content"), list):
            message["content"] = [_unmarked(b) for b in message["content"]]
    # Every message block in render order: (message index, block index).
    spots: list[tuple[int, int]] = []
    for mi, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, str):
            message["content"] = content = [{"type": "text", "text": content}]
        spots.extend((mi, bi) for bi in range(len(content or ())))
    end_of = _message_ends(messages)  # message index -> position in spots of its last markable block

    head = _chars(body.get("tools")) + _chars(body.get("system"))
    prefix = _Prefix(messages, spots, head)

    wanted: list[tuple[str, Any]] = []  # (name, where), best first
    last = end_of.get(len(messages) - 1)
    if last is not None:
        wanted.append(("newest", last))
    previous = end_of.get(len(messages) - 3)  # where the previous request ended (reply + new turn since)
    stable_end = end_of.get(min(stable, len(messages)) - 1) if stable > 0 else None
    if previous is not None and last is not None and last - previous > LOOKBACK_BLOCKS and not (
            stable_end is not None and previous <= stable_end <= previous + LOOKBACK_BLOCKS):
        wanted.append(("bridge", previous))
    if stable_end is not None and stable_end != last:
        wanted.append(("stable", stable_end))
    if body.get("system"):
        wanted.append(("system", None))
    if body.get("tools"):
        wanted.append(("tools", None))

    chosen: list[tuple[str, Any]] = []
    for name, where in wanted:
        chars = head if name == "system" else _chars(body.get("tools")) if name == "tools" else prefix.chars(where)
        if chars / estimate < min_tokens:
            continue  # too short to be cached: the breakpoint would be wasted
        if len(chosen) < MAX_BREAKPOINTS:
            chosen.append((name, where))

    order = {"tools": 0, "system": 1}
    chosen.sort(key=lambda c: (order.get(c[0], 2), c[1] if isinstance(c[1], int) else -1))
    placed: list[str] = []
    moving_seen = False
    for name, where in chosen:
        moving = name in ("bridge", "newest")
        moving_seen = moving_seen or moving
        mark = _mark(ttl if not moving_seen else "5m")
        if name == "tools":
            body["tools"][-1] = {**body["tools"][-1], "cache_control": mark}
        elif name == "system":
            system = body["system"]
            blocks = [{"type": "text", "text": system}] if isinstance(system, str) else list(system)
            blocks[-1] = {**blocks[-1], "cache_control": mark}
            body["system"] = blocks
        else:
            mi, bi = spots[where]
            content = messages[mi]["content"]
            content[bi] = {**content[bi], "cache_control": mark}
        placed.append(name)
    return placed


def _mark(ttl: str) -> dict[str, str]:
    return {"type": "ephemeral", "ttl": "1h"} if ttl == "1h" else {"type": "ephemeral"}


def _unmarked(block: Any) -> Any:
    """``block`` without ``cache_control``, also on the blocks nested in a tool_result's
    content (the API counts those among the 4 too)."""
    if not isinstance(block, dict):
        return block
    if "cache_control" in block:
        block = {k: v for k, v in block.items() if k != "cache_control"}
    nested = block.get("content") if block.get("type") == "tool_result" else None
    if isinstance(nested, list) and any(isinstance(n, dict) and "cache_control" in n for n in nested):
        block = {**block, "content": [_unmarked(n) for n in nested]}
    return block


def _markable(block: dict) -> bool:
    kind = block.get("type")
    if kind in _UNMARKABLE:
        return False
    return not (kind == "text" and not str(block.get("text", "")).strip())


def _message_ends(messages: list[dict]) -> dict[int, int]:
    """Message index -> index (in the flat list of message blocks) of its last block that may
    carry a breakpoint; messages with none are left out."""
    ends: dict[int, int] = {}
    position = 0
    for mi, message in enumerate(messages):
        content = message.get("content") or []
        for bi, block in enumerate(content):
            if isinstance(block, dict) and _markable(block):
                ends[mi] = position + bi
        position += len(content)
    return ends


def _chars(value: Any) -> int:
    if not value:
        return 0
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


class _Prefix:
    """Characters of the rendered prompt up to a message block, summed lazily and once."""

    def __init__(self, messages: list[dict], spots: list[tuple[int, int]], head: int) -> None:
        self.messages, self.spots = messages, spots
        self.sums: list[int] = []
        self.total = head

    def chars(self, where: int) -> int:
        while len(self.sums) <= where:
            mi, bi = self.spots[len(self.sums)]
            self.total += _chars(self.messages[mi]["content"][bi])
            self.sums.append(self.total)
        return self.sums[where]
