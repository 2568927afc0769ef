"""Prompt compaction: what the model sees of a long conversation, computed before every call.

Pure functions over the stored conversation (Anthropic content-block shape); what is stored is
never changed. Strategies: ``none``, ``shorten_tools``, ``shorten_tools_epoch`` and registered ones.

Design notes (the source of the algorithms is the Ruby framework's ``shorten_tools`` and
``shorten_tools_epoch`` prompt strategies, as specified in issue 3):

- A *tool call* is a ``tool_use`` block plus the ``tool_result`` that answers it in the next
  message, paired by id. Calls are ordered by the position of their ``tool_use``; position 1 is
  the newest. Dropping a call removes both blocks; a message left with nothing but thinking or
  blank text is removed, and neighbours of one role are merged so roles still alternate.
- Untouched messages are shared with the input, never copied: a 5,000-call conversation is
  mostly dropped or shared, so the cost is one scan plus the few calls that change.
- The compaction notice is a text block appended to the *first user message* of the prepared
  prompt. Both APIs accept a text block there (after any ``tool_result`` blocks, which Anthropic
  wants first; the OpenAI backend sends it as a user message after the tool messages); a
  separate message would break role alternation, and the system prompt belongs to the agent.
  Its text changes only when the counts change, which for ``shorten_tools_epoch`` happens only
  at epoch boundaries, where the start of the prompt changes anyway because the cut moves.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scout_tui.errors import ScoutError

# Size limits from the issue, in characters: a tool result, and each string argument.
RESULT_SIZE = 400
ARGUMENT_SIZE = 200

DEFAULT_STRATEGY = "shorten_tools_epoch"

# Every numeric setting and its smallest allowed value. ``max_tool_outputs`` defaults to
# ``max_tool_calls`` (so it has no entry in DEFAULTS).
_MINIMUM: dict[str, int] = {
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

# The start of the notice, so a viewer ("what the model sees") can recognise the block.
NOTICE_PREFIX = "[Context compaction]"
NOTICE = (
    NOTICE_PREFIX + " To fit the context window, older tool calls in this conversation were "
    "compacted for this request: {truncated} truncated (long arguments and results cut, marked "
    "'Truncated (N): ...'), {dropped} removed with their results. The session itself keeps "
    "everything. If an earlier tool result seems missing, it may have been removed here rather "
    "than never run; run a tool again only if you need its output."
)
# What a result becomes in shorten_tools between max_tool_outputs and max_tool_calls: the call
# stays, and both APIs require it to be answered.
CLEARED_RESULT = "Result removed by compaction to save context."

# Rough tokens of one image block (Anthropic: about width*height/750, capped near 1,600).
IMAGE_TOKENS = 1600


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


# --- truncating one string ---------------------------------------------------------------------

_TRUNCATED = re.compile(r"Truncated \((\d+)\): ")


def shorten_string(text: str, size: int) -> str:
    """``text`` if it has at most ``size`` characters, else its head and tail around a marker.

    The format (issue 3): ``marker = "<..." + len + " - " + md5_hex(utf8(text))[:5] + "...>"``,
    ``k = (size - len(marker)) // 2``, result ``"Truncated (" + len + "): " + text[:k-1] +
    marker + text[len-k:]``. The result may be a little longer than ``size`` (the prefix is not
    counted); the hash lets a person find the full text in the session. ``k`` is at least 1,
    so a ``size`` smaller than the marker keeps one character of the tail.
    """
    n = len(text)
    if n <= size:
        return text
    digest = hashlib.md5(text.encode("utf-8", "surrogatepass")).hexdigest()[:5]
    marker = f"<...{n} - {digest}...>"
    k = max((size - len(marker)) // 2, 1)
    return f"Truncated ({n}): {text[: k - 1]}{marker}{text[n - k :]}"


def _is_shortened(text: str) -> bool:
    """Whether ``text`` is already a ``shorten_string`` result (so a second strategy in a chain
    does not cut it again)."""
    match = _TRUNCATED.match(text)
    return bool(match) and int(match[1]) > len(text) and f"<...{match[1]} - " in text


def _shorten(text: str, size: int) -> str:
    return text if len(text) <= size or _is_shortened(text) else shorten_string(text, size)


# --- settings ----------------------------------------------------------------------------------

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
        merged[key] = _check(key, value, lambda key=key: f"compaction setting {key}")
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
        merged[key] = _check(key, value, lambda key=key: place(key))
    for key in ("strategy", *_MINIMUM):
        var = f"SCOUT_{key.upper()}"
        raw = env.get(var)
        if raw:
            value = raw if key == "strategy" else _int(raw)
            merged[key] = _check(key, value, lambda var=var: var, shown=repr(raw))
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


# --- tool calls: finding them and applying a plan ---------------------------------------------

# A call: (message index of its tool_use, block index, message index of its tool_result or -1,
# block index or -1, tool_use id, use alone, result alone). "Alone": the block is the only one
# of its message (the usual case), so dropping the call removes that message whole.
Call = tuple[int, int, int, int, Any, bool, bool]

_DROP, _TRUNCATE, _CLEAR = "drop", "truncate", "clear"
_SILENT = frozenset({"thinking", "redacted_thinking"})


def _tool_calls(messages: list[dict], keys: list | None = None) -> list[Call]:
    """Every tool call, oldest first, each paired with its result in the next message by id.

    When ``keys`` is a list, the ``_call_key`` of each call is appended to it (in the same pass,
    since touching 5,000 scattered blocks twice costs more than the keys themselves).
    """
    calls: list[Call] = []
    append = calls.append
    last = len(messages) - 1
    for mi, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        content = message.get("content")
        if type(content) is not list:
            continue
        if len(content) == 1:
            use = content[0]
            if use.get("type") != "tool_use":
                continue
            tid = use.get("id")
            bi = 0
            if keys is not None:
                hit = _key_memo.get(tid)  # _call_key inlined: this runs once per call
                keys.append(hit[1] if hit is not None and hit[0] is use else _call_key(use))
        else:
            uses = [bi for bi, b in enumerate(content) if b.get("type") == "tool_use"]
            if not uses:
                continue
            if keys is not None:
                keys.extend([_call_key(content[bi]) for bi in uses])
            bi = uses[0] if len(uses) == 1 else -1
            tid = content[bi].get("id") if bi >= 0 else None
        nxt = messages[mi + 1] if mi < last else None
        ncontent = nxt.get("content") if nxt is not None and nxt.get("role") == "user" else None
        if type(ncontent) is not list:
            ncontent = ()
        if bi >= 0 and len(ncontent) == 1:
            # The usual shape: one call, its result alone in the next message.
            first = ncontent[0]
            if first.get("tool_use_id") == tid and first.get("type") == "tool_result":
                append((mi, bi, mi + 1, 0, tid, len(content) == 1, True))
                continue
        answers: dict[Any, int] = {}
        for rbi, b in enumerate(ncontent):
            if b.get("type") == "tool_result":
                answers.setdefault(b.get("tool_use_id"), rbi)
        for bi, b in enumerate(content):
            if b.get("type") == "tool_use":
                tid = b.get("id")
                rbi = answers.get(tid, -1)
                append((mi, bi, mi + 1 if rbi >= 0 else -1, rbi, tid, False, False))
    return calls


def _shorten_input(value: Any, size: int) -> Any:
    """``value`` with every string (nested in dicts and lists) shortened; the same object when
    nothing changed."""
    if isinstance(value, str):
        return _shorten(value, size)
    if isinstance(value, dict):
        new = {k: _shorten_input(v, size) for k, v in value.items()}
        return value if all(new[k] is v for k, v in value.items()) else new
    if isinstance(value, list):
        items = [_shorten_input(v, size) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else items
    return value


def _result_text(content: Any) -> str:
    """A result's content as one string: text blocks joined by newlines, other blocks named."""
    if isinstance(content, str):
        return content
    parts = []
    for b in content or ():
        if isinstance(b, dict) and b.get("type") == "text":
            parts.append(str(b.get("text", "")))
        else:
            parts.append(f"[{b.get('type', 'unknown') if isinstance(b, dict) else 'unknown'} block]")
    return "\n".join(parts)


