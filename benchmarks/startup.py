"""Cold start to first frame: scout-tui against a bare Textual app, measured in one run.

Each sample is a fresh `python` process that builds the app, runs it headless, and exits right
after its first refresh; we report wall time (median of N) and peak resident memory, and the
ratio scout-tui / bare Textual (the machines are shared and noisy: compare ratios).

    python benchmarks/startup.py [-n 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

BARE = """
import resource, sys
from textual.app import App
from textual.widgets import Static
class Bare(App):
    def compose(self):
        yield Static("hello")
    def on_mount(self):
        self.call_after_refresh(self.exit)
Bare().run(headless=True, size=(120, 40))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""

SCOUT = """
import resource, sys
from pathlib import Path
from scout_tui.app import ScoutApp
from scout_tui.config import load_config
class FirstFrame(ScoutApp):
    def on_mount(self):
        super().on_mount()
        self.call_after_refresh(self.exit)
FirstFrame(load_config(Path.cwd()), cwd=Path.cwd()).run(headless=True, size=(120, 40))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def sample(code: str, env: dict[str, str], cwd: str) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of one fresh process running ``code``."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    rss_kb = int(done.stderr.strip().splitlines()[-1])
    return wall, rss_kb / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=7, help="samples per app")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "HOME": home, "SCOUT_HOME": os.path.join(home, "data"),
               "XDG_CONFIG_HOME": os.path.join(home, "config"), "ANTHROPIC_API_KEY": "sk-bench"}
        results: dict[str, list[tuple[float, float]]] = {"bare textual": [], "scout-tui": []}
        for _ in range(args.n):  # interleave so both see the same machine load
            results["bare textual"].append(sample(BARE, env, home))
            results["scout-tui"].append(sample(SCOUT, env, home))
    medians = {}
    for name, runs in results.items():
        walls = [w for w, _ in runs]
        medians[name] = statistics.median(walls)
        print(f"{name:13s} first frame: median {medians[name]:.3f} s (min {min(walls):.3f}), "
              f"peak RSS {statistics.median(r for _, r in runs):.0f} MB")
    print(f"ratio scout-tui / bare textual: {medians['scout-tui'] / medians['bare textual']:.2f}x")


if __name__ == "__main__":
    main()
