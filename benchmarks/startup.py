"""Cold start to first frame: scout-tui against a bare Textual app, measured in one run.

Each sample is a fresh `python` process that builds the app and runs it headless; at its first
refresh it notes the wall time since the parent started it (``T0`` in its environment), its CPU
time (all threads) and peak resident memory, then exits. We report medians of N, and the ratios
scout-tui / bare Textual: wall (the figure issue 13 targets, <= 1.3x) and CPU (steadier on a
shared, loaded machine, where wall times swing). Process teardown is not counted in either.

Both apps start from compiled bytecode, as an installed scout-tui does (pip compiles it at
install): the samples run with a private ``PYTHONPYCACHEPREFIX``, filled by one untimed run of
each, even where ``PYTHONDONTWRITEBYTECODE`` is set (then an editable checkout would compile
its ~60 start-up modules from source at every start, ~0.1 s that no installed copy pays).

With ``--instructions``, each app also runs once under valgrind's callgrind, which counts the
instructions executed up to the first frame: a figure that machine load does not move (wall and
CPU ratios of the same code swing by 0.1-0.2x between runs on a shared VM), for telling whether
a change to start-up helps. It also counts a plain Textual app showing only the first frame's
widgets in its layout (``WIDGETS``): the floor for scout-tui's first frame built of these
widgets. Valgrind is a system program; without it the option says so.

    python benchmarks/startup.py [-n 7] [--instructions]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

FIRST_FRAME = """
def first_frame():
    import resource, os, sys, time
    wall = time.time() - float(os.environ["T0"])
    cpu = time.process_time()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"first-frame {wall:.6f} {cpu:.6f} {rss}", flush=True)
"""

BARE = FIRST_FRAME + """
from textual.app import App
from textual.widgets import Static
class Bare(App):
    def compose(self):
        yield Static("hello")
    def on_mount(self):
        self.call_after_refresh(lambda: (first_frame(), self.exit()))
Bare().run(headless=True, size=(120, 40))
"""

WIDGETS = FIRST_FRAME + """
# The first frame's widgets in its layout (ScoutApp.compose), in a plain app: no config,
# permissions, themes, sessions or key-first screen. What Textual alone costs for that frame.
from textual.app import App
from textual.containers import Horizontal, Vertical
from textual.widgets import Static
from scout_tui.widgets import THEME_VARIABLE_DEFAULTS
from scout_tui.widgets.chat_view import ChatView
from scout_tui.widgets.composer import Composer
from scout_tui.widgets.footer import KeysFooter
from scout_tui.widgets.status_bar import StatusBar
class Widgets(App):
    CSS = "#main { height: 1fr; } #chat { width: 2fr; } #side { width: 1fr; min-width: 32; } " \\
          "#side > Static { height: 1fr; border-top: solid $panel; }"
    def get_theme_variable_defaults(self):
        return THEME_VARIABLE_DEFAULTS
    def compose(self):
        with Horizontal(id="main"):
            yield ChatView(id="chat")
            with Vertical(id="side"):
                for title in ("Tool activity", "Sessions"):
                    pane = Static()
                    pane.border_title = title
                    yield pane
        yield Composer(id="composer")
        yield StatusBar(id="status")
        yield KeysFooter()
    def on_mount(self):
        self.call_after_refresh(lambda: (first_frame(), self.exit()))
Widgets().run(headless=True, size=(120, 40))
"""

SCOUT = FIRST_FRAME + """
from pathlib import Path
from scout_tui.tui.app import ScoutApp
from scout_tui.config.layers import load_config
class FirstFrame(ScoutApp):
    def on_mount(self):  # Textual runs ScoutApp.on_mount too (handlers of every class in the MRO)
        self.call_after_refresh(lambda: (first_frame(), self.exit()))
