"""A session with its ancestry as text: a readable Markdown transcript, or JSON for programs.

Used by ``scout-tui export ID [--format md|json]``. Pure functions over ``SessionInfo`` rows
and plain message dicts (Anthropic content-block shape); nothing here touches the store.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict
from typing import Any

from scout_tui.core.messages import blocks, result_text
from scout_tui.store.event_log import SessionInfo
from scout_tui.store.queries import message_owner


def to_json(ancestry: list[SessionInfo], messages: list[dict]) -> str:
    """``{"session": {...SessionInfo fields, "ancestry": [...]}, "messages": [...]}`` as JSON text.

    ``ancestry`` is root first and ends with the exported session (``Store.ancestry``); the
    ``"ancestry"`` list holds ``{id, title, fork_at}`` of each ancestor, root first, without the
    session itself. ``messages`` is the whole conversation, shared messages included, as
    ``Store.messages`` returns it. Non-ASCII text is kept as is (lone surrogates are escaped).
    """
    *ancestors, session = ancestry
    doc = {
        "session": {
            **asdict(session),
            "ancestry": [{"id": a.id, "title": a.title, "fork_at": a.fork_at} for a in ancestors],
        },
        "messages": messages,
    }
    text = json.dumps(doc, ensure_ascii=False, indent=2, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(doc, ensure_ascii=True, indent=2, default=str)
    return text + "\n"


def to_markdown(ancestry: list[SessionInfo], messages: list[dict]) -> str:
    """A Markdown transcript: a header (title, id, directory, times, tokens, ancestry), then
    each message numbered from 1 under its role, with tool calls (input as JSON) and tool
    results in fenced blocks, thinking as a quote, and a note where shared messages end.

    Arguments as for ``to_json``. Message numbers match ``scout-tui --fork ID:N`` (a fork at N
    shares messages 1..N).
    """
    *ancestors, session = ancestry
    out = [f"# {session.shown_title}", ""]
    out.append(f"- session: `{session.id}`")
    out.append(f"- directory: `{session.cwd}`")
    out.append(f"- created: {_when(session.created)}; updated: {_when(session.updated)}")
    out.append(f"- messages: {session.message_count}; tokens: {session.input_tokens} in, {session.output_tokens} out")
    if ancestors:
        chain = " → ".join(f"`{a.id[:8]}`" for a in ancestors)
        out.append(f"- forked from: {chain} (shares its first {session.fork_at} messages)")
    if session.deleted:
        out.append("- deleted (hidden from listings)")
    out.append("")
    owners = message_owner(ancestry)
    for i, message in enumerate(messages):
        if ancestors and (i == 0 or owners(i) != owners(i - 1)):
            mine = " (this session)" if owners(i) == session.id else ""
            out += (["---", ""] if i else []) + [f"*From session `{owners(i)[:8]}`{mine}:*", ""]
        role = message.get("role", "?")
        out += [f"## {i + 1} · {role}", ""]
        for block in blocks(message):
            out += _block(block)
        if message.get("incomplete"):
            out += ["*(incomplete: the answer was cut off)*", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _block(block: dict) -> list[str]:
    kind = block.get("type")
    if kind == "text":
        return [str(block.get("text", "")), ""]
    if kind == "thinking":
        text = str(block.get("thinking") or block.get("text") or "")
        return ["> *thinking*", ">", *[f"> {line}" for line in text.splitlines()], ""]
    if kind == "tool_use":
        body = json.dumps(block.get("input", {}), ensure_ascii=False, indent=2)
        return [f"**Tool call** `{block.get('name')}` (`{block.get('id')}`)", "", *_fenced(body, "json"), ""]
    if kind == "tool_result":
        label = "Tool result (error)" if block.get("is_error") else "Tool result"
        return [f"**{label}** for `{block.get('tool_use_id')}`", "", *_fenced(result_text(block.get("content"))), ""]
    return [f"*{kind} block*", "", *_fenced(json.dumps(block, ensure_ascii=False, indent=2), "json"), ""]


def _fenced(text: str, lang: str = "") -> list[str]:
    """``text`` in a code fence longer than any run of backticks inside it (CommonMark §4.5)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{lang}", text, fence]


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))
