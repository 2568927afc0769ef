"""What a ``task`` call's subagent is doing, as the front ends show it (the TUI's tool pane, an
ACP client's tool call): folded from its events (``bus.SubagentEvent``), Textual-free."""

from __future__ import annotations

from dataclasses import dataclass, field

from typing import TYPE_CHECKING

from scout_tui.core.text import one_line, sanitize, tool_summary

if TYPE_CHECKING:
    from scout_tui.core.bus import Event

SUBAGENT_ROWS = 3
"""A subagent's own calls shown under its task's row: the newest."""


@dataclass
class SubagentProgress:
    """What a ``task`` call's subagent is doing, from its events (``SubagentEvent``): ``agent``
    its name, ``step`` what it does now ("grep def parse", "writing…"), ``calls`` its own tool
    calls as ``[id, mark, "name summary"]`` (mark ``⠿`` running, ``✓``, ``✗``), ``cost`` dollars
    (None: nothing priced)."""

    agent: str
    step: str = "starting…"
    calls: list[list[str]] = field(default_factory=list)
    cost: float | None = None

    def take(self, event: Event) -> bool:
        """``apply`` a subagent's ``event`` (the innermost of a ``SubagentEvent``): a streamed
        delta by its kind alone, a tool's live output not at all (the tool pane and ACP show the
        subagent's calls, not what they print). Returns whether what is shown changed."""
        from scout_tui.core.bus import MessageDelta, ToolOutput  # with the first event: not at start-up

        if isinstance(event, ToolOutput):
            return False
        return self.apply(event.type, {"kind": event.kind} if isinstance(event, MessageDelta) else event.data)

    def apply(self, kind: str, data: dict) -> bool:
        """Take in one of the subagent's events (its ``type`` and ``data``); returns whether what
        ``lines`` and ``step`` show changed (a streamed delta changes it once, not per delta)."""
        step, count, marked = self.step, len(self.calls), False
        if kind == "tool.start":
            line = f"{sanitize(str(data.get('name')))[:40]} {tool_summary(data.get('input') or {}, 50)}"
            self.calls.append([str(data.get("id")), "⠿", line])
            self.step = line
        elif kind == "tool.end":
            for call in reversed(self.calls):
                if call[0] == str(data.get("id")):
                    call[1], marked = "✗" if data.get("is_error") else "✓", True
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
        return marked or self.step != step or len(self.calls) != count

    def lines(self) -> list[tuple[str, str]]:
        """``(mark, text)`` rows under the task's: the newest calls (with how many came before)."""
        shown = self.calls[-SUBAGENT_ROWS:]
        earlier = len(self.calls) - len(shown)
        head = [("", f"… {earlier} earlier call{'s' * (earlier != 1)}")] if earlier else []
        return head + [(mark, text) for _, mark, text in shown]

    def text(self, description: str) -> str:
        """Plain text of it: ``agent: description``, the newest calls, what it does now."""
        lines = [f"{self.agent}: {description}", *(f"  ↳ {mark} {text}".rstrip() for mark, text in self.lines())]
        if self.step:
            lines.append(f"  {one_line(self.step, 100)}")
        return "\n".join(lines)
