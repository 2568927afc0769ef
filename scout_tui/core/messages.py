"""The message shape: the blocks of a message, its text, its tool calls (and the turn each belongs
to), the text of a result, and the note recording an interrupted or failed turn.

A message is a plain dict in the Anthropic Messages content-block shape
(https://docs.anthropic.com/en/api/messages): ``{"role": "user"|"assistant", "content": str |
[blocks]}``. Every module that reads a message's parts uses these functions, so "the text of a
tool result" means the same thing in the prompt, the backends, the panes and the exports.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def blocks(message: dict) -> list[Any]:
    """Content blocks of ``message``; a plain-string content becomes one text block. Each is a
    dict in a well-formed message; a stored or received one may hold anything, so callers check."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content or [])


def tool_uses(message: dict) -> list[dict]:
    """The ``tool_use`` blocks of an assistant message, in order."""
    return [b for b in blocks(message) if b.get("type") == "tool_use"]


def tool_results(message: dict) -> list[dict]:
    """The ``tool_result`` blocks of a user message, in order."""
    return [b for b in blocks(message) if b.get("type") == "tool_result"]


INTERRUPTED_TURN = "[Request interrupted by user]"
"""The text of the user message stored after a turn the person stopped before its answer was
complete (Claude Code's words): the model reads it at the next request."""
FAILED_TURN = "[Request failed: {reason}]"
"""The same after a turn whose model request failed (``reason``: the error's kind, in words)."""
RETRIED_TURN = "[Retry: the request above was cut off; carry on with it]"
"""The note ``/retry`` stores and sends: after an interrupt note the model would otherwise read
that it was stopped, and wait."""
TOOL_INTERRUPTED = "Interrupted by the user before this tool call finished."
"""The result of a tool call the person stopped (``Agent.interrupt``): the model is told by it,
so no ``turn_marker`` follows."""


def turn_marker(kind: str | None = None) -> dict:
    """The user message that records a turn ended without a complete answer: stopped by the
    person (``kind`` None, ``INTERRUPTED_TURN``) or failed with a ``ModelError`` kind such as
    ``overloaded`` (``FAILED_TURN``); or, with ``kind`` ``"retry"``, the note that asks the
    model to carry on with it (``RETRIED_TURN``, stored by ``/retry``). Stored after the turn's partial answer, if any, so the
    prompt is never taken for a new one at the next request (and a partial answer never for a
    whole one); the next prompt follows it (merged into one user message by ``history.repair``)."""
    text = INTERRUPTED_TURN if kind is None else RETRIED_TURN if kind == "retry" \
        else FAILED_TURN.format(reason=kind.replace("_", " "))
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def is_turn_marker(message: dict | None) -> bool:
    """Whether ``message`` is a ``turn_marker``: a user message of that one text block."""
    if not message or message.get("role") != "user":
        return False
    content = blocks(message)
    if len(content) != 1 or content[0].get("type") != "text":
        return False
    text = str(content[0].get("text") or "")
    head, _, tail = FAILED_TURN.partition("{reason}")
    return text in (INTERRUPTED_TURN, RETRIED_TURN) or (text.startswith(head) and text.endswith(tail) and "\n" not in text)


def retryable(messages: list[dict | None]) -> bool:
    """Whether the last turn of ``messages`` ended without a complete answer, so ``/retry`` may
    send it again: it ends with a ``turn_marker``, or with the results of tool calls the person
    stopped (one of them ``TOOL_INTERRUPTED``)."""
    last = messages[-1] if messages else None
    return is_turn_marker(last) or any(
        r.get("is_error") and result_text(r.get("content")) == TOOL_INTERRUPTED for r in tool_results(last or {}))


def is_prompt(message: dict | None) -> bool:
    """Whether ``message`` is a prompt the person sent: a user message that is neither tool
    results nor a ``turn_marker``."""
    return message is not None and bool(message) and message.get("role") == "user" \
        and not tool_results(message) and not is_turn_marker(message)


