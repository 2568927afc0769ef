"""Tool output too long for the model: cut to its head and tail, the whole kept in a file.

``HeadTail`` keeps the cut in bounded memory; ``FullOutput`` writes the whole output to a file,
in a thread, once it grows past what the model is given, so neither the event loop nor
memory pays for a command that prints gigabytes.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from pathlib import Path

from scout_tui.core.redaction import StreamRedactor

MAX_OUTPUT_CHARS = 30_000
"""Characters of a tool's output the model is given: half from the start, half from the end."""

MAX_SAVED_CHARS = 100_000_000
"""Characters of output saved to the file at most; the rest is counted and noted there."""


class HeadTail:
    """Text kept as its first and last ``limit // 2`` characters, in bounded memory.

    ``add(text)`` any number of times; ``text()`` is everything when it fits in ``limit``
    characters, else head + ``"[... N characters omitted ...]"`` + tail.
    """

    def __init__(self, limit: int = MAX_OUTPUT_CHARS) -> None:
        self.half = limit // 2
        self.head = ""
        self.tail: list[str] = []
        self.tail_len = 0
        self.total = 0

    def add(self, text: str) -> None:
        self.total += len(text)
        if len(self.head) < self.half:
            room = self.half - len(self.head)
            self.head += text[:room]
            text = text[room:]
        if not text:
            return
        self.tail.append(text)
        self.tail_len += len(text)
        # Trim only once the tail is twice its size, so a stream of small chunks costs O(n).
        if self.tail_len > 2 * self.half:
            joined = "".join(self.tail)[-self.half :]
            self.tail, self.tail_len = [joined], len(joined)

    def text(self) -> str:
        head = self.head
        tail = "".join(self.tail)[-self.half :] if self.half else ""
        if self.total - len(head) - len(tail) <= 0:
            return head + tail
        # Cut at line ends when one is near, so no half line reaches the model.
        if (cut := head.rfind("\n")) >= len(head) // 2:
            head = head[: cut + 1]
        if 0 <= (cut := tail.find("\n")) < len(tail) // 2:
            tail = tail[cut + 1 :]
        omitted = self.total - len(head) - len(tail)
        return head.removesuffix("\n") + f"\n[... {omitted} characters omitted ...]\n" + tail



def cut_to_fit(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """``text`` when it fits in ``limit`` characters, else its head and tail around a marker."""
    kept = HeadTail(limit)
    kept.add(text)
    return kept.text()


class FullOutput:
    """The whole output of one call, written to ``path`` once it passes ``limit`` characters.

    ``add(text)`` as output arrives (cheap: below the limit it is kept in memory, past it it
    is queued for a writer thread); ``await close()`` returns the path of the file written,
    or None when the output fit (no file is made) or there was nowhere to write. A failure to
    write is not an error of the call: ``problem`` says what went wrong. Each of ``secrets``
    is written as ``[redacted]``, also when it arrives split across two pieces.
    """

    def __init__(self, path: Path | None, limit: int = MAX_OUTPUT_CHARS, secrets: tuple[str, ...] = ()) -> None:
        self.path = path
        self.limit = limit
        self.secrets = tuple(s for s in secrets if s)
        self.total = 0
        self.problem: str | None = None
        self._held: list[str] = []
        self._queue: queue.SimpleQueue[str | None] | None = None
        self._thread: threading.Thread | None = None

    def add(self, text: str) -> None:
        if self.path is None or not text:
            return
        self.total += len(text)
        if self._queue is None:
            self._held.append(text)
            if self.total > self.limit:
                self._queue = queue.SimpleQueue()
                self._thread = threading.Thread(target=self._write, args=(self._queue, self._held), daemon=True)
                self._held = []
                self._thread.start()
        elif self.total <= MAX_SAVED_CHARS:
            self._queue.put(text)

    def _write(self, pieces: queue.SimpleQueue[str | None], first: list[str]) -> None:
        assert self.path is not None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            redactor = StreamRedactor(self.secrets)
            with self.path.open("w", encoding="utf-8", errors="replace") as f:
                piece: str | None = "".join(first)
                while piece is not None:
                    f.write(redactor.feed(piece))
                    piece = pieces.get()
                f.write(redactor.flush())
                if self.total > MAX_SAVED_CHARS:
                    f.write(f"\n[... {self.total - MAX_SAVED_CHARS:,} more characters not saved]\n")
        except OSError as e:
            self.problem = f"could not save the full output to {self.path}: {e.strerror or e}"

    async def close(self) -> str | None:
        if self._queue is None or self._thread is None:
            self._held = []
            return None
        self._queue.put(None)
        await asyncio.to_thread(self._thread.join)
        return None if self.problem else str(self.path)


def save_output(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (UTF-8), making its folder. Raises OSError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", errors="replace")
