"""The token budget: the last pass before a model call, so the prompt fits the context window.

Pure functions over a prepared prompt (Anthropic content-block shape). When the estimate is over
the budget: cut the largest tool results first to their head and tail (older ones before the
newest, which is cut last), then drop the oldest tool calls with their results. What the person
typed is never touched, and no call is left without its result (both APIs reject that).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scout_tui.core.messages import result_text
from scout_tui.engine.strategies import DROP, apply_plan
from scout_tui.core.tokens import estimate_tokens
from scout_tui.core.tool_calls import find_calls

FLOOR = 400
"""Characters of its own text (head and tail) a cut tool result keeps at least, besides the note."""
CUT_NOTE = ("\n[… {cut:,} characters of this tool result cut to fit the context window; the session keeps "
            "the whole result{where}. Run the tool again for the part you need.]\n")


@dataclass
class Estimator:
    """Tokens of a prompt: characters / 4 (``tokens.estimate_tokens``) times a ratio learnt
    from the server's reported usage, since tokenizers differ by model and by text.

    ``ratio`` starts at 1 and moves towards ``reported / estimated`` after every request (an
    exponential average, so one odd request does not swing it); it is kept within 0.5..3.
    """

    ratio: float = 1.0
    samples: int = 0

    def tokens(self, messages: list[dict], overhead: int = 0) -> int:
        """Estimated input tokens of ``messages`` plus ``overhead`` (system and tools, estimated)."""
        return int((estimate_tokens(messages) + overhead) * self.ratio)

    def learn(self, estimated: int, reported: int) -> bool:
        """Take one request's ``estimated`` (unscaled) and server-``reported`` input tokens (its
        usage, or the count an overflow error states); False when either is missing."""
        if estimated <= 0 or reported <= 0:
            return False
        seen = min(max(reported / estimated, 0.5), 3.0)
        weight = 0.5 if self.samples < 3 else 0.2
        self.ratio = seen if self.samples == 0 else self.ratio + weight * (seen - self.ratio)
        self.samples += 1
        return True


@dataclass
class Fitted:
    """What the budget pass did: the prompt, and how many results it cut and calls it dropped."""

    messages: list[dict]
    cut: int = 0
    dropped: int = 0
    tokens: int = 0
    fits: bool = True
    marks: dict[str, str] = field(default_factory=dict)
    first_changed: int | None = None
    """The index of the first message the pass changed (None: none), for cache hints."""


def fit(messages: list[dict], budget: int, estimator: Estimator | None = None, *, overhead: int = 0,
        saved: dict[str, str] | None = None) -> Fitted:
    """``messages`` made to fit ``budget`` tokens (with ``overhead`` tokens beside them).

    ``saved``: tool_use id -> path of the file holding a result's whole output, named in the
    cut note. The input is never mutated; untouched messages are shared. ``fits`` is False when
    even dropping every tool call leaves the prompt over budget (the person's own text is all
    that is left): the caller then has to say so rather than send it.
    """
    estimator = estimator or Estimator()
    tokens = estimator.tokens(messages, overhead)
    if tokens <= budget:
        return Fitted(messages, tokens=tokens)
    excess_chars = int((tokens - budget) * 4 / estimator.ratio) + 64
    out = list(messages)
    results = _results(out)
    cut, changed = _cut_results(out, results, excess_chars, saved or {})
    marks = {tid: "truncated" for tid in changed}
    first = min((mi for mi, _, _ in (results[t] for t in changed)), default=None)
    tokens = estimator.tokens(out, overhead)
    dropped = 0
    if tokens > budget:
        calls = find_calls(out)
        plan: list[Any] = [None] * len(calls)
        estimate = tokens
        for k, call in enumerate(calls[:-1]):  # the newest call stays: the model just made it
            plan[k] = DROP
            mi, bi, ri, rbi = call[:4]
            use = out[mi]["content"][bi]
            chars = len(str(use.get("input"))) + (len(result_text(out[ri]["content"][rbi].get("content"))) if ri >= 0 else 0)
            estimate -= int((chars + 16) / 4 * estimator.ratio)
            first = mi if first is None else min(first, mi)
            if estimate <= budget:
                break
        applied = apply_plan(out, calls, plan, "budget")
        dropped = applied.dropped
        marks.update(applied.marks)
        out = applied.messages
        tokens = estimator.tokens(out, overhead)
    return Fitted(out, len(changed), dropped, tokens, tokens <= budget, marks, first)


def _results(messages: list[dict]) -> dict[str, tuple[int, int, int]]:
    """tool_use id -> (message index, block index, characters) of every tool result."""
    found: dict[str, tuple[int, int, int]] = {}
    for mi, message in enumerate(messages):
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for bi, block in enumerate(content):
            if block.get("type") == "tool_result":
                found[str(block.get("tool_use_id"))] = (mi, bi, len(result_text(block.get("content"))))
    return found


def _cut_results(out: list[dict], results: dict[str, tuple[int, int, int]], excess: int,
                 saved: dict[str, str]) -> tuple[int, list[str]]:
    """Cut results (in ``out``, replacing messages) until ``excess`` characters are gone.

    Water-filling: every result but the newest keeps a common number of characters (its head
    and tail), the most that still frees ``excess``, never fewer than ``FLOOR``; only if that is
    not enough is the newest cut too. The note a cut result carries counts against what it
    frees, so a result is cut only when that makes it shorter. Returns the characters removed
    and the ids cut.
    """
    if not results:
        return 0, []
    ids = list(results)  # message order: the last is the newest
    newest, older = ids[-1], ids[:-1]
    notes = {t: _note_chars(results[t][2], saved.get(t)) for t in ids}

    def freed(keep: int, which: list[str]) -> int:
        return sum(max(0, results[t][2] - keep - notes[t]) for t in which)

    changed: list[str] = []
    removed = 0
    if older and freed(FLOOR, older) > 0:
        lo, hi = FLOOR, max(results[t][2] for t in older)
        if freed(FLOOR, older) >= excess:
            while lo < hi:  # the most characters kept that still frees enough
                mid = (lo + hi + 1) // 2
                if freed(mid, older) >= excess:
                    lo = mid
                else:
                    hi = mid - 1
        for t in older:
            if results[t][2] - lo - notes[t] > 0:
                removed += _cut_one(out, results[t], lo, saved.get(t))
                changed.append(t)
    size = results[newest][2]
    if removed < excess and size - FLOOR - notes[newest] > 0:
        keep = max(FLOOR, size - notes[newest] - (excess - removed))
        removed += _cut_one(out, results[newest], keep, saved.get(newest))
        changed.append(newest)
    return removed, changed


def _note(cut: int, path: str | None) -> str:
    return CUT_NOTE.format(cut=cut, where=f"; its whole output is in {path}" if path else "")


def _note_chars(size: int, path: str | None) -> int:
    """The length of the note on a result of ``size`` characters (at most: ``size`` cut)."""
    return len(_note(size, path))


def _cut_one(out: list[dict], where: tuple[int, int, int], keep: int, path: str | None) -> int:
    """Replace one result by its head and tail, ``keep`` characters in all, around the note;
    returns the characters removed (the note counted)."""
    mi, bi, size = where
    message = out[mi]
    block = message["content"][bi]
    text = result_text(block.get("content"))
    head = max(keep // 2, 1)
    tail = max(keep - head, 1)
    new_text = text[:head] + _note(size - head - tail, path) + text[size - tail:]
    content = list(message["content"])
    content[bi] = {**block, "content": new_text}
    out[mi] = {**message, "content": content}
    return size - len(new_text)
