"""Context cost: what an agent run pays for its input under each provider's prompt-caching rules.

A synthetic run (``compaction.session``): a request, then ``--calls`` tool calls with ``--size``
character results, one model call before each call and one after the last (``calls + 1``
requests). Each prompt is compacted by a strategy (``compaction.compact``, default settings),
turned into the request body by the real backends (``AnthropicBackend.body`` for
claude-sonnet-4-5, ``OpenAIBackend.body`` for gpt-4.1: whatever cache breakpoints or cache key
they place today), and billed by the loopback cache emulators (``tests/cache_emulator.py``,
following the providers' documented caching rules), with ``--gap`` seconds between requests.

Columns, per provider rule set and strategy:
  requests     model calls billed.
  input sent   input tokens of all requests (cached, written and uncached alike; the
               emulators' estimate, characters / 4).
  read         share of the input sent that was read from the cache.
  written      share of the input sent that was written to the cache (Anthropic only).
  cost         effective input cost, uncached + 1.25 x cache write (2 x for 1-hour writes) +
               0.1 x cache read, as a share of the "none" strategy's tokens all billed at 1x
               (the uncompacted, uncached run) under the same rules.
  half cached  share of requests that read at least half of their prompt from the cache.

Ratios, not seconds: the figures are deterministic. The 0.1 read factor is Anthropic's; OpenAI
bills cached input at 0.1x-0.5x depending on the model (gpt-4.1: 0.25x), so its cost column is
the best case.

    python benchmarks/context_cost.py [--calls 200] [--size 4096] [--gap 10] [--lookback 20]
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the emulators live with the tests

from cache_emulator import AnthropicCache, OpenAICache  # noqa: E402
from compaction import STRATEGIES, session, turn  # noqa: E402  (benchmarks/compaction.py: the same run)

from scout_tui.backends.anthropic import AnthropicBackend  # noqa: E402
from scout_tui.backends.base import Request  # noqa: E402
from scout_tui.backends.openai import OpenAIBackend  # noqa: E402
from scout_tui.engine.compaction import compact  # noqa: E402
from scout_tui.session.prompt import system_prompt  # noqa: E402
from scout_tui.tools import builtin_registry  # noqa: E402

TOOLS = builtin_registry().specs()

# Project instructions of the size an AGENTS.md often has, so the system prompt is ~6 KB.
_PROJECT = """Project instructions (AGENTS.md):

## Layout
- `src/` holds the application, one package per bounded context; `src/core/` has no I/O.
- `tests/` mirrors `src/`; fixtures live in `tests/fixtures/`, one folder per feature.
- `scripts/` are developer tools and never imported by the application.
- `docs/` is built with mkdocs; every public function needs a docstring that says units.

## Build and test
- Install with `uv sync --all-extras`; never `pip install` into the system interpreter.
- Run `uv run pytest -q -x` before you say a change works; run the single test file first.
- `uv run ruff check --fix` and `uv run ruff format` must leave no diff.
- The nightly build runs `make release`, which also builds the wheel and the docs; a change to
  `pyproject.toml` needs `uv lock` in the same commit.
- Type checks: `uv run mypy src` in strict mode; do not add `type: ignore` without a reason.

## Style
- Functions over classes when there is no state; dataclasses for records; no metaclasses.
- Errors: raise `AppError` subclasses with a message that names the file, line or URL;
  never catch `Exception` without re-raising; never swallow an error silently.
- Logging through `structlog`; no print statements in `src/`.
- Names from the domain: order, invoice, ledger, settlement; no `data`, `info`, `manager`.
- Keep modules under 500 lines; split by responsibility, not by type.
- Comments say why, not what; delete commented-out code.

## Git
- Small commits, imperative subject under 72 characters, body wrapped at 72.
- Never commit secrets, `.env` files or generated artifacts; check `git status` before adding.
- Do not rewrite published history; do not force-push `main`.