def _shorten_result(block: dict, size: int) -> dict:
    """``block`` (a tool_result) with its content shortened; the same object when short.

    A list content becomes one string (text blocks joined by newlines; an image or other block
    becomes "[image block]", since a compacted call should not keep a large image); the hash in
    the marker is of that joined text.
    """
    content = block.get("content")
    if isinstance(content, str):
        new = _shorten(content, size)
        return block if new is content else {**block, "content": new}
    if not content:
        return block
    plain = all(isinstance(b, dict) and b.get("type") == "text" for b in content)
    text = _result_text(content)
    if plain and len(text) <= size:
        return block
    return {**block, "content": _shorten(text, size)}


def _value_chars(value: Any) -> int:
    """Characters of ``value`` as JSON, approximated without serialising it (quotes, keys and
    separators included; escapes not)."""
    kind = type(value)
    if kind is str:
        return len(value) + 2
    if kind is dict:
        n = 2
        for k, v in value.items():
            n += (len(k) if type(k) is str else len(str(k))) + 4
            n += len(v) + 2 if type(v) is str else _value_chars(v)
        return n
    if kind is list or kind is tuple:
        n = 2
        for v in value:
            n += 1 + _value_chars(v)
        return n
    if value is None or kind is bool:
        return 5
    return len(str(value))


