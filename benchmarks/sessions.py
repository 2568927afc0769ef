"""Session store figures: what a fork costs as the parent grows, and what opening a long session costs.

    python benchmarks/sessions.py [--sizes 10,1000,10000] [--forks 25]

1. Fork: for parents of 10, 1,000 and 10,000 messages, the median and min–max time of
   ``Store.fork`` (ms) over ``--forks`` forks, and the rows one fork writes to events /
   sessions / messages.
   Targets: fork ≤ 5 ms at every size, and no per-message rows.
2. Appending, and the search index: µs per append (median of rounds of 1,000 messages) with the
   index as it is and with its writers switched off, interleaved; then µs per message the index
   catches up afterwards (``Store.index_some``, as after a turn), off the append path.
   Target: the index adds <= 10 % to an append.
3. Opening a long session, store side: a fresh process opens the store and reads the
   10,000-message session (``Store.session`` + ``Store.messages``), directly and through a
   fork of a fork of a fork (ancestry resolved on read); wall time and resident memory after.
   The TUI's open-to-first-paint figure belongs beside ``store_open_figures`` as its own
   function (it needs the chat view that loads the newest messages first).

Messages are realistic in size: user prompts of ~200 characters, assistant answers of ~1,500,
and every fifth turn a tool call with a ~2,000-character result.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scout_tui.core.bus import MessageAssistant, MessageUser
from scout_tui.store.event_log import Store

MODEL = "claude-sonnet-4-5"
PROSE = "The quick brown fox jumps over the lazy dog; ünïcødé and 😀 included. "


def fill(store: Store, sid: str, count: int) -> None:
    """Append ``count`` messages: user / assistant turns, every fifth a tool call and its result."""
    n = 0
    while n < count:
        turn = n // 2
        if turn % 5 == 4 and n + 2 < count:
            call = f"toolu_{n}"
            use = {"type": "tool_use", "id": call, "name": "bash", "input": {"command": f"grep -rn fox src/{n}"}}
            message = {"role": "assistant", "content": [{"type": "text", "text": "Searching."}, use]}
            usage = {"input_tokens": 900, "output_tokens": 40}
            store.append(sid, MessageAssistant(message, usage, "tool_use", MODEL))
            result = {"type": "tool_result", "tool_use_id": call, "content": PROSE * 28, "is_error": False}
            store.append(sid, MessageUser({"role": "user", "content": [result]}))
            n += 2
            continue
        role = "user" if n % 2 == 0 else "assistant"
        text = PROSE * (3 if role == "user" else 21)
        message = {"role": role, "content": [{"type": "text", "text": text}]}
        if role == "user":
            store.append(sid, MessageUser(message))
        else:
            store.append(sid, MessageAssistant(message, {"input_tokens": 900, "output_tokens": 300}, "end_turn", MODEL))
        n += 1


def append_figures(folder: Path, rounds: int = 4, count: int = 1000) -> dict:
    """Median µs per append with and without the search index's writers (interleaved rounds of
    ``count`` messages, each in a fresh store), and µs per message of the index's catch-up."""
    from scout_tui.store import search

    writers = search.index_message, search.index_summary
    times: dict[bool, list[float]] = {True: [], False: []}
    catch_up: list[float] = []
    for r in range(rounds):
        for indexed in (True, False):
            if not indexed:
                search.index_message = search.index_summary = lambda *a, **k: None  # type: ignore[assignment]
            try:
                with Store(folder / f"append-{r}-{indexed}.db") as store:
                    sid = store.create_session(folder)
                    start = time.perf_counter()
                    fill(store, sid, count)
                    times[indexed].append((time.perf_counter() - start) / count * 1e6)
                    if indexed:
                        start = time.perf_counter()
                        store.index_some(count)
                        catch_up.append((time.perf_counter() - start) / count * 1e6)
            finally:
                search.index_message, search.index_summary = writers
    return {"with_us": statistics.median(times[True]), "without_us": statistics.median(times[False]),
            "catch_up_us": statistics.median(catch_up)}


def row_counts(path: Path) -> tuple[int, int, int]:
    db = sqlite3.connect(path)
    try:
        return tuple(db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("events", "sessions", "messages"))
    finally:
        db.close()