## Working with the assistant
- Read the relevant files before proposing a change; quote paths relative to the repository.
- Prefer the smallest change that fixes the cause; explain the cause in one or two sentences.
- When a command fails, read its output, form a hypothesis, and test it with one command.
- Ask before deleting files, changing public APIs, or touching `migrations/`.
- When tests are slow, run the affected module only and say which you ran.
- Summaries at the end of a task list the files changed and the commands run.

## Domain notes
- Money is stored as integer cents in `Decimal`-free code paths; never use floats for money.
- Timestamps are UTC `datetime` with tzinfo; convert at the edges only.
- The ledger is append-only: corrections are new entries that reference the corrected one.
- Settlement batches close at 23:00 UTC; jobs that touch them take the `settlement` lock.
- External providers are called through `src/gateways/`, each with retries and a circuit breaker;
  tests use the recorded cassettes in `tests/fixtures/gateways/`, never the network.
- Feature flags are read once per request from `FlagSet`; do not read environment variables deep
  in the code.

## Performance
- Database access goes through repositories; no ORM query inside a loop (use `select_related` or
  one `IN` query).
- Endpoints must answer under 200 ms at the 95th percentile on the staging data set; measure with
  `scripts/bench_api.py` before and after a change to a hot path.
- Background jobs are idempotent and may run twice; use the job id as the idempotency key.
- Caches have an owner and a TTL; a cache without both is a bug.

## Security
- Input from users, files and providers is untrusted: validate at the boundary with the schemas
  in `src/schemas/`, and never build SQL, shell commands or file paths by string formatting.
- Secrets come from the vault client at start-up; never log them, never put them in URLs or
  exception messages, and redact them in recorded test cassettes.
- Dependencies are pinned in `uv.lock`; adding one needs a line in `docs/dependencies.md` saying
  why it is needed and who maintains it.
- Permissions are checked in the service layer, not in views; every new endpoint gets a test
  that an unauthorised user is refused.

## Reviews
- A change that alters behaviour needs a test that fails without it; say which test in the
  summary.
- Migrations are reversible and run in under a minute on the production-sized snapshot; large
  backfills are jobs, not migrations.
- Public API changes are announced in `CHANGELOG.md` under "Unreleased", with the migration path
  for callers.
- Keep pull requests under 400 changed lines when possible; split refactors from behaviour
  changes so each can be reviewed on its own.

## Releases
- Versions follow semantic versioning; the release script tags, builds and uploads, never by hand.
- A release note names every user-visible change and links its pull request; breaking changes
  come first, with the version in which the old behaviour was deprecated.
- Hotfixes branch from the last tag, get the same review as any change, and are merged back into
  `main` the same day.
- Rollbacks are a redeploy of the previous tag; never patch a running server by hand.

