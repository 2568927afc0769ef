"""What the permission check and the full-output file cost, next to what they guard.

Prints the median time of ``Policy.check`` for typical calls (a read, an edit, a simple and a
compound bash command, a 200-part pipeline; unsandboxed, where every argument is also resolved
as a path, and for the pipeline also in the sandbox), the one-off cost of loading the bash grammar, and
bash throughput on 50 MB of output with and without saving the whole output to a file, as
ratios measured in the same run.

    .venv/bin/python benchmarks/permissions.py
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scout_tui.tools.base import ToolContext  # noqa: E402
from scout_tui.tools.bash import run_bash  # noqa: E402


def median_us(fn, runs: int = 2000) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


async def bash_seconds(command: str, ctx: ToolContext) -> float:
    start = time.perf_counter()
    await run_bash({"command": command}, ctx)
    return time.perf_counter() - start


def main() -> None:
    start = time.perf_counter()
    from scout_tui.tools.permissions import Policy, parse_rule
    from scout_tui.tools.shell_parts import split_command

    split_command("true")
    print(f"import + load the bash grammar (once): {(time.perf_counter() - start) * 1e3:.1f} ms")

    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        (ws / "src").mkdir()
        policy = Policy("ask", [parse_rule(r) for r in ("bash:git status*", "bash:grep *", "edit:src/**")],
                        [parse_rule("bash:rm *")], ws)
        pipeline = " | ".join(f"grep -v x{i}" for i in range(200))
        cases = {
            "read src/a.py": lambda: policy.check("read", {"path": "src/a.py"}, ws, read_only=True),
            "edit src/a.py": lambda: policy.check("edit", {"path": "src/a.py"}, ws),
            "bash git status": lambda: policy.check("bash", {"command": "git status"}, ws),
            "bash 4 parts + redirect": lambda: policy.check(
                "bash", {"command": "git status && grep -r TODO src | sort > todo.txt 2>&1"}, ws),
            "bash 200-part pipeline": lambda: policy.check("bash", {"command": pipeline}, ws),
            # Without the sandbox each argument is also resolved as a path (shell_paths).
            "bash 200-part, in sandbox": lambda: policy.check("bash", {"command": pipeline}, ws, sandbox="active"),
        }
        checks = {name: median_us(fn, 300 if "200" in name else 2000) for name, fn in cases.items()}

        async def spawn() -> float:
            times = [await bash_seconds("true", ToolContext(ws)) for _ in range(20)]
            return statistics.median(times) * 1e6

        spawn_us = asyncio.run(spawn())
        print(f"\nPolicy.check, median (bash `true` itself takes {spawn_us:,.0f} µs here):")
        for name, us in checks.items():
            print(f"  {name:<26} {us:>9.1f} µs   {us / spawn_us:6.1%} of running `true`")

        command = "head -c 50000000 /dev/zero | tr '\\0' 'x' | fold -w 100"

        async def throughput() -> tuple[float, float, int]:
            plain, saved = [], []
            size = 0
            for i in range(3):
                plain.append(await bash_seconds(command, ToolContext(ws)))
                out = ws / f"out{i}.txt"
                saved.append(await bash_seconds(command, ToolContext(ws, output_path=out)))
                size = out.stat().st_size
            return statistics.median(plain), statistics.median(saved), size

        plain, saved, size = asyncio.run(throughput())
        print(f"\nbash printing 50 MB: {plain:.2f} s without the full-output file, {saved:.2f} s with it "
              f"({size / 1e6:.1f} MB written); ratio {saved / plain:.2f}×")


if __name__ == "__main__":
    main()
