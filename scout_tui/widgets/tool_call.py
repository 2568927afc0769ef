"""One tool call as the tool pane and the chat know it (its output kept, capped, and the text
shown of it), and the calls of a stored conversation: data, no widget."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..core.messages import blocks, result_text
from ..core.text import clip, one_line, sanitize

OUTPUT_CAP = 200_000
"""Characters of output kept per tool call; the rest is counted, not kept."""

DETAIL_LINES = 2_000
DETAIL_CHARS = 200_000
"""What the detail area shows of a selected call's output at most (``text.clip``)."""


SUBAGENT_ROWS = 3
"""A subagent's own calls shown under its task's row: the newest."""


@dataclass
class Subagent:
    """What a ``task`` call's subagent is doing, from its events (``SubagentEvent``): ``agent``
    its name, ``step`` what it does now ("grep def parse", "writing…"), ``calls`` its own tool
    calls as ``[id, mark, "name summary"]`` (mark ``⠿`` running, ``✓``, ``✗``), ``cost`` dollars
    (None: nothing priced)."""

    agent: str
    step: str = "starting…"
    calls: list[list[str]] = field(default_factory=list)
    cost: float | None = None

    def apply(self, kind: str, data: dict) -> None:
        """Take in one of the subagent's events (its ``type`` and ``data``)."""
        from ..core.text import tool_summary

        if kind == "tool.start":
            line = f"{sanitize(str(data.get('name')))[:40]} {tool_summary(data.get('input') or {}, 50)}"
            self.calls.append([str(data.get("id")), "⠿", line])
            self.step = line
        elif kind == "tool.end":
            for call in reversed(self.calls):
                if call[0] == str(data.get("id")):
                    call[1] = "✗" if data.get("is_error") else "✓"
                    break
            self.step = "thinking…"
        elif kind == "message.delta":
            self.step = "thinking…" if data.get("kind") == "thinking" else "writing…"
        elif kind == "message.assistant":
            if data.get("cost") is not None:
                self.cost = (self.cost or 0.0) + float(data["cost"])
        elif kind == "permission.ask":
            self.step = f"awaiting approval: {data.get('name')}"
        elif kind == "turn.end":
            self.step = "interrupted" if data.get("stop_reason") == "interrupted" else ""

    def lines(self) -> list[tuple[str, str]]:
        """``(mark, text)`` rows under the task's: the newest calls (with how many came before)."""
        shown = self.calls[-SUBAGENT_ROWS:]
        earlier = len(self.calls) - len(shown)
        head = [("", f"… {earlier} earlier call{'s' * (earlier != 1)}")] if earlier else []
        return head + [(mark, text) for _, mark, text in shown]


@dataclass
class ToolCall:
    """What the pane knows about one tool call. ``elapsed`` is seconds, None when unknown."""

    id: str
    name: str
    summary: str
    key: str = ""  # the row's option id: unique even when a server reuses tool-call ids
    status: str = "running"  # "running" | "ok" | "error"
    waiting: bool = False  # waiting for the person's approval
    diff: str | None = None  # the unified diff of an edit or write that ran
    output_path: str | None = None  # where the whole output of a cut result is saved
    note: str = ""  # how it was let run, when that matters (outside the sandbox)
    started: float = field(default_factory=time.monotonic)
    elapsed: float | None = None
    parts: list[str] = field(default_factory=list)  # raw output, at most OUTPUT_CAP chars
    kept: int = 0
    dropped: int = 0
    subagent: Subagent | None = None  # a task call's subagent at work

    @property
    def raw(self) -> str:
        """The kept raw output."""
        if len(self.parts) > 1:
            self.parts = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""

    @property
    def output(self) -> str:
        """The kept raw output, with a last line saying how much was dropped, if any."""
        text = self.raw
        if self.dropped:
            text += f"\n… {self.dropped:,} more characters of output not kept"
        return text

    def set_result(self, content: object) -> None:
        """Keep a ``tool_result``'s ``content`` (its text: ``messages.result_text``) as the whole
        output, instead of the fragments kept while the call ran."""
        self.parts, self.kept, self.dropped = [], 0, 0
        self.add(result_text(content))

    def shown(self) -> str:
        """The output as it is shown (the pane's detail area; the chat's fold below 100 columns):
        the diff of an edit or write first, the output, where the whole of a cut output is
        saved; sanitized, clipped to ``DETAIL_LINES`` and ``DETAIL_CHARS``."""
        output = f"{self.diff}\n{self.output}" if self.diff else self.output
        if self.output_path:
            output += f"\n\n(full output: {self.output_path}; o opens it)"
        return clip(sanitize(output), DETAIL_LINES, DETAIL_CHARS)

    def add(self, text: str) -> None:
        room = OUTPUT_CAP - self.kept
        if room > 0:
            piece = text[:room]
            self.parts.append(piece)
            self.kept += len(piece)
        self.dropped += max(0, len(text) - max(room, 0))

    def first_line(self) -> str:
        head = self.parts[0] if len(self.parts) == 1 else "".join(self.parts[:64])
        return one_line(head[:8192], 120)

    def last_line(self) -> str:
        """The newest non-blank line of the output (what a running command printed last)."""
        tail = "".join(self.parts[-64:])[-8192:]
        lines = [line for line in sanitize(tail).splitlines() if line.strip()]
        return one_line(lines[-1], 120) if lines else ""


def stored_calls(messages: list[dict], unanswered: dict[str, dict]) -> list[tuple[dict, dict | None]]:
    """The ``tool_use`` blocks of ``messages`` in order, each with its ``tool_result`` block (the
    next one of its id: a server may reuse an id) or None. A call still without one takes it
    from ``unanswered`` (tool_use id -> result, results whose call came before ``messages``);
    results left unmatched are added to it."""
    calls: list[tuple[dict, dict | None]] = []
    waiting: dict[str, int] = {}  # tool_use id -> index in calls of its newest unanswered call
    for message in messages:
        for block in blocks(message):
            if block.get("type") == "tool_use":
                waiting[str(block.get("id"))] = len(calls)
                calls.append((block, None))
            elif block.get("type") == "tool_result":
                tool_use_id = str(block.get("tool_use_id"))
                if (at := waiting.pop(tool_use_id, None)) is not None:
                    calls[at] = (calls[at][0], block)
                else:
                    unanswered[tool_use_id] = block
    for tool_use_id, at in waiting.items():
        if (result := unanswered.pop(tool_use_id, None)) is not None:
            calls[at] = (calls[at][0], result)
    return calls
