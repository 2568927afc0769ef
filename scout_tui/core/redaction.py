"""Secrets kept off everything shown, stored or sent on: every known key replaced by ``[redacted]``,
in whole text (``redact``), in messages (``redact_deep``) and in text that streams in pieces
(``StreamRedactor``)."""

from __future__ import annotations

from typing import Any


class StreamRedactor:
    """``redact`` for text that arrives in pieces: a secret cut between two pieces is still
    replaced whole. ``feed(piece)`` returns what is safe to show now: it holds back only the
    end of the text that could be the start of a secret (usually nothing), until the next
    piece or ``flush()``.
    """

    def __init__(self, secrets: tuple[str, ...]) -> None:
        self.secrets = tuple(s for s in secrets if s)
        self.carry = ""

    def feed(self, piece: str) -> str:
        if not self.secrets:
            return piece
        buffer = redact(self.carry + piece, self.secrets)
        cut = len(buffer) - _secret_start(buffer, self.secrets)
        self.carry = buffer[cut:]
        return buffer[:cut]

    def flush(self) -> str:
        rest, self.carry = self.carry, ""
        return rest


def _secret_start(text: str, secrets: tuple[str, ...]) -> int:
    """The length of the longest end of ``text`` that is the start of one of ``secrets`` (and
    shorter than it): what may still become a secret when more text comes."""
    longest = 0
    for secret in secrets:
        first = secret[0]
        start = max(0, len(text) - len(secret) + 1)
        at = text.find(first, start)
        while at != -1:
            if secret.startswith(text[at:]):
                longest = max(longest, len(text) - at)
                break  # later starts are shorter
            at = text.find(first, at + 1)
    return longest


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with every one of ``secrets`` replaced by ``[redacted]`` (give the longest first:
    a secret that contains another is then replaced whole)."""
    for secret in secrets:
        if secret and secret in text:
            text = text.replace(secret, "[redacted]")
    return text


def redact_deep(value: Any, secrets: tuple[str, ...]) -> Any:
    """``value`` (str, or dicts and lists of them, e.g. a message) with ``redact`` applied to every
    string in it, keys included; the same object when nothing in it held a secret."""
    if not secrets:
        return value
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        items = [(redact_deep(k, secrets), redact_deep(v, secrets)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items())):
            return value
        return dict(items)
    if isinstance(value, list):
        items = [redact_deep(v, secrets) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else items
    return value
