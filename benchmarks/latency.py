"""What a person at the terminal waits for: the real scout-tui in a tmux pane against a loopback
Anthropic-format server, read back by polling the screen (issue 13's figures, before and after).

Measures, each as median (min–max) over N runs, every run a fresh app process and HOME:

1. keystroke echo: while an answer streams, a character is typed into the composer every 200 ms
   and timed until the composer row on screen shows it; p50 and p95 per run, during a 200 KB
   burst (4-character deltas sent as fast as the socket allows) and during the same answer paced
   at 2,000 deltas/s. Target: p95 <= 50 ms in both.
2. Enter to the last line of the 200 KB burst on screen (a marker line ends the answer; measured
   in the same run as the keystrokes of 1, which add 5 keys/s). Target: <= 2 s.
3. resize redraw: a stored session holding a 500 KB answer, opened with ``-c`` at 50x16 and
   left to settle, then the terminal goes to 120x40; time until the screen is the frame it
   finally settles on (unchanged for 1 s, drawn for 120x40: footer on row 40, the whole
   composer placeholder, the answer's last line).
   Target: <= 0.5 s.
4. first frame: process start until the first frame is on screen, scout-tui against a bare
   Textual app (``Static("hello")``), interleaved in one run, as a ratio of medians; also the
   headless ratio of ``benchmarks/startup.py`` (its code, imported). Target: <= 1.3x.
5. reopen: a stored 2,000-message session with 998 read calls, ``scout-tui -c`` from process
   start until its last message is on screen. Target: <= 0.5 s.
6. subagents: keystroke echo as in 1 while four subagents stream at once: the answer to the
   prompt holds four ``task`` calls, each subagent streams a 400 KB answer as fast as the socket
   allows (the tool pane shows each one's step), then the parent's answer ends with the marker.
   Target: p95 <= 50 ms.

"On screen" is always a condition on the captured screen text, polled every ``--poll-ms`` ms
through one tmux control-mode client (``tmux_screen.py``); the polling resolution is printed.
Why tmux and not pyte: pyte is LGPL-3.0, and tmux is what the issue's figures were taken in.

    python benchmarks/latency.py [-n 5] [--quick] [--poll-ms 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import string
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from startup import BARE, SCOUT, compiled_env, sample  # noqa: E402  (benchmarks/startup.py: the headless ratio)
from stream_markdown import generate  # noqa: E402  (the same generated answer as that benchmark)
from tmux_screen import TmuxScreen  # noqa: E402

from scout_tui.core.bus import Event  # noqa: E402
from scout_tui.store.event_log import Store  # noqa: E402
from tests.app_helpers import long_session  # noqa: E402
from tests.loopback import LoopbackServer, Recorded, Reply, anthropic_stream  # noqa: E402
from tests.subagent_helpers import tool_stream  # noqa: E402

MARKER = "Q7F3AEND"  # short: it must fit unwrapped in the chat column at 50x16
PLACEHOLDER = "Ask scout"
PLACEHOLDER_END = "Shift+Enter for newline)"
FOOTER = "^q Quit"
TYPED = string.ascii_lowercase + string.digits  # one composer load: cleared with Ctrl+U after it
KEY_EVERY = 0.2
PACE = 2000  # deltas per second
BARE_TTY = """
from textual.app import App
from textual.widgets import Static
class Bare(App):
    def compose(self):
        yield Static("hello")
