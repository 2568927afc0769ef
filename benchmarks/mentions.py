"""``@`` completion on a large repository: listing the workspace, then ranking per keystroke.

    python benchmarks/mentions.py [--files 100000] [--runs 5]

Builds a git repository of ``--files`` empty files (50 top folders × 40 subfolders, names from
a small vocabulary, so queries match many paths) plus 10,000 ignored ones under ``build/``,
then prints:

1. Listing (``workspace_files.list_files``, once per ``FILES_FRESH`` seconds, in a thread):
   median wall time over ``--runs``, beside ``git ls-files`` alone (the ratio is our cost on
   top of git's), and the same folder listed by the walk with ``pathspec`` (no git).
2. Ranking per keystroke (``WorkspaceFiles.rank``, in a thread): median and max over a typed
   query's prefixes, for short and long queries, as a share of a 60 Hz frame (16.7 ms).
   The UI thread only shows the result: these figures are how soon the list follows typing.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scout_tui.session.workspace_files import _walk, list_files  # noqa: E402

WORDS = "core util api app model view test data io net http json parse render widget store agent tool".split()
QUERIES = ["a", "render", "rend_4", "pkg3/vi", "pkg12/widget3/json_4", "_1", "zzzz"]
FRAME_MS = 1000 / 60


def build(root: Path, files: int) -> None:
    """A repository of ``files`` tracked files and 10,000 ignored ones."""
    random.seed(1)
    per_folder = max(1, files // 2000)
    made = 0
    for a in range(50):
        for b in range(40):
            folder = root / f"pkg{a}" / f"{random.choice(WORDS)}{b}"
            folder.mkdir(parents=True, exist_ok=True)
            for c in range(per_folder):
                (folder / f"{random.choice(WORDS)}_{c}.py").touch()
                made += 1
    (root / "build").mkdir()
    for n in range(10_000):
        (root / "build" / f"out_{n}.js").touch()
    (root / ".gitignore").write_text("build/\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    print(f"repository: {made:,} files tracked, 10,000 ignored")


def timed(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(root, args.files)
        git = timed(lambda: subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root,
                                           capture_output=True, check=True), args.runs)
        ours = timed(lambda: list_files(root), args.runs)
        walk = timed(lambda: _walk(root), args.runs)
        files = list_files(root)
        print(f"\n1. listing {len(files.paths):,} paths (files and folders), median of {args.runs}:")
        print(f"   git ls-files alone   {git * 1000:7.0f} ms")
        print(f"   list_files (git)     {ours * 1000:7.0f} ms   {ours / git:.2f}x git alone")
        print(f"   walk + pathspec      {walk * 1000:7.0f} ms   {walk / git:.2f}x git alone")
        print("\n2. ranking per keystroke (each prefix of the query typed), ms:")
        print(f"   {'query':24} {'median':>7} {'max':>7}  {'max / frame':>11}")
        for query in QUERIES:
            prefixes = [query[:n] for n in range(1, len(query) + 1)]
            times = []
            for prefix in prefixes:
                start = time.perf_counter()
                files.rank(prefix)
                times.append((time.perf_counter() - start) * 1000)
            print(f"   {query:24} {statistics.median(times):7.1f} {max(times):7.1f}  {max(times) / FRAME_MS:10.2f}x")


if __name__ == "__main__":
    main()
