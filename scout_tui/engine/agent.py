"""The agent loop: model → tool calls → results → model, until plain text or ``max_turns``.

``Agent.run`` is an async generator of ``bus.Event``: it holds no widget, file handle or
database, so the TUI worker and headless ``-p`` share every line of it (the seed agent's design).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Callable
from contextlib import aclosing

from scout_tui.backends import offloop
from scout_tui.backends.base import (
    Backend,
    Completed,
    Request,
    Retrying,
    TextDelta,
    ThinkingDelta,
    Usage,
)
from scout_tui.engine import summary as summaries
from scout_tui.core.bus import (Error, Event, MessageAssistant, MessageDelta, MessageRefused, MessageUser, Notice, Retry,
                           ToolEnd, TurnEnd)
from scout_tui.engine.cache_report import PromptRecord
from scout_tui.engine.compaction import Compacted
from scout_tui.engine.context import STILL_TOO_LONG, ContextWindow, PromptTooLong
from scout_tui.core.errors import ModelError, ScoutError
from scout_tui.engine.history import error_result
from scout_tui.config.keys import MIN_SECRET
from scout_tui.core.messages import TOOL_INTERRUPTED, blocks, last_prompt, tool_results, tool_uses, turn_marker
from scout_tui.engine.settings import AgentSettings
from scout_tui.engine.stream_text import DeltaText, whole_characters
from scout_tui.engine.tool_runner import ToolRunner, result_block
from scout_tui.engine.turn_checkpoint import TurnCheckpoint
from scout_tui.tools.base import Registry
from scout_tui.core.redaction import redact_deep

if TYPE_CHECKING:
    from scout_tui.tools.approvals import Approver
    from scout_tui.tools.permissions import Policy
    from scout_tui.tools.sandbox import SandboxSettings


def user_message(text: str | list[dict]) -> dict:
    """A user message holding ``text`` as one text block, or the content blocks ``text`` (a
    prompt with its ``@`` mentions, ``mentions.prompt_content``)."""
    return {"role": "user", "content": [{"type": "text", "text": text}] if isinstance(text, str) else list(text)}


class Agent:
    """Runs turns of one conversation against ``backend`` with ``tools``.

    Args:
        backend: the model provider.
        tools: the tools offered; their failures become ``is_error`` results.
        settings: everything else (``AgentSettings``: prompt, limits, sandbox, policy,
            compaction, pricing, checkpoints, calibration; None: the defaults). The agent, its
            runner and its window copy the fields each uses into attributes of the same names,
            which ``use_backend`` and the session change later (the settings object is not kept).

    ``use_backend`` switches model and provider between requests (``runtime.switch_agent``).
    The tool calls of each reply are run by ``runner`` (a ``ToolRunner``); ``sandbox``,
    ``approve`` and ``permissions`` are its, changed through the agent by the front ends. What
    each request sends of the conversation, and summaries, are ``window``'s (a
    ``ContextWindow``: ``agent.window.preview()``, ``agent.window.context_window``…).
    """

    clock: Callable[[], float] = staticmethod(time.monotonic)
    """Seconds on a monotonic clock, for the ``elapsed`` of tool calls (tests fix it)."""

    def __init__(self, backend: Backend, tools: Registry, settings: AgentSettings | None = None) -> None:
        settings = settings if settings is not None else AgentSettings()
        self.backend = backend
        self.turn_checkpoint = TurnCheckpoint(settings.checkpoints)
        """A turn that may change files is snapshotted before its first such call and after it,
        and ends with a ``checkpoint`` event."""
        self.summary_provider = settings.summary_provider
        self._retired: list[Backend] = []  # backends replaced by use_backend, closed before the next request
        self._model = backend.model  # the model of the request in progress (or the last one)
        self.runner = ToolRunner(
            tools,
            cwd=settings.cwd or Path.cwd(),
            env=settings.tool_env,
            sandbox=settings.sandbox,
            secrets=tuple(sorted({s for s in settings.secrets if len(s) >= MIN_SECRET}, key=len, reverse=True)),
            permissions=settings.permissions,
            approve=settings.approve,
            output_dir=settings.output_dir,
            clock=lambda: self.clock(),  # read at each call: tests fix ``Agent.clock``
            before_change=self.turn_checkpoint.before_change,
        )
        self.max_turns = settings.max_turns
        self.key_source = settings.key_source
        """Where the API key sent comes from, added to a refused key's error (``runtime.key_source``)."""
        self.summary_backend = settings.summary_backend
        self.pricing = settings.pricing
        self.cache_key = settings.cache_key
        self.cache_ttl = settings.cache_ttl
        self.messages: list[dict] = []
        self.window = ContextWindow(settings, messages=lambda: self.messages, tools=tools, redact=self.redact,
                                    write_summary=self.write_summary)
        # State an interrupt needs to close the turn validly.
        self._partial: list[str] = []
        self._streaming = False
        self._turn_open = False  # between a turn's start and its turn.end
        self._open_calls: list[dict] = []
        self.steering: list[list[dict]] = []
        """Prompts (content blocks) the person sent while this turn runs, to go with the results of
        the running tool calls (``steer``); what is left when the turn ends is theirs to send next."""

    # -- the runner's settings, as the front ends set them --------------------------------------

    @property
    def tools(self) -> Registry:
        """The tools offered (the runner's)."""
        return self.runner.tools

    @property
    def cwd(self) -> Path:
        """The folder tools run in (the runner's)."""
        return self.runner.cwd

    @property
    def secrets(self) -> tuple[str, ...]:
        """Strings replaced by ``[redacted]`` in all the agent passes on, longest first."""
        return self.runner.secrets

    @property
    def sandbox(self) -> SandboxSettings | None:
        """How processes tools start are sandboxed (the runner's; None: unsandboxed)."""
        return self.runner.sandbox

    @sandbox.setter
    def sandbox(self, value: SandboxSettings | None) -> None:
        self.runner.sandbox = value

    @property
    def approve(self) -> Approver | None:
        """Asks the person about a call the policy asks about (the runner's; None: denied)."""
        return self.runner.approve

    @approve.setter
    def approve(self, value: Approver | None) -> None:
        self.runner.approve = value

    @property
    def permissions(self) -> Policy | None:
        """The permission policy tool calls are checked against (the runner's)."""
        return self.runner.permissions

    @permissions.setter
    def permissions(self, value: Policy | None) -> None:
        self.runner.permissions = value

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``[redacted]``."""
        return self.runner.redact(text)

    def kill(self, tool_use_id: str) -> bool:
        """Stop one running tool call (``ToolRunner.kill``); False when none of that id runs."""
        return self.runner.kill(tool_use_id)

    async def run(self, history: list[dict], text: str | list[dict] | None) -> AsyncGenerator[Event, None]:
        """One user turn (``_turn``); after its ``turn.end``, when it ran a call that may change
        files and files changed, a ``checkpoint`` event: the workspace's snapshot after the turn
        and what changed (and a notice naming files it changed that no snapshot keeps).

        ``text`` None sends ``history`` again without a new prompt: ``/retry`` of a turn that
        ended without a complete answer (``messages.retryable``), with the note that asks the
        model to carry on with it (``turn_marker("retry")``), stored as the turn's first message."""
        self.turn_checkpoint.begin(len(history) if text is not None else last_prompt(history))
        self._turn_open = True
        async with aclosing(self._turn(history, text)) as stream_:
            async for event in stream_:
                if isinstance(event, TurnEnd):
                    self._turn_open = False  # an interrupt from here on (the checkpoint) closes nothing
                yield event
                if isinstance(event, TurnEnd):
                    for after in await self.turn_checkpoint.after():
                        yield after

    async def checkpoint_interrupted(self) -> list[Event]:
        """After ``interrupt``: the ``checkpoint`` of the cancelled turn when it had begun
        changing files (what its calls did before Esc can be undone too), as ``run`` gives it."""
        return await self.turn_checkpoint.after()

    async def _turn(self, history: list[dict], text: str | list[dict] | None) -> AsyncGenerator[Event, None]:
        """One user turn: yields ``message.user`` first, then stream, tool and message events.
        ``text`` is the prompt, or its content blocks (``user_message``); None: no new prompt.

        ``history`` is the stored conversation (not mutated; ``self.messages`` stays message for
        message what the store holds, and only requests are repaired). Before a call whose
        prompt passes ``auto_compact`` of the window, the conversation is summarised; a
        context-overflow error is answered by compacting and retrying once. Ends with
        ``turn.end`` {stop_reason}; a model error ends the turn with an ``error`` event.
        """
        self.messages = list(history)
        self.runner.stopping = False
        self.window.start_turn()
        yield self._add_user(user_message(text) if text is not None else turn_marker("retry"))

        retried = False
        for _ in range(self.max_turns):
            try:
                prepared: Compacted | None = self.window.preview()
            except (ScoutError, ValueError):
                prepared = None  # _call_model reports it
            if prepared is not None and self.window.over_threshold(prepared):
                prepared = None  # the summary changes what the next request sends
                async with aclosing(self.window.compact_to_fit()) as stream_:
                    async for event in stream_:
                        yield event
            backend = self.backend  # a switch while this request streams takes effect at the next one
            try:
                completed = None
                async with aclosing(self._call_model(prepared, backend)) as stream_:
                    async for got in stream_:
                        if isinstance(got, Completed):
                            completed = got
                        else:
                            yield got
            except ModelError as e:
                if e.kind == "context_overflow" and not retried and not self._partial:
                    retried = True
                    unanswered: list[ModelError] = []
                    async with aclosing(self.window.recover(e, unanswered)) as stream_:
                        async for event in stream_:
                            yield event
                    if not unanswered:
                        continue
                    for event in self._refused(unanswered[0]):
                        yield event
                    return
                if e.kind == "context_overflow":
                    for event in self._refused(ModelError(f"{e}\n\n{STILL_TOO_LONG}", kind=e.kind, status=e.status,
                                                          url=e.url)):
                        yield event
                    return
                if e.kind == "auth" and self.key_source:
                    e = ModelError(f"{e}. {self.key_source}", kind=e.kind, status=e.status, url=e.url)
                for event in self._failed(e):
                    yield event
                return
            except ScoutError as e:
                for event in self._refused(e) if isinstance(e, PromptTooLong) else self._failed(e):
                    yield event
                return
            assert completed is not None  # a backend ends with Completed or raises
            retried = False  # the next overflow (the conversation grew again) gets its own retry
            usage = self._usage(completed.usage, backend.model)
            added = self._add_assistant(completed.message, usage=completed.usage.as_dict(),
                                        stop_reason=completed.stop_reason, cost=usage["cost"])
            reply = added.message  # redacted: a key the model wrote into a call's arguments is not used
            uses = tool_uses(reply)
            # From here on an interrupt must answer these calls, even before any of them runs.
            self._open_calls = list(uses)
            self.runner.start_reply()
            yield added
            if completed.stop_reason == "max_tokens":
                yield Notice(f"The answer was cut off at the output limit (max_tokens {self.window.max_tokens}). "
                             "Send “continue” to let it go on.")
            elif not uses and not any(b.get("type") in ("text", "redacted_thinking") for b in blocks(reply)):
                thought = any(b.get("type") == "thinking" for b in blocks(reply))
                yield Notice("The model answered only in its thinking, with no text after it." if thought
                             else "The model sent an empty answer.")
            if not uses:
                yield TurnEnd(completed.stop_reason)
                return
            async with aclosing(self.runner.run(uses, cut_last=completed.stop_reason == "max_tokens")) as stream_:
                async for event in stream_:
                    yield event
            yield self._add_results(uses)
            if self.runner.stopping:
                yield TurnEnd("stopped")
                return

        yield Notice(f"Stopped after {self.max_turns} model calls (max_turns). Send a message to let it continue.")
        yield TurnEnd("max_turns")

    def steer(self, content: list[dict]) -> None:
        """Send ``content`` (a prompt's blocks, ``user_message``) with the results of the tool
        calls running now, in the same user message after them, as Claude Code does: the model
        reads it before its next step. When no tool call follows, it stays in ``steering``."""
        self.steering.append(content)

    def _add_results(self, uses: list[dict]) -> MessageUser:
        """Append the user message answering the calls ``uses`` (the runner's results, in call
        order) and, unless the person stopped the turn, the prompts steered in meanwhile after
        them (``steer``); the event that records it."""
        content = [result_block(u["id"], self.runner.results[u["id"]]) for u in uses]
        if not self.runner.stopping:  # prompts sent meanwhile go after the results
            content += [block for steered in self.steering for block in steered]
            self.steering.clear()
        self._open_calls = []
        return self._add_user({"role": "user", "content": content})

    def _add_user(self, message: dict) -> MessageUser:
        """Append a user message to the conversation; the event that records it at its position."""
        message = redact_deep(message, self.secrets)
        self.messages.append(message)
        return MessageUser(message, index=len(self.messages) - 1)

    def _add_assistant(self, message: dict, *, usage: dict, stop_reason: str, interrupted: bool = False,
                       cost: float | None = None) -> MessageAssistant:
        """Append an assistant message; the event that records it, its usage and cost, and the
        model of the request that wrote it (not a model switched to meanwhile)."""
        message = redact_deep(message, self.secrets)
        self.messages.append(message)
        return MessageAssistant(message, usage, stop_reason, self._model, interrupted,
                                index=len(self.messages) - 1, cost=cost)

    def use_backend(self, backend: Backend, *, context_window: int | None,
                    pricing: Callable[[dict, str], float | None] | None = None, key_source: str = "",
                    summary_backend: Backend | None = None) -> None:
        """Send the next model request, and those after, to ``backend`` (another model, or
        another provider's server): ``runtime.switch_agent`` builds it from a profile.

        A request streaming now is not disturbed: it finishes on the backend it began with, and
        its answer is recorded with that model and priced by it. ``context_window`` (tokens),
        ``pricing`` and ``key_source`` become the new model's; ``summary_backend`` None means
        the new model writes summaries. What was learnt of the old model's tokenizer and
        window (the estimator's calibration, a window an overflow error named) is forgotten.
        The backends replaced are closed before the next request (``offloop.aclose``).
        """
        for old in (self.backend, self.summary_backend):
            if old is not None and old is not backend and old is not summary_backend and old not in self._retired:
                self._retired.append(old)
        self.backend = backend
        self.summary_backend = summary_backend
        self.pricing = pricing
        self.key_source = key_source
        self.window.use_model(context_window)

    async def _close_retired(self) -> None:
        """Close the backends ``use_backend`` replaced: no request of this agent uses them now."""
        retired, self._retired = self._retired, []
        for backend in retired:
            try:
                await offloop.aclose(backend)
            except Exception:  # noqa: BLE001  an idle client that fails to close must not fail the next request
                pass

    def interrupt(self) -> list[Event]:
        """Events that close a turn cancelled mid-way, leaving a valid conversation.

        Call after cancelling the task that consumed ``run``. The partial answer is kept (marked
        interrupted); every tool call without a result gets an error result saying so. With no
        call open, the turn is recorded as interrupted (``messages.turn_marker``), so the model is
        told at the next request and the prompt is not taken for part of the next one. Nothing
        when the turn had ended already (a cancel during its checkpoint).
        """
        events: list[Event] = []
        if not self._turn_open:
            self._streaming, self._open_calls = False, []
            return events
        self._turn_open = False
        if self._streaming:
            self._streaming = False
            text = "".join(self._partial)
            if text.strip():
                message = {"role": "assistant", "content": [{"type": "text", "text": text}], "incomplete": True}
                events.append(self._add_assistant(message, usage=Usage().as_dict(), stop_reason="interrupted",
                                                  interrupted=True))
        if self._open_calls:
            content = []
            for use in self._open_calls:
                result = self.runner.results.get(use["id"])
                if result is None:
                    started = self.runner.started.get(use["id"])
                    elapsed = None if started is None else round(self.clock() - started, 3)
                    events.append(ToolEnd(use["id"], use["name"], TOOL_INTERRUPTED, True, elapsed))
                    content.append(error_result(use["id"], TOOL_INTERRUPTED))
                else:
                    content.append(result_block(use["id"], result))
            self._open_calls = []
            events.append(self._add_user({"role": "user", "content": content}))
        else:  # no call's result can say so: the note does
            events.append(self._add_user(turn_marker()))
        events.append(TurnEnd("interrupted"))
        return events

    # -- one model call ---------------------------------------------------------------------

    async def _call_model(self, prepared: Compacted | None = None,
                          backend: Backend | None = None) -> AsyncGenerator[Event | Completed, None]:
        """One request to ``backend`` (None: ``self.backend``): ``prepared`` (this
        conversation's ``preview()``, when the caller has it) or a new preview, streamed; ends
        with the backend's ``Completed``."""
        backend = backend if backend is not None else self.backend
        if self._retired:
            await self._close_retired()
        try:
            compacted = prepared if prepared is not None else self.window.preview()
        except ValueError as e:  # an unknown strategy name
            raise ScoutError(str(e)) from None
        if not compacted.fits:  # the person's own text is over the window: it would only be refused
            raise PromptTooLong(self.window.too_long())
        prompt = compacted.messages
        self._model = backend.model
        request = Request(
            model=backend.model,
            messages=prompt,
            system=self.window.system,
            tools=self.tools.specs(),
            max_tokens=self.window.max_tokens,
            stable=compacted.stable or 0,
            cache_key=self.cache_key,
            cache_ttl=self.cache_ttl,
        )
        record = PromptRecord.of(request, compacted, self.window.compaction)
        yield self.window.prompt_compacted(compacted, record)
        self.window.last_prompt = record
        self._partial = []
        self._streaming = True
        streams = {"text": DeltaText(self.secrets), "thinking": DeltaText(self.secrets)}
        async with aclosing(offloop.stream(backend, request)) as stream_:  # read and parsed off this loop
            async for event in stream_:
                if isinstance(event, (TextDelta, ThinkingDelta)):
                    kind = "text" if isinstance(event, TextDelta) else "thinking"
                    if text := streams[kind].feed(event.text):
                        if kind == "text":
                            self._partial.append(text)
                        yield MessageDelta(kind, text)
                elif isinstance(event, Retrying):
                    streams = {kind: DeltaText(self.secrets) for kind in streams}  # the stream starts again
                    yield Retry(event.attempt, event.max_attempts, event.delay, self.redact(event.reason))
                elif isinstance(event, Completed):
                    self._streaming = False
                    for kind, stream in streams.items():
                        if text := stream.flush():
                            if kind == "text":
                                self._partial.append(text)
                            yield MessageDelta(kind, text)
                    await self.window.learn(event.usage.prompt_tokens)
                    yield dataclasses.replace(event, message=whole_characters(event.message))

    def _usage(self, usage: Usage, model: str) -> dict:
        """A ``usage`` event's data: the counts, the model and the cost in dollars (or None)."""
        data: dict[str, object] = {**usage.as_dict()}
        data["model"] = model
        data["cost"] = self.pricing(data, model) if self.pricing is not None else None
        return data

    async def write_summary(self, messages: list[dict]) -> tuple[str, dict]:
        """Send ``messages`` (``summary.request_messages``) to the summary model (the agent's own
        when none is set) with this agent's system prompt, tools and cache key, so the request
        can reuse the conversation's prompt cache; returns the summary's text, redacted, and the
        request's ``usage`` event data (``_usage``: counts, model, cost).

        Raises:
            ScoutError: the model call failed, or the reply held no text (``summary.write_summary``).
        """
        backend = self.summary_backend or self.backend
        request = Request(model=backend.model, messages=messages, system=self.window.system, tools=self.tools.specs(),
                          max_tokens=min(self.window.max_tokens, 8192), cache_key=self.cache_key, cache_ttl=self.cache_ttl)
        text, spent = await summaries.write_summary(backend, request)
        return self.redact(text), self._usage(spent, backend.model)

    def _refused(self, error: ScoutError) -> list[Event]:
        """Close a turn whose prompt does not fit the window (``_failed``). When nothing answered
        the person's message yet (it is the conversation's last), it is marked refused
        (``MessageRefused``): kept in the session, never sent again with later messages."""
        events: list[Event] = []
        at = len(self.messages) - 1
        message = self.messages[at] if at >= 0 else {}
        if message.get("role") == "user" and not tool_results(message) and not message.get("incomplete"):
            self.messages[at] = {**message, "incomplete": True}
            events.append(MessageRefused(at))
            error = ModelError(f"{error}\n\nYour message was not sent: it stays in the session, and is not sent "
                               "with later messages.", kind="context_overflow",
                               status=getattr(error, "status", None), url=getattr(error, "url", ""))
            return events + self._failed(error, note=False)  # no note: it would stand for a message never sent
        return events + self._failed(error)

    def _failed(self, error: ScoutError, *, note: bool = True) -> list[Event]:
        """Close a turn whose model call failed: keep any partial text, marked incomplete, and
        record the turn as failed (``messages.turn_marker``; not with ``note`` False, for a
        prompt refused unsent): the model is told at the next request, which ``/retry`` may
        send at once."""
        self._streaming = False
        events: list[Event] = []
        partial = getattr(error, "partial", None) or {"role": "assistant", "content": [{"type": "text", "text": "".join(self._partial)}]}
        kept = [b for b in blocks(partial) if b.get("type") == "text" and b.get("text", "").strip()]
        if kept:
            message = {"role": "assistant", "content": kept, "incomplete": True}
            events.append(self._add_assistant(message, usage=Usage().as_dict(), stop_reason="error", interrupted=True))
        kind = getattr(error, "kind", "config")
        if note:
            events.append(self._add_user(turn_marker(kind)))
        events.append(Error(self.redact(str(error)), kind))
        events.append(TurnEnd("error"))
        return events