def last_prompt(messages: Sequence[dict]) -> int:
    """The position of the newest prompt (``is_prompt``) in ``messages``, 0 when there is none."""
    return next((i for i in range(len(messages) - 1, -1, -1) if is_prompt(messages[i])), 0)


def turn_of(messages: Sequence[dict | None], tool_use_id: str) -> int | None:
    """The turn of call ``tool_use_id``: the index of the prompt that began it (``bus.Checkpoint``
    counts turns so), i.e. of the last prompt (``is_prompt``) before the assistant message
    holding the call (a turn's later user messages carry its calls' results, a prompt sent
    meanwhile going with them; a turn sent again by ``/retry`` follows its ``turn_marker``). The
    newest such call counts. None when no message holds the call, or when a message looked at is
    not read yet (None in ``messages``)."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message is None:
            return None
        if message.get("role") == "assistant" and any(b.get("id") == tool_use_id for b in tool_uses(message)):
            for j in range(i - 1, -1, -1):
                prompt = messages[j]
                if prompt is None:
                    return None
                if is_prompt(prompt):
                    return j
            return None
    return None


def message_text(message: dict) -> str:
    """The text a person wrote or read in ``message``: its ``text`` blocks joined by newlines
    (thinking, tool calls and tool results left out)."""
    return "\n".join(str(b.get("text") or "") for b in blocks(message) if isinstance(b, dict) and b.get("type") == "text")


def thinking_text(message: dict) -> str:
    """The model's visible reasoning in ``message``: its ``thinking`` blocks joined by newlines."""
    return "\n".join(str(b.get("thinking") or "") for b in blocks(message)
                     if isinstance(b, dict) and b.get("type") == "thinking")


def has_text(message: dict) -> bool:
    """Whether ``message`` holds a text block with more than whitespace."""
    return any(isinstance(b, dict) and b.get("type") == "text" and str(b.get("text") or "").strip()
               for b in blocks(message))


def result_text(content: Any) -> str:
    """The text of a ``tool_result``'s ``content``: a string as it is; a list of blocks as its
    text blocks joined by newlines, any other block (an image) as ``[image block]``; None as "".
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) if b.get("type") == "text" else f"[{b.get('type', 'unknown')} block]"
            for b in content if isinstance(b, dict)
        )
    return str(content)


class PrefixMemo:
    """What a function computed for the last few conversations, found again for a conversation
    that begins with one of them.

    A session only grows at its end, and a prompt is prepared before every model call, each a
    few messages longer than the last: work done on the earlier messages can be kept. A
    conversation "begins with" a remembered one when its first messages compare equal to it
    (``list ==``: the same message objects compare in C without looking inside, so checking
    10,000 messages costs microseconds; equal copies cost a dict comparison each). Messages
    are never mutated in place (the stored conversation is append-only), which is what makes an
    equal prefix stand for equal content.

    Entries are replaced, never changed, so a memo shared between threads stays consistent.
    """

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self._entries: list[tuple[list[dict], Any]] = []

    def find(self, messages: list[dict], match: Callable[[Any], bool] | None = None) -> tuple[int, Any] | None:
        """``(n, value)``: the ``value`` kept for ``messages[:n]``, the most recently kept
        conversation that ``messages`` begins with and whose value ``match`` accepts (None:
        none)."""
        for i, entry in enumerate(self._entries):
            prefix, value = entry
            n = len(prefix)
            if len(messages) >= n and (match is None or match(value)) and messages[:n] == prefix:
                if i:  # the most recently used first
                    self._entries = [entry, *self._entries[:i], *self._entries[i + 1 :]]
                return n, value
        return None

    def keep(self, messages: list[dict], value: Any) -> None:
        """Remember ``value`` for (a copy of the list) ``messages``, forgetting the oldest entry
        beyond ``size``."""
        self._entries = [(list(messages), value), *self._entries[: self.size - 1]]

    def clear(self) -> None:
        """Forget every entry."""
        self._entries = []
