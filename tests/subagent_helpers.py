"""A scripted model for subagent runs, served by a loopback server speaking Anthropic's stream
format: the parent's first answer holds two ``task`` calls; each subagent reads its file with
one tool call, then answers; the parent then ends with text.

The children's first requests are held until both have arrived (or ``HOLD`` seconds passed, when
the child answers ``NOT CONCURRENT`` instead): a run whose subagents ran one after the other
fails the test instead of passing it slowly.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from tests.loopback import LoopbackServer, Recorded, Reply, anthropic_stream

HOLD = 60.0
"""Seconds a child's first request waits for the other's: a generous cap, never a measure."""

TASKS = {
    "A": {"description": "count alpha lines", "prompt": "CHILD-A: read alpha.txt and count its lines", "agent": "explore"},
    "B": {"description": "check beta", "prompt": "CHILD-B: read beta.txt and say its first word"},
}
ANSWERS = {"A": "A-ANSWER: alpha.txt has 3 lines.", "B": "B-ANSWER: beta.txt starts with Beta."}
FILES = {"A": ("alpha.txt", "alpha-inside-1\nalpha-inside-2\nalpha-inside-3\n"),
         "B": ("beta.txt", "Beta beta-inside-only\n")}
FINAL = "Both subagents are done."


def tool_stream(texts: list[str], calls: list[tuple[str, str, dict]], *, input_tokens: int = 100,
                output_tokens: int = 20) -> bytes:
    """``loopback.anthropic_stream`` with one ``tool_use`` block per ``(id, name, input)`` of
    ``calls`` (their arguments as one JSON fragment)."""
    return anthropic_stream(texts, tools=[(tid, name, [json.dumps(args)]) for tid, name, args in calls],
                            input_tokens=input_tokens, output_tokens=output_tokens)


def first_user_text(body: dict) -> str:
    messages = body.get("messages") or []
    return json.dumps(messages[0].get("content")) if messages else ""


class SubagentModel:
    """The handler of a ``LoopbackServer`` (``server()``): see the module's docstring.

    ``first_seen``: the order in which requests arrived, as "parent:N" / "A:N" / "B:N" (N the
    number of messages sent). ``hold``: seconds a child's first request waits for the other's.
    ``child_delay``: seconds between the pieces of each child's streamed answers (to keep them
    running while a test looks). ``gate``: when given, each child's answer stops halfway until
    the test sets it (or ``HOLD`` s pass), so a test sees them writing for as long as it looks."""

    def __init__(self, hold: float = HOLD, child_pieces: int = 1, child_delay: float = 0.0,
                 gate: threading.Event | None = None) -> None:
        self.hold = hold
        self.child_pieces = child_pieces
        self.child_delay = child_delay
        self.gate = gate
        self.first_seen: list[str] = []
        self._arrived = {"A": threading.Event(), "B": threading.Event()}

    def server(self) -> LoopbackServer:
        return LoopbackServer(handler=self.__call__)

    def __call__(self, recorded: Recorded) -> Reply:
        body = recorded.json()
        first = first_user_text(body)
        count = len(body.get("messages") or [])
        who = next((k for k in TASKS if f"CHILD-{k}" in first), "parent")
        self.first_seen.append(f"{who}:{count}")
        if who == "parent":
            if count == 1:
                calls = [(f"toolu_task_{k}", "task", TASKS[k]) for k in TASKS]
                return Reply(tool_stream(["I will split this up."], calls))
            return Reply(tool_stream([FINAL], []))
        if count == 1:
            self._arrived[who].set()
            other = "B" if who == "A" else "A"
            # Not under the server's lock: ``handler`` is called holding it, so wait outside it.
            return Reply(self._held(who, other))  # type: ignore[arg-type]  # an iterable body, made late
        text = ANSWERS[who]
        step = max(1, len(text) // self.child_pieces)
        body = tool_stream([text[i:i + step] for i in range(0, len(text), step)], [], output_tokens=5)
        pieces = [body[i:i + 200] for i in range(0, len(body), 200)]
        if self.gate is not None:
            return GatedReply(pieces, delay=self.child_delay, gate=self.gate)
        return Reply(pieces, delay=self.child_delay)

    def _held(self, who: str, other: str) -> "_Held":
        return _Held(self._arrived[other], self.hold,
                     tool_stream([], [(f"toolu_read_{who}", "read", {"path": FILES[who][0]})]),
                     tool_stream(["NOT CONCURRENT"], []))


class _Held:
    """A reply body made when the server sends it (``Reply.pieces``, after the handler's lock is
    released): ``ready`` once ``event`` is set within ``hold`` s, else ``late``."""

    def __init__(self, event: threading.Event, hold: float, ready: bytes, late: bytes) -> None:
        self.event, self.hold, self.ready, self.late = event, hold, ready, late

    def __iter__(self):
        yield self.ready if self.event.wait(self.hold) else self.late


@dataclass
class GatedReply(Reply):
    """A reply whose first half is sent at once and the rest once ``gate`` is set (or ``HOLD`` s
    passed): ``pieces`` is a generator, so the server sends as it goes."""

    gate: threading.Event = field(default_factory=threading.Event)

    def pieces(self) -> Iterator[bytes]:  # type: ignore[override]
        pieces = Reply.pieces(self)
        half = max(1, len(pieces) // 2)
        yield from pieces[:half]
        self.gate.wait(HOLD)
        yield from pieces[half:]


def write_files(folder) -> None:
    for name, text in FILES.values():
        (folder / name).write_text(text)


def request_texts(recorded: Recorded) -> str:
    return json.dumps(recorded.json().get("messages"))


def split_the_work(repo, env: dict[str, str], *flags: str,
                   model: SubagentModel | None = None) -> tuple[subprocess.CompletedProcess, SubagentModel, list[Recorded]]:
    """``scout-tui -p "split the work" FLAGS`` in ``repo`` (its files written first) against
    ``model`` (default a new ``SubagentModel``); the finished run, checked to have succeeded, the
    model and the requests it served."""
    from tests.headless_helpers import scout

    write_files(repo)
    model = model or SubagentModel()
    with model.server() as server:
        done = scout(["-p", "split the work", *flags, "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    return done, model, server.requests
