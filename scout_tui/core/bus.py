"""Events: the agent's only output, and the only thing subscribers (store, UI, plugins) see.

One class per event, all here: the vocabulary. Each has a dotted ``type`` name (what the
store's ``events.type`` column and a plugin's ``api.on(name, fn)`` use) and JSON-able ``data``
(its fields as a dict: what the store writes and plugins read). Subscribers that know the
vocabulary dispatch on the class (``isinstance``, ``functools.singledispatch``); ``Event.of``
turns a name and data (a plugin's ``api.emit``) back into its class.

Events marked transient (``stored = False``) stream fragments or ask plugins; they are shown
live and never persisted. Units: tokens, seconds, dollars.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import Field, FrozenInstanceError, dataclass, field, fields
from typing import Any, Callable, ClassVar, TypeVar, dataclass_transform


E = TypeVar("E", bound="Event")


def _fields(event: Event) -> tuple[Field[Any], ...]:
    """The fields of ``event``'s class, a dataclass (``@event`` makes every concrete event one)."""
    return fields(event)  # type: ignore[arg-type]  # Event itself is not a dataclass; each event class is


class Event:
    """Base of every event: a dotted ``type`` name and JSON-able ``data``."""

    __slots__ = ()
    type: ClassVar[str] = ""
    stored: ClassVar[bool] = True
    """Whether the store keeps this event (False: UI and plugins only)."""

    # What dataclass(frozen=True) compiles for each event class at import (~0.35 ms a class,
    # before the first frame), written once: repr, eq and hash by the fields, and frozen
    # fields, each set once, by ``__init__`` (a slot holds no value until then).

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in _fields(self) if f.repr)
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._compared() == other._compared()

    def __hash__(self) -> int:
        return hash(self._compared())

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, name) or name not in self.__dataclass_fields__:  # type: ignore[attr-defined]  # set by @event
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def _compared(self) -> tuple:
        return tuple(getattr(self, f.name) for f in _fields(self) if f.compare)

    @property
    def data(self) -> dict[str, Any]:
        """The event's fields as a dict; an optional field (default None) left out while None."""
        out: dict[str, Any] = {}
        for f in _fields(self):
            value = getattr(self, f.name)
            if value is None and f.default is None:
                continue
            out[f.name] = value
        return out

    @staticmethod
    def of(type: str, data: dict[str, Any] | None = None) -> Event:
        """The event named ``type`` with ``data``: its class when the name is in the vocabulary
        and the data fits its fields, else a ``Named`` event carrying both as they are."""
        data = dict(data or {})
        cls = VOCABULARY.get(type)
        if cls is not None:
            try:
                return cls(**data)
            except TypeError:
                pass  # a plugin's own data under a known name: kept as it is
        return Named(type, data)


@dataclass(slots=True, repr=False, eq=False)
class Named(Event):
    """An event outside the vocabulary (a plugin's own ``api.emit``), or one whose data does
    not fit its class: a name and a dict."""

    name: str
    payload: dict[str, Any] = field(default_factory=dict)

    @property
    def type(self) -> str:  # type: ignore[override]  # Event.type is a class name; here it is the plugin's, per instance
        return self.name

    @property
    def data(self) -> dict[str, Any]:
        return self.payload


VOCABULARY: dict[str, type[Event]] = {}
"""Every event class by its ``type`` name (filled by ``@event``)."""


@dataclass_transform()  # PEP 681: type checkers read each event class as the dataclass it becomes
def event(name: str, *, stored: bool = True, frozen: bool = True) -> Callable[[type[E]], type[E]]:
    """Class decorator: ``cls`` as a slotted dataclass event named ``name`` (``stored=False``:
    transient, never persisted; ``frozen=False``: changed by its handlers, so unhashable),
    registered in ``VOCABULARY``."""

    def register(cls: type[E]) -> type[E]:
        cls.type, cls.stored = name, stored
        made = dataclass(slots=True, repr=False, eq=False)(cls)  # frozen, repr, eq, hash: Event's
        if not frozen:
            setattr(made, "__hash__", None)
            setattr(made, "__setattr__", object.__setattr__)
            setattr(made, "__delattr__", object.__delattr__)
        VOCABULARY[name] = made
        return made

    return register


# -- the conversation ------------------------------------------------------------------------


@event("message.user")
class MessageUser(Event):
    """A stored user message (typed text, or tool results) at position ``index`` of the
    conversation (0-based; the store's projection puts it at the same place)."""

    message: dict
    index: int | None = None


@event("message.refused")
class MessageRefused(Event):
    """The person's message at ``index`` did not fit the context window and was answered by
    nothing: it stays in the session, marked ``incomplete`` (the store's projection and the
    front ends' conversations, ``mark_refused``), so it is never sent again with later
    messages (``context.for_request``)."""

    index: int


