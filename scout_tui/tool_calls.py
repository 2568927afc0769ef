"""Tool calls in a conversation, and the edits compaction makes to them.

A *tool call* is a ``tool_use`` block plus the ``tool_result`` that answers it in the next
message, paired by id. Dropping a call removes both blocks; a message left with nothing but
thinking or blank text is removed, and neighbours of one role are merged so roles still
alternate. Untouched messages are shared with the input, never copied: a 5,000-call
conversation is mostly dropped or shared, so the cost is one scan plus the few calls that change.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from scout_tui.messages import blocks, result_text

# A call: (message index of its tool_use, block index, message index of its tool_result or -1,
# block index or -1, tool_use id, use alone, result alone). "Alone": the block is the only one
# of its message (the usual case), so dropping the call removes that message whole.
Call = tuple[int, int, int, int, Any, bool, bool]

_SILENT = frozenset({"thinking", "redacted_thinking"})


def find_calls(messages: list[dict], keys: list | None = None) -> list[Call]:
    """Every tool call, oldest first, each paired with its result in the next message by id.

    When ``keys`` is a list, the ``call_key`` of each call is appended to it (in the same pass,
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
                hit = _key_memo.get(tid)  # call_key inlined: this runs once per call
                keys.append(hit[1] if hit is not None and hit[0] is use else call_key(use))
        else:
            uses = [bi for bi, b in enumerate(content) if b.get("type") == "tool_use"]
            if not uses:
                continue
            if keys is not None:
                keys.extend([call_key(content[bi]) for bi in uses])
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


# --- one key per call, to spot repeats --------------------------------------------------------

# tool_use id -> (the block, its key). Stored blocks are never mutated, so a key computed once
# holds while the block lives; the identity check guards against reused ids. Keys are what a
# long session's prepare_prompt would otherwise spend most of its time on, call after call.
_key_memo: dict[Any, tuple[dict, Any]] = {}
_KEY_MEMO_SIZE = 50_000


def call_key(use: dict) -> Any:
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


# --- shortening a call -----------------------------------------------------------------------

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


def shorten_input(value: Any, size: int) -> Any:
    """``value`` with every string (nested in dicts and lists) shortened; the same object when
    nothing changed."""
    if isinstance(value, str):
        return _shorten(value, size)
    if isinstance(value, dict):
        new = {k: shorten_input(v, size) for k, v in value.items()}
        return value if all(new[k] is v for k, v in value.items()) else new
    if isinstance(value, list):
        items = [shorten_input(v, size) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else items
    return value


def shorten_result(block: dict, size: int) -> dict:
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
    text = result_text(content)
    if plain and len(text) <= size:
        return block
    return {**block, "content": _shorten(text, size)}


def call_chars(use: dict, result: dict | None) -> int:
    """Tool content of one call, in characters: the result text plus the JSON of the arguments
    (``json.dumps``, non-ASCII kept as is)."""
    chars = len(json.dumps(use.get("input", {}), ensure_ascii=False, default=str))
    if result is not None:
        chars += len(result_text(result.get("content")))
    return chars


# --- what is left after calls are removed ----------------------------------------------------


def meaningful(content: list) -> bool:
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


def merge_roles(messages: list[dict]) -> list[dict]:
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
        last = blocks(run[-1])
        lead = 0
        if run[-1].get("role") == "assistant":
            while lead < len(last) and last[lead].get("type") in _SILENT:
                lead += 1
        content: list = last[:lead]
        for message in run[:-1]:
            content.extend(blocks(message))
        content.extend(last[lead:])
        merged.append({**run[0], "content": content})
    return merged
