"""The built-in prompt strategies (``none``, ``shorten_tools``, ``shorten_tools_epoch``), their
settings, and what a strategy returns (``Compacted``); ``compaction.py`` registers and runs them.

The algorithms are the Ruby framework's ``shorten_tools`` and ``shorten_tools_epoch`` prompt
strategies, as specified in issue 3. Calls are ordered by the position of their ``tool_use``;
position 1 is the newest (see ``tool_calls`` for how a call is found, shortened and dropped).
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import compress, filterfalse, repeat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import is_, itemgetter
from typing import Any

from scout_tui.config.compaction_table import DEFAULT_STRATEGY, DEFAULTS, SETTING_NAMES
from scout_tui.config.compaction_table import MINIMUM as _MINIMUM
from scout_tui.core.errors import ScoutError
from scout_tui.core.messages import PrefixMemo, blocks, tool_results, tool_uses
from scout_tui.core.tool_calls import (
    Call,
    call_chars,
    find_calls,
    merge_roles,
    merged_content,
    meaningful,
    shorten_input,
    shorten_result,
)

# Size limits from the issue, in characters: a tool result, and each string argument.
RESULT_SIZE = 400
ARGUMENT_SIZE = 200

# What a result becomes in shorten_tools between max_tool_outputs and max_tool_calls: the call
# stays, and both APIs require it to be answered.
CLEARED_RESULT = "Result removed by compaction to save context."


@dataclass
class Compacted:
    """The prompt for one model call and what compaction did to it.

    Attributes:
        messages: the prepared conversation (a new list; unchanged messages are shared with the
            stored one, so treat them as read-only).
        strategies: the names of the strategies applied, in order.
        truncated: tool calls whose arguments or result were shortened.
        dropped: tool calls removed with their results.
        tokens_before: ``estimate_tokens`` of the stored conversation (0 from ``prepare_prompt``).
        tokens_after: ``estimate_tokens`` of ``messages`` (0 from ``prepare_prompt``).
        marks: ``tool_use`` id -> ``"truncated"`` or ``"dropped"``, for the UI.
        stable: how many leading messages of ``messages`` stay byte-identical in every prompt
            until the strategy's next epoch boundary (where a prompt cache breakpoint pays
            off); ``None`` from a strategy means "append-only: all of them", 0 means unknown.
    """

    messages: list[dict]
    strategies: list[str] = field(default_factory=list)
    truncated: int = 0
    dropped: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    marks: dict[str, str] = field(default_factory=dict)
    stable: int | None = 0
    budget_cut: int = 0
    """Tool results the token budget cut after the strategies (see ``budget.fit``)."""
    budget_dropped: int = 0
    """Tool calls the token budget dropped after the strategies."""
    budget_from: int | None = None
    """The first message the token budget changed (None: it changed none)."""
    fits: bool = True
    """False when the prompt is over the token budget even after it cut and dropped all it may."""

    def event_data(self) -> dict[str, Any]:
        """The data of a ``prompt.compacted`` event: every figure except messages and marks
        (which would make each stored event as large as the prompt)."""
        return {
            "strategies": list(self.strategies),
            "truncated": self.truncated,
            "dropped": self.dropped,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "stable": self.stable or 0,
            "budget_cut": self.budget_cut,
            "budget_dropped": self.budget_dropped,
        }


# --- settings ---------------------------------------------------------------------------------

def resolve_settings(settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every compaction setting, validated: ``settings`` layered on ``DEFAULTS`` (None: the
    defaults), plus ``max_tool_outputs`` and any extra keys (plugin strategies may read them).

    Pure: nothing is read from files or the environment here; ``configured_settings`` does that
    once, with the rest of the configuration.

    Raises:
        ScoutError: a value is not a whole number of at least its minimum (``epoch_size`` >= 1,
            others >= 0) or a strategy is not a string.
    """
    merged: dict[str, Any] = dict(DEFAULTS)
    for key, value in (settings or {}).items():
        merged[key] = _check(key, value, lambda: f"compaction setting {key}")  # called at once: this key
    merged.setdefault("max_tool_outputs", merged["max_tool_calls"])
    return merged


