"""Events: the agent's only output, and the only thing subscribers (store, UI, plugins) see.

An event is a name from an open vocabulary plus a JSON-able dict of data. Names in use:

- ``message.user``      {message}: a stored user message (typed text, or tool results)
- ``message.delta``     {kind: "text"|"thinking", text}: streamed fragment, UI only, not stored
- ``message.assistant`` {message, usage, stop_reason, model, interrupted}: a finished assistant message
- ``tool.start``        {id, name, input}
- ``tool.output``       {id, text}: a live fragment of a running tool's output (UI only)
- ``tool.end``          {id, name, content, is_error, elapsed, diff?, output_path?}  (elapsed in seconds,
                        None when the call never ran; diff: the unified diff an edit or write made;
                        output_path: the file holding the whole output of a cut result)
- ``permission.ask``    {id, name, reason, suggestions}: a call waits for the person's answer
- ``permission.decision`` {id, name, decision: allow|allow_session|deny|stop, by: user|rule|headless|policy,
                        reason, rules?}: how it was answered (``rules``: what allow_session added)
- ``usage``             {input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cache_write_1h_tokens,
                        reasoning_tokens, model, cost}: one request's usage (cost in dollars, None if unknown)
- ``retry``             {attempt, max_attempts, delay, reason}
- ``prompt.compacted``  {strategies, truncated, dropped, tokens_before, tokens_after, stable, budget_cut,
                        budget_dropped, context_tokens, context_window, cache}: before each call (``context_tokens``: the
                        calibrated estimate of the whole request, system and tools included; ``cache``:
                        why the prompt cache cannot reuse the previous request, or "")
- ``session.before_compact`` {at, count, focus, by, summary: None, veto: None}: a summary is about to
                        be written; a plugin handler may set ``summary`` (its own text) or ``veto`` (why
                        not). UI and plugins only, not stored.
- ``session.compacted`` {at, count, summary, model, tokens_before, tokens_after, usage, cost, focus, by}:
                        see ``summary.py``
- ``notice``            {text}: something a person should read (e.g. max_turns reached)
- ``error``             {message, kind}
- ``turn.end``          {stop_reason}
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

# Events that stream fragments; they are shown live and never persisted one by one.
TRANSIENT = frozenset({"message.delta", "tool.output", "session.before_compact"})


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened. ``type`` is a dotted name; ``data`` is JSON-able."""

    type: str
    data: dict[str, Any] = field(default_factory=dict)


Handler = Callable[[Event], None]


class Bus:
    """Synchronous publish/subscribe by event name; ``"*"`` subscribes to every event."""

    def __init__(self) -> None:
        self._handlers: dict[str, list[Handler]] = defaultdict(list)

    def on(self, type: str, handler: Handler) -> None:
        """Call ``handler(event)`` for every emitted event named ``type`` (or all, for ``"*"``)."""
        self._handlers[type].append(handler)

    def emit(self, event: Event) -> None:
        """Deliver ``event`` to its subscribers in subscription order."""
        for handler in (*self._handlers.get(event.type, ()), *self._handlers.get("*", ())):
            handler(event)
