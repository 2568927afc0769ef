"""What hooks add to a tool call, and whether the event loop goes on while one runs.

Runs the same ``read`` call through the tool runner (``ToolRunner.call_alone``: hooks, permission
check, the tool) with no hook, with one ``PreToolUse`` and one ``PostToolUse`` hook that do
nothing (``true``), and with the same two written in Python (a typical guard script: the
interpreter's start dominates), and prints each median and its ratio to the call alone. Then,
while a hook sleeps 0.5 s, how late a 10 ms timer on the same loop fires at worst (the loop is
free while hooks run: the TUI keeps drawing and taking keys).

    .venv/bin/python benchmarks/hooks.py [-n RUNS]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scout_tui.engine.tool_runner import ToolRunner  # noqa: E402
from scout_tui.extensions.hook_config import HookConfig, HookSettings  # noqa: E402
from scout_tui.extensions.hooks import Hooks  # noqa: E402
from scout_tui.tools import builtin_registry  # noqa: E402


def runner(cwd: Path, commands: list[str]) -> ToolRunner:
    async def nothing() -> None:
        return None

    run = ToolRunner(builtin_registry(), cwd=cwd, env=None, sandbox=None, secrets=(), permissions=None, approve=None,
                     output_dir=None, clock=time.monotonic, before_change=nothing)
    if commands:
        hooks = [HookConfig(event, command) for command in commands for event in ("PreToolUse", "PostToolUse")]
        run.hooks = Hooks(HookSettings(hooks), cwd)
    return run


async def median_ms(run: ToolRunner, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = await run.call_alone("read", {"path": "notes.txt"})
        times.append(time.perf_counter() - start)
        assert not result.is_error, result.content
    return statistics.median(times) * 1000


async def worst_timer_lateness(cwd: Path) -> float:
    """The latest a 10 ms timer fires (ms past due) while a hook sleeping 0.5 s runs."""
    hooks = Hooks(HookSettings([HookConfig("Stop", "sleep 0.5")]), cwd)
    late = 0.0
    firing = asyncio.ensure_future(hooks.fire("Stop", {}))
    while not firing.done():
        due = time.perf_counter() + 0.010
        await asyncio.sleep(0.010)
        late = max(late, (time.perf_counter() - due) * 1000)
    return late


async def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder)
        (cwd / "notes.txt").write_text("the answer is 42\n")
        alone = await median_ms(runner(cwd, []), runs)
        shell = await median_ms(runner(cwd, ["true"]), runs)
        python = await median_ms(runner(cwd, [f"{sys.executable} -c pass"]), runs)
        print(f"a read call alone                          {alone:8.2f} ms")
        print(f"with PreToolUse + PostToolUse `true`       {shell:8.2f} ms  ({shell / alone:.0f}x the call alone)")
        print(f"with PreToolUse + PostToolUse python -c    {python:8.2f} ms  ({python / alone:.0f}x; "
              f"{python / shell:.1f}x the `true` hooks)")
        print(f"a 10 ms timer while a hook sleeps 0.5 s: at worst {await worst_timer_lateness(cwd):.1f} ms late")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=30, help="calls per case (default 30)")
    asyncio.run(main(parser.parse_args().n))
