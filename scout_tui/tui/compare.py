"""``/compare [A] B``: two branches of this session's tree side by side (``session/compare.py``
computes it in a thread; ``widgets/branch_compare.py`` shows it); ``o`` there opens a side."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import TYPE_CHECKING

from scout_tui.core.errors import ScoutError

if TYPE_CHECKING:
    from scout_tui.tui.app import ScoutApp


def compare_command(app: ScoutApp, args: str) -> None:
    """``/compare B`` compares this branch with B; ``/compare A B`` those two; ``/compare`` alone
    offers the tree's other branches to pick from."""
    refs = args.split()
    current = app.session.id
    if len(refs) > 2:
        app.chat.add_notice("/compare takes at most two branches: /compare [A] B", "error")
        return
    if len(refs) < 2 and current is None:
        app.chat.add_notice("Nothing to compare yet: this session has no messages.", "error")
        return
    if len(refs) == 2:
        app.run_worker(_show(app, refs[0], refs[1]), group="compare", exclusive=True)
    elif refs:
        assert current is not None
        app.run_worker(_show(app, current, refs[0]), group="compare", exclusive=True)
    else:
        assert current is not None
        app.run_worker(_pick(app, current), group="compare", exclusive=True)


async def _pick(app: ScoutApp, current: str) -> None:
    """Offer the other branches of ``current``'s tree; the chosen one compared with it."""
    from scout_tui.widgets.branch_picker import BranchPicker

    def branches() -> list:
        root = app.store.ancestry(current)[0].id
        tree = app.store.tree()
        return [(info, depth) for info, depth in tree
                if info.id != current and info.kind is None and app.store.ancestry(info.id)[0].id == root]

    found = await asyncio.to_thread(branches)
    if not found:
        app.chat.add_notice("This session has no other branch to compare with: fork it first (f on a message).")
        return

    def chosen(other: str | None) -> None:
        if other is not None:
            app.run_worker(_show(app, current, other), group="compare", exclusive=True)

    app.push_screen(BranchPicker(found, f"Compare {current[:8]} with:"), chosen)


async def _show(app: ScoutApp, a: str, b: str) -> None:
    """Compare ``a`` and ``b`` in a thread (the store and git), then show the screen."""
    from scout_tui.session.compare import compare_branches, with_files
    from scout_tui.widgets.branch_compare import BranchCompare

    try:
        comparison = await asyncio.to_thread(lambda: with_files(compare_branches(app.store, a, b)))
    except ScoutError as e:
        app.chat.add_notice(f"Cannot compare: {e}", "error")
        return
    app.push_screen(BranchCompare(comparison), partial(_open, app))


def _open(app: ScoutApp, session_id: str | None) -> None:
    """The compare screen closed with a branch to open (None: back where the person was)."""
    if session_id is not None and session_id != app.session.id and not app.sessions._refuse_while_busy():
        app.sessions.open_session(session_id)
