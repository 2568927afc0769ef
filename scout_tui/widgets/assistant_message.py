"""One assistant answer in the chat: a stored one drawn at once, or a streamed one that a pump
moves on screen a bounded piece at a time.

Streaming (DESIGN.md, "Performance facts"): ``write`` only appends to a list. A pump task per
answer moves received text on screen in rounds and awaits each round's frame. Finished
top-level blocks go into ``MarkdownChunk`` widgets (~4 KB of markdown each, drawn from
``rich.markdown.Markdown``, cut and first rendered in a worker thread); only the block still
being written is re-rendered each round, in a ``LiveBlock``. A round so costs the same at the
end of a 200 KB answer as at its start, and no widgets are created or removed per round.

The person's keys come first: the pause after a round is long enough that the round and its
frame take at most ``STREAM_SHARE`` of the event loop's time (measured, as main-thread CPU
time), and a round waits ``INPUT_GRACE`` after a key so the key's own frame goes out alone;
a key typed while a round's work runs in a thread gets its frame before the round changes
widgets (``_keys_first``). From a round's mount until its frame is out, the network thread
pauses (``urgency.hold``): the event loop lays out and draws alone, so a key that comes
meanwhile waits for that frame's CPU time, not two or three times it (the layout and frame of a
burst round took 20-25 ms of CPU but 40-100 ms of wall time while the stream was parsed).
While the person types (a key within ``TYPING``), a round follows each key once its frame is
out, and waits for the next key (or ``MAX_INTERVAL``): rounds fall between keys, not on them.
A round moves up to ``NEW_CHUNKS`` finished chunks; when more waits (a burst faster than
rounds), it moves ``SKIP_CHUNKS`` and renders only the last ``DRAWN_CHUNKS`` of them: the rest
scroll past unseen, laid out at an estimated height and drawn only if scrolled back to.

A Textual ``Markdown`` fed through ``Markdown.get_stream`` was measured for the live block
too (benchmarks/stream_markdown.py): at a model's pace (2,000 deltas/s) it re-mounts block
widgets whenever a block ends, and the garbage those leave made gen-2 collections and stalls
of 100–240 ms; a ``Static`` stayed under 75 ms. Finished text looks the same as live text.
Rich renderables carry no selection offsets, so answer text is not mouse-selectable.
"""

from __future__ import annotations

import asyncio
import enum
import time

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from ..core import urgency
from ..core.messages import message_text, thinking_text
from ..core.text import sanitize
from .chat_markdown import LiveBlock, MarkdownChunk
from .chat_messages import ThinkingBlock
from .markdown_cut import CHUNK_CHARS, LIVE_CHARS, last_cut, split_markdown
from .markdown_render import Rendered, code_theme_of, prerender

FLUSH_INTERVAL = 1 / 25
"""Shortest pause between pump rounds, in seconds (each round is at most one markdown update)."""

MAX_INTERVAL = 0.25
"""Longest pause between pump rounds, in seconds, however slow the rounds."""

STREAM_SHARE = 0.3
"""Share of the event loop's time a streaming answer's rounds and frames may take."""

INPUT_GRACE = 0.05
"""Seconds a round waits after the person's last key (``App.last_input``)."""

TYPING = 0.5
"""Seconds after a key during which the person counts as typing (rounds wait for keys)."""

KEY_POLL = 0.005
"""Seconds between looks at ``App.last_input`` or ``App.echo_pending`` while a round waits."""

KEY_WAIT = 0.1
"""Longest wait of a round for a typed key's frame (``_keys_first``), in seconds."""

NEW_CHUNKS = 6
"""Finished chunks moved on screen per round at most; the rest waits in a backlog."""

SHOW_CHARS = NEW_CHUNKS * CHUNK_CHARS
"""Received characters moved on screen per round at most, unless a burst left more waiting."""

SKIP_CHUNKS = 24
"""Chunks a round moves when more waits than ``SHOW_CHARS`` (a burst): all but the last
``DRAWN_CHUNKS`` of a round scroll past before anyone could read them, so they are mounted
with an estimated height and drawn only if the person scrolls back to them."""

DRAWN_CHUNKS = 3
"""Chunks at the end of a burst round rendered before they are shown (they fill the view)."""


