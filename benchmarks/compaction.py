"""Prompt compaction: the cost of prepare_prompt on a long session, and what each strategy sends.

1. ``prepare_prompt`` on 5,000 tool calls with 4 KB results (target <= 20 ms): a first call
   (nothing remembered from an earlier call: ``forget_memos``; the median of 5), then the
   median and min–max of N calls on the same conversation, wall time, the CPU-time median, and
   the median as a ratio to one plain pass over the conversation's messages timed between the
   same runs (so a busy machine slows both); per strategy, and ``compact`` (which adds the two
   token estimates).
   Then the case that runs in a session: before each of N calls the conversation grows by one
   tool call (an epoch boundary every 10 calls, where the compacted part changes), for
   ``prepare_prompt`` and for ``agent.window.preview()`` (the whole request side: ``for_request``,
   ``compact``, ``repair`` and the token budget, 200,000-token window).
2. A conversation growing from 1 to 300 tool calls, one model call after each result: per
   strategy, the share of calls whose prompt begins with the whole previous prompt (what a
   provider's prompt cache can reuse), the input characters sent in total, and the characters
   past the shared message prefix (roughly what a cache would not cover).

Settings are the defaults (no config file, no SCOUT_* variable). The machines are shared and
noisy: read the minimum and the ratio as the cost, the median as what a busy machine gives.

    python benchmarks/compaction.py [-n 30] [--calls 5000] [--size 4096] [--grow 300]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

from scout_tui.engine.agent import Agent
from scout_tui.backends import make_backend
from scout_tui.engine.compaction import compact, forget_memos, prepare_prompt
from scout_tui.engine.settings import AgentSettings
from scout_tui.tools import builtin_registry

STRATEGIES = ("none", "shorten_tools", "shorten_tools_epoch")


def session(calls: int, size: int) -> list[dict]:
    """A request, then ``calls`` tool calls with ``size``-character results; every third
    assistant message says a sentence before its call, as models often do."""
    messages: list[dict] = [{"role": "user", "content": "Find why the nightly build fails and fix it."}]
    for i in range(calls):
        messages += turn(i, size)
    return messages


def turn(i: int, size: int) -> list[dict]:
    line = f"{i:06d} src/module_{i % 97}.py:{i % 400}: some output line of a tool, more or less code-like\n"
    content: list[dict] = []
    if i % 3 == 0:
        content.append({"type": "text", "text": f"Step {i}: let me look at module {i % 97}."})
    tool = ("bash", {"command": f"grep -n build_{i} src/module_{i % 97}.py"}) if i % 2 else ("read", {"path": f"src/module_{i}.py"})
    content.append({"type": "tool_use", "id": f"toolu_{i:06d}", "name": tool[0], "input": tool[1]})
    body = (line * (size // len(line) + 1))[:size]
    return [
        {"role": "assistant", "content": content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i:06d}", "content": body, "is_error": False}]},
    ]


def scan(messages: list[dict]) -> int:
    """One plain pass over the messages and their blocks: the yardstick the ratios divide by."""
    n = 0
    for m in messages:
        if m.get("role") == "assistant":
            n += len(m["content"])
    return n


FIRSTS = 5
"""First calls timed (each after ``forget_memos``); their median is the "first" figure."""


def timed(fn, runs: int, messages: list[dict]) -> dict[str, float]:
    """First call (nothing remembered; median of ``FIRSTS``), then median, min and max of ``runs`` calls, in
    milliseconds (wall; and the CPU median), and the wall median over ``scan(messages)``'s,
    timed between the same runs."""
    firsts = []
    for _ in range(FIRSTS):
        forget_memos()
        start = time.perf_counter()
        fn()
        firsts.append((time.perf_counter() - start) * 1e3)
    first = statistics.median(firsts)
    wall, cpu, yardstick = [], [], []
    for _ in range(runs):
        w, c = time.perf_counter(), time.process_time()
        fn()
        cpu.append((time.process_time() - c) * 1e3)
        wall.append((time.perf_counter() - w) * 1e3)
        w = time.perf_counter()
        scan(messages)
        yardstick.append((time.perf_counter() - w) * 1e3)
    return {"first": first, "median": statistics.median(wall), "min": min(wall), "max": max(wall),
            "cpu median": statistics.median(cpu), "ratio": statistics.median(wall) / statistics.median(yardstick)}


def growing(fn, messages: list[dict], runs: int, size: int) -> dict[str, float]:
    """``timed``'s figures (but "first") for ``fn(conversation)``, the conversation one tool call
    longer before each call (a new list, as a session's next model call sees it)."""
    fn(messages)
    made = len(messages) // 2  # calls so far (a request, then two messages per call)
    wall, cpu, yardstick = [], [], []
    for i in range(runs):
        messages = messages + turn(made + i, size)
        w, c = time.perf_counter(), time.process_time()
        fn(messages)
        cpu.append((time.process_time() - c) * 1e3)
        wall.append((time.perf_counter() - w) * 1e3)
        w = time.perf_counter()
        scan(messages)
        yardstick.append((time.perf_counter() - w) * 1e3)
    return {"first": float("nan"), "median": statistics.median(wall), "min": min(wall), "max": max(wall),
            "cpu median": statistics.median(cpu), "ratio": statistics.median(wall) / statistics.median(yardstick)}


def row(label: str, t: dict[str, float], result: str) -> str:
    first = f"{t['first']:8.1f}" if t["first"] == t["first"] else f"{'':8}"
    span = f"{t['min']:.1f}–{t['max']:.1f}"
    return f"  {label:<24}{first}{t['median']:9.1f}{span:>13}{t['cpu median']:9.1f}{t['ratio']:8.1f}x  {result}"


def agent(window: int = 200_000) -> Agent:
    """An agent with the built-in tools and a ``window``-token context, for ``preview`` (it
    makes no request)."""
    backend = make_backend("anthropic", model="claude-sonnet-4-5", api_key="sk-bench", max_retries=0)
    return Agent(backend, builtin_registry(), AgentSettings(system="You are a coding assistant.", context_window=window))


def chars(messages: list[dict]) -> int:
    """Characters of the messages as a request body's JSON would carry them."""
    return len(json.dumps(messages, ensure_ascii=False))


def grow(calls: int, size: int, strategy: str) -> dict[str, float]:
    """Prompt-prefix sharing and characters sent over a session growing one call at a time."""
    messages: list[dict] = session(0, size)
    previous: list[dict] | None = None
    shared = sent = uncached = 0
    for i in range(calls):
        messages = messages + turn(i, size)
        prompt = prepare_prompt(messages, strategy, {})
        total = chars(prompt)
        sent += total
        if previous is None:
            uncached += total
        else:
            if prompt[: len(previous)] == previous:
                shared += 1
            common = 0
            for a, b in zip(prompt, previous):
                if a != b:
                    break
                common += 1
            uncached += total - (chars(prompt[:common]) - 1 if common else 0)
        previous = prompt
    return {"share": shared / (calls - 1), "sent": sent, "uncached": uncached}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=30, help="timed runs per figure")
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--size", type=int, default=4096, help="characters per tool result")
    parser.add_argument("--grow", type=int, default=300, help="tool calls in the growing session")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as home:
        # No user or project config file, no SCOUT_* variable: the defaults are measured.
        os.environ["XDG_CONFIG_HOME"] = home
        os.chdir(home)
        for key in [k for k in os.environ if k.startswith("SCOUT_")]:
            del os.environ[key]

        messages = session(args.calls, args.size)
        print(f"prepare_prompt, {args.calls:,} tool calls of {args.size:,} characters "
              f"({len(messages):,} messages), default settings; ms, and the median / one pass over the messages")
        print(f"  {'strategy':<24}{'first':>8}{'median':>9}{'min–max':>13}{'cpu med':>9}{'/ scan':>9}  result")
        prepare_prompt(messages, "none")  # imports what the first call needs
        for strategy in STRATEGIES:
            t = timed(lambda: prepare_prompt(messages, strategy), args.n, messages)
            out = compact(messages, strategy)
            print(row(strategy, t, f"{len(out.messages):,} messages, {out.truncated} truncated, {out.dropped:,} dropped"))
        t = timed(lambda: compact(messages), args.n, messages)
        out = compact(messages)
        print(row("compact (epoch+tokens)", t, f"~{out.tokens_before:,} -> ~{out.tokens_after:,} tokens"))
        t = growing(lambda m: prepare_prompt(m), messages, args.n, args.size)
        print(row("  +1 call before each", t, f"{args.n} calls, {args.n // 10} or {args.n // 10 + 1} epoch boundaries"))
        scout = agent()

        def preview(m: list[dict]) -> None:
            scout.messages = m
            scout.window.preview()

        t = growing(preview, messages, args.n, args.size)
        print(row("window.preview, +1 call", t, "for_request, compact, repair, token budget"))
        print("  target: <= 20 ms for prepare_prompt (shorten_tools_epoch, the default)")

        print(f"\ngrowing session, 1 -> {args.grow} tool calls of {args.size:,} characters, a model call after each")
        print(f"  {'strategy':<22}{'prefix kept':>12}{'chars sent':>14}{'past prefix':>14}")
        for strategy in STRATEGIES:
            g = grow(args.grow, args.size, strategy)
            print(f"  {strategy:<22}{g['share']:12.1%}{g['sent']:14,}{g['uncached']:14,}")
        print("  prefix kept: share of calls whose prompt begins with the whole previous prompt;")
        print("  past prefix: characters after the messages shared with the previous prompt.")


if __name__ == "__main__":
    main()
