"""A scripted model for long runs against the cache emulators: it reads files one tool call at a
time, answers summary requests with a summary, and ends with a final answer.

Used as the ``replies`` function of ``cache_emulator.loopback_handler`` (called only for
requests the emulator accepted), so every reply carries the usage the emulator billed.
"""

from __future__ import annotations

import json
from pathlib import Path

from cache_emulator import anthropic_sse, openai_sse

from scout_tui.engine.summary import INSTRUCTIONS

SUMMARY_MARK = INSTRUCTIONS.splitlines()[0][:60]
"""The start of the summary instructions: a request whose last user message holds it asks for a summary."""
FINAL = "All files are read: the checksums match."
SUMMARY = "## Current task\n\"Read every file in the folder and check them.\"\n\n## Next steps\nRead the next file."


def write_files(folder: Path, count: int, size: int) -> list[str]:
    """``count`` text files of ``size`` characters in ``folder`` (distinct contents); their names."""
    names = []
    for i in range(count):
        name = f"file_{i:03d}.txt"
        line = f"file {i:03d}: the quick brown fox jumps over the lazy dog {i * 7919 % 10007:05d}\n"
        (folder / name).write_text((line * (size // len(line) + 1))[:size])
        names.append(name)
    return names


def last_user_text(body: dict) -> str:
    """The text of the last user message of an Anthropic or OpenAI request body."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return json.dumps(message.get("content"), ensure_ascii=False)
    return ""


def is_summary_request(body: dict) -> bool:
    return SUMMARY_MARK in last_user_text(body)


class ScriptedModel:
    """Calls ``read`` on ``files`` in order (one call per answer), then answers ``FINAL``.

    ``api``: "anthropic" or "openai" (the stream format). Counts what it answered:
    ``calls`` (tool calls made), ``summaries`` (summary requests answered), ``finals``.
    """

    def __init__(self, api: str, files: list[str], *, final: str = FINAL, summary: str = SUMMARY) -> None:
        self.api = api
        self.files = list(files)
        self.final = final
        self.summary = summary
        self.calls = 0
        self.summaries = 0
        self.finals = 0

    def __call__(self, body: dict, usage: dict) -> bytes:
        if is_summary_request(body):
            self.summaries += 1
            return self._text(usage, self.summary)
        if self.calls < len(self.files):
            name = self.files[self.calls]
            self.calls += 1
            args = json.dumps({"path": name})
            if self.api == "anthropic":
                return anthropic_sse(usage, [f"Reading {name}."], (f"toolu_{self.calls:04d}", "read", [args]))
            return openai_sse(usage, [], (f"call_{self.calls:04d}", "read", [args]))
        self.finals += 1
        return self._text(usage, self.final)

    def _text(self, usage: dict, text: str) -> bytes:
        return anthropic_sse(usage, [text]) if self.api == "anthropic" else openai_sse(usage, [text])
