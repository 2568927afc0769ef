"""``/cost`` as text, for a front end that shows Markdown (``acp``): what the session's branch
spent by model and what each branch of its folder spent, with the figures the TUI's cost view
shows, and the number formats both use.

Figures come from the store (``Store.spending``, ``Store.tree``); nothing is computed here but
sums and shares.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from scout_tui.config.models import ModelInfo, cache_hit_share
from scout_tui.core.figures import dollars, tokens
from scout_tui.core.text import one_line

if TYPE_CHECKING:
    from scout_tui.store.event_log import SessionInfo, Store

UNKNOWN = "—"
"""Shown for a cost, or a share, that is not known."""

_TOKEN_KEYS = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")


def cost_text(cost: float | None, spent_tokens: float) -> str:
    """Dollars as ``dollars`` shows them; ``UNKNOWN`` when unknown: None, or nothing billed for
    tokens that were spent (the store counts a request of unknown price as $0); ``$0`` when
    nothing was spent."""
    if cost is not None and cost > 0:
        return dollars(cost)
    if cost is None or spent_tokens > 0:
        return UNKNOWN
    return "$0"


def spent(row: Mapping[str, float | None]) -> float:
    """The tokens a ``Store.spending`` row counts: input (uncached), cache read and written, output."""
    return sum(row.get(key, 0) or 0 for key in _TOKEN_KEYS)


def sum_costs(costs: list[float | None]) -> float | None:
    """The sum of the known costs, None when none is known."""
    known = [cost for cost in costs if cost is not None]
    return sum(known) if known else None


def prices_note(info: ModelInfo | None) -> str:
    """Where the prices come from, or how to give them when none is known (``[models."ID"]``)."""
    if info is not None and info.input is not None:
        return f"Prices: {info.source}."
    return ("No price is known for this model: set input and output (USD per 1M tokens) in "
            f'[models."{info.id if info else "ID"}"] in scout.toml.')


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def cache_hit(row: Mapping[str, float | None]) -> str:
    """The share of input tokens read from the cache: read / (uncached + read + written)."""
    share = cache_hit_share(dict(row))
    return f"{share:.0%}" if share is not None else UNKNOWN


def model_rows(by_model: dict[str, dict[str, float]]) -> list[list[str]]:
    """The cost view's "By model" rows (``Store.spending``'s shape), most expensive first, then
    "all models" when there are several: model, requests, input, cache read, cache write,
    output, cache hit, cost."""

    def row(name: str, figures: Mapping[str, float | None]) -> list[str]:
        return [one_line(name, 60) or "unknown", str(int(figures.get("requests", 0) or 0)),
                *(tokens(int(figures.get(key, 0) or 0)) for key in _TOKEN_KEYS), cache_hit(figures),
                cost_text(figures.get("cost"), spent(figures))]

    ordered = sorted(by_model.items(), key=lambda item: (-(item[1].get("cost") or 0), item[0]))
    rows = [row(name, figures) for name, figures in ordered]
    if len(ordered) > 1:
        total: dict[str, float | None] = {key: sum(f.get(key, 0) or 0 for _, f in ordered)
                                          for key in ("requests", *_TOKEN_KEYS)}
        total["cost"] = sum_costs([f.get("cost") for _, f in ordered])
        rows.append(row("all models", total))
    return rows


def branch_mark(info: SessionInfo) -> str:
    """What a session's row in a list of branches starts with: ``⑂ at 3 `` for a branch, ``⚙ explore ``
    for a subagent's session, "" for a root."""
    if info.parent is None:
        return ""
    if info.subagent_mark:
        return f"{info.subagent_mark} "
    return f"⑂ at {info.fork_at} " if info.fork_at is not None else "⑂ "


def branch_rows(branches: list[tuple[SessionInfo, int]], current_id: str | None) -> list[list[str]]:
    """The cost view's "By branch" rows (``Store.tree``), in tree order, indented by depth, ``●``
    on the current one, then "all branches" when there are several: session, messages, tokens,
    cost. Each counts only its own requests (a branch's shared messages cost its parent); a
    subagent's session (``⚙ agent``) sits under its parent."""
    rows = []
    for info, depth in branches:
        fork = branch_mark(info)
        used = int(info.input_tokens or 0) + int(info.output_tokens or 0)
        rows.append([f"{'● ' if info.id == current_id else ''}{'  ' * depth}{fork}{one_line(info.shown_title, 40)}",
                     str(info.message_count), tokens(used), cost_text(float(info.cost or 0.0), used)])
    if len(branches) > 1:
        used = sum(int(i.input_tokens or 0) + int(i.output_tokens or 0) for i, _ in branches)
        rows.append(["all branches", "", tokens(used), cost_text(sum(float(i.cost or 0.0) for i, _ in branches), used)])
    return rows


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---", *["--:"] * (len(head) - 1)]) + "|"]
    return "\n".join(lines + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows])


def cost_report(store: Store, session_id: str, cwd: Path, info: ModelInfo | None) -> str:
    """``/cost`` as Markdown: the branch's total and requests, a table by model, one by branch of
    ``cwd``'s session tree, and where the prices come from (``info``: the model in use). Reads
    the store: call it in a thread."""
    by_model = store.spending(session_id)
    figures = list(by_model.values())
    title, subtitle = headline(by_model, store.subagent_cost(session_id))
    parts = [f"**{title}** ({subtitle})"]
    if figures:
        parts.append(_table(["model", "requests", "input", "cache read", "cache write", "output", "cache hit", "cost"],
                            model_rows(by_model)))
    branches = store.tree(cwd)
    if branches:
        parts.append(_table(["branch", "messages", "tokens", "cost"], branch_rows(branches, session_id)))
    parts.append(prices_note(info))
    return "\n\n".join(parts)


def headline(by_model: dict[str, dict[str, float]], by_subagents: float = 0.0) -> tuple[str, str]:
    """``/cost``'s title and what it counts, for ``Store.spending``'s rows and the dollars the
    session's subagents spent (``Store.subagent_cost``), which the total includes:
    ("What this session cost: $0.42", "12 requests: this branch, and its parents' up to the
    fork point; $0.10 of it by its subagents")."""
    figures = list(by_model.values())
    requests = sum(int(row.get("requests", 0) or 0) for row in figures)
    own = sum_costs([row.get("cost") for row in figures])
    total = cost_text(own + by_subagents if own is not None else by_subagents or None, sum(spent(row) for row in figures))
    subagents = f"; {dollars(by_subagents)} of it by its subagents" if by_subagents else ""
    return (f"What this session cost: {total}",
            f"{count_requests(requests)}: this branch, and its parents' up to the fork point{subagents}")


def count_requests(n: int) -> str:
    """``n`` requests: "1 request", "no requests yet"."""
    return "no requests yet" if n == 0 else f"{n} request{'s' * (n != 1)}"