class AnswerState(enum.Enum):
    """Where an ``AssistantMessage`` is in its life; the one place that says so."""

    STREAMING = "streaming"
    """Open: deltas go to it (``write``); the pump shows them."""
    FINISHING = "finishing"
    """``finish`` was called: the pump drains what is buffered, then puts the last widgets in."""
    DONE = "done"
    """Every widget in place (a stored answer starts here)."""
    INTERRUPTED = "interrupted"
    """Done, marked "(cut off)"; or stopped by ``stop`` before its end."""


class AssistantMessage(Vertical):
    """One assistant answer: optional thinking, finished chunks, and while streaming a live block.

    ``source`` is the answer text as received (sanitized); ``state`` says where it is in its
    life; ``index`` is its position in the stored conversation (None while it streams, or when
    not stored).
    """

    DEFAULT_CSS = """
    AssistantMessage {
        height: auto;
        background: $assistant-message-background;
        margin: 1 0 0 0;
        padding: 0 1;
    }
    AssistantMessage > .interrupted {
        color: $text-muted;
    }
    """

    class Drawn(Message):
        """A streamed answer is all on screen: its pump is done (state DONE or INTERRUPTED)."""

    def __init__(self, *, text: str = "", thinking: str = "", index: int | None = None, streaming: bool = False,
                 interrupted: bool = False, **kwargs) -> None:
        """A stored answer (``text`` and ``thinking``, sanitized; ``interrupted``: stored
        incomplete, marked as when it was cut), or with ``streaming`` an open one that takes
        deltas until ``finish``."""
        super().__init__(**kwargs)
        self.index = index
        if streaming:
            self.state = AnswerState.STREAMING
        else:
            self.state = AnswerState.INTERRUPTED if interrupted else AnswerState.DONE
        self._parts: list[str] = [text] if text else []
        self._stored_thinking = thinking
        self._pending_text: list[str] = []
        self._pending_thinking: list[str] = []
        self._backlog = ""  # received, not yet on screen
        self._tail = ""  # the unfinished last block, shown by the live markdown
        self._live: LiveBlock | None = None
        self._open: MarkdownChunk | None = None  # the last chunk, still taking finished blocks
        self._thinking: ThinkingBlock | None = None
        self._final: dict | None = None  # the message given to finish
        self._interrupted = False  # as given to finish
        self._chunks: list[MarkdownChunk] | None = None  # a stored answer's, when pre-rendered

    @property
    def streamed(self) -> bool:
        """Whether the pump draws this answer (it was opened for deltas and is not done yet)."""
        return self.state in (AnswerState.STREAMING, AnswerState.FINISHING)

    @property
    def done(self) -> bool:
        """Whether every widget of the answer is in place (nothing more will be drawn)."""
        return self.state in (AnswerState.DONE, AnswerState.INTERRUPTED)

    @property
    def source(self) -> str:
        """All answer text received so far, sanitized (deltas still buffered included)."""
        return "".join(self._parts) + sanitize("".join(self._pending_text))

    def compose(self) -> ComposeResult:
        if self.streamed:
            self._live = LiveBlock()
            yield self._live
            return
        if self._stored_thinking.strip():
            self._thinking = ThinkingBlock(self._stored_thinking, finished=True)
            yield self._thinking
        if self._chunks is None:
            chunks, last = split_markdown("".join(self._parts))
            self._chunks = [MarkdownChunk(chunk) for chunk in (*chunks, last) if chunk.strip()]
        yield from self._chunks
        if self.state is AnswerState.INTERRUPTED:
            yield _interrupted_mark()

    def set_chunks(self, chunks: list[MarkdownChunk]) -> None:
        """Use these (pre-rendered) chunks for a stored answer; call before mounting."""
        self._chunks = chunks

    def on_mount(self) -> None:
        if self.streamed:
            self.run_worker(self._pump(), name="stream", group="stream")

    def write(self, kind: str, text: str) -> None:
        """Buffer a delta; ``kind`` is ``"text"`` or ``"thinking"``. O(1), no redraw."""
        (self._pending_thinking if kind == "thinking" else self._pending_text).append(text)

    def finish(self, message: dict | None, interrupted: bool, index: int | None = None) -> None:
        """End the stream (STREAMING to FINISHING; a no-op in any other state). ``message`` is
        the final ``{"role": "assistant", "content": [blocks]}`` (its text and thinking are
        shown if none streamed), ``interrupted`` adds a dim "(cut off)", ``index`` is the
        stored position. Returns at once: the pump drains the buffer, then leaves only
        finished widgets, and the state becomes DONE or INTERRUPTED."""
        if self.state is not AnswerState.STREAMING:
            return
        self.index = index
        self._final, self._interrupted = message, interrupted
        self.state = AnswerState.FINISHING

    def stop(self) -> None:
        """Stop where it is, drawing nothing more (the chat is removing it): INTERRUPTED."""
        if self.streamed:
            self.workers.cancel_group(self, "stream")
            self.state = AnswerState.INTERRUPTED

    async def _pump(self) -> None:
        """Show buffered text in rounds until finished; the only writer.

        Each round moves a bounded piece on screen and awaits its frame, then pauses so the
        rounds take at most ``STREAM_SHARE`` of the loop (``pause``), and lets the person's
        keys go first (``_input_first``).
        """
        while True:
            began, started = time.thread_time(), time.monotonic()
            finishing = self.state is AnswerState.FINISHING
            await self._take_pending()
            if finishing:
                self._adopt_final_text()
            await self._show_some()
            if finishing and not self._backlog and not self._pending_text:
                break
            await self._frame()
            self._end_hold()
            await asyncio.sleep(pause(time.thread_time() - began))
            await self._input_first(started)
        await self._finish_now()

    async def _frame(self) -> None:
        """Wait until the frame showing this round is on screen."""
        shown: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def on_screen() -> None:
            if not shown.done():
                shown.set_result(None)

        self.call_after_refresh(on_screen)
        await shown

    async def _input_first(self, started: float) -> None:
        """Before the next round (the last one began at ``started``, ``time.monotonic()``):
        wait ``INPUT_GRACE`` after the person's last key, so its frame is not held behind a
        round's; while they type, also wait for a key newer than the last round, at most
        ``MAX_INTERVAL`` after it began."""
        deadline = started + MAX_INTERVAL
        while True:
            last = getattr(self.app, "last_input", None)
            now = time.monotonic()
            if last is None or now >= deadline or now - last > TYPING:
                return
            if last > started and now >= last + INPUT_GRACE:
                return  # the key that came since the last round has had its frame
            wait = last + INPUT_GRACE - now if last > started else KEY_POLL
            await asyncio.sleep(max(0.0, min(wait, deadline - now)))

    async def _keys_first(self) -> None:
        """Called before a round changes widgets, after its work in threads: while a key the
        person typed is not on screen yet (``App.echo_pending``), wait for its frame (at most
        ``KEY_WAIT``), so the round's layout and drawing do not hold it back."""
        deadline = time.monotonic() + KEY_WAIT
        while self._key_pending() and time.monotonic() < deadline:
            await asyncio.sleep(KEY_POLL)

    def _key_pending(self) -> bool:
        """A key the person typed is not on screen yet (``App.echo_pending``; False in an app
        without it)."""
        return getattr(self.app, "echo_pending", False)

    def _end_hold(self) -> None:
        """End the hold a round took for its layout and frame (``_add_finished``), unless a key
        still waits for its frame (the key's own release ends it then)."""
        if not self._key_pending():
            urgency.release()

    async def _take_pending(self) -> None:
        if self._pending_thinking:
            thinking = sanitize("".join(self._pending_thinking))
            self._pending_thinking.clear()
            if self._thinking is None:
                self._thinking = ThinkingBlock(thinking)
                await self.mount(self._thinking, before=0)
            else:
                self._thinking.append(thinking)
        if self._pending_text:
            text = sanitize("".join(self._pending_text))
            self._pending_text.clear()
            self._parts.append(text)
            self._backlog += text

    def _adopt_final_text(self) -> None:
        """When nothing streamed but the final message has text, show that text instead."""
        if self._final is None or "".join(self._parts).strip():
            return
        text = sanitize(message_text(self._final))
        if text.strip():
            self._parts = [text]
            self._backlog = text

    async def _show_some(self) -> None:
        if not self._backlog or self._live is None:
            return
        burst = len(self._backlog) > SHOW_CHARS
        size = SKIP_CHUNKS * CHUNK_CHARS if burst else SHOW_CHARS
        piece, self._backlog = self._backlog[:size], self._backlog[size:]
        text = self._tail + piece
        head, rest = await asyncio.to_thread(last_cut, text, LIVE_CHARS) if burst else last_cut(text, LIVE_CHARS)
        self._tail = rest
        if not head:
            await self._keys_first()
            self._live.set_source(rest)
            return
        # In a burst, what scrolls past unseen is laid out, not drawn; the round's last chunks
        # are on screen until the next round, so they are rendered (in a thread: left
        # estimated, ChatView would render them on the event loop as they come into view).
        await self._add_finished(head, rest, drawn=DRAWN_CHUNKS if burst else None)

    async def _add_finished(self, head: str, live_rest: str | None = None, drawn: int | None = None) -> None:
        """Append finished blocks ``head`` to the open chunk, or to new chunks past ``CHUNK_CHARS``.

        Chunks are cut and rendered in a worker thread first; swapping them in and replacing the
        live block's text by ``live_rest`` (when given) then happen in one batch: no flicker.
        ``drawn``: only the last ``drawn`` chunks are rendered, the others are mounted with an
        estimated height (``MarkdownChunk(estimated=True)``) in new chunks; None: all.
        """
        reuse = None
        if drawn is None and self._open is not None and len(self._open.source) < CHUNK_CHARS:
            reuse = self._open
        chunks, last = await asyncio.to_thread(split_markdown, (reuse.source if reuse else "") + head)
        sources = [c for c in (*chunks, last) if c.strip()]
        width = self._live.size.width if self._live is not None else self.size.width
        skipped = 0 if drawn is None else max(0, len(sources) - drawn)
        if not width:  # not laid out yet: rendering now would be at the wrong width
            skipped = len(sources)
        prepared: list[Rendered | None] = [None] * skipped
        prepared += await prerender(sources[skipped:], width, code_theme_of(self.app))
        await self._keys_first()
        urgency.hold()  # the network thread pauses while the event loop lays out and draws this (_pump releases)
        with self.app.batch_update():
            new: list[MarkdownChunk] = []
            for i, (source, rendered) in enumerate(zip(sources, prepared)):
                if i == 0 and reuse is not None:
                    reuse.set_source(source, rendered)
                else:
                    new.append(MarkdownChunk(source, rendered, estimated=rendered is None))
            if new:
                await self.mount_all(new, before=self._live)
            if live_rest is not None and self._live is not None:
                self._live.set_source(live_rest)
        self._open = new[-1] if new else reuse

    async def _finish_now(self) -> None:
        message, interrupted = self._final, self._interrupted
        if self._thinking is None and message is not None:
            thinking = thinking_text(message)
            if thinking.strip():
                self._thinking = ThinkingBlock(sanitize(thinking))
                await self.mount(self._thinking, before=0)
        if self._thinking is not None:
            self._thinking.finish()
        if self._tail.strip():
            await self._add_finished(self._tail, live_rest="")
        self._tail = ""
        with self.app.batch_update():
            if interrupted:
                await self.mount(_interrupted_mark(), before=self._live)
            if self._live is not None:
                await self._live.remove()
                self._live = None
        self._end_hold()  # the last round's: its frame is the answer's last
        self.state = AnswerState.INTERRUPTED if interrupted else AnswerState.DONE
        self.post_message(self.Drawn())


def pause(busy: float) -> float:
    """Seconds to wait after a round that kept the event loop busy ``busy`` seconds, so
    streaming takes at most ``STREAM_SHARE`` of it: within [``FLUSH_INTERVAL``, ``MAX_INTERVAL``]."""
    return min(MAX_INTERVAL, max(FLUSH_INTERVAL, busy * (1 - STREAM_SHARE) / STREAM_SHARE))


def _interrupted_mark() -> Static:
    """The dim "(cut off)" under an answer that was cut off."""
    return Static(Content.styled("(cut off)", "italic"), classes="interrupted")
