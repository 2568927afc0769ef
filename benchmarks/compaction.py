"""Prompt compaction: the cost of prepare_prompt on a long session, and what each strategy sends.

1. ``prepare_prompt`` on 5,000 tool calls with 4 KB results (target <= 20 ms): the first call
   (nothing memoised) and then median / best of N, wall and CPU time, per strategy; also
   ``compact`` (which adds the two token estimates).
2. A conversation growing from 1 to 300 tool calls, one model call after each result: per
   strategy, the share of calls whose prompt begins with the whole previous prompt (what a
   provider's prompt cache can reuse), the input characters sent in total, and the characters
   past the shared message prefix (roughly what a cache would not cover).

Settings are the defaults (no config file, no SCOUT_* variable). The machines are shared and
noisy: read the best-of-N figure as the cost, the median as what a busy machine gives.

    python benchmarks/compaction.py [-n 30] [--calls 5000] [--size 4096] [--grow 300]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

from scout_tui import tool_calls
from scout_tui.compaction import compact, prepare_prompt

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


def timed(fn, runs: int) -> dict[str, float]:
    """First call, then median and best of ``runs`` calls, in milliseconds (wall and CPU)."""
    tool_calls._key_memo.clear()
    start = time.perf_counter()
    fn()
    first = (time.perf_counter() - start) * 1e3
    wall, cpu = [], []
    for _ in range(runs):
        w, c = time.perf_counter(), time.process_time()
        fn()
        cpu.append((time.process_time() - c) * 1e3)
        wall.append((time.perf_counter() - w) * 1e3)
    return {"first": first, "median": statistics.median(wall), "best": min(wall), "cpu median": statistics.median(cpu)}


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
              f"({len(messages):,} messages), settings read from config each call; ms")
        print(f"  {'strategy':<22}{'first':>8}{'median':>9}{'best':>8}{'cpu med':>9}  result")
        prepare_prompt(messages, "none")  # imports the config module once
        for strategy in STRATEGIES:
            t = timed(lambda: prepare_prompt(messages, strategy), args.n)
            out = compact(messages, strategy)
            print(f"  {strategy:<22}{t['first']:8.1f}{t['median']:9.1f}{t['best']:8.1f}{t['cpu median']:9.1f}"
                  f"  {len(out.messages):,} messages, {out.truncated} truncated, {out.dropped:,} dropped")
        t = timed(lambda: compact(messages), args.n)
        out = compact(messages)
        print(f"  {'compact (epoch+tokens)':<22}{t['first']:8.1f}{t['median']:9.1f}{t['best']:8.1f}{t['cpu median']:9.1f}"
              f"  ~{out.tokens_before:,} -> ~{out.tokens_after:,} tokens")
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