def _call_chars(use: dict, result: dict | None) -> int:
    """Tool content of one call, in characters: the result text plus the JSON of the arguments
    (``json.dumps``, non-ASCII kept as is)."""
    chars = len(json.dumps(use.get("input", {}), ensure_ascii=False, default=str))
    if result is not None:
        chars += len(_result_text(result.get("content")))
    return chars


def _apply(messages: list[dict], calls: list[Call], plan: list, name: str) -> Compacted:
    """Apply ``plan`` (per call, oldest first: None to keep whole, or drop | truncate | clear)
    to ``messages``, sharing every message it does not touch; returns the result with marks."""
    skip: set[int] = set()  # messages removed whole
    gone: dict[int, list[int]] = {}  # message index -> indices of removed blocks
    swap: dict[int, dict[int, dict]] = {}  # message index -> block index -> new block
    marks: dict[Any, str] = {}
    truncated = dropped = 0
    for (mi, bi, ri, rbi, tid, use_alone, result_alone), action in zip(calls, plan):
        if action is None:
            continue
        if action is _DROP:
            marks[tid] = "dropped"
            dropped += 1
            if use_alone:
                skip.add(mi)
            else:
                g = gone.get(mi)
                if g is None:
                    gone[mi] = [bi]
                else:
                    g.append(bi)
            if result_alone:
                skip.add(ri)
            elif ri >= 0:
                g = gone.get(ri)
                if g is None:
                    gone[ri] = [rbi]
                else:
                    g.append(rbi)
            continue
        use = messages[mi]["content"][bi]
        new_input = _shorten_input(use.get("input"), ARGUMENT_SIZE)
        changed = new_input is not use.get("input")
        if changed:
            swap.setdefault(mi, {})[bi] = {**use, "input": new_input}
        if ri >= 0:
            result = messages[ri]["content"][rbi]
            if action is _CLEAR:
                new_result = {**result, "content": CLEARED_RESULT}
            else:
                new_result = _shorten_result(result, RESULT_SIZE)
            if new_result is not result:
                swap.setdefault(ri, {})[rbi] = new_result
                changed = True
        if changed:
            marks[tid] = "truncated"
            truncated += 1
    if not marks:
        return Compacted(list(messages), [name])

    edited: dict[int, dict] = {}
    for mi in gone.keys() | swap.keys():
        if mi in skip:
            continue
        message, g, sw = messages[mi], gone.get(mi, ()), swap.get(mi)
        content = message["content"]
        if sw is None and len(g) == 1:  # the usual remnant: text before a dropped call
            bi = g[0]
            kept = content[:bi] + content[bi + 1 :]
        else:
            kept = [sw.get(bi, b) if sw else b for bi, b in enumerate(content) if bi not in g]
        if _meaningful(kept):
            edited[mi] = {**message, "content": kept}
        else:
            skip.add(mi)
    # Untouched messages are shared, not copied.
    if edited:
        out = [edited.get(mi, m) for mi, m in enumerate(messages) if mi not in skip]
    else:
        out = [m for mi, m in enumerate(messages) if mi not in skip]
    if skip:
        out = _merge_roles(out)
    return Compacted(out, [name], truncated, dropped, marks=marks)


