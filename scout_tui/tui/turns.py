"""The turn, as the TUI runs it: a prompt submitted (a slash command, held while a turn runs, or
sent), the waits before the first request, ``Session.turn`` in a worker with each event shown,
Esc, and a prompt no turn can send kept for the person.

A feature of ``ScoutApp`` (app.py): the turn itself is the session's (``Session.turn``, the one
loop every front end drives); this is what the TUI shows around it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from scout_tui.core import urgency
from scout_tui.core.errors import ScoutError
from scout_tui.session.commands import literal
from scout_tui.session.session import setup_problem
from scout_tui.tui.feature import Feature, feature_work
from scout_tui.widgets import Composer

if TYPE_CHECKING:
    from scout_tui.engine.agent import Agent


class Turns(Feature):
    """Sending prompts and running turns for ``ScoutApp``."""

    def submitted(self, message: Composer.Submitted) -> None:
        """Enter (or Tab, ``later``) in the composer: a slash command runs; during a turn the
        prompt is held (``PromptQueue.hold``: steering, or queued with ``later``); else it is sent."""
        app = self.app
        if app.slash.run_command(message.text):
            return
        text = literal(message.text) or message.text  # "//text" sends "/text"
        if app.busy:
            app.queue.hold(text, steer=not message.later)
            return
        self.run_turn(text)

    def send_command(self, name: str, args: str) -> None:
        """A markdown command typed (``/name args``): sent as a prompt is, its expansion made when
        its turn starts (``expanded``); held while a turn runs, for after it."""
        text = f"/{name} {args}".rstrip()
        if self.app.busy:
            self.app.queue.hold(text, steer=False)
        else:
            self.run_turn(text)

    async def expanded(self, text: str) -> str:
        """``text``, or when it runs a markdown command, the prompt it expands to
        (``slash.expand_command``: its ``!`cmd``` lines run as tool calls, asking when the rules say)."""
        from scout_tui.session.slash import expand_command

        parsed = self.app.commands.parse(text)
        markdown = self.app.markdown_commands.get(parsed.name) if parsed is not None else None
        if parsed is None or markdown is None or parsed.command is None or parsed.command.owner != markdown.origin:
            return text
        return await expand_command(self.app.session, markdown, parsed.args)

    def setup_problem(self) -> str:
        """Why no turn can run with this configuration ("" when one can): ``session.setup_problem``."""
        return setup_problem(self.app.session.config, self.app.plugins)

    def unsent(self, text: str, problem: str) -> None:
        """A prompt no turn can send (``problem``, from ``setup_problem``): back in the composer
        to send once that is fixed, unless the person typed a new one meanwhile (then it is
        shown in the chat, not stored)."""
        composer, chat = self.app.main_screen.composer, self.app.chat
        if composer.text.strip():
            chat.user_message(None, {"role": "user", "content": text})
            where = "shown above"
        else:
            composer.load_text(text)
            composer.move_cursor(composer.document.end)
            where = "kept in the composer"
        chat.add_notice(f"Not sent ({where}): {problem}", "error")

    def with_mentions(self, text: str) -> list[dict]:
        """The content of prompt ``text`` with its ``@`` mentions attached (in a thread: files
        are read); the mentions not attached are said in the chat. A path the permission rules
        deny to ``read`` is not attached."""
        from scout_tui.session.mentions import prompt_content

        app = self.app
        content, notes = prompt_content(text, app.cwd, app.permissions)
        for note in notes:
            app.call_from_thread(app.chat.add_notice, note, "warning")
        return content

    @feature_work(thread=True, exclusive=True, group="setup")
    def warn_setup(self) -> None:
        """Say in the chat why no turn can run with this configuration (no API key, an unknown
        provider), if so; in a thread, as it imports the backends (waiting for typed keys)."""
        with urgency.yielding():
            if problem := self.setup_problem():
                from scout_tui.session.runtime import SETUP_HELP, needs_key

                said = SETUP_HELP if needs_key(self.app.session.config) else problem
                self.app.call_from_thread(self.app.chat.add_notice, said, "warning")

    def ensure_agent(self) -> Agent:
        """The session's agent (``Session.ensure_agent``), built with what the app has loaded so
        far: skills, plugins, the model's window and prices, its permissions, sandbox, approval
        prompt and plan dialog. In a worker thread, the engine's imports wait for typed keys
        (``urgency.yielding``)."""
        app = self.app
        with urgency.yielding():
            app.session.agent_options = dict(skills=app.skills, plugins=app.plugins, permissions=app.permissions,
                                             sandbox=app.sandbox, approve=app.approve, review_plan=app.review_plan,
                                             info=app.long_session.model_info)
            return app.session.ensure_agent()

    async def ready(self, text: str | None) -> None:
        """Wait until the first request can carry all it should: a long session's older messages
        read, skills and plugin tools loaded, the MCP servers' tools (a short wait; Esc puts
        ``text`` back), the model's window and prices, and the tool calls' pane."""
        app = self.app
        await app.history_ready.wait()
        await app.extensions_ready.wait()
        await app.mcp_servers.wait_for_mcp(text)
        await app.model_ready.wait()
        await app.side_panes_ready.wait()

    def interrupt(self) -> None:
        """Esc: fold the side panes shown over the chat, if so; else cancel the newest prompt
        pending, if any; else the running turn (the worker closes it validly, see ``run_turn``);
        with nothing running, back to the composer from another pane."""
        app = self.app
        screen = app.screen
        if screen is app.main_screen and app.main_screen.side_shown:
            app.side_panes.hide_side_panes()
        elif app.queue.cancel_pending():
            return
        elif app.busy:
            app.workers.cancel_group(app, "agent")
        elif screen.focused is not None and not isinstance(screen.focused, Composer):
            screen.set_focus(app.main_screen.composer)

    @feature_work(exclusive=True, group="agent", exit_on_error=False)
    async def run_turn(self, text: str | None) -> None:
        """Run one user turn in the background (``Session.turn``); its events go to the panes as
        the session records them. ``text`` None sends the conversation again as it is
        (``/retry``). The next pending prompt, if any, goes as the next turn."""
        app = self.app
        session = app.session
        app.busy = True
        try:
            # Both import the engine (runtime, backends, httpx): in a thread, as a thread started
            # after the first frame may be importing it, and the event loop would wait for it.
            if problem := await asyncio.to_thread(self.setup_problem):
                if text is None:
                    app.chat.add_notice(f"Not sent: {problem}", "error")
                else:
                    self.unsent(text, problem)
                return
            await self.ready(text)
            if session.id is None:
                session.id = await asyncio.to_thread(app.store.create_session, app.cwd)
                app.status.session_id = session.id
                await asyncio.to_thread(app.models.record_switch)  # a /model made before the first message
            await asyncio.to_thread(self.ensure_agent)
            if text is not None:
                text = await self.expanded(text)
            content = None if text is None else await asyncio.to_thread(self.with_mentions, text)
            try:
                async with contextlib.aclosing(session.turn(content)) as events:
                    async for event in events:
                        app.delivery.shown(event)
            except asyncio.CancelledError:  # the session closed the turn validly: show how
                for event in session.interrupt_events():
                    app.delivery.shown(event)
                raise
        except ScoutError as e:
            app.chat.add_notice(str(e), "error")
        finally:
            app.busy = False
            app.sessions.refresh_sessions()
            app.long_session.estimate_context()
            if (text := app.queue.next_pending()) is not None:
                app.call_later(self.run_turn, text)
            else:  # the person's turn: say so if they look elsewhere
                app.notifier.turn_ended()
