"""Full-text search figures on a store of 100,000 messages: query time, as-you-type time, the
index's size, and how long an old store's index takes to build.

    python benchmarks/search.py [--messages 100000] [--runs 5] [--keep DIR]

1. Build: a store of ``--messages`` messages in about 400 sessions of two projects, a fork for
   every tenth session, every fifth turn a tool call with its output (realistic sizes: prompts
   ~200 characters, answers ~1,500, outputs ~2,000), text drawn from a Zipf-distributed
   vocabulary so that common words are common and names are rare. The same store is built a
   second time without the index (its writer switched off), for the size figure. Then the
   index catches up (``Store.index_some`` in batches), as after each turn: µs per message.
2. Queries: p50 / p95 / max ms over ``--runs`` runs of each query of ``QUERIES`` (rare names,
   common words, phrases, prefixes, exclusions, this project only, one role). Target p95 ≤ 50 ms.
3. As you type: each prefix of ``TYPED`` as the search screen sends it (the last word a prefix);
   p95 ms per keystroke, and keystrokes per second the index keeps up with.
4. Size: the store file with and without the index (MB), and the index's share.
5. An old store: the schema-5 migration's backlog indexed in batches (``Store.index_some``),
   messages per second.
"""

from __future__ import annotations

import argparse
import itertools
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from scout_tui.core.bus import Event, MessageAssistant, MessageUser
from scout_tui.store import search
from scout_tui.store.event_log import Store
from scout_tui.store.search import SearchQuery

MODEL = "claude-sonnet-4-5"
COMMON = ("the a to of and in is it that for on with this be as you are not we can file test function "
          "error line return value code run change call config use new set should will from by if "
          "import class def self data type string list name path module build check fix output").split()
NAMES = [f"{a}_{b}" for a in ("parse", "load", "save", "read", "write", "render", "fetch", "merge", "split", "apply")
         for b in ("config", "table", "row", "token", "cache", "index", "header", "stream", "buffer", "session")]
RARE = ["quokka_allocator", "zebrafish_mode", "ConnectionRefusedError", "pangolin-cache", "SIGSEGV"]

QUERIES = [
    "quokka_allocator", "zebrafish_mode", "ConnectionRefusedError", "parse_config", "load_table -cache",
    '"error line"', '"return value"', "error", "the", "config*", "e*", "fix test", "error -test",
    "parse_config role:tool", "merge_index role:prompt", "SIGSEGV OR quokka_allocator",
]
TYPED = "parse_config KeyError"


