"""Headless mode (``scout-tui -p``): the answer streams to stdout, one line per tool call to stderr.

Same agent and store as the TUI; the session is saved and can be continued with ``-c``.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TextIO

from scout_tui.config import Config
from scout_tui.errors import ScoutError
from scout_tui.runtime import build_agent, needs_key
from scout_tui.store import Store
from scout_tui.text import sanitize
from scout_tui.tools.summary import summarize_call


def open_session(store: Store, cwd: Path, *, resume: str | None, continue_: bool) -> str:
    """The session id to use: ``resume`` (a unique prefix), the latest of ``cwd``, or a new one.

    Raises:
        ScoutError: when ``resume`` matches no session.
    """
    if resume:
        info = store.session(resume)
        if info is None:
            raise ScoutError(f"no session matches {resume!r} (see `scout-tui sessions`)")
        return info.id
    if continue_:
        latest = store.latest(cwd)
        if latest:
            return latest
    return store.create_session(cwd)


async def run_headless(
    config: Config,
    cwd: Path,
    prompt: str,
    *,
    resume: str | None = None,
    continue_: bool = False,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run one request; return 0 on success, 1 on error (printed as ``scout-tui: <message>``)."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    if needs_key(config):
        raise ScoutError(
            f"no API key for provider {config.provider!r}: set ANTHROPIC_API_KEY or OPENAI_API_KEY, "
            "pass --api-key, or use a local server (--provider openai --base-url http://localhost:11434/v1)"
        )
    # Only a terminal can be hijacked by escape sequences; a pipe gets the model's bytes.
    clean = sanitize if out.isatty() else (lambda s: s)
    store = Store()
    session_id = open_session(store, cwd, resume=resume, continue_=continue_)
    agent = build_agent(config, cwd)
    failure: str | None = None
    last = "\n"
    try:
        async for event in agent.run(store.messages(session_id), prompt):
            store.append(session_id, event)
            data = event.data
            if event.type == "message.delta" and data["kind"] == "text":
                last = data["text"] or last
                out.write(clean(data["text"]))
                out.flush()
            elif event.type == "tool.end":
                mark = "✗" if data["is_error"] else "✓"
                use = next((b for m in agent.messages for b in _blocks(m) if b.get("id") == data["id"]), {})
                summary = summarize_call(data["name"], use.get("input") or {})
                print(f"{mark} {summary} ({data['elapsed'] or 0:.2f}s)", file=err, flush=True)
            elif event.type == "retry":
                print(f"retrying ({data['attempt']}/{data['max_attempts']}) in {data['delay']:.1f}s: {data['reason']}",
                      file=err, flush=True)
            elif event.type == "notice":
                print(data["text"], file=err, flush=True)
            elif event.type == "error":
                failure = data["message"]
    except (asyncio.CancelledError, KeyboardInterrupt):
        for event in agent.interrupt():
            store.append(session_id, event)
        raise
    finally:
        if not last.endswith("\n"):
            out.write("\n")
            out.flush()
        await agent.backend.aclose()
        store.close()
    if failure:
        print(f"scout-tui: {failure}", file=err, flush=True)
        return 1
    return 0


def _blocks(message: dict) -> list[dict]:
    content = message.get("content")
    return content if isinstance(content, list) else []