Bare().run()
"""


PARTS = ("stream", "resize", "reopen", "start", "subagents")
SUBAGENTS = 4


def scout_argv() -> list[str]:
    """The installed entry point next to this interpreter, else ``python -m scout_tui``."""
    script = Path(sys.executable).with_name("scout-tui")
    return [str(script)] if script.exists() else [sys.executable, "-m", "scout_tui"]


def answer(kb: int) -> str:
    """The generated markdown answer of about ``kb`` KB, its last line the marker."""
    return generate(kb) + f"\n{MARKER}\n"


def deltas(text: str, size: int = 4) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@dataclass
class PacedReply(Reply):
    """A reply whose SSE events leave at ``rate`` per second, on an absolute schedule (so the
    server's own overhead does not slow the pace): ``batch`` events per write."""

    rate: float = PACE
    batch: int = 20

    def pieces(self) -> Iterator[bytes]:  # type: ignore[override]
        assert isinstance(self.body, bytes)
        events = [e + b"\n\n" for e in self.body.split(b"\n\n") if e]
        start = time.perf_counter()
        for i in range(0, len(events), self.batch):
            wait = start + i / self.rate - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            yield b"".join(events[i : i + self.batch])


def subagents_reply(child: bytes) -> Callable[[Recorded], Reply]:
    """The server of part 6: the parent's first request gets ``SUBAGENTS`` task calls, each
    subagent's request the ``child`` stream, the parent's second the marker."""
    calls = [(f"toolu_task_{i}", "task", {"description": f"part {i}", "prompt": f"SUBAGENT-{i}: write"})
             for i in range(SUBAGENTS)]
    first = tool_stream(["Splitting it."], calls)
    last = anthropic_stream(deltas(f"All {SUBAGENTS} parts are done.\n{MARKER}\n"))

    def reply(recorded: Recorded) -> Reply:
        messages = recorded.json().get("messages") or []
        if "SUBAGENT-" in json.dumps(messages[:1]):
            return Reply(child)
        return Reply(first if len(messages) == 1 else last)

    return reply


# -- reading the screen ---------------------------------------------------------------------


def has(text: str) -> Callable[[list[str]], bool]:
    return lambda lines: any(text in line for line in lines)


def ready(lines: list[str]) -> bool:
    """The app's first frame: composer placeholder and footer drawn."""
    return has(PLACEHOLDER)(lines) and has(FOOTER)(lines)


def redrawn(rows: int) -> Callable[[list[str]], bool]:
    """The app's frame for a terminal of ``rows`` rows of 120 columns: the footer on the last
    row, the whole placeholder (cut at 50 columns) and the answer's last line. Until the app
    repaints, tmux shows the old frame at the old size."""
    return lambda lines: (len(lines) == rows and FOOTER in lines[-1] and has(PLACEHOLDER_END)(lines)
                          and has(MARKER)(lines))


def composer_text(line: str) -> str:
    """The text in a one-row composer (``▊ text   ▎``); '' while it shows its placeholder."""
    inner = line.strip().strip("▊▎").strip()
    return "" if inner.startswith(PLACEHOLDER) else inner


@dataclass
class Env:
    """An isolated home for one run: config, data (``SCOUT_HOME``) and a project folder."""

    root: Path
    url: str = ""
    repo: Path = field(init=False)

    def __post_init__(self) -> None:
        self.repo = self.root / "repo"
        for d in (self.repo, self.root / "config", self.root / "data"):
            d.mkdir(parents=True, exist_ok=True)

    def vars(self) -> dict[str, str]:
        """The app's environment: its own home, and, as an installed copy has them after its
        first start, bytecode and the user cache dir (the models.dev extract, ``catalog.py``)
        shared by all runs under the run's folder (bytecode whatever ``PYTHONDONTWRITEBYTECODE``
        says: ``compiled_env``); a ``PYTHONPATH`` of ours passed on (a checkout measured with
        another one's venv)."""
        extra = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
        return {"HOME": str(self.root), "XDG_CONFIG_HOME": str(self.root / "config"),
                "XDG_CACHE_HOME": str(self.root.parent / "cache"), "SCOUT_HOME": str(self.root / "data"),
                "COLORTERM": "truecolor", **compiled_env(str(self.root.parent)), **extra}

    def scout(self, *flags: str) -> list[str]:
        return [*scout_argv(), "--base-url", self.url or "http://127.0.0.1:9", "--api-key", "sk-test", *flags]

    def store(self) -> Store:
        return Store(self.root / "data" / "sessions.db")


# -- the measurements -----------------------------------------------------------------------


@dataclass
class Stream:
    """One streamed answer: keystroke echo latencies (s), Enter to marker (s), poll gaps (s)."""

    echoes: list[float] = field(default_factory=list)
    to_last_line: float | None = None
    poll_gaps: list[float] = field(default_factory=list)


def measure_stream(screen: TmuxScreen, env: Env, poll: float, timeout: float = 180.0) -> Stream:
    """Send a prompt, then type a character every ``KEY_EVERY`` s until the marker is on
    screen (and every typed character has appeared, or 5 s more have passed)."""
    screen.run(env.scout(), env.vars(), str(env.repo))
    if screen.wait_for(ready, 60, poll) is None:
        raise RuntimeError("scout-tui showed no composer within 60 s:\n" + "\n".join(screen.lines()))
    row = next(i for i, line in enumerate(screen.lines()) if PLACEHOLDER in line)
    screen.text("go")
    screen.wait_for(lambda lines: composer_text(lines[row]) == "go", 10, poll)
    result = Stream()
    enter = time.perf_counter()
    screen.keys("Enter")
    typed, sent, load = "", [], 0  # the composer's typed text; when each key went; keys before this load
    next_key, clearing, last, finish_by = enter + KEY_EVERY, False, None, enter + timeout
    while time.perf_counter() < finish_by:
        start = time.perf_counter()
        lines = screen.lines()
        now = (start + time.perf_counter()) / 2
        if last is not None:
            result.poll_gaps.append(now - last)
        last = now
        shown = composer_text(lines[row])
        on_screen = next((k for k in range(len(typed), 0, -1) if shown.startswith(typed[:k])), 0)
        while len(result.echoes) < load + on_screen:
            result.echoes.append(now - sent[len(result.echoes)])
        if result.to_last_line is None and has(MARKER)(lines):
            result.to_last_line = now - enter
            finish_by = min(finish_by, now + 5)
        if result.to_last_line is not None and len(result.echoes) == len(sent):
            break
        if clearing and shown == "":
            clearing, typed, load = False, "", len(sent)
            next_key = max(next_key, time.perf_counter())
        if result.to_last_line is None and not clearing and time.perf_counter() >= next_key:
            if len(typed) == len(TYPED):
                if len(result.echoes) == len(sent):  # all shown: empty the composer, untimed
                    screen.keys("C-u")
                    clearing = True
            else:
                char = TYPED[len(typed)]
                sent.append(time.perf_counter())
                screen.text(char)
                typed += char
                next_key += KEY_EVERY
        time.sleep(poll)
    return result


def settle(screen: TmuxScreen, poll: float, quiet: float, timeout: float,
           final: Callable[[list[str]], bool]) -> tuple[float | None, list[str]]:
    """Poll until the screen satisfies ``final`` and stays unchanged for ``quiet`` s; returns
    the time of the first capture equal to that settled screen (None on timeout) and it."""
    deadline = time.perf_counter() + timeout
    first_seen, current = 0.0, None
    while time.perf_counter() < deadline:
        start = time.perf_counter()
        lines = screen.lines()
        now = (start + time.perf_counter()) / 2
        if lines != current:
            first_seen, current = now, lines
        elif now - first_seen >= quiet and final(lines):
            return first_seen, lines
        time.sleep(poll)
    return None, current or []


def measure_resize(screen: TmuxScreen, env: Env, poll: float, kb: int = 500) -> tuple[float | None, float | None]:
    """(seconds to open the ``kb`` KB session at 50x16, seconds to redraw after 50x16 -> 120x40)."""
    with env.store() as store:
        sid = store.create_session(env.repo)
        for role, text in (("user", "write a long answer"), ("assistant", answer(kb))):
            store.append(sid, Event.of(f"message.{role}", {"message": {"role": role, "content": [{"type": "text", "text": text}]}}))
    screen.resize(50, 16)
    try:
        start = time.perf_counter()
        screen.run(env.scout("-c"), env.vars(), str(env.repo))
        opened = screen.wait_for(has(MARKER), 120, poll)
        if opened is None:
            return None, None
        settle(screen, poll, 0.5, 60, lambda lines: True)
        screen.resize(120, 40)
        resized = time.perf_counter()
        drawn, _ = settle(screen, poll, 1.0, 90, redrawn(40))
        return opened - start, (drawn - resized if drawn is not None else None)
    finally:
        screen.resize(120, 40)


def measure_reopen(screen: TmuxScreen, env: Env, poll: float, messages: int = 2000) -> float | None:
    """Seconds from ``scout-tui -c`` starting until the last of ``messages`` messages is on screen."""
    with env.store() as store:
        sid = long_session(store, env.repo, calls=(messages - 4) // 2, size=400)
        store.append(sid, Event.of("message.user", {"message": {"role": "user", "content": [{"type": "text", "text": "and?"}]}}))
        store.append(sid, Event.of("message.assistant", {"message": {"role": "assistant", "content": [{"type": "text", "text": MARKER}]}}))
    start = time.perf_counter()
    screen.run(env.scout("-c"), env.vars(), str(env.repo))
    shown = screen.wait_for(has(MARKER), 60, poll)
    return None if shown is None else shown - start


def measure_first_frame(screen: TmuxScreen, env: Env, poll: float) -> tuple[float | None, float | None]:
    """(bare Textual, scout-tui) seconds from process start to first frame in the pane."""
    out: list[float | None] = []
    bare = env.root / "bare.py"  # a file: a control-mode command is one line
    bare.write_text(BARE_TTY)
    for argv, drawn in (([sys.executable, str(bare)], has("hello")), (env.scout(), ready)):
        start = time.perf_counter()
        screen.run(argv, env.vars(), str(env.repo))
        shown = screen.wait_for(drawn, 30, poll)
        out.append(None if shown is None else shown - start)
        screen.run(["sleep", "100000"], {}, str(env.repo))
    return out[0], out[1]


# -- report ---------------------------------------------------------------------------------


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def summary(label: str, values: list[float | None], unit: str = "ms", target: str = "") -> str:
    """One report line: ``label``, then 'median (min–max) unit' over the runs that finished."""
    done = [v for v in values if v is not None]
    scale, digits = (1000, 1) if unit == "ms" else (1, 2)
    text = "no run finished" if not done else (
        f"{statistics.median(done) * scale:7.{digits}f} {unit:2s} "
        f"({min(done) * scale:.{digits}f}–{max(done) * scale:.{digits}f})")
    if len(done) < len(values):
        text += f" [{len(values) - len(done)} of {len(values)} timed out]"
    return f"{label:56s}{text:28s}{'  target ' + target if target else ''}".rstrip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=5, help="runs per measurement (default 5)")
    parser.add_argument("--quick", action="store_true", help="one run of each (same as -n 1)")
    parser.add_argument("--poll-ms", type=float, default=2.0, help="sleep between screen captures (ms)")
    parser.add_argument("--only", choices=PARTS, action="append",
                        help="measure only this part (repeatable; default all): " + ", ".join(PARTS))
    args = parser.parse_args()
    parts = set(args.only or PARTS)
    runs, poll = (1 if args.quick else args.n), args.poll_ms / 1000
    body = anthropic_stream(deltas(answer(200)), output_tokens=51_000)
    began = time.perf_counter()
    child = anthropic_stream(deltas(answer(400)), output_tokens=100_000)
    results: dict[str, list] = {k: [] for k in ("burst", "paced", "open", "resize", "reopen", "bare", "scout", "headless",
                                                "subagents")}
    with tempfile.TemporaryDirectory(prefix="scout-latency-") as tmp, TmuxScreen(f"scout-latency-{os.getpid()}") as screen:
        capture = screen.capture_cost()
        measure_first_frame(screen, Env(Path(tmp, "warm-up")), poll)  # untimed: fills the bytecode cache
        if "stream" in parts:  # untimed too: a turn imports the engine, compiled at install as the rest
            with LoopbackServer(handler=lambda r: Reply(body)) as server:
                measure_stream(screen, Env(Path(tmp, "warm-up-turn"), server.url), poll)
        for i in range(runs):
            for kind, reply in (("burst", lambda r: Reply(body)), ("paced", lambda r: PacedReply(body))):
                if "stream" not in parts:
                    break
                with LoopbackServer(handler=reply) as server:
                    results[kind].append(measure_stream(screen, Env(Path(tmp, f"{kind}{i}"), server.url), poll))
                print(f"run {i + 1}/{runs} {kind}: {len(results[kind][-1].echoes)} keys", file=sys.stderr)
            if "subagents" in parts:
                with LoopbackServer(handler=subagents_reply(child)) as server:
                    results["subagents"].append(measure_stream(screen, Env(Path(tmp, f"subagents{i}"), server.url), poll))
                print(f"run {i + 1}/{runs} subagents: {len(results['subagents'][-1].echoes)} keys", file=sys.stderr)
            if "resize" in parts:
                opened, resized = measure_resize(screen, Env(Path(tmp, f"resize{i}")), poll)
                results["open"].append(opened)
                results["resize"].append(resized)
            if "reopen" in parts:
                results["reopen"].append(measure_reopen(screen, Env(Path(tmp, f"reopen{i}")), poll))
            if "start" in parts:
                bare, scout = measure_first_frame(screen, Env(Path(tmp, f"start{i}")), poll)
                results["bare"].append(bare)
                results["scout"].append(scout)
                headless = Env(Path(tmp, f"headless{i}"))
                env = {**os.environ, **headless.vars(), "ANTHROPIC_API_KEY": "sk-bench"}
                results["headless"].append((sample(BARE, env, str(headless.repo))[0], sample(SCOUT, env, str(headless.repo))[0]))
            print(f"run {i + 1}/{runs} done at {time.perf_counter() - began:.0f} s", file=sys.stderr)

    tmux = subprocess.run(["tmux", "-V"], capture_output=True, text=True).stdout.strip()
    print(f"scout-tui in a {tmux} pane; median (min–max) over {runs} run(s); {os.cpu_count()} CPUs")
    gaps = [g for kind in ("burst", "paced", "subagents") for s in results[kind] for g in s.poll_gaps] or [0.0]
    print(f"polling: a capture takes {capture * 1e3:.2f} ms idle; captures during the streams are "
          f"{pct(gaps, 50) * 1e3:.1f} ms apart (p50), {pct(gaps, 95) * 1e3:.1f} ms (p95): the resolution")
    titles = {"burst": "200 KB burst", "paced": f"200 KB at {PACE} deltas/s",
              "subagents": f"{SUBAGENTS} subagents streaming 400 KB each"}
    for kind, title in titles.items():
        if not results[kind]:
            continue
        for p in (50, 95):
            print(summary(f"{'6.' if kind == 'subagents' else '1.'} key echo p{p}, {title}", [pct(s.echoes, p) if s.echoes else None for s in results[kind]],
                          target="p95 <= 50 ms" if p == 95 else ""))
        print(f"   (keys timed per run: {', '.join(str(len(s.echoes)) for s in results[kind])})")
    for kind, title in titles.items():
        if not results[kind] or kind == "subagents":
            continue
        print(summary(f"{'2.' if kind == 'burst' else '  '} Enter to last line on screen, {title}",
                      [s.to_last_line for s in results[kind]], "s", "<= 2 s" if kind == "burst" else ""))
    if results["resize"]:
        print(summary("3. redraw after 50x16 -> 120x40, 500 KB message", results["resize"], "s", "<= 0.5 s"))
        print(summary("   (opening that session with -c at 50x16)", results["open"], "s"))
    bare, scout = results["bare"], results["scout"]
    if bare:
        print_first_frame(bare, scout, results["headless"])
    if results["reopen"]:
        print(summary("5. reopen a 2,000-message session, -c to last", results["reopen"], "s", "<= 0.5 s"))
    print(f"total {time.perf_counter() - began:.0f} s")


def print_first_frame(bare: list, scout: list, headless: list) -> None:
    print(summary("4. first frame in the pane, bare Textual", bare, "s"))
    print(summary("   first frame in the pane, scout-tui", scout, "s"))
    if all(v is not None for v in bare + scout):
        print(f"   ratio scout-tui / bare Textual: {statistics.median(scout) / statistics.median(bare):.2f}x"
              "   target <= 1.3x")
    b_med = statistics.median(b for b, _ in headless)
    s_med = statistics.median(s for _, s in headless)
    print(f"   headless, startup.py's way: {s_med:.3f} s / {b_med:.3f} s = {s_med / b_med:.2f}x")


if __name__ == "__main__":
    main()