def _meaningful(content: list) -> bool:
    """Whether a remnant is worth sending: something besides thinking and blank text (an
    assistant message of thinking alone is not a valid turn)."""
    for b in content:
        kind = b.get("type")
        if kind == "text":
            if str(b.get("text", "")).strip():
                return True
        elif kind not in _SILENT:
            return True
    return False


def _as_blocks(message: dict) -> list:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content or [])


def _merge_roles(messages: list[dict]) -> list[dict]:
    """Merge neighbours of one role (left behind when the messages between them were removed).

    For assistants, the later message's leading thinking blocks go first, since Anthropic wants
    an assistant turn with thinking to start with it.
    """
    # Runs of one role, then one new message per run longer than one (linear in the blocks).
    runs: list[list[dict]] = []
    for message in messages:
        if runs and runs[-1][0].get("role") == message.get("role"):
            runs[-1].append(message)
        else:
            runs.append([message])
    merged: list[dict] = []
    for run in runs:
        if len(run) == 1:
            merged.append(run[0])
            continue
        last = _as_blocks(run[-1])
        lead = 0
        if run[-1].get("role") == "assistant":
            while lead < len(last) and last[lead].get("type") in _SILENT:
                lead += 1
        content: list = last[:lead]
        for message in run[:-1]:
            content.extend(_as_blocks(message))
        content.extend(last[lead:])
        merged.append({**run[0], "content": content})
    return merged


# --- the built-in strategies ------------------------------------------------------------------


def _none(messages: list[dict]) -> Compacted:
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
    calls = _tool_calls(messages)
    plan: list[str | None] = [None] * len(calls)
    kept = 0
    for position, k in enumerate(range(len(calls) - 1, -1, -1), 1):
        if kept < max_chars:
            # Past the limit the count no longer matters, so later calls are never measured.
            mi, bi, ri, rbi = calls[k][:4]
            kept += _call_chars(messages[mi]["content"][bi], messages[ri]["content"][rbi] if ri >= 0 else None)
        elif position > full:
            if position > max_calls:
                plan[k] = _DROP
            else:
                plan[k] = _CLEAR if position > max_outputs else _TRUNCATE
    return _apply(messages, calls, plan, "shorten_tools")


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
    keys: list = []
    calls = _tool_calls(messages, keys)
    pinned, keep_from, whole_from = epoch_bounds(len(calls), s)
    if whole_from == 0:
        return Compacted(list(messages), ["shorten_tools_epoch"], stable=None)
    plan: list[str | None] = [_DROP] * keep_from + [_TRUNCATE] * (whole_from - keep_from)
    plan += [None] * (len(calls) - whole_from)
    for k in _newest_repeats(keys, pinned, whole_from):
        plan[k] = None
    result = _apply(messages, calls, plan, "shorten_tools_epoch")
    result.stable = _messages_through(result.messages, calls[pinned - 1][4])
    return result


def _messages_through(messages: list[dict], tool_use_id: Any) -> int:
    """How many leading messages of ``messages`` hold the call ``tool_use_id`` and its result
    (0 when it is not there): the end of the part an epoch keeps fixed."""
    for i in range(len(messages) - 1, -1, -1):
        content = messages[i].get("content")
        if messages[i].get("role") == "user" and type(content) is list and any(
                b.get("type") == "tool_result" and b.get("tool_use_id") == tool_use_id for b in content):
            return i + 1
        if messages[i].get("role") == "assistant" and any(u.get("id") == tool_use_id for u in _uses(messages[i])):
            return i + 1  # a call without its result yet ends the fixed part itself
    return 0


def _newest_repeats(keys: list, pinned: int, below: int) -> list[int]:
    """Indices below ``below`` of calls that are the newest of two or more identical calls
    (equal ``keys``) among the first ``pinned`` calls."""
    last: dict[Any, int] = {}
    repeated: set[Any] = set()
    for k in range(pinned):
        key = keys[k]
        if key in last:
            repeated.add(key)
        last[key] = k
    return [k for key, k in last.items() if k < below and key in repeated]