def configured_settings(table: Mapping[str, Any], env: Mapping[str, str],
                        place: Callable[[str], str] = lambda key: "[compaction]") -> dict[str, Any]:
    """The settings a run uses: ``DEFAULTS`` < the config files' ``[compaction]`` ``table`` <
    ``SCOUT_<NAME>`` variables of ``env`` (``SCOUT_EPOCH_SIZE``, ``SCOUT_STRATEGY``; empty
    values ignored). Called once when the agent is built.

    ``place(key)`` names where the table sets ``key`` ("<file>:<line>: [compaction]").

    Raises:
        ScoutError: an invalid value, naming the file and line or the variable.
    """
    if not isinstance(table, Mapping):
        raise ScoutError(f"{place('compaction')}: compaction must be a table ([compaction]), got {table!r}")
    merged: dict[str, Any] = dict(DEFAULTS)
    for key, value in table.items():
        merged[key] = _check(key, value, lambda: place(key))  # called at once: this key
    for key in SETTING_NAMES:
        var = f"SCOUT_{key.upper()}"
        raw = env.get(var)
        if raw:
            value = raw if key == "strategy" else _int(raw)
            merged[key] = _check(key, value, lambda: var, shown=repr(raw))  # called at once: this var
    merged.setdefault("max_tool_outputs", merged["max_tool_calls"])
    return merged


def _int(raw: str) -> Any:
    try:
        return int(raw.strip())
    except ValueError:
        return raw