FirstFrame(load_config(Path.cwd()), cwd=Path.cwd()).run(headless=True, size=(120, 40))
"""


def measure(code: str, env: dict[str, str], cwd: str) -> tuple[float, float, float]:
    """(wall seconds from spawning to the first frame, CPU seconds by then, peak RSS MB) of one
    fresh process running ``code`` (``BARE`` or ``SCOUT``).

    Raises:
        RuntimeError: the process printed no first-frame line (its stderr is in the message).
    """
    done = subprocess.run([sys.executable, "-c", code], env={**env, "T0": repr(time.time())}, cwd=cwd,
                          capture_output=True, text=True)
    line = next((line for line in done.stdout.splitlines() if line.startswith("first-frame ")), None)
    if line is None:
        raise RuntimeError(f"no first frame (exit status {done.returncode}):\n{done.stderr}")
    wall, cpu, rss_kb = line.split()[1:]
    return float(wall), float(cpu), int(rss_kb) / 1024


def sample(code: str, env: dict[str, str], cwd: str) -> tuple[float, float]:
    """(wall seconds to the first frame, peak RSS MB) of one fresh process (``measure``)."""
    wall, _, rss = measure(code, env, cwd)
    return wall, rss


def instructions(code: str, env: dict[str, str], cwd: str) -> int:
    """Instructions one fresh process running ``code`` executes until its first frame is out and
    it exits (callgrind's total; hash randomisation off, so repeat runs agree).

    Raises:
        RuntimeError: callgrind printed no total (its output is in the message).
    """
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", code],
                          env={**env, "T0": repr(time.time()), "PYTHONHASHSEED": "0"}, cwd=cwd, capture_output=True,
                          text=True)
    total = re.search(r"Collected : (\d+)", done.stderr)
    if total is None:
        raise RuntimeError(f"callgrind gave no total (exit status {done.returncode}):\n{done.stderr[-2000:]}")
    return int(total.group(1))


def compiled_env(root: str) -> dict[str, str]:
    """Environment variables for starting from cached bytecode, kept under ``root``: what an
    installed copy does (see the module docstring). Merge them into the child's environment
    and run each program once, untimed, to fill the cache."""
    return {"PYTHONPYCACHEPREFIX": os.path.join(root, "pycache"), "PYTHONDONTWRITEBYTECODE": ""}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=7, help="samples per app")
    parser.add_argument("--instructions", action="store_true",
                        help="also count instructions to the first frame under valgrind (~1 min)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        repo = os.path.join(home, "repo")  # a project folder: started in HOME, the sandbox warns in a toast
        os.mkdir(repo)
        env = {**os.environ, "HOME": home, "SCOUT_HOME": os.path.join(home, "data"),
               "XDG_CONFIG_HOME": os.path.join(home, "config"), "ANTHROPIC_API_KEY": "sk-bench"}
        env.update(compiled_env(home))
        for code in (BARE, SCOUT):  # untimed: fills the bytecode cache
            measure(code, env, repo)
        results: dict[str, list[tuple[float, float, float]]] = {"bare textual": [], "scout-tui": []}
        for _ in range(args.n):  # interleave so both see the same machine load
            results["bare textual"].append(measure(BARE, env, repo))
            results["scout-tui"].append(measure(SCOUT, env, repo))
        counted = {}
        if args.instructions and shutil.which("valgrind"):
            measure(WIDGETS, env, repo)  # untimed: its bytecode
            counted = {name: instructions(code, env, repo)
                       for name, code in (("bare textual", BARE), ("its widgets alone", WIDGETS), ("scout-tui", SCOUT))}
    wall, cpu = {}, {}
    for name, runs in results.items():
        walls = [w for w, _, _ in runs]
        wall[name], cpu[name] = statistics.median(walls), statistics.median(c for _, c, _ in runs)
        print(f"{name:13s} first frame: median {wall[name]:.3f} s (min {min(walls):.3f}), CPU {cpu[name]:.3f} s, "
              f"peak RSS {statistics.median(r for _, _, r in runs):.0f} MB")
    print(f"ratio scout-tui / bare textual: {wall['scout-tui'] / wall['bare textual']:.2f}x wall, "
          f"{cpu['scout-tui'] / cpu['bare textual']:.2f}x CPU")
    if counted:
        bare = counted["bare textual"]
        print(f"instructions to the first frame (callgrind): bare textual {bare / 1e6:,.0f} M, " + ", ".join(
            f"{name} {n / 1e6:,.0f} M ({n / bare:.2f}x)" for name, n in counted.items() if name != "bare textual"))
    elif args.instructions:
        print("instructions: valgrind is not installed (apt install valgrind)")


if __name__ == "__main__":
    main()