def fork_figures(store: Store, parent: str, size: int, forks: int) -> dict:
    """Median / best / worst ms of ``forks`` forks at varied points, and the rows one fork writes."""
    times = []
    for i in range(forks):
        at = (size * (i + 1)) // (forks + 1)
        start = time.perf_counter()
        store.fork(parent, at)
        times.append((time.perf_counter() - start) * 1000)
    before = row_counts(store.path)
    store.fork(parent, size // 2)
    after = row_counts(store.path)
    return {
        "median_ms": statistics.median(times),
        "min_ms": min(times),
        "max_ms": max(times),
        "rows": dict(zip(("events", "sessions", "messages"), (a - b for a, b in zip(after, before)))),
    }


# Runs in a fresh process so resident memory is the store's and the messages', nothing else.
OPEN_STORE = r"""
import json, resource, sys, time
def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
from scout_tui.store.event_log import Store
baseline = rss_mb()
start = time.perf_counter()
store = Store(sys.argv[1])
info = store.session(sys.argv[2])
messages = store.messages(info.id)
wall = time.perf_counter() - start
print(json.dumps({"seconds": wall, "messages": len(messages), "rss_mb": rss_mb(), "baseline_mb": baseline,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def store_open_figures(path: Path, session_id: str) -> dict:
    """Open the store in a fresh process and read one session: seconds, messages, memory (MB)."""
    done = subprocess.run([sys.executable, "-c", OPEN_STORE, str(path), session_id],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


# The TUI side: a fresh process opens the session in the real app (headless, 120x40) and
# stops at the first frame painted after the chat mounted the stored messages.
OPEN_TUI = r"""
import json, os, sys, time
start = time.perf_counter()
from pathlib import Path
from scout_tui.tui.app import ScoutApp
from scout_tui.config.layers import load_config
from scout_tui.widgets import ChatView
def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
class Timed(ScoutApp):
    def on_mount(self):
        super().on_mount()
        self.app_start = time.perf_counter()
        self._poll = self.set_interval(0.002, self._check)
    def _check(self):
        if self.query_one(ChatView).loaded_count:
            self._poll.stop()
            self.call_after_refresh(self._painted)
    def _painted(self):
        self.result = {"seconds": time.perf_counter() - start, "from_mount": time.perf_counter() - self.app_start,
                       "mounted": self.query_one(ChatView).loaded_count, "rss_mb": rss_mb()}
        self.exit()
app = Timed(load_config(Path.cwd(), flags={"api_key": "sk-bench"}), cwd=Path.cwd(), resume=sys.argv[1])
app.run(headless=True, size=(120, 40))
print(json.dumps(app.result))
"""


def tui_open_figures(home: Path, session_id: str) -> dict:
    """Open the session in the real app in a fresh process: seconds to the first painted chat."""
    env = {**os.environ, "SCOUT_HOME": str(home), "HOME": str(home)}
    done = subprocess.run([sys.executable, "-c", OPEN_TUI, session_id], capture_output=True, text=True,
                          check=True, env=env, cwd=home)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10,1000,10000", help="parent sizes in messages, comma-separated")
    parser.add_argument("--forks", type=int, default=25, help="forks timed per size")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sessions.db"
        parents: dict[int, str] = {}
        with Store(path) as store:
            print("fork (target: <= 5 ms, no message rows)")
            print(f"{'parent msgs':>11}  {'build s':>7}  {'median ms':>9}  {'min–max ms':>13}  rows written by one fork")
            for size in sizes:
                start = time.perf_counter()
                parents[size] = store.create_session(tmp)
                fill(store, parents[size], size)
                built = time.perf_counter() - start
                f = fork_figures(store, parents[size], size, args.forks)
                rows = ", ".join(f"{k} +{v}" for k, v in f["rows"].items())
                print(f"{size:>11,}  {built:>7.2f}  {f['median_ms']:>9.3f}  {f['min_ms']:>6.3f}–{f['max_ms']:<6.3f}  {rows}")
            largest = max(sizes)
            deep = parents[largest]
            for _ in range(3):
                deep = store.fork(deep, store.session(deep).message_count - 1).id
        a = append_figures(Path(tmp))
        print(f"\nappend (target: the index adds <= 10 %): {a['with_us']:.0f} µs per append with the search index, "
              f"{a['without_us']:.0f} µs without ({100 * (a['with_us'] / a['without_us'] - 1):+.1f} %); "
              f"the index then catches up at {a['catch_up_us']:.0f} µs per message, after the turn")
        size_mb = path.stat().st_size / 2**20  # closing the last connection checkpointed the WAL into it
        print(f"\nopening a {largest:,}-message session, store side (fresh process; store file {size_mb:.1f} MB)")
        for label, sid in (("the session", parents[largest]), ("a fork of a fork of a fork of it", deep)):
            o = store_open_figures(path, sid)
            print(f"  {label}: {o['messages']:,} messages in {o['seconds'] * 1000:.0f} ms; resident "
                  f"{o['rss_mb']:.1f} MB after (process with the store imported: {o['baseline_mb']:.1f} MB; "
                  f"peak {o['peak_mb']:.1f} MB)")
        print(f"\nopening the {largest:,}-message session in the TUI (fresh process, 120x40; target <= 1 s)")
        t = tui_open_figures(Path(tmp), parents[largest])
        print(f"  first painted chat {t['seconds']:.2f} s after the process started "
              f"({t['from_mount']:.2f} s after the app mounted); {t['mounted']} messages mounted; "
              f"resident {t['rss_mb']:.1f} MB")


if __name__ == "__main__":
    main()