# tool_use id -> (the block, its key). Stored blocks are never mutated, so a key computed once
# holds while the block lives; the identity check guards against reused ids. Keys are what a
# long session's prepare_prompt would otherwise spend most of its time on, call after call.
_key_memo: dict[Any, tuple[dict, Any]] = {}
_KEY_MEMO_SIZE = 50_000


def _call_key(use: dict) -> Any:
    """The memoised ``_compute_key`` of a tool_use block."""
    hit = _key_memo.get(use.get("id"))
    if hit is not None and hit[0] is use:
        return hit[1]
    key = _compute_key(use)
    if len(_key_memo) >= _KEY_MEMO_SIZE:
        _key_memo.clear()
    _key_memo[use.get("id")] = (use, key)
    return key


def _compute_key(use: dict) -> Any:
    """A hashable key of a call's name and arguments, equal for equal calls whatever the key
    order. Flat arguments (the usual case) are keyed by a frozenset of their items, which costs
    far less than JSON (so ``1``, ``1.0`` and ``True`` count as equal there); nested ones by
    canonical JSON."""
    name, args = use.get("name"), use.get("input")
    try:
        return name, frozenset(args.items())
    except (AttributeError, TypeError):  # not a dict, or a list or dict among the values
        return name, json.dumps(args, sort_keys=True, default=str)


register_strategy("none", _none)
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
            for tid, mark in result.marks.items():
                if marks.get(tid) != "dropped":
                    marks[tid] = mark
            # A step's stable part counts in its own output; after an earlier step that was
            # not append-only, index spaces differ, so nothing is known to be stable.
            stable = result.stable if stable is None else (0 if result.stable is not None else stable)
            result = result.messages
        elif isinstance(result, list):
            before = {u.get("id") for m in current for u in _uses(m)}
            after = {u.get("id") for m in result for u in _uses(m)}
            for tid in before - after:
                marks[tid] = "dropped"
            stable = 0  # a plain list says nothing about what stays fixed
        else:
            raise TypeError(f"prompt strategy {name!r} returned {type(result).__name__}, not a list")
        current = result
        names.append(name)
    if current is messages:
        current = list(messages)
    truncated = sum(1 for m in marks.values() if m == "truncated")
    dropped = len(marks) - truncated
    if marks:
        current = _with_notice(current, truncated, dropped, ends_with_user=bool(messages) and messages[-1].get("role") == "user")
    count = len(current) if stable is None else min(stable, len(current))
    return Compacted(current, names, truncated, dropped, marks=marks, stable=count)


def _uses(message: dict) -> list[dict]:
    content = message.get("content")
    if type(content) is not list:
        return []
    return [b for b in content if b.get("type") == "tool_use"]


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
            out[i] = {**message, "content": _as_blocks(message) + [notice]}
            return out
    out.insert(0, {"role": "user", "content": [notice]})
    return out


def estimate_tokens(messages: list[dict]) -> int:
    """Estimated input tokens of ``messages``: characters / 4, rounded up.

    Characters: every text, thinking and tool-result string, each tool call's name and the JSON
    length of its arguments (approximated without serialising: string lengths + quotes, keys,
    separators), plus 8 per message and per block for the JSON framing. An image counts as
    ``IMAGE_TOKENS``. About right for English and code with Claude- and GPT-class tokenizers
    (±25%); it ignores the system prompt and tool definitions.
    """
    chars = 0
    for message in messages:
        content = message.get("content")
        chars += 8
        if isinstance(content, str):
            chars += len(content)
            continue
        for b in content or ():
            chars += 8
            kind = b.get("type")
            if kind == "text":
                chars += len(b.get("text") or "")
            elif kind == "tool_result":
                inner = b.get("content")
                if isinstance(inner, str):
                    chars += len(inner)
                else:
                    for part in inner or ():
                        if part.get("type") == "text":
                            chars += len(part.get("text") or "") + 8
                        elif part.get("type") == "image":
                            chars += IMAGE_TOKENS * 4
                        else:
                            chars += _value_chars(part)
            elif kind == "tool_use":
                chars += len(b.get("name") or "") + _value_chars(b.get("input"))
            elif kind == "thinking":
                chars += len(b.get("thinking") or "")
            elif kind == "image":
                chars += IMAGE_TOKENS * 4
            else:
                chars += _value_chars(b)
    return (chars + 3) // 4
