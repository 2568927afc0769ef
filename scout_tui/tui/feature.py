"""What the app's features have in common: each is an object the app holds (``ScoutApp.queue``,
``ScoutApp.sessions``…), given the app it works for, and runs its background work as the app's
workers (``feature_work``), as Textual's ``@work`` does for a widget's or the app's own methods.

A feature talks to the session (``app.session``), to the main screen's widgets and to the other
features through their typed attributes; the app routes the Textual messages and actions it
handles to them.
"""

from __future__ import annotations

from functools import partial, wraps
from typing import TYPE_CHECKING, Any, Callable, Concatenate, ParamSpec, TypeVar

if TYPE_CHECKING:
    from textual.worker import Worker

    from scout_tui.tui.app import ScoutApp

P = ParamSpec("P")
F = TypeVar("F", bound="Feature")


class Feature:
    """A part of the app (queue, sessions, MCP servers…).

    Args:
        app: the app it works for.
    """

    def __init__(self, app: ScoutApp) -> None:
        self.app = app


def feature_work(*, group: str = "default", exclusive: bool = False, thread: bool = False,
                 exit_on_error: bool = True) -> Callable[[Callable[Concatenate[F, P], Any]],
                                                         Callable[Concatenate[F, P], Worker[Any]]]:
    """Textual's ``@work`` for a feature's method: calling it starts the method as a worker of
    the app (``App.run_worker``, named after the method) and returns the ``Worker``. The
    arguments are ``run_worker``'s: ``exclusive`` cancels the group's other workers first;
    ``thread`` runs a plain function in a thread."""

    def decorator(method: Callable[Concatenate[F, P], Any]) -> Callable[Concatenate[F, P], Worker[Any]]:
        @wraps(method)
        def start(self: F, *args: P.args, **kwargs: P.kwargs) -> Worker[Any]:
            return self.app.run_worker(partial(method, self, *args, **kwargs), name=method.__name__, group=group,
                                       exclusive=exclusive, thread=thread, exit_on_error=exit_on_error)

        return start

    return decorator