@event("message.delta", stored=False)
class MessageDelta(Event):
    """A streamed fragment of the answer being written: ``kind`` "text" or "thinking"."""

    kind: str
    text: str


@event("message.assistant")
class MessageAssistant(Event):
    """A finished (or interrupted, partial) assistant message at position ``index``, with the
    request's usage (``backends.base.Usage.as_dict``), its cost in dollars (None: unknown) and
    the model that wrote it. The one record of a request's usage."""

    message: dict
    usage: dict
    stop_reason: str
    model: str
    interrupted: bool = False
    index: int | None = None
    cost: float | None = None


# -- tools and permissions -------------------------------------------------------------------


@event("tool.start")
class ToolStart(Event):
    """A tool call begins (``id`` is the ``tool_use`` id)."""

    id: str
    name: str
    input: Any


@event("tool.output", stored=False)
class ToolOutput(Event):
    """A live fragment of a running tool's output (secrets redacted)."""

    id: str
    text: str


@event("tool.end")
class ToolEnd(Event):
    """A tool call's result. ``elapsed``: seconds, None when the call never ran; ``diff``: the
    unified diff an edit or write made; ``output_path``: the file holding the whole output of
    a result cut to fit the model; ``notice``: a line for the person (``ToolResult.notice``)."""

    id: str
    name: str
    content: Any
    is_error: bool
    elapsed: float | None
    diff: str | None = None
    output_path: str | None = None
    notice: str | None = None


@event("permission.ask")
class PermissionAsk(Event):
    """A call waits for the person's answer; ``suggestions`` are the rules ``a`` would allow."""

    id: str
    name: str
    reason: str
    suggestions: list


@event("permission.decision")
class PermissionDecision(Event):
    """How a call's permission was answered: ``decision`` allow|allow_session|deny|stop, ``by``
    user|rule|headless|policy; ``rules``: what allow_session added."""

    id: str
    name: str
    decision: str
    by: str
    reason: str = ""
    rules: list | None = None


# -- subagents and plans -------------------------------------------------------------------


@event("subagent.event", stored=False)
class SubagentEvent(Event):
    """An event of a subagent at work, passed up to the turn of its parent (the child's own
    session stores it; the parent's does not). ``call``: the id of the parent's ``task`` call
    that runs it; ``session``: the child session's id; ``agent``: the agent's name (``general``,
    a custom agent's); ``description``: the task's few words; ``event``: the child's event."""

    call: str
    session: str
    agent: str
    description: str
    event: Event

    @property
    def innermost(self) -> Event:
        """The event of the deepest subagent it wraps (a subagent's subagent's, with nesting)."""
        event: Event = self.event
        while isinstance(event, SubagentEvent):
            event = event.event
        return event


@event("plan.decision")
class PlanDecided(Event):
    """The person's answer to a plan (``exit_plan`` call ``id``): ``action`` here|fresh|keep|stop
    (``tools.approvals.PlanDecision``), ``plan`` the markdown as approved (perhaps edited),
    ``note`` what to plan further (keep)."""

    id: str
    action: str
    plan: str
    note: str = ""


@event("plan.branch", stored=False)
class PlanBranch(Event):
    """The plan approved "in a fresh context" runs in a new branch: ``session`` the branch's id,
    a sibling of ``parent`` (the exploration) starting from nothing; the branch's first message
    (the plan and the request) follows as its ``message.user``."""

    parent: str
    session: str


# -- requests --------------------------------------------------------------------------------


@event("retry")
class Retry(Event):
    """A failed request is sent again after ``delay`` seconds."""

    attempt: int
    max_attempts: int
    delay: float
    reason: str


@event("prompt.compacted")
class PromptCompacted(Event):
    """What the next request sends, before each call (``compaction.Compacted.event_data``):
    ``context_tokens`` is the calibrated estimate of the whole request, system prompt and tools
    included (so no subscriber asks the agent for the overhead); ``cache`` says why the prompt
    cache cannot reuse the previous request, or ""."""

    strategies: list
    truncated: int
    dropped: int
    tokens_before: int
    tokens_after: int
    stable: int
    budget_cut: int
    budget_dropped: int
    context_tokens: int
    context_window: int | None
    cache: str


@event("session.before_compact", stored=False, frozen=False)
class BeforeCompact(Event):
    """A summary is about to be written of messages ``0..at-1`` (``count`` in all). A plugin
    handler may set ``summary`` (its own text) or ``veto`` (why not), on the event or in its
    ``data`` dict (the same values: ``data`` is live here). UI and plugins only."""

    at: int
    count: int
    focus: str
    by: str
    summary: str | None = None
    veto: str | None = None
    _live: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def data(self) -> dict[str, Any]:
        if not self._live:
            self._live.update(at=self.at, count=self.count, focus=self.focus, by=self.by, summary=self.summary,
                              veto=self.veto)
        return self._live

    def answer(self) -> tuple[str | None, str | None]:
        """``(summary, veto)`` as the handlers left them (set on the event or in ``data``);
        a summary that is not a string is ignored."""
        live = self.data
        summary = self.summary if self.summary is not None else live.get("summary")
        veto = self.veto if self.veto is not None else live.get("veto")
        return (summary if isinstance(summary, str) else None), (str(veto) if veto else None)


