"""Two branches of one session tree side by side: where they diverge, the messages each has
after that, the files each changed (their checkpoints) and what each cost, for ``/compare`` and
``scout-tui compare A B``.

Both branches share every message stored by the same session at the same position (a fork
shares its parent's first ``fork_at`` messages, recursively); they diverge after the last such
message. Everything a side reports is what it did after that point: the shared part is counted
on neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scout_tui.core.errors import ScoutError
from scout_tui.core.messages import is_prompt, message_text, tool_results, tool_uses
from scout_tui.store.event_log import SessionInfo, Store
from scout_tui.store.queries import message_owner


@dataclass(frozen=True)
class FileChange:
    """A file a side's turns changed, ``status`` saying how it differs from where the branches
    diverge ("added", "modified", "deleted", "renamed", "added then deleted": ``net_status``),
    lines ``added`` and ``removed`` summed over those turns (None when unknown: a binary file,
    or snapshots no longer kept); ``undone`` when ``/undo`` (or a rewind) took back every turn
    of the side that changed it, the counts then being those turns'."""

    path: str
    status: str
    added: int | None = None
    removed: int | None = None
    undone: bool = False


@dataclass
class Side:
    """One branch after the divergence: ``messages`` (content-block dicts, the first being
    message ``shared`` of the branch), its ``checkpoints`` data (``bus.Checkpoint``) of turns
    from there on, ``usage`` of those messages' requests (``Store.usage_since``; its ``cost``
    includes ``subagent_cost``, what the subagents of its ``task`` calls spent), ``files``,
    ``undone`` the turns of those whose file changes are taken back now (``undone_turns``)."""

    session: SessionInfo
    messages: list[dict]
    checkpoints: list[dict]
    usage: dict[str, float]
    files: list[FileChange] = field(default_factory=list)
    undone: set[int] = field(default_factory=set)

    @property
    def prompts(self) -> list[str]:
        """The text of each prompt the person typed on this side."""
        return [message_text(m) for m in self.messages if is_prompt(m)]

    @property
    def answer(self) -> str:
        """The text of this side's last answer with text ("" when none)."""
        for message in reversed(self.messages):
            if message.get("role") == "assistant" and message_text(message).strip():
                return message_text(message)
        return ""


@dataclass
class Comparison:
    """Branches ``a`` and ``b`` sharing their first ``shared`` messages; ``common`` is the
    session that stores the last shared one (the tree's root when they share none)."""

    shared: int
    common: SessionInfo
    last_shared: dict | None
    a: Side
    b: Side


def compare_branches(store: Store, a_ref: str, b_ref: str) -> Comparison:
    """Compare branches ``a_ref`` and ``b_ref`` (ids or unique prefixes) of one tree.

    Raises:
        ScoutError: a ref matches no session or several, both are the same branch, or they
            belong to different trees (nothing is shared to compare from).
    """
    a, b = store.find(a_ref), store.find(b_ref)
    if a.id == b.id:
        raise ScoutError(f"{a_ref} and {b_ref} are the same branch ({a.id[:8]}): name two branches of one tree")
    a_chain, b_chain = store.ancestry(a.id), store.ancestry(b.id)
    if a_chain[0].id != b_chain[0].id:
        raise ScoutError(f"{a.id[:8]} and {b.id[:8]} are in different session trees (roots {a_chain[0].id[:8]} "
                         f"and {b_chain[0].id[:8]}): only branches of one tree share messages to compare from")
    a_messages, b_messages = store.messages(a.id), store.messages(b.id)
    a_owner, b_owner = message_owner(a_chain), message_owner(b_chain)
    shared = 0
    while shared < min(len(a_messages), len(b_messages)) and a_owner(shared) == b_owner(shared):
        shared += 1
    common_id = a_owner(shared - 1) if shared else a_chain[0].id
    common = next(info for info in a_chain if info.id == common_id)
    return Comparison(shared, common, a_messages[shared - 1] if shared else None,
                      _side(store, a, a_messages, shared), _side(store, b, b_messages, shared))


def _side(store: Store, info: SessionInfo, messages: list[dict], shared: int) -> Side:
    from scout_tui.checkpoints.restores import undone_turns

    events = store.checkpoint_events(info.id)
    checkpoints = [data for kind, data in events if kind == "checkpoint" and int(data.get("turn", 0)) >= shared]
    usage = store.usage_since(info.id, shared)
    calls = [str(use.get("id")) for message in messages[shared:] for use in tool_uses(message)]
    usage["subagent_cost"] = store.call_subagent_cost([s.id for s in store.ancestry(info.id)], calls)
    usage["cost"] += usage["subagent_cost"]
    return Side(info, messages[shared:], checkpoints, usage, undone=set(undone_turns(events)))


def with_files(comparison: Comparison, workspace: Path | None = None) -> Comparison:
    """``comparison`` with each side's ``files``: the paths its checkpoints recorded, with lines
    added and removed from the checkpoint store of ``workspace`` (default: the sessions'
    directory). Runs git: call it off a UI loop. Counts are None where the snapshots cannot be
    read (another machine's store, git missing)."""
    folder = workspace or Path(comparison.common.cwd or ".")
    for side in (comparison.a, comparison.b):
        side.files = changed_files(side.checkpoints, folder, side.undone)
    return comparison


