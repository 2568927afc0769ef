"""``/search [QUERY]`` and ``s`` in the sessions pane: the search screen
(``widgets/session_search.py``) over every session's words, and the hit chosen opened at its
message (``Sessions.open_session(..., at=)``), scrolled to and marked, where ``f`` forks as usual.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scout_tui.store.search import SearchHit
    from scout_tui.tui.app import ScoutApp


def search_command(app: ScoutApp, query: str) -> None:
    """``/search [QUERY]``: open the search screen, ``query`` typed in it."""
    from scout_tui.widgets.session_search import SessionSearch

    app.push_screen(SessionSearch(app.store, str(app.cwd), query.strip()), partial(search_chosen, app))


def search_chosen(app: ScoutApp, hit: SearchHit | None) -> None:
    """The search screen closed with ``hit`` (None: Esc, back where the person was): open its
    session (another, once no turn runs) at its message."""
    if hit is None:
        return
    if hit.session.id == app.session.id:
        app.sessions.reveal(hit.seq)
    elif not app.sessions._refuse_while_busy():
        app.sessions.open_session(hit.session.id, at=hit.seq)
