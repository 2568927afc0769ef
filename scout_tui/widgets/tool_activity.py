"""Live tool activity: one row per tool call, and the whole output of the row you select.

Rows live in an ``OptionList`` (keyboard and mouse selection for free); a 4 Hz timer redraws
only while something runs or changed, so thousands of small output fragments cost a list
append each. Output is kept raw (capped) and sanitized when drawn: an escape sequence split
across two fragments is still removed whole. The detail area is a ``Log``: it draws only the
visible lines, unwrapped, so 2,000 lines or a 200,000-character line cost little per frame,
and a running call's new output is appended rather than redrawn.

Keys on a row: Enter shows its output, ``o`` the saved whole of a cut output, ``x`` stops a
running call, Esc closes the output; ``d``, offered only on a call that may change files (a
tool not read-only: write, edit, bash, a plugin's; ``may_change_files``), asks for the files its
turn changed (``/diff`` at that turn).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Log, OptionList, Static
from textual.widgets.option_list import Option

from ..core.diffs import diff_lines
from ..core.figures import dollars
from ..core.messages import TOOL_INTERRUPTED
from ..core.text import one_line, reveal, sanitize, tool_summary
from ..core.subagent_progress import SubagentProgress
from .tool_call import DETAIL_CHARS, DETAIL_LINES, OUTPUT_CAP, ToolCall, stored_calls

if TYPE_CHECKING:
    from ..core.bus import Event

__all__ = ["DETAIL_CHARS", "DETAIL_LINES", "OUTPUT_CAP", "ToolActivity", "ToolCall"]

LOAD_LIMIT = 200
"""Tool calls of a stored session given rows when it is opened (the newest), and each time
Enter on the first row asks for earlier ones."""

EARLIER = "earlier"
"""The option id of the first row, which counts the stored calls without rows yet."""

DIFF_PREVIEW_LINES = 6
"""Changed lines of an edit or write shown under its row."""

FULL_OUTPUT_CHARS = 20_000_000
"""Characters of a saved full output that ``o`` shows at most."""

TICK = 0.25
"""Seconds between redraws of running rows (elapsed time, spinner, first output line)."""

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class ToolActivity(Vertical):
    """The tool-activity pane. Methods down (``start``, ``output``, ``end``…); posts ``Selected``."""

    DEFAULT_CSS = """
    ToolActivity {
        height: 1fr;
        background: $surface;
        & > #tool-list {
            height: 1fr;
            border: none;
            background: $surface;
            padding: 0;
        }
        & > #tool-detail {
            display: none;
            height: 2fr;
            background: $panel;
            border-top: solid $primary;
            padding: 0 1;
        }
        #tool-detail-body {
            height: 1fr;
            background: $panel;
        }
        &.-detail > #tool-detail {
            display: block;
        }
        #tool-detail-title {
            text-style: bold;
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close_detail", "Close output", id="tools.close_detail"),
        Binding("x", "kill", "Stop call", id="tools.kill"),
        Binding("o", "open_output", "Full output", id="tools.open_output"),
        Binding("d", "diff", "Diff", tooltip="The files this call's turn changed (/diff)", id="tools.diff"),
    ]

    @dataclass
    class Selected(Message):
        """A tool call's row was selected (Enter or click); its output is now shown."""

        tool_use_id: str

    @dataclass
    class KillRequested(Message):
        """The person asked to stop a running call (``x`` on its row)."""

        tool_use_id: str

    @dataclass
    class DiffRequested(Message):
        """The person asked for the files changed by the turn of a call (``d`` on its row)."""

        tool_use_id: str

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._calls: dict[str, ToolCall] = {}  # tool_use_id -> its newest call
        self._rows: dict[str, ToolCall] = {}  # row key -> call, one per row
        self._serial = 0
        self._dirty: set[str] = set()
        self._detail_id: str | None = None
        self._detail_written = 0  # raw output characters of the detail's call already shown
        self._frame = 0
        self._detail_parts: tuple[Static, Log] | None = None  # made when first shown (``_detail``)
        self.may_change_files: Callable[[str], bool] = lambda name: True
        """Whether a call of the tool of this name may change files (its row offers ``d``); the
        app answers as its agent does (a tool not read-only). Until told: every tool."""
        self._diff_offered = False  # whether the Footer was last drawn with d (``_highlighted_changed``)
        self._older: list[tuple[dict, dict | None]] = []  # stored calls without rows yet, oldest first
        self._unanswered: dict[str, dict] = {}  # tool_use id -> a stored result whose call is not read yet
        self._details: dict[str, dict[str, Any]] = {}  # ``set_details``, for rows made later

    def compose(self) -> ComposeResult:
        yield OptionList(id="tool-list")

    def _detail(self) -> tuple[Static, Log]:
        """The detail area's title and body, mounted the first time a call's output is shown:
        hidden until then, they stay out of the first frame (~3 ms of start-up)."""
        if self._detail_parts is None:
            self._detail_parts = (Static(id="tool-detail-title", markup=False),
                                  Log(id="tool-detail-body", auto_scroll=False))
            self.mount(Vertical(*self._detail_parts, id="tool-detail"))
        return self._detail_parts

    def on_mount(self) -> None:
        self._ticker = self.set_interval(TICK, self._tick, pause=True)

    def on_show(self) -> None:
        """Shown again (the side panes folded away in a narrow terminal, then shown over the
        chat): at the newest row, as rows added while hidden could not scroll it there."""
        self._follow()

    def _follow(self) -> None:
        """Keep the newest row in view, unless the person is in the pane reading older rows."""
        option_list = self._list
        if option_list.has_focus and option_list.scroll_y < option_list.max_scroll_y - 2:
            return
        option_list.call_after_refresh(option_list.scroll_end, animate=False, immediate=True)

    # -- methods down --------------------------------------------------------------------------

    def start(self, tool_use_id: str, name: str, input: dict) -> None:
        """Add a running row: name, one-line argument summary, spinner and elapsed seconds."""
        call = self._track(ToolCall(tool_use_id, sanitize(str(name))[:40], tool_summary(input, 60)))
        self._list.add_option(Option(self._prompt(call), id=call.key))
        self._follow()
        self._ticker.resume()

    def output(self, tool_use_id: str, text: str) -> None:
        """Keep a live fragment of a running call's output (O(1); the row redraws at 4 Hz)."""
        call = self._calls.get(tool_use_id)
        if call is None or call.status != "running":
            return
        call.add(text)
        self._dirty.add(call.key)

    def subagent(self, tool_use_id: str, agent: str, event: Event) -> None:
        """Take in ``event`` of the subagent a running ``task`` call ``tool_use_id`` runs
        (``SubagentProgress.take``): its row shows the step it is at and its newest calls (O(1);
        the row redraws at 4 Hz, and only when what it shows changed)."""
        call = self._calls.get(tool_use_id)
        if call is None:
            return
        if call.subagent is None:
            call.subagent = SubagentProgress(agent)
        if call.subagent.take(event):
            self._dirty.add(call.key)

    def set_waiting(self, tool_use_id: str, waiting: bool) -> None:
        """Show a running call as waiting for approval (or running again)."""
        if (call := self._calls.get(tool_use_id)) is not None and call.status == "running":
            call.waiting = waiting
            self._redraw(call)

    def note(self, tool_use_id: str, text: str) -> None:
        """Show ``text`` beside a call's name, e.g. that it runs outside the sandbox."""
        if (call := self._calls.get(tool_use_id)) is not None:
            call.note = text
            self._redraw(call)

    def end(self, tool_use_id: str, content: str, is_error: bool, elapsed: float | None, *,
            diff: str | None = None, output_path: str | None = None) -> None:
        """Finish a call: ✓ or ✗, ``elapsed`` seconds, and ``content`` as its whole output.

        ``diff``: the unified diff an edit or write made (the row shows its changed lines).
        ``output_path``: the file holding the whole output of a cut result (``o`` opens it).
        """
        call = self._calls.get(tool_use_id)
        if call is None:
            call = self._track(ToolCall(tool_use_id, "?", ""))
            self._list.add_option(Option(self._prompt(call), id=call.key))
        call.status = "error" if is_error else "ok"
        call.waiting = False
        call.elapsed = elapsed
        call.diff = diff
        call.output_path = output_path
        self._follow()  # the finished row may be taller (its diff, the saved-output line)
        call.set_result(content)
        self._redraw(call, full=True)

    def load(self, messages: list[dict]) -> None:
        """Rebuild the rows from a stored conversation's ``tool_use``/``tool_result`` blocks.

        A call with no result shows as an error. The newest ``LOAD_LIMIT`` calls get rows; the
        older ones wait behind a first row counting them (Enter there shows ``LOAD_LIMIT``
        more: ``show_earlier``), so a session of thousands of calls builds no more rows than
        one of 200. ``set_details`` adds diffs and durations, now or later.
        """
        self.clear()
        self._older = stored_calls(messages, self._unanswered)
        newest, self._older = self._older[-LOAD_LIMIT:], self._older[:-LOAD_LIMIT]
        options = [self._row(self._stored_call(*call)) for call in newest]
        self._list.add_options([*self._earlier_row(), *options])
        self._follow()  # the newest calls in view, as the chat opens at its newest messages

    def add_older(self, messages: list[dict]) -> None:
        """Count in the calls of ``messages``, the conversation's messages before those ``load``
        was given (a long session's older messages, read later): as rows above the others while
        fewer than ``LOAD_LIMIT`` are shown, the rest behind the first row, before the calls
        already waiting there. The rows in view stay in view (the newest, when it was)."""
        older = stored_calls(messages, self._unanswered)
        if not older:
            return
        self._older = older + self._older
        room = LOAD_LIMIT - len(self._rows)
        if room > 0:
            self._prepend(room)
        else:
            self._rebuild()

    def show_earlier(self) -> None:
        """Give rows to the ``LOAD_LIMIT`` newest of the calls waiting behind the first row, above
        the rows shown, and highlight the newest of them."""
        if self._older:
            count = self._prepend(LOAD_LIMIT)
            self._list.highlighted = count - (0 if self._older else 1)

    def _prepend(self, count: int) -> int:
        """Give rows to the ``count`` newest calls waiting behind the first row, above the rows
        shown; how many got one."""
        batch, self._older = self._older[-count:], self._older[:-count]
        shown = self._rows
        self._rows = {}
        for call in batch:
            self._stored_call(*call, newest=False)
        self._rows.update(shown)
        self._rebuild()
        return len(batch)

    def _rebuild(self) -> None:
        """Every row again, the first row counting the calls not shown first (if any); the row
        highlighted stays so, and a list scrolled to its end stays there."""
        option_list = self._list
        highlighted = option_list.highlighted
        kept = option_list.get_option_at_index(highlighted).id if highlighted is not None else None
        at_end = option_list.scroll_y >= option_list.max_scroll_y
        option_list.clear_options()
        option_list.add_options([*self._earlier_row(), *(self._row(call) for call in self._rows.values())])
        if kept is not None and kept in self._rows or kept == EARLIER and self._older:
            option_list.highlighted = option_list.get_option_index(kept)
        if at_end:
            option_list.call_after_refresh(option_list.scroll_end, animate=False, immediate=True)

    def _earlier_row(self) -> list[Option]:
        return [Option(self._earlier_prompt(), id=EARLIER)] if self._older else []

    def _earlier_prompt(self) -> Content:
        count = len(self._older)
        more = "them" if count <= LOAD_LIMIT else f"the newest {LOAD_LIMIT}"
        return Content.assemble(("▲ ", "$text-muted"), (f"{count:,} earlier call{'s' if count != 1 else ''}", "bold"),
                                (f"  Enter shows {more}", "$text-muted"))

    def _stored_call(self, use: dict, result: dict | None, *, newest: bool = True) -> ToolCall:
        """The row's call for a stored ``tool_use`` block and its ``tool_result`` block (None:
        it did not finish), with its details (``set_details``)."""
        call = self._track(ToolCall(str(use.get("id")), sanitize(str(use.get("name", "")))[:40],
                                    tool_summary(use.get("input") or {}, 60)), newest=newest)
        if result is None:
            call.status = "error"
            call.add("(no result: the call did not finish)")
        else:
            call.status = "error" if result.get("is_error") else "ok"
            call.set_result(result.get("content"))
        self._apply(call, self._details.get(call.id))
        return call

    def _row(self, call: ToolCall) -> Option:
        return Option(self._prompt(call), id=call.key)

    def set_details(self, details: dict[str, dict[str, Any]]) -> None:
        """Give finished rows their ``diff``, ``output_path`` and ``elapsed`` (tool_use id -> them,
        as ``Store.tool_details`` reads them) and redraw those rows; rows shown later get theirs
        as they are made."""
        self._details = details
        changed = False
        for call in self._rows.values():
            extra = details.get(call.id)
            if extra and call.status != "running":
                self._apply(call, extra)
                self._redraw(call, full=True)
                changed = True
        if changed:
            self._follow()  # rows with a diff are taller

    @staticmethod
    def _apply(call: ToolCall, extra: dict[str, Any] | None) -> None:
        if extra:
            call.diff, call.output_path = extra.get("diff"), extra.get("output_path")
            call.elapsed = extra.get("elapsed", call.elapsed)

    def clear(self) -> None:
        """Remove every row and close the detail area."""
        self._calls.clear()
        self._rows.clear()
        self._older, self._unanswered, self._details = [], {}, {}
        self._dirty.clear()
        self._list.clear_options()
        self.action_close_detail()
        self._highlighted_changed()

    def status_of(self, tool_use_id: str) -> str:
        """``"running"``, ``"ok"`` or ``"error"``. Raises KeyError for an unknown id."""
        return self._calls[tool_use_id].status

    def row_text(self, tool_use_id: str) -> str:
        """The plain text of a call's row as drawn now. Raises KeyError for an unknown id."""
        return self._prompt(self._calls[tool_use_id]).plain

    def output_of(self, tool_use_id: str) -> str:
        """The raw output kept for a call (at most ``OUTPUT_CAP`` chars, plus a note of what
        was dropped). Raises KeyError for an unknown id."""
        return self._calls[tool_use_id].output

    def _track(self, call: ToolCall, *, newest: bool = True) -> ToolCall:
        """Give ``call`` its own row key and make it the newest call of its id (``newest``), or
        the call of its id if it has none yet (an earlier call shown later)."""
        self._serial += 1
        call.key = f"row-{self._serial}"
        self._rows[call.key] = call
        if newest:
            self._calls[call.id] = call
        else:
            self._calls.setdefault(call.id, call)
        return call

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Esc closes the detail only when it is open; otherwise it reaches the app (interrupt).
        if action == "close_detail":
            return self.has_class("-detail")
        if action == "diff":
            return self._offers_diff()
        return True

    def _offers_diff(self) -> bool:
        call = self._highlighted()
        return call is not None and self.may_change_files(call.name)

    def _highlighted(self) -> ToolCall | None:
        option = self._list.highlighted_option
        return self._rows.get(option.id or "") if option is not None else None

    def action_kill(self) -> None:
        """``x``: stop the highlighted call if it runs, else the newest running call (the turn
        goes on)."""
        call = self._highlighted()
        if call is None or call.status != "running":
            call = next((c for c in reversed(self._rows.values()) if c.status == "running"), None)
        if call is not None:
            self.post_message(self.KillRequested(call.id))
        else:
            self.notify("No call is running.", timeout=3)

    def action_diff(self) -> None:
        """``d``: the files the highlighted call's turn changed (the app opens ``/diff``)."""
        if (call := self._highlighted()) is not None:
            self.post_message(self.DiffRequested(call.id))

    def action_open_output(self) -> None:
        """``o``: show the saved whole output of the highlighted call (none highlighted: the
        newest with one) in the detail area."""
        call = self._highlighted()
        if call is None:
            call = next((c for c in reversed(self._rows.values()) if c.output_path), None)
        if call is None or not call.output_path:
            self.notify("This call's output was not cut, so Enter shows all of it.", timeout=3)
            return
        self._detail_id = call.key
        self.add_class("-detail")
        self._detail()[0].update(Content(f"{call.name}  full output: {call.output_path}"))
        self._read_output(call.key, call.output_path)

    @work(thread=True, exclusive=True, group="tool-output")
    def _read_output(self, key: str, path: str) -> None:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read(FULL_OUTPUT_CHARS + 1)
        except OSError as e:
            text = f"Cannot read {path}: {e.strerror or e}"
        if len(text) > FULL_OUTPUT_CHARS:
            text = text[:FULL_OUTPUT_CHARS] + f"\n[... shown up to {FULL_OUTPUT_CHARS:,} characters; the file has more]"
        self.app.call_from_thread(self._show_output, key, sanitize(text))

    def _show_output(self, key: str, text: str) -> None:
        if self._detail_id != key:
            return  # another row was opened meanwhile
        log = self._detail()[1]
        log.clear()
        log.write(text, scroll_end=False)
        log.scroll_home(animate=False)
        call = self._rows.get(key)
        self._detail_written = call.kept if call else 0

    def action_close_detail(self) -> None:
        """Hide the output of the selected call."""
        self._detail_id = None
        self.remove_class("-detail")

    # -- handlers ------------------------------------------------------------------------------

    @on(OptionList.OptionSelected, "#tool-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id == EARLIER:
            self.show_earlier()
            return
        call = self._rows.get(event.option.id or "")
        if call is None:
            return
        self._detail_id = call.key
        self.add_class("-detail")
        self._show_detail(call, full=True)
        self.post_message(self.Selected(call.id))

    @on(OptionList.OptionHighlighted, "#tool-list")
    def _highlighted_changed(self) -> None:
        # The Footer redraws all its keys on refresh_bindings (~10 ms): only when d comes or goes.
        if self._offers_diff() != self._diff_offered:
            self._diff_offered = not self._diff_offered
            self.refresh_bindings()

    def _tick(self) -> None:
        self._frame += 1
        running = [c for c in self._rows.values() if c.status == "running"]
        for call in running:
            self._redraw(call)
        for key in self._dirty - {c.key for c in running}:
            if dirty := self._rows.get(key):
                self._redraw(dirty)
        if running or self._dirty:
            self._follow()  # a running row grows when its first output line arrives
        self._dirty.clear()
        if not running:
            self._ticker.pause()

    # -- drawing -------------------------------------------------------------------------------

    @property
    def _list(self) -> OptionList:
        return self.query_one("#tool-list", OptionList)

    def _redraw(self, call: ToolCall, full: bool = False) -> None:
        self._list.replace_option_prompt(call.key, self._prompt(call))
        if call.key == self._detail_id:
            self._show_detail(call, full)

    def _prompt(self, call: ToolCall) -> Content:
        if call.waiting:
            icon, elapsed = ("?", "bold $warning"), "awaiting approval"
        elif call.status == "running":
            icon = (SPINNER[self._frame % len(SPINNER)], "$tool-running")
            elapsed = f"{time.monotonic() - call.started:.1f}s  x stops"
        else:
            icon = ("✓", "$tool-ok") if call.status == "ok" else ("✗", "$tool-error")
            elapsed = "" if call.elapsed is None else f"{call.elapsed:.1f}s"
        if call.subagent is not None:
            return self._subagent_prompt(call, call.subagent, icon, elapsed)
        parts: list[str | tuple[str, str]] = [icon, " ", (call.name, "bold"), "  ", call.summary]
        if call.note:
            parts += ["  ", (call.note, "$warning")]
        if elapsed:
            parts += ["  ", (elapsed, "$text-muted")]
        if call.diff:
            added, removed, changed = _diff_summary(call.diff)
            parts += ["  ", (f"+{added}", "$success"), " ", (f"−{removed}", "$error")]
            for line in changed:
                parts += ["\n  ", (one_line(line, 120), "$text on $diff-added" if line[0] == "+" else "$text on $diff-removed")]
        elif line := call.last_line() if call.status == "running" else call.first_line():
            parts += ["\n  ", (line, "$text-muted")]
        if call.output_path:
            parts += ["\n  ", ("cut to fit the model; o opens the full output", "$text-muted italic")]
        return Content.assemble(*parts)

    @staticmethod
    def _subagent_prompt(call: ToolCall, agent: SubagentProgress, icon: tuple[str, str], elapsed: str) -> Content:
        """A task call's row: ``⚙ explore · find the parser``, its subagent's newest calls nested
        under it, and what it does now (or, once done, its calls and cost; ``■ … interrupted``
        when Esc stopped it: its task's result is then the interrupted call's)."""
        interrupted = call.status != "running" and (agent.step == "interrupted" or call.raw.startswith(TOOL_INTERRUPTED))
        if interrupted:
            icon = ("■", "$warning")
        parts: list[str | tuple[str, str]] = [icon, " ", ("⚙ " + agent.agent, "bold $accent"), " · ", call.summary]
        if elapsed:  # without "x stops": a subagent's row is long already (the pane's footer says x)
            parts += ["  ", (elapsed.removesuffix("  x stops"), "$text-muted")]
        for mark, text in agent.lines():
            style = "$tool-error" if mark == "✗" else "$tool-ok" if mark == "✓" else "$text-muted"
            parts += ["\n  ↳ ", (mark, style), " " if mark else "", (one_line(text, 100), "$text-muted")]
        if call.status == "running" and agent.step:
            parts += ["\n  ", (one_line(agent.step, 100), "$text-muted italic")]
        elif call.status != "running":
            cost = f" · {dollars(agent.cost)}" if agent.cost else ""
            done = "interrupted" if interrupted else "done" if call.status == "ok" else "failed"
            count = len(agent.calls)
            parts += ["\n  ", (f"{done} · {count} tool call{'s' * (count != 1)}{cost}", "$text-muted")]
            if line := call.first_line():
                parts += ["\n  ", (line, "$text-muted")]
        return Content.assemble(*parts)

    def _show_detail(self, call: ToolCall, full: bool) -> None:
        """Show ``call`` in the detail area: all of it (clipped), or only output added since."""
        status = {"running": "running…", "ok": "ok", "error": "error"}[call.status]
        elapsed = "" if call.elapsed is None else f", {call.elapsed:.1f}s"
        title, log = self._detail()
        title.update(Content(f"{call.name}  {call.summary}  ({status}{elapsed})"))
        if full:
            log.clear()
            text = call.shown()
            log.write(text or ("" if call.status == "running" else "(no output)"), scroll_end=False)
            log.scroll_home(animate=False)
            self._detail_written = call.kept
        elif call.kept > self._detail_written and log.line_count < DETAIL_LINES:
            log.write(sanitize(call.raw[self._detail_written :]))
            self._detail_written = call.kept


def _diff_summary(diff: str, show: int = DIFF_PREVIEW_LINES) -> tuple[int, int, list[str]]:
    """Lines added and removed by a unified diff, and its first ``show`` changed lines."""
    changed = [line for kind, line in diff_lines(diff) if kind in ("add", "remove")]
    added = sum(line.startswith("+") for line in changed)
    return added, len(changed) - added, [reveal(line) for line in changed[:show]]
