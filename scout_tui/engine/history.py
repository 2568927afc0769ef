"""The one history check: is a conversation a valid request for both model APIs, and repair it.

Used before every request, after loading a session and after compaction. Rules (from the
Anthropic Messages and OpenAI Chat Completions references): every ``tool_use`` is answered
exactly once by a ``tool_result`` in the next message, which is a user message, the results
before any other block of it; no orphan or duplicate result; no empty message; roles alternate.
"""

from __future__ import annotations

from typing import Any

from scout_tui.core.messages import blocks, tool_uses

INTERRUPTED = "Interrupted: this tool call was not run to completion, so it has no result."


def error_result(tool_use_id: str, text: str = INTERRUPTED) -> dict:
    """A ``tool_result`` block that answers ``tool_use_id`` with an error."""
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": text, "is_error": True}


def problems(messages: list[dict]) -> list[str]:
    """What makes ``messages`` an invalid request, one sentence each; [] when valid."""
    found: list[str] = []
    for i, message in enumerate(messages):
        content = blocks(message)
        if not _meaningful(content):
            found.append(f"message {i} is empty")
        if i and messages[i - 1].get("role") == message.get("role"):
            found.append(f"messages {i - 1} and {i} have the same role")
        asked = {b["id"] for b in tool_uses(messages[i - 1])} if i else set()
        seen: set[str] = set()
        other_before = False
        for b in content:
            if b.get("type") != "tool_result":
                other_before = True
                continue
            if other_before:
                found.append(f"message {i} has a tool result after other content (results must come first)")
            tid = b.get("tool_use_id")
            if tid not in asked:
                found.append(f"message {i} answers {tid}, which the message before did not call")
            elif tid in seen:
                found.append(f"message {i} answers {tid} twice")
            seen.add(tid)
        if message.get("role") == "assistant" and tool_uses(message):
            nxt = blocks(messages[i + 1]) if i + 1 < len(messages) else []
            answered = {b.get("tool_use_id") for b in nxt if b.get("type") == "tool_result"}
            for use in tool_uses(message):
                if use["id"] not in answered:
                    found.append(f"tool call {use['id']} in message {i} has no result")
    return found


def repair(messages: list[dict], *, close_open_calls: bool = True) -> list[dict]:
    """A valid copy of ``messages``; the input is never mutated.

    Drops blank text blocks, empty messages, orphan and duplicate tool results; merges
    consecutive messages of one role; answers every unanswered ``tool_use`` with an error
    result (unless ``close_open_calls`` is False and the unanswered calls end the list, which
    is the state just before tools run).
    """
    cleaned: list[dict] = []
    for message in messages:
        content = [b for b in blocks(message) if not _blank_text(b)]
        if not content:
            continue
        if cleaned and cleaned[-1]["role"] == message.get("role"):
            cleaned[-1] = {**cleaned[-1], "content": cleaned[-1]["content"] + content}
        else:
            cleaned.append({**message, "content": content})

    out: list[dict] = []
    for i, message in enumerate(cleaned):
        content = message["content"]
        if message["role"] == "user":
            asked = [u["id"] for u in tool_uses(out[-1])] if out and out[-1]["role"] == "assistant" else []
            results: dict[str, dict] = {}
            for b in content:
                if b.get("type") == "tool_result" and b.get("tool_use_id") in asked:
                    results.setdefault(b["tool_use_id"], b)
            others = [b for b in content if b.get("type") != "tool_result"]
            ordered = [results.get(tid) or error_result(tid) for tid in asked]
            content = ordered + others
            if not content:
                continue
            out.append({**message, "content": content})
        else:
            out.append(message)
            uses = tool_uses(message)
            last = i == len(cleaned) - 1
            nxt_is_user = not last and cleaned[i + 1]["role"] == "user"
            if uses and not nxt_is_user and (close_open_calls or not last):
                out.append({"role": "user", "content": [error_result(u["id"]) for u in uses]})
    # A merge above can leave two user messages adjacent (assistant dropped as empty).
    merged: list[dict] = []
    for message in out:
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1] = {**merged[-1], "content": merged[-1]["content"] + message["content"]}
        else:
            merged.append(message)
    return merged


def _blank_text(block: dict[str, Any]) -> bool:
    return block.get("type") == "text" and not str(block.get("text", "")).strip()


def _meaningful(content: list[dict]) -> bool:
    return any(not _blank_text(b) for b in content)
