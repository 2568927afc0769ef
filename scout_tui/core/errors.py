"""The one user-facing error type, and the model-call error that carries HTTP detail.

Every message says what failed and where (file and line, or URL and status), never a secret.
"""

from __future__ import annotations

import traceback
from pathlib import Path


class ScoutError(Exception):
    """An error a person can act on: the message names what failed and where."""


class ModelError(ScoutError):
    """A failed model call or stream.

    Attributes:
        kind: one of ``rate_limited``, ``overloaded``, ``server_error``, ``timeout``,
            ``connection``, ``context_overflow``, ``auth``, ``invalid_request``,
            ``not_found``, ``incomplete_stream``, ``bad_response``.
        status: the HTTP status (200 for an error inside a streamed 200 response), or None
            when no response arrived.
        url: the request URL (never carries a key; keys travel in headers).
        retryable: whether the same request may succeed if sent again.
        retry_after: seconds the server asked us to wait, when it said.
        partial: the assistant message assembled before the error (Anthropic content-block
            shape), or None; never a finished answer.
        overflow: for ``context_overflow``, ``(prompt tokens, window)`` as the server counted
            them (``backends.failures.overflow_counts``), each None when it did not say.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str = "server_error",
        status: int | None = None,
        url: str = "",
        retryable: bool = False,
        retry_after: float | None = None,
        partial: dict | None = None,
        overflow: tuple[int | None, int | None] = (None, None),
    ) -> None:
        super().__init__(message)
        self.overflow = overflow
        self.kind = kind
        self.status = status
        self.url = url
        self.retryable = retryable
        self.retry_after = retry_after
        self.partial = partial


def raised_at(exc: BaseException, path: Path | str | None = None) -> str | None:
    """Where ``exc`` was raised, as ``"<file>:<line>"``: the deepest frame of its traceback in
    the file ``path`` (a plugin's or a tool's own line, rather than the library it called),
    else the deepest frame; None without a traceback."""
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if path is not None and f.filename == str(path)]
    frame = own[-1] if own else frames[-1] if frames else None
    return f"{frame.filename}:{frame.lineno}" if frame else None


def error_text(exc: BaseException) -> str:
    """``"<Type>: <message>"``, or the type alone when the message is empty."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
