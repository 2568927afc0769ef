"""The retry and error rules both backends share: which failures are worth sending again and
after how long, what kind of failure an error body names (context overflow included, and the
window it states), and the errors a stream reports inside a 200 response.

Sources: Anthropic "Errors" and OpenAI "Error codes" API references; RFC 9110 (Retry-After).
"""

from __future__ import annotations

import json
import random
import re
import time
from email.utils import parsedate_to_datetime
from typing import Any, Mapping

# Statuses worth sending again (both vendors' SDKs retry these; 529 is Anthropic's overload).
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})

_CONTEXT_OVERFLOW = re.compile(
    r"prompt is too long|context[_ ]length|maximum context|context window|exceeds? the (available )?context"
    r"|exceed context limit",
    re.IGNORECASE,
)


_OVERFLOW_WINDOW = (
    re.compile(r"\d+ tokens > (?P<window>\d+) maximum"),  # Anthropic: prompt is too long
    re.compile(r"\d+ \+ \d+ > (?P<window>\d+)"),  # Anthropic: input length and `max_tokens` exceed context limit
    re.compile(r"maximum context length is (?P<window>\d+) tokens"),  # OpenAI, vLLM
    re.compile(r"available context size \((?P<window>\d+) tokens\)"),  # llama.cpp
)


def overflow_window(message: str) -> int | None:
    """The context window, in tokens, that a server's context-overflow error ``message`` names,
    or None when it names none. Read from Anthropic's "prompt is too long: 210000 tokens >
    200000 maximum" and "input length and `max_tokens` exceed context limit: 190000 + 20000 >
    200000", OpenAI's and vLLM's "maximum context length is 128000 tokens", and llama.cpp's
    "request (4476 tokens) exceeds the available context size (4096 tokens)"."""
    for pattern in _OVERFLOW_WINDOW:
        found = pattern.search(message)
        if found:
            return int(found["window"])
    return None


_OVERFLOW_PROMPT = (
    re.compile(r"(?P<tokens>\d+) tokens > \d+ maximum"),  # Anthropic: prompt is too long
    re.compile(r"limit: (?P<tokens>\d+) \+ \d+ > \d+"),  # Anthropic: input length and `max_tokens` exceed ...
    re.compile(r"messages resulted in (?P<tokens>\d+) tokens"),  # OpenAI
    re.compile(r"request \((?P<tokens>\d+) tokens\) exceeds"),  # llama.cpp
)


def overflow_counts(payload: object, message: str) -> tuple[int | None, int | None]:
    """``(prompt tokens, window)`` a context-overflow error states, each None when it does not:
    llama.cpp's ``n_prompt_tokens`` and ``n_ctx`` beside its message (``{"error": {"code": 400,
    "message": "the request exceeds the available context size, try increasing it", "type":
    "exceed_context_size_error", "n_prompt_tokens": 9079, "n_ctx": 8192}}``, llama.cpp
    ``server_task_result_error::to_json``), else the figures of ``message`` (``overflow_window``
    and the counts Anthropic, OpenAI and llama.cpp write into it). The prompt tokens are the
    server's own count: the estimate is calibrated by it."""
    err = payload.get("error", payload) if isinstance(payload, dict) else None
    fields = err if isinstance(err, dict) else {}

    def count(value: object) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    tokens, window = count(fields.get("n_prompt_tokens")), count(fields.get("n_ctx"))
    if tokens is None:
        found = next((m for m in (p.search(message) for p in _OVERFLOW_PROMPT) if m), None)
        tokens = int(found["tokens"]) if found else None
    return tokens, window or overflow_window(message)


class StreamError(Exception):
    """A failure reported inside a streamed 200 response; ``Backend._run`` makes it a ModelError."""

    def __init__(self, kind: str, detail: str, *, retryable: bool = False, retry_after: float | None = None) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.retryable = retryable
        self.retry_after = retry_after


def event_payload(data: str) -> dict | None:
    """One stream event's ``data`` parsed as JSON: the object, or None for any other JSON value
    (nothing in it to read).

    Raises:
        StreamError: ``bad_response`` when ``data`` is not JSON.
    """
    try:
        payload = json.loads(data)
    except ValueError:
        raise StreamError("bad_response", f"an event that is not JSON: {data[:120]!r}") from None
    return payload if isinstance(payload, dict) else None


def stream_error(payload: dict) -> StreamError:
    """The StreamError for an error a 200 stream reports (Anthropic's ``error`` event, a Chat
    Completions chunk with ``error``): kind and retryability by ``classify``, text the
    server's message followed by its error type or code in parentheses."""
    etype, code, message = error_fields(payload)
    kind, retryable = classify(None, etype, code, message)
    tag = etype or code
    return StreamError(kind, (message or "an error in the stream") + (f" ({tag})" if tag else ""), retryable=retryable)


