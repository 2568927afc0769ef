"""The context window of one agent's conversation: what the next request sends of it (the
summary in force, the prompt strategies, the token budget), summary compaction, and recovering
from a context-overflow error.

``Agent.window`` holds one, given what it reads (the settings, the conversation, the tools,
redaction, the summary model). No Textual, no database.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, AsyncIterator, Awaitable, Callable

from scout_tui.engine import summary as summaries
from scout_tui.backends.failures import overflow_window
from scout_tui.engine.budget import Estimator, fit
from scout_tui.core.bus import BeforeCompact, CompactCancelled, Event, Notice, PromptCompacted, SessionCompacted
from scout_tui.engine.cache_report import PromptRecord, explain
from scout_tui.engine.compaction import Compacted, compact, estimate_tokens
from scout_tui.core.errors import ModelError, ScoutError
from scout_tui.engine.history import repair
from scout_tui.core.messages import PrefixMemo, tool_results

if TYPE_CHECKING:
    from scout_tui.engine.settings import AgentSettings
    from scout_tui.tools.base import Registry

STILL_TOO_LONG = (
    "The prompt is still over the model's context window after compacting. Try `/compact` with a focus "
    "(e.g. `/compact the failing test`), `/fork N` to branch from an earlier message, or `/new`."
)
MIN_GAIN = 0.2
"""Automatic compaction runs only when the summary would save at least this share of a request."""
SUMMARY_ALLOWANCE = 1_500
"""Tokens counted for a summary before it is written (the instructions ask for a page or two); at
most an eighth of a small window (``summary_allowance``)."""
SQUEEZE = 0.6
"""Share of the usual token budget used after an overflow that no summary could answer."""


class PromptTooLong(ScoutError):
    """The prompt cannot fit the window even with every tool result cut: what the person typed
    is too long. Not sent (it would only be refused)."""

    kind = "context_overflow"


# What for_request made of the last few conversations: the next model call's conversation
# begins with the previous one, and handing on the very same dicts lets compaction recognise
# them by identity instead of comparing them.
_SENT = PrefixMemo()


def for_request(messages: list[dict]) -> list[dict]:
    """What may be sent: only role and content, without the person's messages the window refused.

    A partial answer (an assistant message marked ``incomplete``: cut by Esc or a failed stream,
    its text blocks only) is sent: the ``messages.turn_marker`` stored after it tells the model
    it was cut. A user message marked ``incomplete`` was refused before any answer
    (``MessageRefused``) and is never sent again. A new list; its dicts are shared with earlier calls for the messages they have in common
    (``PrefixMemo``): read them only.
    """
    hit = _SENT.find(messages)
    n, sent = hit if hit is not None else (0, [])
    if n < len(messages):
        sent = sent + [{"role": m["role"], "content": m["content"]} for m in messages[n:]
                       if not (m.get("incomplete") and m["role"] == "user")]
        _SENT.keep(messages, sent)
    return list(sent)


def _overflow(error: ModelError) -> tuple[int | None, int | None]:
    """``(prompt tokens, window)`` a context-overflow ``error`` states: ``ModelError.overflow``,
    the window else read from its text (``overflow_window``: an error built without the body)."""
    counted, window = error.overflow
    return counted, window or overflow_window(str(error))


class ContextWindow:
    """What one agent's requests may hold of its conversation, and how the conversation is made
    to fit (see the module docstring).

    Args:
        settings: the agent's (``AgentSettings``). The window copies the fields it reads into
            attributes of the same names (the system prompt, ``max_tokens``, the strategies and
            their settings, ``context_window``, ``auto_compact``, the summary in force,
            ``keep_tokens``, the estimator, ``remember``), which the session changes later.
        messages: gives the conversation (``Agent.messages``, which each turn replaces), read
            at each use; ``[]`` before the first turn.
        tools: the tools offered (their definitions count in every request).
        redact: ``text`` with every secret replaced (``Agent.redact``), for what it says.
        write_summary: ``await write_summary(messages)`` sends ``messages``
            (``summary.request_messages``) to the summary model; returns the summary's text,
            redacted, and the summary request's ``usage`` event data (``Agent.write_summary``).
            Raises ``ScoutError`` when the request fails.
    """

    def __init__(self, settings: AgentSettings, *, messages: Callable[[], list[dict]], tools: Registry,
                 redact: Callable[[str], str],
                 write_summary: Callable[[list[dict]], Awaitable[tuple[str, dict]]]) -> None:
        self._messages = messages
        self.tools = tools
        self.redact = redact
        self.write_summary = write_summary
        self.system = settings.system
        self.max_tokens = settings.max_tokens
        self.strategies = settings.strategies
        self.compaction_settings = settings.compaction_settings
        self.context_window = settings.context_window
        """The model's window, in tokens (None: unknown); an overflow error may teach it."""
        self.auto_compact = settings.auto_compact
        self.compaction = settings.compaction
        """The summary in force (``apply_compaction``; the session sets it when it opens one)."""
        self.keep_tokens = settings.keep_tokens
        self.estimator = settings.estimator or Estimator()
        self.remember = settings.remember
        self.last_prompt: PromptRecord | None = None  # what the previous request sent, for cache reports
        self._overhead: int | None = None
        self._squeeze = 1.0  # < 1 after an overflow no summary answered
        self._summary_failed = False  # an automatic summary failed in this turn: not again until the next
        self._futile: set[int] = set()  # spans (``_span``) whose summary came out too large
        self._last_tokens = 0  # the last request's calibrated size estimate, in tokens
        self._last_estimated = 0  # its size estimate before calibration (characters / 4), in tokens

    @property
    def messages(self) -> list[dict]:
        """The agent's conversation, as stored (the ``messages`` given)."""
        return self._messages()

    def start_turn(self) -> None:
        """A turn begins: an automatic summary that failed in the last one may be tried again."""
        self._summary_failed = False

    def use_system(self, system: str) -> None:
        """Send ``system`` as the system prompt from the next request on (the memory files
        changed: ``Session.refresh_memory``); the overhead estimate follows."""
        self.system, self._overhead = system, None

    def use_model(self, context_window: int | None) -> None:
        """The next request goes to another model (``Agent.use_backend``), whose window is
        ``context_window`` tokens (None: unknown): what was learnt of the old model's tokenizer
        and window is forgotten."""
        self.context_window = context_window
        self.estimator = Estimator()
        self._squeeze = 1.0

    def overhead_tokens(self) -> int:
        """Estimated tokens every request carries besides the conversation: the system prompt
        and the tool definitions (characters / 4, as ``compaction.estimate_tokens``)."""
        if self._overhead is None:
            self._overhead = (len(self.system) + len(json.dumps(self.tools.specs()))) // 4
        return self._overhead

    def reserve_tokens(self) -> int:
        """Output tokens kept free in the window: ``max_tokens``, at most a quarter of it."""
        return min(self.max_tokens, (self.context_window or 0) // 4) if self.context_window else self.max_tokens

    def budget_tokens(self) -> int | None:
        """Input tokens a request may use: the window less the reserve (None: window unknown)."""
        if not self.context_window:
            return None
        return int((self.context_window - self.reserve_tokens()) * self._squeeze)

    def preview(self, messages: list[dict] | None = None, *, budget: bool = True) -> Compacted:
        """What the next model call would see for ``messages`` (default: this conversation): the
        summary in force and the messages after its cut, the prompt strategies, the history
        check, then the token budget. ``stable`` ends where the budget pass changed anything.

        Raises:
            ScoutError: a bad compaction setting; ValueError: an unknown strategy name.
        """
        stored = self.messages if messages is None else messages
        seen = summaries.view(stored, self.compaction)
        compacted = compact(for_request(seen), self.strategies, self.compaction_settings)
        compacted.messages = repair(compacted.messages)
        limit = self.budget_tokens() if budget else None
        if limit is not None:
            fitted = fit(compacted.messages, limit, self.estimator, overhead=self.overhead_tokens())
            compacted.fits = fitted.fits
            if fitted.first_changed is not None:
                compacted.messages = fitted.messages
                compacted.marks = {**compacted.marks, **fitted.marks}
                compacted.stable = min(compacted.stable or 0, fitted.first_changed)
                compacted.budget_cut, compacted.budget_dropped = fitted.cut, fitted.dropped
                compacted.budget_from = fitted.first_changed
                compacted.tokens_after = estimate_tokens(compacted.messages)
        compacted.stable = min(compacted.stable or 0, len(compacted.messages))
        return compacted

    def context_tokens(self, compacted: Compacted) -> int:
        """The calibrated estimate of a request's input tokens: prompt, system and tools."""
        return int((compacted.tokens_after + self.overhead_tokens()) * self.estimator.ratio)

    # -- each request, and long sessions: summaries, overflow ---------------------------------

    def prompt_compacted(self, compacted: Compacted, record: PromptRecord) -> PromptCompacted:
        """The ``prompt.compacted`` event of the request about to be sent (``record``, made of
        ``compacted``, this conversation's ``preview()``): what compaction did, the calibrated
        size of the request, the window (it may have been learnt from an overflow error), and
        why the prompt cache cannot reuse ``last_prompt`` (``cache_report.explain``). Keeps the
        request's size estimates for ``learn`` and an overflow error (``recover``); the caller
        sets ``last_prompt`` to ``record`` once the event is delivered."""
        data = compacted.event_data()
        data["context_tokens"] = self._last_tokens = self.context_tokens(compacted)
        data["context_window"] = self.context_window
        data["cache"] = explain(self.last_prompt, record)
        self._last_estimated = compacted.tokens_after + self.overhead_tokens()
        return PromptCompacted(**data)

    async def learn(self, prompt_tokens: int) -> None:
        """Calibrate the estimator by the server's count of the last request's input tokens
        (``Usage.prompt_tokens``), and hand the calibration to ``remember`` when it learnt."""
        if self.estimator.learn(self._last_estimated, prompt_tokens):
            await self._remember()

    def over_threshold(self, compacted: Compacted) -> bool:
        """Whether to summarise before sending ``compacted`` (this conversation's ``preview()``):
        past ``auto_compact`` of the window, and a summary would save ``MIN_GAIN`` or more; or
        over the window even with every tool result cut (it would not be sent), and a summary
        would make it smaller at all, with ``auto_compact`` or without."""
        if not self.context_window or self._summary_failed or self._overhead_over():
            return False  # no summary can help, or one failed in this turn already
        if not compacted.fits:
            return self.compaction_gain() > 0
        if not self.auto_compact:
            return False
        over = (compacted.budget_cut or compacted.budget_dropped
                or self.context_tokens(compacted) > self.auto_compact * self.context_window)
        return bool(over) and self.compaction_gain() >= MIN_GAIN

    def _overhead_over(self) -> bool:
        """Whether the system prompt and the tool definitions alone are over the token budget."""
        budget = self.budget_tokens()
        return budget is not None and int(self.overhead_tokens() * self.estimator.ratio) >= budget

    def _learn_window(self, error: ModelError) -> bool:
        """Learn from a server's context-overflow ``error``: its own count of the refused prompt
        calibrates the estimator, and the window it names (``ModelError.overflow``, else
        ``overflow_window`` of its text) is taken when ours is unknown or larger, and kept for
        later runs. When it names no window, the refused prompt's size (the server's count, else
        our estimate) is an upper bound of it, taken when no smaller window is known, so the
        retry is smaller; returns True in that case only."""
        counted, window = _overflow(error)
        if counted and self.estimator.learn(self._last_estimated, counted):
            self._last_tokens = counted
        if window is not None:
            if self.context_window is None or window < self.context_window:
                self.context_window = window
            return False
        if self._last_tokens and (self.context_window is None or self._last_tokens < self.context_window):
            self.context_window = self._last_tokens
            return True
        return False

    async def _remember(self, window: int | None = None) -> None:
        """Hand what was learnt of this model and server to ``remember`` (in a thread: it writes
        a file), so that the next run starts from it."""
        if self.remember is not None:
            await asyncio.to_thread(self.remember, self.estimator.ratio, self.estimator.samples, window)

    async def recover(self, error: ModelError, unanswered: list[ModelError]) -> AsyncGenerator[Event, None]:
        """Answer a context-overflow ``error``: learn the window, compact (a summary when one can
        be written and makes the prompt smaller, else the token budget, calibrated by the
        server's count of the refused prompt or, without one, harder, ``SQUEEZE``), so that the
        caller sends the prompt again when that changed it. Otherwise append to ``unanswered``
        the error that ends the turn (``Agent._refused``): resending the refused prompt would
        only be refused again."""
        refused = self.last_prompt
        guessed = self._learn_window(error)
        await self._remember(_overflow(error)[1])
        if self._overhead_over():  # no compaction can help
            unanswered.append(ModelError(f"{error}\n\n{self.too_long()}", kind=error.kind, status=error.status,
                                         url=error.url))
            return
        text = "The prompt was over the model's context window; compacting it and sending it again."
        if guessed:
            text += (f" The server did not say how large the window is: taking it as under "
                     f"{self.context_window:,} tokens (set context_window to say).")
        yield Notice(text)
        summarised = False
        async for event in self.compact_to_fit(by="overflow"):
            summarised = summarised or isinstance(event, SessionCompacted)
            yield event
        if not summarised and not error.overflow[0]:
            self._squeeze = SQUEEZE  # the server did not count the prompt: our estimate cannot be trusted
        if refused is not None and self._unchanged(refused):  # the person's own text is over the window
            unanswered.append(ModelError(f"{error}\n\n{self.too_long()}", kind=error.kind, status=error.status,
                                         url=error.url))

    def too_long(self) -> str:
        """What to say when the prompt cannot fit even with every tool result cut: that the
        system prompt and tools alone are over the window; else the largest message the person
        typed and the fork that leaves it out, when that message is what does not fit; else that
        the conversation does not (a summary could not make room)."""
        window = f"{self.context_window:,}" if self.context_window else "its"
        ratio = self.estimator.ratio
        if self._overhead_over():
            return (f"The system prompt and the tool definitions alone are about "
                    f"{int(self.overhead_tokens() * ratio):,} tokens: with {self.reserve_tokens():,} kept for the "
                    f"answer they do not fit the model's context window ({window} tokens), whatever the "
                    "conversation. Use a larger window (llama.cpp: `llama-server -c`), or fewer tools "
                    "(MCP servers, plugins).")
        typed = [(estimate_tokens([m]), i) for i, m in enumerate(self.messages)
                 if m.get("role") == "user" and not tool_results(m) and not m.get("incomplete")]
        budget = self.budget_tokens()
        tokens, index = max(typed) if typed else (0, -1)
        if not typed or (budget is not None and tokens * ratio < budget / 2):
            return (f"The conversation does not fit the model's context window ({window} tokens) even with "
                    f"every tool result cut, and a summary could not make room.\n\n{STILL_TOO_LONG}")
        return (f"Message {index}, which you typed, is about {int(tokens * ratio):,} tokens: with the "
                f"rest of the prompt it does not fit the model's context window ({window} tokens), and compacting "
                f"never cuts what you typed. `/fork {index}` starts a branch just before it, where you can send a "
                f"shorter one (or attach less).")

    def _unchanged(self, refused: PromptRecord) -> bool:
        """Whether the next request would send the very messages of ``refused``."""
        try:
            return self.preview().messages == refused.messages
        except (ScoutError, ValueError):
            return False

    def plan_compaction(self, keep: int | None = None) -> int | None:
        """The cut point a summary would use now (None: nothing to summarise), keeping about
        ``keep`` tokens (at most ``keep_tokens``) of the newest messages verbatim. At most a
        quarter of the window stays verbatim, also when the window was learnt after the agent was
        made, and with ``auto_compact`` at most 40 % of the room its threshold leaves beside the
        system prompt, the tools and the summary, so that what a summary leaves does not cross
        the threshold again at once (on a small window the system prompt and tools are a good
        part of it)."""
        start = self.compaction.at if self.compaction else 0
        keep = self.keep_tokens if keep is None else min(keep, self.keep_tokens)
        if self.context_window:
            keep = min(keep, self.context_window // 4)
            if self.auto_compact:  # what stays must leave room before the next automatic one
                ratio = self.estimator.ratio
                threshold = min(self.context_window * self.auto_compact, self.budget_tokens() or 0)
                room = threshold - self.overhead_tokens() * ratio - self.summary_allowance()
                keep = min(keep, int(max(room, 0) * 0.4 / ratio))
        return summaries.cut_point(self.messages, keep, start)

    def summary_allowance(self) -> int:
        """Tokens counted for a summary not written yet: ``SUMMARY_ALLOWANCE``, at most an eighth
        of the window (on a 4k window a 1,500-token summary would leave no room for anything)."""
        return min(SUMMARY_ALLOWANCE, self.context_window // 8) if self.context_window else SUMMARY_ALLOWANCE

    def tokens_now(self, compaction: summaries.Compaction | None = None) -> int:
        """Calibrated tokens of the next request before the token budget (strategies only),
        with the summary in force or ``compaction``."""
        saved = self.compaction
        if compaction is not None:
            self.compaction = compaction
        try:
            return self.context_tokens(self.preview(budget=False))
        finally:
            self.compaction = saved

    def compaction_gain(self, cut: int | None = None) -> float:
        """The share of the next request's tokens a summary at ``cut`` (``plan_compaction``) would
        save, counting ``summary_allowance()`` tokens for the summary itself; 0.0 when none."""
        cut = self.plan_compaction() if cut is None else cut
        if cut is None:
            return 0.0
        before = self.tokens_now()
        after = self.tokens_now(summaries.Compaction(cut, len(self.messages), "")) + self.summary_allowance()
        return max(0.0, 1 - after / before) if before else 0.0

    def _summary_input(self, cut: int) -> tuple[int, list[dict]]:
        """The cut a summary can be written for, and the conversation its request sends: what is
        before ``cut`` (the summary in force first), fitted to the window with room for the
        instructions. When that is over the window even with every tool result cut, an earlier
        cut (a turn or round start) whose part fits: a history over the window is summarised in
        parts, oldest first, each summary standing in front of the next (``compact_to_fit``).

        Raises:
            ScoutError: not even the oldest part fits (the person's own text is over the window).
        """
        budget = self.budget_tokens()
        start = self.compaction.at if self.compaction else 0
        turns, rounds = summaries.cut_points(self.messages[:cut], start)
        tried = 0
        for at in [cut, *sorted(turns + rounds, reverse=True)]:
            before = summaries.view(self.messages[:at], self.compaction)
            prompt = repair(compact(for_request(before), self.strategies, self.compaction_settings).messages)
            if budget is None:
                return at, prompt
            # room for the instructions, as far as the window allows
            fitted = fit(prompt, budget - min(2_000, budget // 4), self.estimator, overhead=self.overhead_tokens())
            tried = tried or fitted.tokens
            if fitted.tokens <= budget:
                return at, fitted.messages
        raise ScoutError(f"what is to be summarised is over the context window (about {tried:,} tokens for "
                         f"{budget:,}) even with every tool result cut")

    async def compact_to_fit(self, by: str = "auto") -> AsyncGenerator[Event, None]:
        """``compact_now``, again while the next request is still over the window and each
        summary moved the cut on (a history over the window is summarised in parts); at most
        four summaries."""
        for _ in range(4):
            at = self.compaction.at if self.compaction else 0
            async for event in self.compact_now(by=by):
                yield event
            if self._summary_failed or (self.compaction.at if self.compaction else 0) == at:
                return
            try:
                if self.preview().fits:
                    return
            except (ScoutError, ValueError):
                return

    async def summarize(self, focus: str = "", *, by: str = "user", supplied: str | None = None,
                        cut: int | None = None) -> dict:
        """Write a summary of the conversation before the cut (``plan_compaction``) with the
        summary model, or take ``supplied`` (a plugin's); returns the ``session.compacted``
        event data. Nothing is applied: ``apply_compaction`` does that.

        Raises:
            ScoutError: nothing to summarise, or the summary request failed.
        """
        cut = self.plan_compaction() if cut is None else cut
        if cut is None:
            raise ScoutError("nothing to compact yet: the conversation is shorter than what a summary keeps")
        tokens_before = self.tokens_now()
        usage: dict | None = None
        if supplied is not None:
            text = supplied
        else:
            cut, prompt = self._summary_input(cut)
            text, usage = await self.write_summary(summaries.request_messages(prompt, focus))
        made = summaries.Compaction(cut, len(self.messages), text)
        tokens_after = self.tokens_now(made)
        return summaries.event_data(made, model=usage["model"] if usage is not None else "plugin",
                                    tokens_before=tokens_before, tokens_after=tokens_after, usage=usage,
                                    cost=usage["cost"] if usage else None, focus=focus, by=by)

    def _span(self, cut: int) -> int:
        """What a summary at ``cut`` would stand for, as a hash: the messages before it and the
        summary in force (the same numbers in another session, or after an edit, differ)."""
        return hash((json.dumps(self.messages[:cut], sort_keys=True, default=str),
                     self.compaction.summary if self.compaction else ""))

    def summary_unfit(self, data: dict) -> str | None:
        """Why a ``session.compacted`` event's summary (``summarize``) must not be applied, as a
        clause ("it would make each request larger (about 6,901 → 11,440 tokens)"), or None when
        it may: it makes the next request larger than without it, or the summary itself keeps
        that request over the window even with every tool result cut (it would fit with a
        shorter one; the token budget never cuts a summary). A request still over the window
        that a shorter summary would not help either is left to the next part's summary
        (``compact_to_fit``)."""
        if data["tokens_after"] >= data["tokens_before"]:
            return (f"it would make each request larger (about {data['tokens_before']:,} → "
                    f"{data['tokens_after']:,} tokens)")
        made = summaries.Compaction.from_event(data)
        if self._fits_with(made) or not self._fits_with(summaries.Compaction(made.at, made.count, "")):
            return None
        return (f"with it each request would be about {data['tokens_after']:,} tokens, over the model's "
                f"context window ({self.context_window:,} tokens)")

    def _fits_with(self, compaction: summaries.Compaction) -> bool:
        """Whether the next request fits the window with ``compaction`` in force (``preview``)."""
        saved = self.compaction
        self.compaction = compaction
        try:
            return self.preview().fits
        except (ScoutError, ValueError):
            return True  # the request reports it
        finally:
            self.compaction = saved

    def apply_compaction(self, data: dict) -> None:
        """Use a ``session.compacted`` event's summary from the next request on."""
        self.compaction = summaries.Compaction.from_event(data)

    async def compact_now(self, focus: str = "", *, by: str = "auto") -> AsyncIterator[Event]:
        """Summarise and apply, yielding ``session.before_compact`` (plugins may supply or veto
        the summary; the consumer must deliver it before asking for the next event), then
        ``session.compacted`` (which carries the summary request's usage), or a ``notice``
        saying why nothing was compacted."""
        cut = self.plan_compaction()
        if cut is None:
            yield Notice("Nothing to summarise yet: every message is newer than what a summary keeps verbatim.")
            return
        try:
            cut = self._summary_input(cut)[0]  # where a summary can be written: what plugins are told
        except ScoutError as e:
            self._summary_failed = True
            yield Notice(self.redact(f"Could not summarise the conversation: {e}"))
            return
        span = self._span(cut)
        if span in self._futile:  # asking again would bring the same too-long summary, and cost as much
            self._summary_failed = True
            start = self.compaction.at if self.compaction else 0
            yield Notice(f"Not summarising: the summary of messages {start}–{cut - 1} came out too large "
                         "earlier in this session. `/compact` with a focus may write a shorter one.")
            return
        if self.compaction_gain(cut) <= 0:
            self._summary_failed = True
            yield Notice("Not summarising: what a summary would stand for is smaller than a summary.")
            return
        hook = BeforeCompact(at=cut, count=len(self.messages), focus=focus, by=by)
        yield hook
        supplied, veto = hook.answer()
        if veto:
            yield Notice(f"Compaction vetoed by a plugin: {veto}")
            return
        yield Notice("Summarising the conversation to free the context window…")
        try:
            data = await self.summarize(focus, by=by, cut=cut, supplied=supplied)
        except ScoutError as e:
            self._summary_failed = True
            yield Notice(self.redact(f"Could not summarise the conversation: {e}"))
            return
        if why := self.summary_unfit(data):
            self._summary_failed = True
            self._futile.add(span)
            if data["usage"]:  # still paid for
                yield CompactCancelled(data["usage"], data["model"], data["cost"])
            yield Notice(f"The summary was not applied: {why}.")
            return
        self.apply_compaction(data)
        yield SessionCompacted(**data)
