"""Context economy of subagents: what a run pays when the main agent delegates its reading.

The real ``scout-tui -p`` (a subprocess, its own HOME) against a loopback server whose requests
are billed by the cache emulators of ``benchmarks/context_cost.py`` (``tests/cache_emulator.py``,
the providers' documented caching rules, ``--gap`` seconds between requests):

- **delegated**: the main agent makes ``--tasks`` ``task`` calls, one per answer; each subagent
  reads ``--files`` files of ``--size`` characters, one ``read`` per answer, then answers with a
  short summary (``SUMMARY_CHARS``); then the main agent answers.
- **alone**: the same files read by the main agent itself, one ``read`` per answer.

For each, the parent's and the children's requests apart: input tokens sent, the share read
from and written to the cache, and the effective input cost (uncached 1x, 5-minute writes
1.25x, 1-hour writes 2x, reads 0.1x) in tokens, and the parent's last prompt (what its
context grew to). Deterministic figures, no seconds.

    python benchmarks/subagent_cost.py [--tasks 20] [--files 10] [--size 4096] [--gap 10]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from cache_emulator import AnthropicCache, OpenAICache, anthropic_sse, openai_sse  # noqa: E402
from context_cost import add_usage, cost  # noqa: E402  (the same sums and cost as that benchmark)

from tests.loopback import LoopbackServer, Recorded, Reply  # noqa: E402

SUMMARY_CHARS = 300
MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4.1"}


def write_files(folder: Path, tasks: int, files: int, size: int) -> None:
    for t in range(tasks):
        for f in range(files):
            line = f"task {t:02d} file {f:02d}: the quick brown fox jumps over the lazy dog {t * 131 + f * 7919:06d}\n"
            (folder / f"t{t:02d}_f{f:02d}.txt").write_text((line * (size // len(line) + 1))[:size])


def tool_results(body: dict) -> int:
    """How many tool results the request carries (Anthropic blocks or OpenAI tool messages)."""
    count = 0
    for message in body.get("messages") or []:
        if message.get("role") == "tool":
            count += 1
        elif isinstance(message.get("content"), list):
            count += sum(1 for b in message["content"] if isinstance(b, dict) and b.get("type") == "tool_result")
    return count


def first_text(body: dict) -> str:
    for message in body.get("messages") or []:
        if message.get("role") == "user":
            return json.dumps(message.get("content"))
    return ""


class Model:
    """Scripted answers (see the module's docstring); bills each request with ``emulator``."""

    def __init__(self, api: str, emulator: AnthropicCache | OpenAICache, tasks: int, files: int, gap: float,
                 delegate: bool) -> None:
        self.api, self.emulator, self.tasks, self.files, self.gap, self.delegate = api, emulator, tasks, files, gap, delegate
        self.billed: list[tuple[str, dict, int]] = []  # (parent|child, usage, prompt characters)

    def __call__(self, recorded: Recorded) -> Reply:
        body = recorded.json()
        usage = self.emulator.bill(body)
        self.emulator.advance(self.gap)
        first = first_text(body)
        done = tool_results(body)
        child = "SUBTASK-" in first
        self.billed.append(("child" if child else "parent", usage, len(recorded.body)))
        if child:
            task = int(first.split("SUBTASK-")[1][:2])
            if done < self.files:
                return self._call(f"r{done}", "read", {"path": f"t{task:02d}_f{done:02d}.txt"})
            return self._text(f"Sub-task {task:02d}: read {self.files} files; " + "all checksums match. " * 20)
        if self.delegate and done < self.tasks:
            return self._call(f"t{done}", "task", {"description": f"check part {done:02d}",
                                                    "prompt": f"SUBTASK-{done:02d}: read t{done:02d}_f00.txt to "
                                                              f"t{done:02d}_f{self.files - 1:02d}.txt and check them"})
        if not self.delegate and done < self.tasks * self.files:
            t, f = divmod(done, self.files)
            return self._call(f"r{done}", "read", {"path": f"t{t:02d}_f{f:02d}.txt"})
        return self._text("All parts are checked: the checksums match.")

    def _call(self, tid: str, name: str, args: dict) -> Reply:
        usage = self.billed[-1][1]
        tool = (f"toolu_{tid}" if self.api == "anthropic" else f"call_{tid}", name, [json.dumps(args)])
        return Reply(anthropic_sse(usage, ["."], tool) if self.api == "anthropic" else openai_sse(usage, [], tool))

    def _text(self, text: str) -> Reply:
        usage = self.billed[-1][1]
        text = text[:SUMMARY_CHARS]
        return Reply(anthropic_sse(usage, [text]) if self.api == "anthropic" else openai_sse(usage, [text]))


def figures(api: str, billed: list[tuple[str, dict, int]], who: str) -> dict[str, float]:
    """The sums of ``context_cost.add_usage`` over the requests of ``who`` (parent or child)."""
    t = {"requests": 0, "sent": 0, "read": 0, "write_5m": 0, "write_1h": 0, "uncached": 0, "half": 0, "last": 0}
    for kind, usage, _ in billed:
        if kind == who:
            add_usage(t, api, usage)
    return t


def run(api: str, delegate: bool, args: argparse.Namespace, root: Path) -> list[tuple[str, dict, int]]:
    home = root / f"{api}-{'delegated' if delegate else 'alone'}"
    repo = home / "repo"
    repo.mkdir(parents=True)
    write_files(repo, args.tasks, args.files, args.size)
    emulator: AnthropicCache | OpenAICache = (AnthropicCache(context_window=1_000_000) if api == "anthropic"
                                              else OpenAICache(context_window=1_000_000))
    model = Model(api, emulator, args.tasks, args.files, args.gap, delegate)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCOUT_")}
    env.update(HOME=str(home), SCOUT_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "config"))
    with LoopbackServer(handler=model) as server:
        done = subprocess.run(
            [sys.executable, "-m", "scout_tui", "-p", "check every file", "--provider", api, "--model", MODELS[api],
             "--base-url", server.url + ("/v1" if api == "openai" else ""), "--api-key", "sk-bench",
             "--max-turns", str(args.tasks * args.files + 10)],
            cwd=repo, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"scout-tui -p failed ({api}, delegate={delegate}):\n{done.stderr[-2000:]}")
    return model.billed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=20, help="sub-tasks delegated")
    parser.add_argument("--files", type=int, default=10, help="files each sub-task reads")
    parser.add_argument("--size", type=int, default=4096, help="characters per file")
    parser.add_argument("--gap", type=float, default=10.0, help="seconds between requests (cache lifetimes)")
    args = parser.parse_args()
    print(f"subagent cost: {args.tasks} sub-tasks x {args.files} files of {args.size:,} characters; "
          f"{args.gap:g} s between requests; cost in input tokens at 1x (uncached 1x, write 1.25x/2x, read 0.1x)")
    with tempfile.TemporaryDirectory(prefix="scout-subagent-cost-") as tmp:
        for api in ("anthropic", "openai"):
            alone = run(api, False, args, Path(tmp))
            delegated = run(api, True, args, Path(tmp))
            print(f"\n{api} rules ({MODELS[api]})")
            print(f"  {'run':<22}{'requests':>9}{'input sent':>12}{'read':>7}{'written':>9}{'cost':>11}{'last prompt':>13}")
            rows = [("alone: main agent", figures(api, alone, "parent")),
                    ("delegated: main agent", figures(api, delegated, "parent")),
                    ("delegated: subagents", figures(api, delegated, "child"))]
            for label, t in rows:
                written = t["write_5m"] + t["write_1h"]
                print(f"  {label:<22}{t['requests']:9,}{t['sent']:12,}{t['read'] / max(t['sent'], 1):7.0%}"
                      f"{written / max(t['sent'], 1):9.0%}{cost(t):11,.0f}{t['last']:13,}")
            whole = cost(rows[1][1]) + cost(rows[2][1])
            print(f"  the main agent's cost delegated / alone: {cost(rows[1][1]) / cost(rows[0][1]):.3f}x; its last prompt "
                  f"{rows[1][1]['last'] / rows[0][1]['last']:.3f}x; the whole delegated run / alone: "
                  f"{whole / cost(rows[0][1]):.2f}x")


if __name__ == "__main__":
    main()