## When unsure
- Prefer asking one precise question over guessing; state what you checked and what you found.
- If a task would take more than an hour of tool calls, propose a plan first and wait for a yes.
"""

SYSTEM = system_prompt(
    Path("/home/dev/project"), [t["name"] for t in TOOLS], today=dt.date(2025, 11, 3),
    extra=[_PROJECT], home=Path("/nonexistent-home"),
)

ANTHROPIC_MODEL = "claude-sonnet-4-5"
OPENAI_MODEL = "gpt-4.1"


def run(provider: str, strategy: str, calls: int, size: int, gap: float, lookback: int = 20) -> dict[str, float]:
    """Bill one run: per request, the input tokens, cache reads and writes (5-minute, 1-hour)."""
    if provider == "anthropic":
        backend: AnthropicBackend | OpenAIBackend = AnthropicBackend(model=ANTHROPIC_MODEL)
        emulator: AnthropicCache | OpenAICache = AnthropicCache(context_window=1_000_000, lookback=lookback)
    else:
        backend = OpenAIBackend(model=OPENAI_MODEL)
        emulator = OpenAICache(context_window=1_000_000)
    messages = session(0, size)
    totals = {"requests": 0, "sent": 0, "uncached": 0, "write_5m": 0, "write_1h": 0, "read": 0, "half": 0}
    for k in range(calls + 1):
        if k:
            messages = messages + turn(k - 1, size)
        c = compact(messages, strategy, settings={})
        body = backend.body(Request(model=backend.model, messages=c.messages, system=SYSTEM, tools=TOOLS,
                                    max_tokens=8192, stable=c.stable, cache_key="bench-session"))
        add_usage(totals, provider, emulator.bill(body))
        emulator.advance(gap)
    return totals


def add_usage(totals: dict[str, float], provider: str, usage: dict) -> None:
    """Add one billed request's ``usage`` (an emulator's, by ``provider``'s rules) to ``totals``:
    requests, tokens sent, uncached, read, written (5-minute, 1-hour), the requests at least half
    read from the cache (``half``), and the tokens of this last request (``last``)."""
    if provider == "anthropic":
        read = usage["cache_read_input_tokens"]
        sent = usage["input_tokens"] + usage["cache_creation_input_tokens"] + read
        totals["write_5m"] += usage["cache_creation"]["ephemeral_5m_input_tokens"]
        totals["write_1h"] += usage["cache_creation"]["ephemeral_1h_input_tokens"]
        totals["uncached"] += usage["input_tokens"]
    else:
        read = usage["prompt_tokens_details"]["cached_tokens"]
        sent = usage["prompt_tokens"]
        totals["uncached"] += sent - read
    totals["requests"] += 1
    totals["sent"] += sent
    totals["read"] += read
    totals["half"] = totals.get("half", 0) + (read * 2 >= sent)
    totals["last"] = sent


def cost(t: dict[str, float]) -> float:
    """Input cost in base-token units: uncached 1x, 5-minute writes 1.25x, 1-hour writes 2x, reads 0.1x."""
    return t["uncached"] + 1.25 * t["write_5m"] + 2.0 * t["write_1h"] + 0.1 * t["read"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200, help="tool calls in the run")
    parser.add_argument("--size", type=int, default=4096, help="characters per tool result")
    parser.add_argument("--gap", type=float, default=10.0, help="seconds between requests (cache lifetimes)")
    parser.add_argument("--lookback", type=int, default=20,
                        help="Anthropic: blocks before a breakpoint searched for an entry (19: the stricter reading)")
    args = parser.parse_args()

    print(f"context cost: {args.calls} tool calls of {args.size:,} characters, a model call before each and after "
          f"the last; system prompt {len(SYSTEM):,} characters, {len(TOOLS)} tools; {args.gap:g} s between calls")
    for provider, label in (("anthropic", f"Anthropic rules ({ANTHROPIC_MODEL}, AnthropicBackend.body)"),
                            ("openai", f"OpenAI rules ({OPENAI_MODEL}, OpenAIBackend.body)")):
        results = {s: run(provider, s, args.calls, args.size, args.gap, args.lookback) for s in STRATEGIES}
        baseline = results["none"]["sent"]  # the uncompacted run, every token at 1x
        print(f"\n{label}")
        print(f"  {'strategy':<22}{'requests':>9}{'input sent':>14}{'read':>7}{'written':>9}{'cost':>8}{'half cached':>13}")
        for strategy, t in results.items():
            written = t["write_5m"] + t["write_1h"]
            print(f"  {strategy:<22}{t['requests']:9,}{t['sent']:14,}{t['read'] / t['sent']:7.0%}{written / t['sent']:9.0%}"
                  f"{cost(t) / baseline:7.2f}x{t['half'] / t['requests']:13.0%}")
    print("\n  cost: (uncached + 1.25 x cache write + 0.1 x cache read) / tokens of the uncompacted run at 1x;")
    print("  half cached: requests that read at least half of their prompt from the cache.")


if __name__ == "__main__":
    main()
