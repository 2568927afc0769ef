"""The model's streamed text made safe to pass on: whole characters (a proxy may split one
outside the BMP between two events) and secrets redacted even when cut between two deltas.

``Agent`` runs each stream's deltas through ``DeltaText`` and the finished message through
``whole_characters``. No Textual.
"""

from __future__ import annotations

from scout_tui.core.redaction import StreamRedactor
from scout_tui.core.text import SurrogateJoiner, repair_surrogates


class DeltaText:
    """One kind of streamed text (the answer, or thinking) made safe to pass on piece by piece:
    a character outside the BMP a proxy split between two events is joined again
    (``SurrogateJoiner``), and a secret is replaced even when cut between two events
    (``StreamRedactor``)."""

    def __init__(self, secrets: tuple[str, ...]) -> None:
        self.joiner = SurrogateJoiner()
        self.redactor = StreamRedactor(secrets)

    def feed(self, piece: str) -> str:
        """What of ``piece`` (the next delta) may be passed on now: whole characters, redacted."""
        return self.redactor.feed(self.joiner.feed(piece))

    def flush(self) -> str:
        """What is held back, once the stream ended."""
        return self.redactor.feed(self.joiner.flush()) + self.redactor.flush()


def whole_characters(message: dict) -> dict:
    """``message`` with the text and thinking of its blocks passed through ``repair_surrogates``
    (the same object when nothing needed it), so what is stored and sent again is valid UTF-8."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    fixed, changed = [], False
    for block in content:
        key = "thinking" if isinstance(block, dict) and block.get("type") == "thinking" else "text"
        value = block.get(key) if isinstance(block, dict) else None
        if isinstance(value, str) and (repaired := repair_surrogates(value)) is not value:
            block, changed = {**block, key: repaired}, True
        fixed.append(block)
    return {**message, "content": fixed} if changed else message