def _check(key: str, value: Any, where: Callable[[], str], shown: str | None = None) -> Any:
    """``value`` if valid for ``key``; unknown keys pass through untouched. ``shown``: how an
    error quotes the value (an env variable's text as written)."""
    shown = repr(value) if shown is None else shown
    if key == "strategy":
        ok = isinstance(value, str) or (
            isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
        )
        if not ok:
            raise ScoutError(f"{where()}: strategy must be a name or a list of names, got {shown}")
        return value
    if key in _MINIMUM:
        least = _MINIMUM[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ScoutError(f"{where()}: {key} must be a whole number >= {least}, got {shown}")
    return value


# --- finding the tool calls, again and again ---------------------------------------------------

# The calls and keys of the last few conversations prepared: the next model call's conversation
# begins with the previous one, so only its new messages are looked at.
_CALLS = PrefixMemo()


def calls_and_keys(messages: list[dict], with_keys: bool = True) -> tuple[list[Call], list | None]:
    """``find_calls(messages, keys)``: every tool call, oldest first, and each one's
    ``call_key`` (None unless ``with_keys``, when they are not known already); only the messages
    after an earlier conversation that ``messages`` begins with are scanned (see
    ``PrefixMemo``). The lists are shared with the memo: read them only."""
    hit = _CALLS.find(messages, None if not with_keys else lambda known: known[1] is not None)
    start = 0
    if hit is not None:
        n, (known, known_keys) = hit
        if n == len(messages):
            return known, known_keys
        # A call in the last remembered message may be answered by the next one: scan it again.
        start = max(n - 1, 0)
        k = bisect_left(known, start, key=itemgetter(0))
    keys: list | None = [] if with_keys or (hit is not None and known_keys is not None) else None
    calls = find_calls(messages[start:] if start else messages, keys)
    if start:
        calls = known[:k] + [(mi + start, bi, ri + start if ri >= 0 else -1, rbi, tid, use_alone, result_alone)
                             for mi, bi, ri, rbi, tid, use_alone, result_alone in calls]
        if keys is not None:
            keys = known_keys[:k] + keys
    _CALLS.keep(messages, (calls, keys))
    return calls, keys


def forget_memos() -> None:
    """Forget what the strategies remembered of earlier conversations (for measuring a first call)."""
    _CALLS.clear()
    _PLANS.clear()


# --- applying a plan to the tool calls --------------------------------------------------------

DROP, TRUNCATE, CLEAR = "drop", "truncate", "clear"
"""What a plan does to one call (``None``: keep it whole)."""


# The part of a conversation the last few plans changed, as applied: a plan that changes the
# same calls of the same messages as before (``shorten_tools_epoch`` between two epoch
# boundaries) costs only the messages after them.
_PLANS = PrefixMemo()


@dataclass
class _Head:
    """``apply_plan``'s work on the messages up to the last one its plan touches (``end``)."""

    plan: list
    """The plan up to its last action (what this head was computed for)."""
    merged: list[int | dict]
    """The head's messages as sent, but for its last run of one role (which may merge with
    the messages after the head); all of them when nothing was removed whole. A message the
    plan left alone is its index, so that the result shares the caller's own objects."""
    last_run: list[int | dict]
    """That last run, not yet merged (empty when nothing was removed whole)."""
    removed: bool
    """Whether a message was removed whole, so neighbours of one role must be merged."""
    marks: dict[Any, str]
    truncated: int
    dropped: int


def apply_plan(messages: list[dict], calls: list[Call], plan: list, name: str) -> Compacted:
    """Apply ``plan`` (per call, oldest first: None to keep whole, or drop | truncate | clear)
    to ``messages``, sharing every message it does not touch; returns the result with marks.

    Messages after the last one an action touches are taken as they are; the work on the
    others is remembered (``PrefixMemo``) for a later call with the same plan on a conversation
    that begins with the same messages.
    """
    last = len(plan) - 1
    while last >= 0 and plan[last] is None:
        last -= 1
    if last < 0:
        return Compacted(list(messages), [name])
    # No action touches a message from here on: calls are in message order, and a call's
    # result is in the message after its tool_use (an earlier call in the same message may be
    # answered when the last one is not).
    end = min(calls[last][0] + 2, len(messages))
    acted = plan[: last + 1]
    found = _PLANS.find(messages, lambda head: head.plan == acted)
    if found is not None and found[0] == end:
        head = found[1]
    else:
        head = _apply_head(messages, calls, acted, end)
        _PLANS.keep(messages[:end], head)
    if not head.marks:
        return Compacted(list(messages), [name])
    out = [messages[m] if type(m) is int else m for m in head.merged]
    if head.removed:
        out += merge_roles([messages[m] if type(m) is int else m for m in head.last_run] + messages[end:])
    else:
        out += messages[end:]
    return Compacted(out, [name], head.truncated, head.dropped, marks=dict(head.marks))


def _apply_head(messages: list[dict], calls: list[Call], plan: list, end: int) -> _Head:
    """``apply_plan`` on ``messages[:end]``, which hold every call ``plan`` acts on."""
    skip: set[int] = set()  # messages removed whole
    skip_add = skip.add
    # message index -> index of the removed block, or a list of them when several are (one
    # int per message in the usual case: text before a dropped call)
    gone: dict[int, int | list[int]] = {}
    swap: dict[int, dict[int, dict]] = {}  # message index -> block index -> new block
    marks: dict[Any, str] = {}
    truncated = dropped = 0
    # The oldest calls are the ones dropped, most of them whole with their results: those
    # before the first call cut are applied in C, with a loop only over the blocks dropped
    # from messages that keep others. (Marks stay in the order of the calls: these come first.)
    h = _drops_first(plan)
    if h:
        drops = list(compress(calls, map(is_, plan[:h], repeat(DROP))))
        marks = dict.fromkeys(map(itemgetter(4), drops), "dropped")
        dropped = len(drops)
        skip.update(map(itemgetter(0), filter(itemgetter(5), drops)))
        skip.update(map(itemgetter(2), filter(itemgetter(6), drops)))
        for mi, bi in map(itemgetter(0, 1), filterfalse(itemgetter(5), drops)):
            g = gone.get(mi)
            gone[mi] = bi if g is None else [g, bi] if isinstance(g, int) else [*g, bi]
        for ri, rbi in map(itemgetter(2, 3), filterfalse(itemgetter(6), drops)):
            if ri >= 0:
                g = gone.get(ri)
                gone[ri] = rbi if g is None else [g, rbi] if isinstance(g, int) else [*g, rbi]
    for (mi, bi, ri, rbi, tid, use_alone, result_alone), action in zip(calls[h:], plan[h:]):
        if action is None:
            continue
        if action is DROP:
            marks[tid] = "dropped"
            dropped += 1
            if use_alone:
                skip_add(mi)
            else:
                g = gone.get(mi)
                gone[mi] = bi if g is None else [g, bi] if isinstance(g, int) else [*g, bi]
            if result_alone:
                skip_add(ri)
            elif ri >= 0:
                g = gone.get(ri)
                gone[ri] = rbi if g is None else [g, rbi] if isinstance(g, int) else [*g, rbi]
            continue
        use = messages[mi]["content"][bi]
        new_input = shorten_input(use.get("input"), ARGUMENT_SIZE)
        changed = new_input is not use.get("input")
        if changed:
            swap.setdefault(mi, {})[bi] = {**use, "input": new_input}
        if ri >= 0:
            result = messages[ri]["content"][rbi]
            if action is CLEAR:
                new_result = {**result, "content": CLEARED_RESULT}
            else:
                new_result = shorten_result(result, RESULT_SIZE)
            if new_result is not result:
                swap.setdefault(ri, {})[rbi] = new_result
                changed = True
        if changed:
            marks[tid] = "truncated"
            truncated += 1
    if not marks:
        return _Head(plan, [], [], False, marks, 0, 0)

    edited: dict[int, dict] = {}  # message index -> the message as sent
    # message index -> the one text block left of it (the usual remnant: a sentence before a
    # dropped call); the message itself is built only if it is not merged with its neighbours
    remnants: dict[int, dict] = {}
    for mi in gone.keys() | swap.keys() if swap else gone:
        if mi in skip:
            continue
        message = messages[mi]
        content = message["content"]
        at: int | list[int] | tuple[int, ...] = gone.get(mi, ())  # the blocks dropped from it
        sw = swap.get(mi)
        if sw is None and type(at) is int:
            if len(content) == 2:  # meaningful() inlined for the one block left, a text
                only = content[1 - at]
                text = only.get("text") if only.get("type") == "text" else None
                if type(text) is str and text and not text.isspace():
                    remnants[mi] = only
                    continue
            kept = content[:at] + content[at + 1 :]
        else:
            if isinstance(at, int):
                at = (at,)
            kept = [sw.get(bi, b) if sw else b for bi, b in enumerate(content) if bi not in at]
        if meaningful(kept):
            edited[mi] = {**message, "content": kept}
        else:
            skip_add(mi)

    def built(m: int | dict) -> int | dict:
        """An entry of the head with its remnant built into a message."""
        return {**messages[m], "content": [remnants[m]]} if type(m) is int and m in remnants else m

    # Untouched messages are shared, not copied (kept as their index, see _Head).
    kept = [edited.get(mi, mi) for mi in filterfalse(skip.__contains__, range(end))]
    if not skip:
        return _Head(plan, [built(m) for m in kept] if remnants else kept, [], False, marks, truncated, dropped)
    # Runs of one role before the last one are merged now: the messages after the head can
    # only join the last run.
    roles = [(messages[m] if type(m) is int else m).get("role") for m in kept]
    r = len(kept)
    while r > 0 and roles[r - 1] == roles[-1]:
        r -= 1
    merged: list[int | dict] = []
    start = 0
    for i in range(1, r + 1):
        if i < r and roles[i] == roles[start]:
            continue
        if i - start == 1:
            merged.append(built(kept[start]))
        else:
            run = kept[start:i]
            parts: list[Sequence[dict]] = []
            for m in run:
                if type(m) is int:
                    if m in remnants:
                        parts.append((remnants[m],))
                        continue
                    m = messages[m]
                content = m.get("content")
                parts.append(content if type(content) is list else blocks(m))
            first = messages[run[0]] if type(run[0]) is int else run[0]
            merged.append({**first, "content": merged_content(parts, roles[start] == "assistant")})
        start = i
    return _Head(plan, merged, [built(m) for m in kept[r:]], True, marks, truncated, dropped)


def _drops_first(plan: list) -> int:
    """How many leading entries of ``plan`` are all DROP or None: those before the first call
    cut (the whole plan when none is). 0 when one of them is something else, which only the
    loop in ``_apply_head`` knows how to treat."""
    cut = min([plan.index(action) for action in (TRUNCATE, CLEAR) if action in plan], default=len(plan))
    head = plan[:cut]
    if sum(map(is_, head, repeat(DROP))) + head.count(None) != cut:
        return 0  # something else than the constants: the loop decides
    return cut


# --- the strategies ---------------------------------------------------------------------------

def none(messages: list[dict]) -> Compacted:
    """The strategy ``none``: the conversation as stored (a new list of the same messages)."""
    return Compacted(list(messages), ["none"], stable=None)


def shorten_tools(messages: list[dict], settings: Mapping[str, Any] | None = None) -> Compacted:
    """Truncate, then drop, old tool calls once their content passes ``max_tool_chars``.

    Walks from the newest call (position 1) to the oldest, counting the characters of tool
    content kept so far (result text plus the JSON of the arguments).
    A call stays whole while that count is below ``max_tool_chars`` or its position is at most
    ``full_tool_outputs``; otherwise a call beyond ``max_tool_calls`` is dropped with its result,
    one beyond ``max_tool_outputs`` keeps its (truncated) arguments but its result becomes
    ``CLEARED_RESULT`` (both APIs need every call answered), and the rest are truncated
    (result to 400 characters, each string argument to 200).

    ``settings`` is layered on ``DEFAULTS`` (see ``resolve_settings``).
    Returns the prompt without the compaction notice, which ``compact`` adds once for a chain.
    """
    s = resolve_settings(settings)
    full = s["full_tool_outputs"]
    max_calls, max_outputs, max_chars = s["max_tool_calls"], s["max_tool_outputs"], s["max_tool_chars"]
    calls = calls_and_keys(messages, with_keys=False)[0]
    plan: list[str | None] = [None] * len(calls)
    kept = 0
    for position, k in enumerate(range(len(calls) - 1, -1, -1), 1):
        if kept < max_chars:
            # Past the limit the count no longer matters, so later calls are never measured.
            mi, bi, ri, rbi = calls[k][:4]
            kept += call_chars(messages[mi]["content"][bi], messages[ri]["content"][rbi] if ri >= 0 else None)
        elif position > full:
            if position > max_calls:
                plan[k] = DROP
            else:
                plan[k] = CLEAR if position > max_outputs else TRUNCATE
    return apply_plan(messages, calls, plan, "shorten_tools")


def epoch_bounds(total: int, settings: Mapping[str, Any]) -> tuple[int, int, int]:
    """``(pinned, keep_from, whole_from)`` for ``total`` tool calls under the epoch settings.

    Calls are indexed oldest first: indices below ``keep_from`` are dropped, those from
    ``keep_from`` below ``whole_from`` truncated, the rest whole. ``pinned = threshold +
    ((T - threshold - 1) // epoch_size) * epoch_size`` and both bounds depend only on it, so they
    move only when T crosses ``threshold + k * epoch_size``. For ``T <= threshold`` all are 0.
    """
    threshold = settings["epoch_tool_call_threshold"]
    if total <= threshold:
        return 0, 0, 0
    size = settings["epoch_size"]
    pinned = threshold + ((total - threshold - 1) // size) * size
    whole_from = max(0, pinned - settings["epoch_full_tool_calls"])
    keep_from = max(0, whole_from - settings["epoch_compacted_tool_calls"])
    return pinned, keep_from, whole_from


def shorten_tools_epoch(messages: list[dict], settings: Mapping[str, Any] | None = None) -> Compacted:
    """The cache-friendly variant: the cut moves only once per epoch of ``epoch_size`` calls.

    With T tool calls: nothing changes while ``T <= epoch_tool_call_threshold``; otherwise,
    with ``pinned`` and ``new = T - pinned`` as in ``epoch_bounds``, the newest
    ``new + epoch_full_tool_calls`` calls stay whole, the next ``epoch_compacted_tool_calls``
    are truncated, older ones are dropped. Between two epoch boundaries the dropped and
    truncated part is identical from call to call, so the provider's prompt cache keeps it.

    Repeated calls: the newest instance of a call repeated with the same name and arguments
    (ids ignored, key order ignored) stays whole, so the model does not loop re-running a call
    it can no longer see. Repeats are looked for among the pinned calls only, so a new call
    arriving mid-epoch cannot change the compacted part (its own instance is whole anyway).

    ``settings`` and the result are as for ``shorten_tools``.
    """
    s = resolve_settings(settings)
    calls, keys = calls_and_keys(messages)
    pinned, keep_from, whole_from = epoch_bounds(len(calls), s)
    if whole_from == 0:
        return Compacted(list(messages), ["shorten_tools_epoch"], stable=None)
    plan: list[str | None] = [DROP] * keep_from
    plan += [TRUNCATE] * (whole_from - keep_from)
    plan += [None] * (len(calls) - whole_from)
    assert keys is not None  # calls_and_keys gives them: with_keys
    for k in _newest_repeats(keys, pinned, whole_from):
        plan[k] = None
    result = apply_plan(messages, calls, plan, "shorten_tools_epoch")
    result.stable = _messages_through(result.messages, calls[pinned - 1][4])
    return result


def _messages_through(messages: list[dict], tool_use_id: Any) -> int:
    """How many leading messages of ``messages`` hold the call ``tool_use_id`` and its result
    (0 when it is not there): the end of the part an epoch keeps fixed."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user" and any(
                b.get("tool_use_id") == tool_use_id for b in tool_results(messages[i])):
            return i + 1
        if messages[i].get("role") == "assistant" and any(u.get("id") == tool_use_id for u in tool_uses(messages[i])):
            return i + 1  # a call without its result yet ends the fixed part itself
    return 0


def _newest_repeats(keys: list, pinned: int, below: int) -> list[int]:
    """Indices below ``below`` of calls that are the newest of two or more identical calls
    (equal ``keys``) among the first ``pinned`` calls."""
    last = dict(zip(keys[:pinned], range(pinned)))  # a later index replaces an earlier one
    if len(last) == pinned:
        return []  # no key twice
    first = dict(zip(reversed(keys[:pinned]), range(pinned - 1, -1, -1)))
    return [k for key, k in last.items() if k < below and first[key] != k]