class Words:
    """Seeded text from a Zipf-like vocabulary: common English and code words, then made-up
    words (rank r drawn with weight 1/r), with names and rare markers sprinkled in."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        made = ["".join(self.rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(self.rng.randint(3, 10)))
                for _ in range(20_000)]
        self.vocab = COMMON + NAMES + made
        self.cum_weights = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(self.vocab))))

    def text(self, chars: int) -> str:
        words: list[str] = []
        size = 0
        while size < chars:
            batch = self.rng.choices(self.vocab, cum_weights=self.cum_weights, k=32)
            words += batch
            size += sum(len(w) + 1 for w in batch)
        if self.rng.random() < 0.01:
            words.insert(self.rng.randrange(len(words)), self.rng.choice(RARE))
        return " ".join(words)[:chars]


def fill(store: Store, sid: str, count: int, words: Words) -> None:
    """``count`` messages: user / assistant turns, every fifth turn a tool call and its output."""
    n = 0
    while n < count:
        if (n // 2) % 5 == 4 and n + 2 <= count:
            call = f"toolu_{sid[:6]}_{n}"
            use = {"type": "tool_use", "id": call, "name": "bash", "input": {"command": f"grep -rn {words.text(20)}"}}
            store.append(sid, MessageAssistant({"role": "assistant", "content": [{"type": "text", "text": "Searching."}, use]},
                                               {"input_tokens": 900, "output_tokens": 40}, "tool_use", MODEL))
            result = {"type": "tool_result", "tool_use_id": call, "content": words.text(2000), "is_error": False}
            store.append(sid, MessageUser({"role": "user", "content": [result]}))
            n += 2
        elif n % 2 == 0:
            store.append(sid, MessageUser({"role": "user", "content": [{"type": "text", "text": words.text(200)}]}))
            n += 1
        else:
            store.append(sid, MessageAssistant({"role": "assistant", "content": [{"type": "text", "text": words.text(1500)}]},
                                               {"input_tokens": 900, "output_tokens": 300}, "end_turn", MODEL))
            n += 1


def build(path: Path, messages: int, projects: list[Path]) -> float:
    """Fill a store at ``path`` with about ``messages`` messages; returns seconds taken."""
    words = Words()
    start = time.perf_counter()
    with Store(path) as store:
        roots: list[str] = []
        made, n = 0, 0
        while made < messages:
            cwd = projects[n % len(projects)]
            if n % 10 == 9 and roots:  # a fork of an earlier session, at its middle
                parent = store.session(roots[-1])
                assert parent is not None
                sid = store.fork(parent.id, parent.message_count // 2, cwd=cwd).id
            else:
                sid = store.create_session(cwd)
                roots.append(sid)
            size = min(250, messages - made)
            fill(store, sid, size, words)
            if n % 7 == 6:
                store.append(sid, Event.of("session.compacted", {"at": size // 2, "count": size,
                                                                 "summary": words.text(3000), "model": MODEL}))
            made += size
            n += 1
    return time.perf_counter() - start


def timed(store: Store, query: SearchQuery, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        store.search(query)
        out.append((time.perf_counter() - start) * 1000)
    return out


def typed_queries(text: str) -> list[str]:
    """What the search screen sends as ``text`` is typed: every prefix, its last word a prefix."""
    out = []
    for end in range(1, len(text) + 1):
        typed = text[:end]
        out.append(typed + "*" if not typed.endswith(" ") else typed)
    return out


def index_all(store: Store) -> tuple[int, float]:
    """Index every message not indexed yet in batches of 5,000: (messages, seconds)."""
    start = time.perf_counter()
    done, total = store.index_backlog()
    while done < total:
        done, total = store.index_some(5_000)
    return total, time.perf_counter() - start


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else values[0]


def checkpointed_mb(path: Path) -> float:
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("VACUUM")
    db.close()
    return path.stat().st_size / 2**20


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5, help="times each query is run")
    parser.add_argument("--keep", type=Path, help="build the store in this folder and keep it")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="scout-search-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        figures(folder, args)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


def figures(folder: Path, args: argparse.Namespace) -> None:
    projects = [folder / "app", folder / "lib"]
    for p in projects:
        p.mkdir(exist_ok=True)
    indexed = folder / "indexed.db"
    for f in folder.glob("*.db*"):
        f.unlink()
    built = build(indexed, args.messages, projects)
    print(f"store of {args.messages:,} messages built in {built:.1f} s ({args.messages / built:,.0f} messages/s, "
          "one transaction per message, with the index)")

    with Store(indexed) as store:
        total, took = index_all(store)
        print(f"indexed its {total:,} messages afterwards in {took:.1f} s ({total / took:,.0f} messages/s, "
              f"{took / total * 1e6:.0f} µs each: what the catch-up after a turn costs per message)")
        print(f"\nqueries over every project (target: p95 <= 50 ms; {args.runs} runs each)")
        print(f"{'query':<34} {'hits':>5} {'p50 ms':>7} {'max ms':>7}")
        everything: list[float] = []
        for text in QUERIES:
            for cwd in (None, str(projects[0].resolve())):
                times = timed(store, SearchQuery(text, cwd=cwd, limit=50), args.runs)
                everything += times
                hits = len(store.search(SearchQuery(text, cwd=cwd, limit=50)))
                label = text + ("  [this project]" if cwd else "")
                print(f"{label:<34} {hits:>5} {statistics.median(times):>7.2f} {max(times):>7.2f}")
        print(f"all queries: p50 {statistics.median(everything):.2f} ms, p95 {p95(everything):.2f} ms, "
              f"max {max(everything):.2f} ms")
        keys = [t for q in typed_queries(TYPED) for t in timed(store, SearchQuery(q, limit=50), args.runs)]
        print(f"\nas you type {TYPED!r} ({len(TYPED)} keystrokes, each prefix a query): p95 {p95(keys):.2f} ms, "
              f"max {max(keys):.2f} ms per keystroke; keeps up with {1000 / p95(keys):,.0f} keystrokes/s at p95")

    plain = folder / "plain.db"
    writers = search.index_message, search.index_summary
    search.index_message = search.index_summary = lambda *a, **k: None  # type: ignore[assignment]  # the store without its index
    try:
        built_plain = build(plain, args.messages, projects)
    finally:
        search.index_message, search.index_summary = writers
    with_index, without = checkpointed_mb(indexed), checkpointed_mb(plain)
    print(f"\nstore size: {with_index:.1f} MB with the index, {without:.1f} MB without "
          f"(index {with_index - without:.1f} MB, {100 * (with_index - without) / with_index:.0f} % of the file); "
          f"building it took {built:.1f} s with the index, {built_plain:.1f} s without ({built / built_plain:.2f}x)")

    # An old store: drop the index and queue every message, as the schema-5 migration does.
    db = sqlite3.connect(plain)
    db.execute("DROP TABLE search_state")
    db.execute("DELETE FROM search_docs")
    db.execute("DELETE FROM search_text")
    db.execute("PRAGMA user_version = 4")
    db.commit()
    db.close()
    start = time.perf_counter()
    with Store(plain) as store:
        store.index_backlog()  # opens the store: the migration queues the backlog
        opened = time.perf_counter() - start
        total, took = index_all(store)
    print(f"\nan old store of {total:,} messages: opened (migration) in {opened * 1000:.0f} ms, indexed in "
          f"{took:.1f} s in batches of 5,000 ({total / took:,.0f} messages/s)")


if __name__ == "__main__":
    sys.exit(main())
