"""Ctrl+C as terminal users expect it, and sending a failed or interrupted turn again (Alt+R,
``/retry``). A feature of ``ScoutApp`` (app.py).

Ctrl+C interrupts the running turn (the prompts pending come back to the composer, none goes
by itself); with no turn running it copies what is selected, else clears the composer (Ctrl+Z
brings the text back); on an empty composer it asks, in the footer, for a second press, which
quits (Claude Code's and most REPLs' way). Typing, or a turn starting, takes the question back.
In a dialog's text field with text (the approval's "Why not?"), Ctrl+C copies the field's
selection, else clears the field, and the turn runs on.
"""

from __future__ import annotations

from textual.screen import ModalScreen
from textual.widgets import Input, TextArea

from scout_tui.widgets import Composer
from scout_tui.tui.feature import Feature

QUIT_HINT = "Press Ctrl+C again to quit"
"""What the footer says after Ctrl+C on an empty composer with no turn running."""
RETRY_HINT = "Alt+R (or `/retry`) sends it again."
"""Added to the error line of a turn that failed: the key that sends it again."""
INTERRUPTED_NOTE = "Interrupted: the model is told with your next prompt. Alt+R (or `/retry`) sends this one again."
"""Shown in the chat when a turn is interrupted."""


class TurnKeys(Feature):
    """Ctrl+C and retry for ``ScoutApp``."""

    _quit_asked = False  # Ctrl+C was pressed once on an empty composer

    def ctrl_c_applies(self) -> bool:
        """Whether Ctrl+C is the app's here: not over a dialog while no turn runs (a dialog's
        field keeps Ctrl+C for copying), and always in a field with text (``ctrl_c``)."""
        return self.app.busy or not isinstance(self.app.screen, ModalScreen) or self._field_with_text() is not None

    def _field_with_text(self) -> Input | TextArea | None:
        """The focused text field other than the composer (a dialog's, such as the approval's
        "Why not?"), when it holds text the person may edit; else None."""
        field = self.app.screen.focused
        if isinstance(field, Input) and field.value:
            return field
        if isinstance(field, TextArea) and not isinstance(field, Composer) and not field.read_only and field.text:
            return field
        return None

    def ctrl_c(self) -> None:
        """Ctrl+C: in a dialog's field with text, copy its selection, else clear it (the turn
        runs on); else interrupt the running turn; else copy the selection; else clear the
        composer; else ask for a second press (said in the footer), which quits."""
        composer = self.app.query_one(Composer)
        if (field := self._field_with_text()) is not None:
            if field.selected_text:
                field.action_copy()
            else:
                field.clear()
        elif self.app.busy:
            self.take_back_pending()
            self.app.workers.cancel_group(self.app, "agent")  # the worker closes the turn validly (run_turn)
        elif composer.selected_text:
            composer.action_copy()
        elif self.app.screen.get_selected_text():
            self.app.screen.action_copy_text()
        elif composer.text:
            composer.clear()
        elif self._quit_asked:
            self.app.exit()
        else:
            self._quit_asked = True
            self.app.footer.say(QUIT_HINT)

    def take_back_quit(self) -> None:
        """Forget a first Ctrl+C on an empty composer: the footer stops asking."""
        if self._quit_asked:
            self._quit_asked = False
            self.app.footer.say("")

    def text_changed(self, message: TextArea.Changed) -> None:
        if isinstance(message.text_area, Composer):
            self.take_back_quit()

    def take_back_pending(self) -> None:
        """The pending prompts (steering or queued) back into the composer, after what it holds,
        one paragraph each: an interrupted turn sends none of them by itself."""
        texts = [p.text for p in self.app.queue.in_order()]  # as shown, and as they would have gone
        while self.app.queue.drop_newest_pending() is not None:
            pass
        if texts:
            composer = self.app.query_one(Composer)
            composer.load_text("\n\n".join(t for t in [composer.text.rstrip(), *texts] if t))
            composer.move_cursor(composer.document.end)

    def retry(self) -> None:
        """Alt+R or ``/retry``: when the last turn ended without a complete answer (failed, or
        interrupted, ``messages.retryable``), send the conversation again once, with the note
        asking the model to carry on (``Agent.run`` with None). Said in the chat when there is
        nothing to retry."""
        from scout_tui.core.messages import retryable

        if self.app.busy:
            self.app.notify("A turn is running: Ctrl+C or Esc interrupts it first.", severity="warning", timeout=4)
        elif not retryable(self.app.session.messages):
            self.app.chat.add_notice("Nothing to retry: the last turn did not fail and was not interrupted.", "warning")
        else:
            self.app.chat.add_notice("Retrying: the model is asked to carry on with the turn that was cut off.")
            self.app.busy = True  # from now: a second press before the worker starts is refused too
            self.app.turns.run_turn(None)
