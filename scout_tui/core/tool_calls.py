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
from collections.abc import Mapping, Sequence
from typing import Any

from scout_tui.core.messages import blocks, result_text

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
    walk = enumerate(messages)
    for mi, message in walk:
        if message.get("role") != "assistant":
            continue
        content = message.get("content")
        if type(content) is not list:
            continue
        count = len(content)
        # The usual shapes first: a call alone, or after one text or thinking block.
        if count == 1:
            use = content[0]
            if use.get("type") != "tool_use":
                continue
            bi = 0
        elif count == 2 and content[1].get("type") == "tool_use" and content[0].get("type") != "tool_use":
            use = content[1]
            bi = 1
        else:
            use = None
        if use is not None:
            tid = use.get("id")
            if keys is not None:
                # call_key inlined for its usual case (one string argument): this runs per call.
                args, name = use.get("input"), use.get("name")
                if type(args) is dict and len(args) == 1 and type(name) is str:
                    for k, v in args.items():
                        keys.append((name, k, v) if type(v) is str else call_key(use))
                else:
                    keys.append(call_key(use))
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
                append((mi, bi, mi + 1, 0, tid, count == 1, True))
                next(walk, None)  # that user message holds no call: skip it
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


def call_key(use: dict) -> Any:
    """A hashable key of a tool_use block's name and arguments (its id left out): two calls
    have equal keys when their names are equal and their arguments hold equal items, whatever
    the order of the argument keys.

    Arguments that are a mapping of hashable values (the usual case: strings and numbers) give
    the name and the items in key order, ``(name, k1, v1, k2, v2, ...)``, whose parts compare
    with ``==`` one by one as a frozenset of the items would (so ``1``, ``1.0`` and ``True``
    count as equal); a mapping of two or more items whose keys are not all strings gives
    ``(name, frozenset of the items)``. Nested arguments (a list or dict among the values) and
    arguments of another type give ``(name, canonical JSON)`` (or the frozenset of whatever
    ``items()`` they have). A flat key has an odd length and the others two, so keys of
    different kinds are never equal; and a tuple of strings and numbers is nothing the garbage
    collector has to follow (a frozenset per call made the first ``prepare_prompt`` of a
    5,000-call session pay for collections).
    """
    name, args = use.get("name"), use.get("input")
    key: tuple[Any, ...]
    if type(args) is dict or isinstance(args, Mapping):
        try:
            if len(args) == 1:
                for k, v in args.items():
                    key = (name, k, v)
            elif all(type(k) is str for k in args):
                key = (name, *[part for k in sorted(args) for part in (k, args[k])])
            else:
                key = (name, frozenset(args.items()))
            hash(key)
            return key
        except TypeError:  # a list or dict among the values
            return name, json.dumps(args, sort_keys=True, default=str)
    try:
        return name, frozenset(getattr(args, "items")())  # None or a non-mapping: the except below
    except (AttributeError, TypeError):
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
    return match is not None and int(match[1]) > len(text) and f"<...{match[1]} - " in text


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
            text = b.get("text", "")
            if type(text) is not str:
                text = str(text)
            if text and not text.isspace():  # text.strip(), without copying the text
                return True
        elif kind not in _SILENT:
            return True
    return False


def merge_roles(messages: list[dict]) -> list[dict]:
    """Merge neighbours of one role (left behind when the messages between them were removed).

    For assistants, the later message's leading thinking blocks go first, since Anthropic wants
    an assistant turn with thinking to start with it (see ``merged_content``).
    """
    # Runs of one role, then one new message per run longer than one (linear in the blocks).
    runs: list[list[dict]] = []
    role = run = None
    for message in messages:
        if run is not None and message.get("role") == role:
            run.append(message)
        else:
            run = [message]
            runs.append(run)
            role = message.get("role")
    merged: list[dict] = []
    for run in runs:
        if len(run) == 1:
            merged.append(run[0])
            continue
        parts = [content if type(content := m.get("content")) is list else blocks(m) for m in run]
        merged.append({**run[0], "content": merged_content(parts, run[-1].get("role") == "assistant")})
    return merged


def merged_content(parts: Sequence[Sequence[dict]], assistant: bool) -> list[dict]:
    """The blocks of a run of messages of one role merged into one (``parts``: each message's
    blocks, in order): all of them in order, except that for an ``assistant`` the last
    message's leading thinking blocks go first. A new list; ``parts`` are left as they are."""
    last = parts[-1]
    lead = 0
    if assistant:
        while lead < len(last) and last[lead].get("type") in _SILENT:
            lead += 1
    content = list(last[:lead])
    for part in parts[:-1]:
        content += part
    content += last[lead:]
    return content