UNPARSED_ARGUMENTS = "unparsed_arguments"
"""The one key of a ``tool_use`` input that stands for arguments that were not a JSON object:
the call is kept (both APIs need an object as ``input``, and every call needs its result) and
answered with an error the model reads; see ``unparsed_input``."""


def unparsed_input(raw: str) -> dict[str, str]:
    """The ``tool_use`` input for a finished call whose arguments (``raw``, the text as
    streamed) are not a JSON object: ``{UNPARSED_ARGUMENTS: raw}``. Small models send such
    calls often; the agent answers them with an error result instead of ending the turn."""
    return {UNPARSED_ARGUMENTS: raw}


def error_fields(payload: Any) -> tuple[str | None, str | int | None, str]:
    """``(type, code, message)`` from an error body of any common shape; blanks when absent."""
    if isinstance(payload, list) and payload:
        payload = payload[0]
    if not isinstance(payload, dict):
        return None, None, ""
    err = payload.get("error", payload)
    if isinstance(err, str):
        return None, None, err
    if not isinstance(err, dict):
        return None, None, ""
    message = err.get("message") or err.get("detail") or ""
    if not isinstance(message, str):
        message = json.dumps(message)[:300]
    etype = err.get("type") if isinstance(err.get("type"), str) else None
    code = err.get("code") if isinstance(err.get("code"), (str, int)) else None
    if etype == "error":  # Anthropic's envelope type, not the error's own
        etype = None
    return etype, code, message


def classify(status: int | None, etype: str | None = None, code: str | int | None = None, message: str = "") -> tuple[str, bool]:
    """``(kind, retryable)`` for an error, from its HTTP status and the server's type/code/text.

    ``status`` is None (or 200) for an error reported inside a stream. Kinds are those of
    ``ModelError``. Sources: Anthropic "Errors" and OpenAI "Error codes" API references.
    """
    if isinstance(code, int) and status in (None, 200):
        status = code  # OpenRouter puts the upstream HTTP status in error.code
    names = {str(x).lower() for x in (etype, code) if x not in (None, "")}
    if status is None:
        status = 200  # no HTTP status: an error event in a stream that began well
    in_stream = status == 200
    if (in_stream or 400 <= status < 500) and (
        "context_length_exceeded" in names or "exceed_context_size_error" in names or _CONTEXT_OVERFLOW.search(message)
    ):
        return "context_overflow", False
    if status == 529 or names & {"overloaded_error", "overloaded"}:
        return "overloaded", True
    if status == 429 or names & {"rate_limit_error", "rate_limit_exceeded"}:
        return "rate_limited", not names & {"insufficient_quota"}
    if status == 408 or names & {"timeout_error"}:
        return "timeout", True
    if status in (401, 403) or names & {"authentication_error", "permission_error", "invalid_api_key"}:
        return "auth", False
    if status == 404 or names & {"not_found_error", "model_not_found"}:
        return "not_found", False
    if names & {"invalid_request_error", "request_too_large", "invalid_request"}:
        return "invalid_request", False
    if in_stream:
        return "server_error", True  # an error mid-stream is the server's, whatever its name
    if status >= 500 or status == 409:
        return "server_error", status in RETRY_STATUSES
    if status >= 400:
        return "invalid_request", False
    return "bad_response", False


def retry_after_seconds(headers: Mapping[str, str], *, cap: float = 60.0) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms``, else ``Retry-After`` (seconds or
    an HTTP date, RFC 9110 §10.2.3); None when absent or unreadable. Capped at ``cap``."""
    value: float | None = None
    try:
        if headers.get("retry-after-ms"):
            value = float(headers["retry-after-ms"]) / 1000
    except ValueError:
        value = None
    raw = headers.get("retry-after")
    if value is None and raw:
        try:
            value = float(raw)
        except ValueError:
            try:
                value = parsedate_to_datetime(raw).timestamp() - time.time()
            except (TypeError, ValueError, IndexError):
                value = None
    if value is None or value != value:  # NaN
        return None
    return min(max(value, 0.0), cap)


def backoff(attempt: int, base: float, cap: float) -> float:
    """Delay in seconds before retry ``attempt`` (1-based): capped exponential, jittered down
    by up to 25 % so many clients do not retry in step (the scheme of both vendors' SDKs)."""
    return min(cap, base * 2 ** (attempt - 1)) * (1 - 0.25 * random.random())


def snippet(body: bytes, limit: int = 200) -> str:
    """The start of a response body as one line of text, for an error message."""
    text = body.decode("utf-8", "replace").strip()
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def exception_text(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
