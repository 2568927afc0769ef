"""The conversation pane: prompts, answers, compact tool-call lines, notices and compaction
markers, driven by the agent's events; it keeps a selection for forking.

The pane owns what it shows: whether an answer is streaming is the state of its newest
``AssistantMessage`` (``assistant_message.py``), never a flag beside it, and every message's
position in the stored conversation comes from the caller (an event, or ``load``).

A summary compaction shows as a ``CompactionMarker`` where it cut in (before the message at its
``count``).

Layout is bounded by what is visible (``chat_layout.py``, objects the view holds): a long session
opens with only its newest ``LOAD_LIMIT`` messages mounted, earlier batches mounting above as the
person scrolls up (``StoredWindow``); only the answer chunks near the view are rendered before a
frame, and the view stays on what the person was reading (``VisibleLayout``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, ClassVar, Iterable

from textual import events
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.layout import DockArrangeResult
from textual.message import Message
from textual.widget import Widget

from ..core.messages import blocks, has_text
from ..core.text import code_blocks, sanitize
from ..core.redaction import redact
from .assistant_message import AnswerState, AssistantMessage
from .chat_batch import answer_calls, user_widget
from .chat_markdown import LiveBlock
from .chat_messages import Notice, ToolCallLine, UserMessage
from .clipboard import copy
from .chat_layout import FORGET_INTERVAL, LOAD_LIMIT, StoredWindow, VisibleLayout

if TYPE_CHECKING:
    from .compaction import CompactionMarker
    from .welcome import Welcome

# Compaction markers (and Textual's Collapsible) are imported when a session that has some is
# drawn, or a compaction is made: not for a first frame without them.


class ChatView(VerticalScroll):
    """The conversation pane. Methods down, shaped like the agent's events (``user_message``,
    ``assistant_delta``, ``assistant_message``, ``stream_interrupted``, ``tool_call_started``,
    ``tool_call_output``, ``tool_call_ended``; ``show_welcome`` for an empty session); messages up (``Selected``, ``ForkRequested``, ``RewindRequested``).

    Focused, it keeps a selection among the user and assistant messages (Up/Down or k/j to
    move, Home/End or g/G for the first and newest); ``f`` posts ``ForkRequested`` and ``r``
    ``RewindRequested`` for the selected one. Every message widget knows its ``index`` in the stored conversation (the
    order of ``Store.messages``): ``load`` numbers what it shows, live ones take the ``index``
    their event gives. Tool-result messages are not shown, but count.
    """

    DEFAULT_CSS = """
    ChatView {
        height: 1fr;
        padding: 0 1;
        background: $surface;
        /* The scrollbar's columns are kept from the start: the text does not re-wrap (every
           chunk in view rendered again) when the conversation first outgrows the view. */
        scrollbar-gutter: stable;
        .earlier {
            color: $text-muted;
            text-style: italic;
            padding: 0 1;
        }
    }
    /* Focused, the chat is marked down its left padding column (an outline: no layout change). */
    ChatView:focus {
        outline-left: vkey $accent;
    }
    /* An outline is drawn over the message's left padding: selecting changes no layout. */
    ChatView:focus > .-selected {
        outline-left: thick $accent;
        background-tint: $accent 12%;
    }
    /* What a search found (``reveal``), until the selection moves. */
    ChatView > .-found {
        outline-left: thick $warning;
        background-tint: $warning 15%;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "select_previous", "Previous message", id="chat.previous", show=False),
        Binding("down,j", "select_next", "Next message", id="chat.next", show=False),
        Binding("home,g", "select_first", "First message", id="chat.first", show=False),
        Binding("end,G", "select_last", "Newest message", id="chat.follow", show=False),
        Binding("f", "fork", "Fork here", id="chat.fork"),
        Binding("r", "rewind", "Rewind", id="chat.rewind"),
        Binding("c", "copy", "Copy", id="chat.copy"),
        Binding("b", "copy_code", "Copy code", id="chat.copy_code", show=False),
        Binding("o", "tool_output", "Tool output", id="chat.tool_output", show=False),
    ]

    @dataclass
    class ForkRequested(Message):
        """``f`` on the selected message: the person wants a new branch there, sharing the first
        ``at`` messages of the stored conversation (``Store.fork``'s unit). On a prompt the
        branch starts *before* it (``at`` = its position) and ``prompt`` is that prompt as shown,
        offered for editing; on an answer it starts *after* it (``at`` = its position + 1) and
        ``prompt`` is "".
        """

        at: int
        prompt: str = ""
        chat_view: ChatView | None = field(default=None, kw_only=True)

        @property
        def control(self) -> ChatView | None:
            return self.chat_view

    @dataclass
    class RewindRequested(ForkRequested):
        """``r`` on the selected message: the person wants to go back to the point ``at`` (as for
        ``ForkRequested``: before a prompt, after an answer), the code, the conversation or
        both; ``prompt`` is the prompt to offer for editing when the conversation forks. Its
        own handler (``on_chat_view_rewind_requested``), not the fork's."""

    @dataclass
    class Selected(Message):
        """The selection moved to a message: its stored ``index`` (None for a live message given
        no index, or an answer still streaming) and ``role`` (``"user"`` or ``"assistant"``)."""

        index: int | None
        role: str
        chat_view: ChatView | None = field(default=None, kw_only=True)

        @property
        def control(self) -> ChatView | None:
            return self.chat_view

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._tool_lines: dict[str, ToolCallLine] = {}
        self._selected: UserMessage | AssistantMessage | None = None
        self._code_turns: dict[int, int] = {}  # the message whose code block ``b`` copied last, and which
        self.visible_layout = VisibleLayout(self)
        """Its layout, bounded by what is visible (``chat_layout.py``)."""
        self.stored_window = StoredWindow(self, self._tool_lines)
        """Which messages of the conversation given to ``load`` are mounted."""
        self.secrets: tuple[str, ...] = ()
        """Keys redacted from notices (``keys.secrets``): text the app shows that no agent passed on."""

    def on_mount(self) -> None:
        # Stay at the bottom as content grows, until the person scrolls up (Widget.anchor);
        # scrolling back to the bottom re-anchors.
        self.anchor()
        self.set_interval(FORGET_INTERVAL, self.visible_layout.forget_offscreen)
        # Code blocks take their colours from the theme's syntax-style, which no CSS rule
        # carries: redraw them when the theme changes (or its file is edited).
        self.app.theme_changed_signal.subscribe(self, self._restyle_code)

    def _restyle_code(self, theme: object) -> None:
        for block in self.query(LiveBlock):
            block.restyle()
        for widget in self.query("MarkdownChunk, Notice, CompactionSummary"):
            widget.refresh()

    def arrange(self, size: Size, optimal: bool = False) -> DockArrangeResult:
        return self.visible_layout.arrange(size, partial(super().arrange, size, optimal))

    def on_assistant_message_drawn(self, message: AssistantMessage.Drawn) -> None:
        self.visible_layout.answer_drawn()

    def action_follow(self) -> None:
        """Jump to the newest output and keep following it."""
        self.anchor()

    @property
    def current(self) -> AssistantMessage | None:
        """The answer being streamed (open for deltas), if any: the newest ``AssistantMessage``
        when its state is STREAMING. Live answers mount at the end, each once the one before
        was finished; stored ones go above them."""
        for widget in reversed(self.children):
            if isinstance(widget, AssistantMessage):
                return widget if widget.state is AnswerState.STREAMING else None
        return None

    @property
    def drawing(self) -> bool:
        """Whether an answer is still being drawn: streaming, or its pump still showing what
        arrived (``AssistantMessage.streamed``; it posts ``Drawn`` when done)."""
        return any(isinstance(child, AssistantMessage) and child.streamed for child in self.children)

    @property
    def loaded_count(self) -> int:
        """How many messages of the conversation given to ``load`` are mounted (newest first;
        tool-result messages count though they show no widget; live additions do not)."""
        return self.stored_window.loaded_count

    @property
    def selected(self) -> UserMessage | AssistantMessage | None:
        """The selected message widget, if any (it has ``index``; ``-selected`` class)."""
        return self._selected if self._selected is not None and self._selected.parent is self else None

    # -- the agent's events, as they happen -----------------------------------------------------

    def user_message(self, index: int | None, message: dict) -> None:
        """A user message stored at position ``index`` of the conversation (None: not stored,
        such as a prompt that was not sent; it can be selected but not forked).

        Its text, if any, shows literally (never as markup), and the view follows new output
        again even if it was scrolled up: sending a prompt means wanting its answer. Its
        ``tool_result`` blocks mark the lines of their calls still running ✓ or ✗.
        """
        if (widget := user_widget(index, message)) is not None:
            self.query("Welcome").remove()  # the session has begun
            self.mount(widget)
            self.anchor()
        answer_calls(message, self._tool_lines)

    def show_welcome(self, welcome: Welcome) -> bool:
        """Show ``welcome`` at the top, instead of any shown before, if no message is shown yet
        (the next prompt removes it). Returns whether it was mounted."""
        if self._messages() or self.stored_window.messages:
            return False
        self.query("Welcome").remove()
        self.mount(welcome, before=0 if self.children else None)
        return True

    def assistant_delta(self, kind: str, text: str) -> None:
        """A streamed fragment of the answer being written; ``kind`` is ``"text"`` or
        ``"thinking"``. Opens a streaming answer if none is open. O(1), no redraw: the
        answer's pump shows it."""
        answer = self.current
        if answer is None:
            answer = AssistantMessage(streaming=True)
            self.mount(answer)
        answer.write(kind, text)

    def assistant_message(self, index: int | None, message: dict, interrupted: bool = False) -> None:
        """A finished assistant message stored at position ``index`` (``interrupted``: it holds
        the partial text of a stopped turn, marked so).

        Ends the streaming answer with it (its text and thinking show if none streamed); when
        nothing streamed, a message with text gets an answer of its own, and one with only
        tool calls shows nothing here (its calls come as ``tool_call_started``). Returns at
        once: the answer's pump drains what is buffered.
        """
        answer = self.current
        if answer is None:
            if not has_text(message):
                return
            answer = AssistantMessage(streaming=True)
            self.mount(answer)
        answer.finish(message, interrupted, index)

    def stream_interrupted(self) -> None:
        """The turn ended or failed with no final message: the streaming answer, if any, ends
        with what it has, marked "(cut off)"; it has no stored position."""
        if (answer := self.current) is not None:
            answer.finish(None, True)

    def tool_call_started(self, tool_use_id: str, name: str, input: dict) -> None:
        """Show a compact running line for a tool call: name and a one-line argument summary."""
        line = ToolCallLine(tool_use_id, name, input)
        self._tool_lines[tool_use_id] = line
        self.mount(line)

    def tool_call_output(self, tool_use_id: str, text: str) -> None:
        """A live fragment of a running call's output (shown under its line below 100 columns;
        O(1) when wide). Unknown ids are ignored."""
        if (line := self._tool_lines.get(tool_use_id)) is not None:
            line.add_output(text)

    def tool_call_ended(self, tool_use_id: str, is_error: bool, elapsed: float | None, content: object = None) -> None:
        """Mark a tool call's line ✓ or ✗ with its elapsed seconds, ``content`` (the result's,
        when given) as its output (unknown ids are ignored)."""
        if (line := self._tool_lines.get(tool_use_id)) is not None:
            line.finish(is_error, elapsed)
            if content is not None:
                line.set_result(content)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Wide, the tool pane shows the output: ``o`` is not the chat's.
        return action != "tool_output" or self.screen.has_class("-narrow")

    def action_tool_output(self) -> None:
        """``o``: show all the output of the selected message's turn's tool calls (from its
        prompt to the next; none selected: the newest turn's), or fold it again. The chat shows
        tool output below 100 columns only (``ToolCallLine``); a bell when the turn has none."""
        children = list(self.children)
        at = children.index(self.selected) if self.selected is not None else len(children) - 1
        prompts = [i for i, widget in enumerate(children) if isinstance(widget, UserMessage)]
        start = max((i for i in prompts if i <= at), default=0)
        end = min((i for i in prompts if i > at), default=len(children))
        calls = [w for w in children[start:end] if isinstance(w, ToolCallLine) and w.has_class("-output")]
        if not calls:
            self.app.bell()
            return
        expand = not all(line.expanded for line in calls)
        for line in calls:
            if line.expanded != expand:
                line.toggle_output()

    # -- other lines ------------------------------------------------------------------------------

    def add_notice(self, text: str, level: str = "info") -> None:
        """Show a system line rendered as markdown; ``level`` is info, warning or error."""
        level = level if level in ("info", "warning", "error") else "info"
        self.mount(Notice(self._shown(text), classes=f"-{level}"))

    def _shown(self, text: str) -> str:
        """A notice's text as shown: keys redacted, terminal controls removed."""
        return sanitize(redact(text, self.secrets))

    def retry_notice(self, text: str) -> None:
        """A warning that the request is retried: one line, which the next retry rewrites as long
        as nothing was shown after it (a turn's retries read as one line counting up)."""
        last = self.children[-1] if self.children else None
        if isinstance(last, Notice) and last.has_class("-retry"):
            last.text = self._shown(text)
            last.refresh(layout=True)
        else:
            self._retrying = Notice(self._shown(text), classes="-warning -retry")
            self.mount(self._retrying)

    _retrying: Notice | None = None  # the "retrying" line of the request still waiting, if any

    def drop_retry_notice(self) -> None:
        """The request being retried is settled (answered, failed for good, or interrupted): its
        "retrying (n/N) in s" line goes, as it no longer says what happens."""
        if self._retrying is not None:
            if self._retrying.is_attached:
                self._retrying.remove()
            self._retrying = None

    def add_compaction(self, data: dict) -> CompactionMarker:
        """Show a compaction just made (a ``session.compacted`` event's data) after everything
        shown; returns its marker (``u`` on it posts ``CompactionMarker.UndoRequested``)."""
        from .compaction import CompactionMarker

        marker = CompactionMarker(data)
        self.mount(marker)
        return marker

    # -- a stored conversation --------------------------------------------------------------------

    def load(self, messages: list[dict | None], compactions: Iterable[dict] = ()) -> None:
        """Show a stored conversation (content-block dicts, ``Store.messages`` order) instead of
        what is shown now, with a marker for each of ``compactions`` (``Store.compactions``
        data) just before the message at its ``count`` (at the end when that is ``len(messages)``).

        User text, assistant text and thinking, ``tool_use`` blocks as compact lines, and
        ``tool_result`` blocks marking their line ✓ or ✗ (elapsed unknown). Only the newest
        ``LOAD_LIMIT`` messages mount, after a line counting the others; scrolling near the
        top mounts the batch before them (``loaded_count`` says how many are in). Returns at
        once: a worker renders the markdown in a thread, then mounts everything in one batch
        (await ``app.workers.wait_for_complete()`` in tests). ``messages`` is kept, not copied:
        entries older than the newest batch may be None while the caller reads them, and fill
        them in place later; older batches mount once they are there.
        """
        self.clear()
        self.stored_window.load(messages, compactions)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value < old_value:
            self.stored_window.check_earlier()

    def on_resize(self, event: events.Resize) -> None:
        self.stored_window.check_earlier()  # a taller pane may show the top without any scrolling

    # -- selection and fork ---------------------------------------------------------------------

    def _messages(self) -> list[UserMessage | AssistantMessage]:
        return [w for w in self.children if isinstance(w, (UserMessage, AssistantMessage))]

    def select(self, message: UserMessage | AssistantMessage, *, scroll: bool = True) -> None:
        """Select ``message`` (a child of this view): highlight it, scroll it into view, post
        ``Selected``."""
        if self._selected is not None:
            self._selected.remove_class("-selected")
        self.query_children(".-found").remove_class("-found")
        self._selected = message
        message.add_class("-selected")
        if scroll:
            self.scroll_to_widget(message, animate=False)
        role = "user" if isinstance(message, UserMessage) else "assistant"
        self.post_message(self.Selected(message.index, role, chat_view=self))

    def on_focus(self, event: events.Focus) -> None:
        if self.selected is None and (messages := self._messages()):
            newest = messages[-1]
            # Do not jump away from the end of a long answer that is already in view.
            self.select(newest, scroll=not newest.region.overlaps(self.scrollable_content_region))

    def on_click(self, event: events.Click) -> None:
        widget = event.widget
        while widget is not None and widget is not self:
            if isinstance(widget, (UserMessage, AssistantMessage)):
                self.select(widget, scroll=False)
                return
            widget = widget.parent if isinstance(widget.parent, Widget) else None

    def select_beside(self, step: int) -> bool:
        """Select the mounted message ``step`` places from the selected one (-1: the one above,
        1: the one below), or the newest when none is selected. False, selecting nothing, when
        the selected message is the first (step -1) or the last (step 1) mounted one."""
        messages = self._messages()
        current = self.selected
        if current is None:
            if messages:
                self.select(messages[-1])
            return True
        position = messages.index(current) + step
        if not 0 <= position < len(messages):
            return False
        self.select(messages[position])
        return True

    def action_select_previous(self) -> None:
        """Select the message above; past the first mounted one, mount the batch before it."""
        if self.select_beside(-1):
            return
        if self.stored_window.more:
            self.stored_window.load_earlier(select_previous=True)
        else:
            self.scroll_home(animate=False)

    def action_select_next(self) -> None:
        """Select the message below."""
        self.select_beside(1)

    def action_select_first(self) -> None:
        """Select the first mounted message and show the top (where the batch before it loads)."""
        if messages := self._messages():
            self.select(messages[0], scroll=False)
        self.scroll_home(animate=False)

    def action_select_last(self) -> None:
        """Select the newest message and follow new output again."""
        if messages := self._messages():
            self.select(messages[-1], scroll=False)
        self.anchor()

    def action_copy(self) -> None:
        """``c``: copy the selected message's text (an answer's markdown) to the clipboard."""
        message = self.selected
        if message is None:
            self.app.bell()
            return
        text = message.text if isinstance(message, UserMessage) else message.source
        what = "your prompt" if isinstance(message, UserMessage) else "the answer"
        copy(self.app, text, what)

    def action_copy_code(self) -> None:
        """``b``: copy a code block of the selected answer: the first, then the next at each press
        (a bell when it has none)."""
        message = self.selected
        found = code_blocks(message.text if isinstance(message, UserMessage) else message.source) if message else []
        if not found:
            self.app.bell()
            self.notify("No code block in this message.", severity="warning", timeout=3)
            return
        turn = self._code_turns.get(id(message), -1) + 1
        self._code_turns = {id(message): turn % len(found)}
        language, code = found[turn % len(found)]
        copy(self.app, code, f"{language + ' ' if language else ''}code block {turn % len(found) + 1} of {len(found)}")

    def last_answer(self) -> AssistantMessage | None:
        """The newest answer in the chat, if any."""
        answers = [w for w in self.children if isinstance(w, AssistantMessage)]
        return answers[-1] if answers else None

    def _point(self) -> tuple[int, str] | None:
        """Where the selected message's branch would start, and the prompt to offer (see
        ``ForkRequested``), or None after a bell: no message selected, or one not stored yet."""
        message = self.selected
        if message is None or message.index is None:
            self.app.bell()
            if message is not None:
                self.notify("Not stored yet: go back here once the answer is written.", severity="warning", timeout=4)
            return None
        if isinstance(message, UserMessage):
            return message.index, message.text
        return message.index + 1, ""

    def action_fork(self) -> None:
        """Post ``ForkRequested`` for the selected message (a bell when none; a bell and a note
        when it is not stored yet: an answer still being written)."""
        if (point := self._point()) is not None:
            self.post_message(self.ForkRequested(*point, chat_view=self))

    def action_rewind(self) -> None:
        """Post ``RewindRequested`` for the selected message (a bell as for ``f``)."""
        if (point := self._point()) is not None:
            self.post_message(self.RewindRequested(*point, chat_view=self))

    async def reveal(self, index: int) -> bool:
        """Show stored message ``index`` (``Store.messages`` order): mount the batches back to it
        (``StoredWindow.mount_back_to``), select the message at or before it (so ``f`` forks
        there), scroll what shows it (the message, else the line of the tool call it makes or
        answers) into view, below the selected message when both fit, and mark it ``-found``
        until the selection moves. False,
        after a bell, when the conversation given to ``load`` has no such message (yet)."""
        window = self.stored_window
        if not await window.mount_back_to(index):
            self.app.bell()
            return False
        # A tool result's call, and the message before it that f forks at, may be in the batch above.
        while not any(m.index is not None and m.index < index for m in self._messages()) and window.more:
            if not await window.mount_back_to(len(window.messages) - window.loaded_count - 1):
                break
        messages = [m for m in self._messages() if m.index is not None and m.index <= index]
        shown: Widget | None = next((m for m in messages if m.index == index), None)
        if shown is None:
            message = self.stored_window.messages[index] or {}
            calls = [b.get("id") if b.get("type") == "tool_use" else b.get("tool_use_id")
                     for b in blocks(message) if isinstance(b, dict)]
            shown = next((self._tool_lines[c] for c in calls if c in self._tool_lines), None)
        target = messages[-1] if messages else next(iter(self._messages()), None)
        if target is not None:
            self.select(target, scroll=False)
        shown = shown or target
        if shown is None:
            return False
        shown.add_class("-found")
        await self.wait_for_refresh()  # the batches just mounted laid out: where they are is known
        await window.mounted()  # and none going in above, which would keep the view where it was
        # The message selected at the top, when what was found fits below it; else what was found.
        if target is not None and target is not shown:
            self.scroll_to_widget(target, animate=False, top=True, immediate=True)
        self.scroll_to_widget(shown, animate=False, immediate=True)
        return True

    def older_messages_ready(self) -> None:
        """The entries of the loaded list that were None are filled in: mount older messages now
        if the view is already near the top."""
        self.stored_window.check_earlier()

    def clear(self) -> None:
        """Remove every message (a streaming answer stops with its widget; the next delta
        opens a new one)."""
        self.stored_window.clear()
        self.visible_layout.clear()
        if (answer := self.current) is not None:
            answer.stop()
        self._selected = None
        self._tool_lines.clear()
        self.remove_children()
        self.anchor()  # a new conversation opens at its newest message, whatever was scrolled before

