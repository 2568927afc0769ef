"""The app's long-session side: model metadata, what the next request sends (the status bar's
estimate, Ctrl+O's prompt view and cache report), ``/compact`` with its preview, undoing a
compaction, and ``/cost``.

A feature of ``ScoutApp`` (app.py): it uses the app's agent, store, bus and panes, and keeps the
engine's facts where the engine keeps them (the agent's summary in force, the store's events).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from scout_tui.config import keys
from scout_tui.core import urgency
from scout_tui.core.errors import ScoutError
from scout_tui.config.models import ModelInfo
from scout_tui.widgets import ChatView, StatusBar
from scout_tui.tui.feature import Feature, feature_work

if TYPE_CHECKING:
    from scout_tui.engine.agent import Agent

# The engine's modules (runtime, backends, summary, context) are imported where they are used:
# all of it runs after the first paint (see app.py).


@dataclass
class ContextEstimated(Message):
    """The estimated size of the next request, in tokens."""

    tokens: int


class LongSession(Feature):
    """``/compact``, undo, ``/cost`` and model metadata for ``ScoutApp``."""

    model_info: ModelInfo | None = None

    # -- model metadata ------------------------------------------------------------------------

    @feature_work(thread=True, exclusive=True, group="model-info")
    def load_model_info(self) -> None:
        """Read the model's window and prices (models.dev, ``[models."ID"]``, the setting) and,
        for a server of our own, ask it for its window; off the event loop. First the provider
        key variables leave the environment (``keys.withhold``), before any tool can run. Its
        imports wait for typed keys (``urgency.yielding``)."""
        with urgency.yielding():
            self._load_model_info()

    def _load_model_info(self) -> None:
        keys.withhold()
        from scout_tui.session.runtime import model_metadata_asking_the_server, model_name, secret_settings

        self.app.call_from_thread(self.app.keys_withheld, keys.secrets(secret_settings(self.app.session.config)))
        self.app.call_from_thread(self._model_named, model_name(self.app.session.config))
        try:
            info = asyncio.run(model_metadata_asking_the_server(self.app.session.config))
        except Exception as e:  # turns wait for this: whatever fails, they must go on without it
            self.app.call_from_thread(self.app.notify, f"Model window and prices unknown: {e}", severity="error", timeout=15)
            info = ModelInfo(id=model_name(self.app.session.config))
        self.app.call_from_thread(self._model_info_loaded, info)

    def _model_named(self, name: str) -> None:
        """The model in use (the configured one, or the provider's default) on the status bar."""
        for status in self.app.query(StatusBar):  # none once the app is closing
            status.model = name

    def _model_info_loaded(self, info: ModelInfo) -> None:
        self.model_info = info
        self.app.model_ready.set()
        for status in self.app.query(StatusBar):
            status.context_window = info.context_window or 0
        if self.app.session.agent is not None and not self.app.busy:
            self.app.session.agent = None  # built again with the window and prices
        self.estimate_context()

    # -- what the next request sends ----------------------------------------------------------

    @feature_work(thread=True, exclusive=True, group="estimate")
    def estimate_context(self) -> None:
        """Estimate the next request's size off the event loop and show it in the status bar."""
        history = self.app.session.messages
        if not self.app.history_ready.is_set() or (history and history[0] is None):
            return  # estimated again once the whole conversation is read
        if not self.app.model_ready.is_set():
            return  # estimated again once the model's window is known
        try:
            agent = self.app.turns.ensure_agent()
            compacted = agent.window.preview(history)
        except (ScoutError, ValueError):
            return  # the chat already says what is wrong with the configuration
        self.app.post_message(ContextEstimated(agent.window.context_tokens(compacted)))

    def context_estimated(self, message: ContextEstimated) -> None:
        for status in self.app.query(StatusBar):  # none once the app is closing
            status.context_used = message.tokens

    def show_prompt(self) -> None:
        """Ctrl+O: the stored history beside what the next model call would send."""
        from scout_tui.widgets.prompt_view import PromptView

        if isinstance(self.app.screen, PromptView):
            self.app.screen.dismiss(None)
            return
        self._open_prompt_view()

    @feature_work(thread=True, exclusive=True, group="estimate")
    def _open_prompt_view(self) -> None:
        history = list(self.app.session.messages)
        if not self.app.history_ready.is_set() or (history and history[0] is None):
            self.app.call_from_thread(self.app.notify, "Still reading this session's older messages; try again in a moment.")
            return
        try:
            agent = self.app.turns.ensure_agent()
            compacted = agent.window.preview(history)
        except (ScoutError, ValueError) as e:
            self.app.call_from_thread(self.app.notify, str(e), severity="error")
            return
        budget = (f"; the token budget cut {compacted.budget_cut} results and dropped {compacted.budget_dropped} calls"
                  if compacted.budget_cut or compacted.budget_dropped else "")
        summary_note = (f" A summary stands for messages 0–{agent.window.compaction.at - 1}."
                        if agent.window.compaction is not None else "")
        summary = (
            f"Strategy {', '.join(compacted.strategies) or 'none'}: {compacted.truncated} tool calls truncated, "
            f"{compacted.dropped} dropped{budget}; about {compacted.tokens_before:,} tokens stored, "
            f"{compacted.tokens_after:,} sent (+{agent.window.overhead_tokens():,} for the system prompt and tools)."
            f"{summary_note} The store keeps everything. Esc closes.\n{self._window_note(agent)}\n"
            f"{self._cache_note(agent, compacted)}"
        )
        from scout_tui.widgets.prompt_view import PromptView

        self.app.call_from_thread(self.app.push_screen, PromptView(history, compacted.messages, compacted.marks, summary))

    def _window_note(self, agent: Agent) -> str:
        """Context window: its size and where it comes from, and the token estimate's calibration."""
        from scout_tui.session.status import window_line

        return f"Context window: {window_line(self.app.session.config, self.model_info, agent)}."

    def _cache_note(self, agent: Agent, compacted) -> str:
        """Prompt cache: whether the next request can reuse the previous one, and if not, why."""
        from scout_tui.backends.base import Request
        from scout_tui.engine.cache_report import PromptRecord, explain

        if agent.window.last_prompt is None:
            return "Prompt cache: no request sent yet in this run."
        request = Request(model=agent.backend.model, messages=compacted.messages, system=agent.window.system,
                          tools=agent.tools.specs())
        why = explain(agent.window.last_prompt, PromptRecord.of(request, compacted, agent.window.compaction))
        share = self.app.query_one(StatusBar).cache_share
        last = f" (the last request read {share:.0%} of its prompt from the cache)" if share is not None else ""
        return f"Prompt cache: {why}{last}." if why else (
            f"Prompt cache: the next request begins with the whole previous one, so the cache can reuse it{last}.")

    # -- /compact ------------------------------------------------------------------------------

    @feature_work(exclusive=True, group="agent", exit_on_error=False)
    async def compact_session(self, focus: str = "") -> None:
        """``/compact [focus]``: the summary model writes a summary of everything before the cut;
        the person reads and edits it in a preview; Enter applies it (a ``session.compacted``
        event), Esc cancels (its cost is still recorded)."""
        from scout_tui.session import compacting

        chat = self.app.chat
        if self.app.session.id is None:
            chat.add_notice("Nothing to compact yet: send a message first.", "warning")
            return
        self.app.busy = True
        status = self.app.query_one(StatusBar)
        try:
            await self.app.history_ready.wait()
            await self.app.extensions_ready.wait()
            await self.app.model_ready.wait()
            await asyncio.to_thread(self.app.turns.ensure_agent)  # may import the engine: see ``run_turn``
            from scout_tui.session.session import NotCompacted

            def writing(on: bool) -> None:
                status.state = "writing a summary…" if on else ""

            try:
                data = await compacting.compaction_summary(self.app.session, focus, writing=writing)
            except NotCompacted as e:
                chat.add_notice(str(e), "warning")
                return
            except ScoutError as e:
                chat.add_notice(f"Could not summarise the conversation: {e}", "error")
                return
            except asyncio.CancelledError:
                chat.add_notice(compacting.STOPPED)
                raise
            if await self._summary_not_applied(data):
                return
            from scout_tui.widgets.compaction import CompactPreview

            answered: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
            info = compacting.compaction_info(data)
            self.app.busy = False  # the preview is the person's to answer: no "working (Esc to interrupt)"

            def done(text: str | None) -> None:
                if not answered.done():
                    answered.set_result(text)

            await self.app.push_screen(CompactPreview(data["summary"], info=info), done)
            text = await answered
            if text is None:
                if (paid := compacting.cancelled(data)) is not None:  # its cost stays in the session's totals
                    await self.app.delivery.deliver(paid)
                chat.add_notice("Compaction cancelled: nothing changed.")
                return
            if text != data["summary"]:  # edited: what each request would carry is the edited text's
                data = await compacting.edited_compaction(self.app.session, data, text)
                if await self._summary_not_applied(data, paid=False):
                    return
            await self.app.delivery.deliver(compacting.apply_compaction(self.app.session, data))
        finally:
            self.app.busy = False
            self.estimate_context()

    async def _summary_not_applied(self, data: dict, *, paid: bool = True) -> bool:
        """Whether ``/compact``'s summary (``data``, a ``session.compacted`` event's) must not be
        applied (``compacting.unfit``: it would make each request larger, or not fit the window):
        then the chat says why and, ``paid``, the summary's cost is recorded."""
        from scout_tui.session import compacting

        why = await compacting.unfit(self.app.session, data)
        if why is None:
            return False
        if paid and (event := compacting.cancelled(data)) is not None:  # its cost stays in the session's totals
            await self.app.delivery.deliver(event)
        self.app.chat.add_notice(why, "warning")
        return True

    def show_compaction(self, data: dict) -> None:
        """A ``session.compacted`` event (from /compact, or the agent's automatic one), which the
        session added to its ``compactions``."""
        self.app.query_one(ChatView).add_compaction(data)
        if self.app.session.id and self.app.tree_pane is not None:
            self.app.tree_pane.set_compactions(self.app.session.id, self.app.session.compactions)
        self.app.notify(f"Compacted: about {data['tokens_before']:,} → {data['tokens_after']:,} tokens per request. "
                    "The marker in the chat shows the summary; u on it undoes the compaction.", timeout=8)

    # -- undo ------------------------------------------------------------------------------------

    def marker_undo(self, message) -> None:
        """``u`` on a compaction marker in the chat (``CompactionMarker.UndoRequested``)."""
        self.undo_compaction(message.count)

    def tree_undo_compaction(self, message) -> None:
        """``u`` on a compaction node of the tree (``SessionTree.UndoCompactionRequested``)."""
        if message.session_id != self.app.session.id:
            self.app.notify("Open that session first to undo its compaction.", severity="warning")
            return
        self.undo_compaction(message.count)

    def undo_compaction(self, count: int) -> None:
        """Undo a compaction, once the person confirms: a new branch forked just before it (its
        first ``count`` messages, without that summary); the compacted branch stays as it was.
        Asking first keeps a ``u`` typed into a focused marker from switching branches."""
        from scout_tui.widgets.dialogs import ConfirmScreen

        def answered(yes: bool | None) -> None:
            if yes:
                self.app.sessions.fork_session(count, undo=True)

        self.app.push_screen(ConfirmScreen(f"Undo this compaction? A new branch shares the first {count} messages "
                                       "without its summary; this branch stays as it is.", yes="undo"), answered)

    # -- /cost ---------------------------------------------------------------------------------

    @feature_work(thread=True, exclusive=True, group="cost")
    def show_cost(self) -> None:
        """``/cost``: spending by model, cache read and write, and by branch."""
        from scout_tui.widgets.cost_view import CostView

        session_id = self.app.session.id
        by_model = self.app.store.spending(session_id) if session_id else {}
        by_subagents = self.app.store.subagent_cost(session_id) if session_id else 0.0
        branches = self.app.store.tree(self.app.cwd)
        from scout_tui.session.cost import prices_note

        note = prices_note(self.model_info)
        self.app.call_from_thread(self.app.push_screen, CostView(by_model, branches, session_id, note=note,
                                                                 by_subagents=by_subagents))
