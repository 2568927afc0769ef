"""Figures for narrow columns (the status bar, the sessions pane, ``/cost``): dollars and token
counts, shortened the same way wherever they show."""

from __future__ import annotations


def dollars(cost: float) -> str:
    """A cost in dollars for a narrow column: <$0.01, $0.42, $3.10, $12.5."""
    if cost < 0.01:
        return "<$0.01"
    if cost < 10:
        return f"${cost:.2f}"
    return f"${cost:.1f}"


def tokens(n: int) -> str:
    """A token count for a narrow column: 950, 12.3k, 200k, 1.2M."""
    if n < 1_000:
        return str(n)
    if n < 100_000:
        return f"{n / 1_000:.1f}k"
    if n < 1_000_000:
        return f"{n / 1_000:.0f}k"
    return f"{n / 1_000_000:.1f}M"
