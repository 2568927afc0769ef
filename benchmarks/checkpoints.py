"""What workspace snapshots add to a turn, on a repository of 10,000 files.

    python benchmarks/checkpoints.py [--files 10000] [--turns 9]

Builds a git repository of ``--files`` small source files (100 folders of 100, ~1.5 KB each)
plus a few ignored build files, then prints:

1. the first snapshot (every file read and stored once: paid once per workspace);
2. per turn that changes one file: the snapshot before its first change (the turn waits for
   it: target <= 50 ms), then the snapshot after it and the list of changed files (what a
   checkpoint event records; taken once the turn has ended, so nobody waits for it), median
   and max over ``--turns`` turns;
3. the same with nothing changed, and ``git status`` in the person's repository for scale
   (the ratio is our cost against git's own look at the same tree).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scout_tui.checkpoints.snapshots import Checkpoints  # noqa: E402

LINE = "def handler(request):  # a line of ordinary source code, about this long\n"


def build(root: Path, files: int) -> None:
    per = 100
    for n in range(files):
        folder = root / f"pkg{n // per}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{n % per}.py").write_text(LINE * 20 + f"# {n}\n")
    (root / "build").mkdir()
    for n in range(100):
        (root / "build" / f"out{n}.o").write_bytes(b"\0" * 1000)
    (root / ".gitignore").write_text("build/\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        build(root, args.files)
        store = Checkpoints(root, root=Path(tmp) / "data")
        start = time.perf_counter()
        store.snapshot()
        first = time.perf_counter() - start
        turns, afters, idle = [], [], []
        for n in range(args.turns):
            start = time.perf_counter()
            before = store.snapshot()
            turns.append(time.perf_counter() - start)
            (root / f"pkg{n}" / "mod1.py").write_text(LINE * 21)  # the turn's one edit
            start = time.perf_counter()
            after = store.snapshot()
            changed = store.changes(before.tree, after.tree)
            afters.append(time.perf_counter() - start)
            assert [c.path for c in changed] == [f"pkg{n}/mod1.py"], changed
            start = time.perf_counter()
            store.snapshot()
            idle.append(time.perf_counter() - start)
        start = time.perf_counter()
        for _ in range(args.turns):
            subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, check=True)
        status = (time.perf_counter() - start) / args.turns
        print(f"repository: {args.files:,} files tracked, 100 ignored")
        print(f"1. first snapshot (once per workspace)        {first * 1000:7.0f} ms")
        print(f"2. a turn waits, before its first change      {statistics.median(turns) * 1000:7.1f} ms median, "
              f"{max(turns) * 1000:.1f} ms max   target <= 50 ms")
        print(f"   after it ends (snapshot and changed files) {statistics.median(afters) * 1000:7.1f} ms median, "
              f"{max(afters) * 1000:.1f} ms max   (nobody waits)")
        print(f"3. one snapshot, nothing changed              {statistics.median(idle) * 1000:7.1f} ms median "
              f"({statistics.median(idle) / status:.2f}x git status's {status * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