def changed_files(checkpoints: list[dict], workspace: Path, undone: set[int] | frozenset[int] = frozenset()
                  ) -> list[FileChange]:
    """The files ``checkpoints`` (``bus.Checkpoint`` data, oldest first) changed, by path: each
    one's ``net_status`` over the turns and its lines added and removed summed over them. The
    turns in ``undone`` count only for a file no other turn changed, marked ``undone``."""
    from scout_tui.checkpoints.snapshots import Checkpoints

    store = Checkpoints(workspace)
    kept: dict[str, FileChange] = {}
    taken_back: dict[str, FileChange] = {}
    for checkpoint in checkpoints:
        try:
            counts: dict[str, Any] = store.numstat(checkpoint["before"], checkpoint["after"])
        except (ScoutError, KeyError):
            counts = {}
        found = taken_back if checkpoint.get("turn") in undone else kept
        for change in checkpoint.get("files") or []:
            path = change.get("path", "")
            before, count = found.get(path), counts.get(path)
            status = str(change.get("status", "modified"))
            added = removed = None
            if count is not None and (before is None or before.added is not None):
                added = count[0] + (before.added or 0 if before else 0)
                removed = count[1] + (before.removed or 0 if before else 0)
            found[path] = FileChange(path, net_status(before.status, status) if before else status, added, removed,
                                     undone=found is taken_back)
    kept.update((path, change) for path, change in taken_back.items() if path not in kept)
    return sorted(kept.values(), key=lambda f: f.path)


def net_status(earlier: str, later: str) -> str:
    """How a file differs from before two changes, ``earlier`` then ``later`` (git's names:
    "added", "modified", "deleted", "renamed"): added then changed is "added", added then
    deleted "added then deleted", deleted then added again "modified"; else the later one."""
    if earlier.startswith("added"):
        return "added then deleted" if later == "deleted" else "added"
    if earlier == "deleted" and later == "added":
        return "modified"
    return later


def first_line(message: dict | None, width: int = 100) -> str:
    """One line a person recognises ``message`` by: its text's first line, else its tool calls
    (``bash, read``), else "tool results"; clipped to ``width`` characters."""
    if message is None:
        return ""
    text = next((" ".join(line.split()) for line in message_text(message).splitlines() if line.strip()), "")
    if not text and tool_uses(message):
        text = "calls " + ", ".join(str(u.get("name")) for u in tool_uses(message))
    elif not text and tool_results(message):
        text = f"{len(tool_results(message))} tool result{'s' * (len(tool_results(message)) != 1)}"
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def comparison_json(comparison: Comparison) -> dict[str, Any]:
    """The ``--json`` shape: ``shared`` (messages both have), ``common`` (id of the session that
    stores the last of them), ``last_shared`` (its first line), and ``a`` and ``b``: ``session``,
    ``title``, ``parent``, ``fork_at``, ``messages`` ([{"number" (1-based in the branch),
    "role", "text" (first line)}]), ``prompts`` (their text), ``answer`` (the last answer's
    text), ``files`` ([{"path", "status", "added", "removed", "undone"}]; counts null when
    unknown),
    ``requests``, ``input_tokens``, ``output_tokens`` and ``cost`` (dollars) after the
    divergence, ``subagent_cost`` the part of ``cost`` its subagents spent."""
    def side(s: Side) -> dict[str, Any]:
        return {"session": s.session.id, "title": s.session.shown_title, "parent": s.session.parent,
                "fork_at": s.session.fork_at,
                "messages": [{"number": comparison.shared + n + 1, "role": m.get("role"), "text": first_line(m)}
                             for n, m in enumerate(s.messages)],
                "prompts": s.prompts, "answer": s.answer,
                "files": [{"path": f.path, "status": f.status, "added": f.added, "removed": f.removed,
                           "undone": f.undone} for f in s.files],
                "requests": int(s.usage["requests"]), "input_tokens": int(s.usage["input_tokens"]),
                "output_tokens": int(s.usage["output_tokens"]), "cost": s.usage["cost"],
                "subagent_cost": s.usage["subagent_cost"]}

    return {"shared": comparison.shared, "common": comparison.common.id,
            "last_shared": first_line(comparison.last_shared), "a": side(comparison.a), "b": side(comparison.b)}


def file_line(change: FileChange) -> str:
    """``modified src/app.py (+3 −1)``; the counts left out when unknown, ``undone`` added
    when the change was taken back: ``added notes.txt (+2 −0, undone)``."""
    notes = [f"+{change.added} −{change.removed}"] if change.added is not None else []
    notes += ["undone"] * change.undone
    return f"{change.status} {change.path}" + (f" ({', '.join(notes)})" if notes else "")


def spend_line(usage: dict[str, float]) -> str:
    """``$0.0123 · 2 requests · 1,200 in / 340 out tokens`` (the cost unknown, ``cost_text``,
    when tokens were spent at no known price), then `` · subagents $0.30`` when subagents
    spent (part of the cost; their requests and tokens are not in the counts)."""
    from scout_tui.session.cost import cost_text

    requests = int(usage["requests"])
    spent = usage["input_tokens"] + usage["output_tokens"]
    helpers = usage.get("subagent_cost") or 0.0
    return (f"{cost_text(usage['cost'], spent)} · {requests} request{'s' * (requests != 1)} · "
            f"{int(usage['input_tokens']):,} in / {int(usage['output_tokens']):,} out tokens"
            + (f" · subagents {cost_text(helpers, 1)}" if helpers else ""))
