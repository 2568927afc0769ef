"""Summary compaction: the model writes a summary of everything before a cut point, and from then
on the prompt is that summary followed by the messages after the cut.

Stored as a ``session.compacted`` event {at, count, summary, model, tokens_before, tokens_after,
usage, cost, focus, by}: ``at`` is the cut (messages before it are summarised), ``count`` the
session's message count when it was made. The stored history keeps every byte; undoing a
compaction is a fork at ``count`` (a branch inherits only compactions made before its fork
point, see ``Store.compaction``). No Textual, no database: the agent and the app call these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scout_tui.core.messages import blocks, message_text, tool_results
from scout_tui.core.tokens import estimate_tokens

KEEP_TOKENS = 20_000
"""Tokens of the newest messages that stay verbatim after a compaction (about)."""

SUMMARY_HEADER = "[Conversation summary]"
SUMMARY_INTRO = (SUMMARY_HEADER + " The conversation before this point was summarised to fit the context window "
                 "(the session keeps every message). Continue the work from this summary and the messages after it.\n\n")

INSTRUCTIONS = """\
You are writing a handover summary of the conversation above, for yourself to continue from. It \
will replace the conversation in your context, so anything you leave out is lost to you.

Do not call any tool. Write these sections, in Markdown:

## Current task
The user's requests, quoted verbatim (all of them that still matter, newest last), and what \
done looks like.

## Open threads
Work in progress, unanswered questions and promises made, quoted verbatim where the wording \
matters.

## State of the work
Decisions taken and why; files read, created or changed (paths) and what changed; commands run \
and what they showed (errors verbatim); what failed and should not be tried again.

## Next steps
What to do next, in order.
"""


@dataclass(frozen=True)
class Compaction:
    """An applied summary: messages before ``at`` are replaced by ``summary`` in what the model
    sees; ``count`` is the session's message count when it was made."""

    at: int
    count: int
    summary: str

    @classmethod
    def from_event(cls, data: dict[str, Any]) -> "Compaction":
        """From a ``session.compacted`` event's data."""
        return cls(int(data["at"]), int(data.get("count", data["at"])), str(data["summary"]))


def view(messages: list[dict], compaction: Compaction | None) -> list[dict]:
    """What the model sees of the stored ``messages``: the summary as a user message, then the
    messages from the cut on (a user message at the cut is merged into it, roles alternate; not
    one the window refused, marked ``incomplete``: it is never sent, and the summary would go
    with it). Without a compaction, or one whose cut is past the end, ``messages`` itself."""
    if compaction is None or compaction.at > len(messages):
        return messages
    tail = messages[compaction.at:]
    intro = {"type": "text", "text": SUMMARY_INTRO + compaction.summary}
    if tail and tail[0].get("role") == "user" and not tail[0].get("incomplete"):
        first = tail[0]
        return [{**first, "content": [intro, *blocks(first)]}, *tail[1:]]
    return [{"role": "user", "content": [intro]}, *tail]


def is_summary_block(block: dict) -> bool:
    """Whether ``block`` is the summary text ``view`` put in front (for the prompt viewer)."""
    return block.get("type") == "text" and str(block.get("text", "")).startswith(SUMMARY_HEADER)


def cut_points(messages: list[dict], start: int = 0) -> tuple[list[int], list[int]]:
    """Where ``messages`` may be cut after ``start``: ``(turn starts, round starts)``, the
    indexes of user messages with typed text and of assistant messages, ascending."""
    turns, rounds = [], []
    for i in range(start + 1, len(messages)):
        message = messages[i]
        if message.get("role") == "assistant":
            rounds.append(i)
        elif any(b.get("type") == "text" for b in blocks(message)) and not tool_results(message):
            turns.append(i)
    return turns, rounds


def cut_point(messages: list[dict], keep_tokens: int = KEEP_TOKENS, start: int = 0) -> int | None:
    """Where to cut ``messages`` so that about the newest ``keep_tokens`` stay verbatim.

    A cut is an index whose message starts a turn (a user message with typed text) or a round
    of tool calls (an assistant message): the summary then stands in front of it, and no tool
    result loses its call. Prefers the turn start with the smallest tail of at least
    ``keep_tokens``; when that tail would be over twice as large (one long tool-heavy turn),
    the round start with the smallest such tail. Returns None when no cut after ``start`` (a
    previous cut) leaves something to summarise.
    """
    tail_tokens = [0] * (len(messages) + 1)
    for i in range(len(messages) - 1, -1, -1):
        tail_tokens[i] = tail_tokens[i + 1] + estimate_tokens([messages[i]])
    turns, rounds = cut_points(messages, start)

    def best(points: list[int]) -> int | None:
        fitting = [i for i in points if tail_tokens[i] >= keep_tokens]
        return max(fitting) if fitting else None

    turn, round_ = best(turns), best(rounds)
    if turn is not None and (round_ is None or tail_tokens[turn] <= 2 * keep_tokens):
        return turn
    if round_ is not None:
        return round_
    # Everything is newer than keep_tokens: cut as late as still leaves a message to summarise.
    points = sorted(turns + rounds)
    return points[len(points) // 2] if points else None


def request_messages(before: list[dict], focus: str = "") -> list[dict]:
    """The messages of a summary request: the conversation to summarise (already fitted to the
    window) and the instruction, with the person's ``focus`` when given."""
    ask = INSTRUCTIONS
    if focus.strip():
        ask += f"\nThe user asked the summary to focus on: {focus.strip()}\n"
    instruction = {"type": "text", "text": ask}
    if before and before[-1].get("role") == "user":
        last = before[-1]
        return [*before[:-1], {**last, "content": [*blocks(last), instruction]}]
    return [*before, {"role": "user", "content": [instruction]}]


def summary_text(message: dict) -> str:
    """The text of the model's summary reply (tool calls it made anyway are ignored)."""
    return message_text(message).strip()


def event_data(compaction: Compaction, *, model: str, tokens_before: int, tokens_after: int,
               usage: dict | None, cost: float | None, focus: str, by: str) -> dict[str, Any]:
    """The data of a ``session.compacted`` event (see the module docstring)."""
    return {"at": compaction.at, "count": compaction.count, "summary": compaction.summary, "model": model,
            "tokens_before": tokens_before, "tokens_after": tokens_after, "usage": usage or {}, "cost": cost,
            "focus": focus, "by": by}


async def write_summary(backend: Any, request: Any) -> tuple[str, Any]:
    """Send a summary ``request`` (a ``backends.base.Request``) and return ``(text, usage)``.

    Raises:
        ScoutError: the model call failed (a ``ModelError``), or the reply held no text.
    """
    from scout_tui.backends import offloop
    from scout_tui.backends.base import Completed
    from scout_tui.core.errors import ScoutError

    completed = None
    async for event in offloop.stream(backend, request):
        if isinstance(event, Completed):
            completed = event
    if completed is None:
        raise ScoutError("the summary request ended without an answer")
    text = summary_text(completed.message)
    if not text:
        raise ScoutError("the model answered the summary request without any text")
    return text, completed.usage