@event("session.compacted")
class SessionCompacted(Event):
    """A summary now stands for messages ``0..at-1`` (see ``summary.py``); ``usage`` and
    ``cost`` are the summary request's."""

    at: int
    count: int
    summary: str
    model: str
    tokens_before: int
    tokens_after: int
    usage: dict
    cost: float | None
    focus: str
    by: str


@event("session.compact_cancelled")
class CompactCancelled(Event):
    """A summary was written, then not applied: what it cost stays in the totals."""

    usage: dict
    model: str
    cost: float | None = None


# -- the turn --------------------------------------------------------------------------------


@event("notice")
class Notice(Event):
    """Something a person should read (max_turns reached, a retry of an overflow…)."""

    text: str


@event("error")
class Error(Event):
    """The turn failed: ``message`` says what and where; ``kind`` is the ``ScoutError`` kind."""

    message: str
    kind: str


@event("checkpoint")
class Checkpoint(Event):
    """The files a turn changed (``checkpoints.py``): workspace snapshots ``before`` its first
    change and ``after`` it ended (git tree ids in scout-tui's checkpoint store), ``files``
    changed as ``{"status", "path", "old_path"}`` dicts, ``skipped`` the paths the turn made or
    changed that no snapshot keeps (``checkpoints.why_skipped``: too large, or a repository inside),
    and ``turn``, the position of the prompt that began the turn."""

    turn: int
    before: str
    after: str
    files: list = field(default_factory=list)
    skipped: list = field(default_factory=list)


@event("checkpoint.restore")
class CheckpointRestore(Event):
    """``/undo`` or ``/redo`` (``redo``) wrote ``paths`` back as snapshot ``tree`` has them: the
    files of the turn at message ``turn`` before it, or after it again."""

    turn: int
    tree: str
    paths: list = field(default_factory=list)
    redo: bool = False


@event("turn.end")
class TurnEnd(Event):
    """The turn is over: ``stop_reason`` is the model's, or interrupted|stopped|error|max_turns, or
    blocked (a ``UserPromptSubmit`` hook kept the prompt from being sent)."""

    stop_reason: str


# -- the session (written by the store) --------------------------------------------------------


@event("session.create")
class SessionCreate(Event):
    """A root session in directory ``cwd``."""

    id: str
    cwd: str
    title: str | None = None


@event("session.fork")
class SessionFork(Event):
    """A branch sharing the first ``at`` messages of ``parent``."""

    parent: str
    at: int
    cwd: str | None = None
    title: str | None = None


@event("session.subagent")
class SessionSubagent(Event):
    """A child session where a subagent works: started by the ``task`` call ``call`` of session
    ``parent``, running agent ``agent`` on the task ``description``. It shares no message with
    its parent (its conversation starts with the task's prompt)."""

    parent: str
    call: str
    agent: str
    description: str
    cwd: str | None = None


@event("session.rename")
class SessionRename(Event):
    """The session's title, set by the person."""

    title: str


@event("session.model")
class ModelSwitch(Event):
    """The person chose the model for the session's next requests: ``provider`` is a provider
    profile's name (``profiles.Profile``), ``model`` the model id. A reopened session goes on with
    its last switch, and a branch with the last one made before its fork point
    (``Store.model_switch``)."""

    provider: str
    model: str


@event("session.delete")
class SessionDelete(Event):
    """The session is hidden from lists (its events stay)."""


@event("session.restore")
class SessionRestore(Event):
    """A deleted session is listed again."""


TRANSIENT = frozenset(name for name, cls in VOCABULARY.items() if not cls.stored)
"""Names of the events never persisted one by one."""


def added_message(event: Event) -> dict | None:
    """The message ``event`` adds to the conversation (``message.user`` and
    ``message.assistant``), else None. The store's projection and the app's conversation both
    grow by this one rule."""
    return event.message if isinstance(event, (MessageUser, MessageAssistant)) else None


def mark_refused(conversation: list, event: Event) -> None:
    """After a ``message.refused`` event: its message in ``conversation`` (a front end's copy of
    the stored one) marked ``incomplete``, as the store's projection marks it."""
    if isinstance(event, MessageRefused) and 0 <= event.index < len(conversation):
        message = conversation[event.index]
        if isinstance(message, dict):
            conversation[event.index] = {**message, "incomplete": True}


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

