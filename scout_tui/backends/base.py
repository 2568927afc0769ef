"""What every backend shares: the request, the stream events, usage, stop reasons, retries.

A backend turns one provider's wire format into these events and, at the end, one assistant
message in the Anthropic content-block shape (``text``, ``thinking``, ``redacted_thinking``,
``tool_use``). Translation to and from the wire happens in the provider's file only.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from contextlib import aclosing
from dataclasses import asdict, dataclass, field
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, AsyncIterator, Mapping, Protocol

from scout_tui.errors import ModelError

if TYPE_CHECKING:  # httpx costs ~130 ms to import: it is loaded on the first request only
    import httpx

# Normalized stop reasons (Anthropic's names): end_turn, tool_use, max_tokens,
# stop_sequence, refusal; "error" only on a failed stream.
STOP_REASONS = ("end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "error")


@dataclass(slots=True)
class Usage:
    """Tokens of one model call, in Anthropic's convention.

    ``input_tokens`` excludes cache reads and writes (OpenAI's ``prompt_tokens`` includes its
    ``cached_tokens``; the OpenAI backend subtracts them). All counts are tokens.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int | None = None
    cache_write_1h_tokens: int = 0
    """The part of ``cache_write_tokens`` written with a 1-hour TTL (billed 2× input, not 1.25×)."""

    def as_dict(self) -> dict[str, int | None]:
        return asdict(self)

    @property
    def prompt_tokens(self) -> int:
        """Every input token of the request: uncached, cache read and cache write."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            None
            if self.reasoning_tokens is None and other.reasoning_tokens is None
            else (self.reasoning_tokens or 0) + (other.reasoning_tokens or 0),
            self.cache_write_1h_tokens + other.cache_write_1h_tokens,
        )


@dataclass(slots=True)
class Request:
    """One model call: the system prompt, the conversation, the tools offered.

    ``messages`` is in the Anthropic content-block shape; ``tools`` is a list of
    ``{"name", "description", "input_schema"}`` (JSON Schema objects); ``max_tokens`` caps
    the answer's output tokens.

    Prompt caching hints (each backend uses what its provider understands):
    ``stable`` is how many leading messages stay byte-identical until the next epoch boundary of
    the prompt strategy (``compaction.Compacted.stable``; 0: unknown), where Anthropic gets a
    cache breakpoint; ``cache_key`` names the conversation branch (OpenAI's
    ``prompt_cache_key``; None: not sent); ``cache_ttl`` is ``"5m"`` or ``"1h"`` (Anthropic).
    """

    model: str
    messages: list[dict]
    system: str = ""
    tools: list[dict] = field(default_factory=list)
    max_tokens: int = 8192
    stable: int = 0
    cache_key: str | None = None
    cache_ttl: str = "5m"


# --- stream events -------------------------------------------------------------------------


@dataclass(slots=True)
class TextDelta:
    """A fragment of answer text."""

    text: str


@dataclass(slots=True)
class ThinkingDelta:
    """A fragment of reasoning ("thinking") text."""

    text: str


@dataclass(slots=True)
class ToolCallStarted:
    """The model began a tool call; its arguments follow as ``ToolCallDelta`` fragments."""

    index: int
    id: str
    name: str


@dataclass(slots=True)
class ToolCallDelta:
    """A fragment of a tool call's JSON arguments (never parse a fragment on its own)."""

    index: int
    fragment: str


@dataclass(slots=True)
class Retrying:
    """The request failed before any byte streamed and will be sent again after ``delay`` s."""

    attempt: int
    max_attempts: int
    delay: float
    reason: str


@dataclass(slots=True)
class Completed:
    """The stream ended properly: the assembled assistant message, its usage and stop reason."""

    message: dict[str, Any]
    usage: Usage
    stop_reason: str
    stop_reason_raw: str | None = None


StreamEvent = TextDelta | ThinkingDelta | ToolCallStarted | ToolCallDelta | Retrying | Completed


class Backend:
    """A model provider. Subclasses implement ``stream``.

    Args:
        model: the provider's model id.
        api_key: sent in a header only; never in a URL, message, log or store.
        base_url: the provider's API root (see each subclass for its default).
        timeout: seconds to wait for a connection and between streamed bytes.
        max_retries: attempts after the first on a retryable failure before any byte streamed.
        transport: an ``httpx.AsyncBaseTransport`` (tests use ``httpx.MockTransport``).
    """

    name = "base"
    default_base_url = ""

    label = "Model API"  # how error messages and retry notices name the provider
    # Backoff before retry n (1-based): min(cap, base * 2**(n-1)) seconds, jittered down by up
    # to a quarter; a server's Retry-After wins, capped at retry_after_cap. Tests set them small.
    retry_base: float = 0.5
    retry_cap: float = 8.0
    retry_after_cap: float = 60.0
    _client: "httpx.AsyncClient | None" = None

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 600.0,
        max_retries: int = 4,
        transport: Any = None,
    ) -> None:
        self.model = model
        self.api_key = api_key
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self.timeout = timeout
        self.max_retries = max_retries
        self.transport = transport

    def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        """Send ``request`` and yield stream events, ending with exactly one ``Completed``.

        Raises:
            ModelError: on an HTTP error, a connection failure after retries, an error
                event inside the stream, or a stream that ends without its terminal event.
                ``ModelError.partial`` holds what had been assembled.
        """
        raise NotImplementedError

    async def aclose(self) -> None:
        """Release the HTTP client, if one was opened."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    # --- shared HTTP machinery for the providers -----------------------------------------

    def _http(self) -> "httpx.AsyncClient":
        """The HTTP client, created on first use and reused (connection pooling)."""
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(transport=self.transport, timeout=httpx.Timeout(self.timeout))
        return self._client

    def _redact(self, text: str) -> str:
        """``text`` with the API key blotted out (servers sometimes echo part of it back)."""
        if self.api_key and len(self.api_key) >= 4:
            text = text.replace(self.api_key, "[api key]")
        return text

    def _error(
        self,
        kind: str,
        detail: str,
        *,
        url: str,
        status: int | None,
        retryable: bool,
        retry_after: float | None = None,
        partial: dict | None = None,
    ) -> ModelError:
        """A ModelError whose message names the provider, what failed, the status and the URL."""
        where = f"HTTP {status} from {url}" if status is not None else url
        message = f"{self.label} {kind.replace('_', ' ')} ({where}): {detail}"
        return ModelError(
            self._redact(message),
            kind=kind,
            status=status,
            url=url,
            retryable=retryable,
            retry_after=retry_after,
            partial=partial,
        )

    def _response_error(self, status: int, headers: Mapping[str, str], body: bytes, url: str) -> ModelError:
        """The ModelError for an HTTP error response (status >= 400, or a 200 that is no stream).

        Reads ``{"error": {"type", "message", "code"}}`` (Anthropic and OpenAI shapes, plus
        ``{"error": "text"}`` from Ollama and ``{"detail": ...}`` from FastAPI servers), else
        quotes a short snippet of the body.
        """
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        etype, code, message = error_fields(payload)
        if not message:
            message = snippet(body) or "(empty body)"
        kind, retryable = classify(status, etype, code, message)
        should = headers.get("x-should-retry", "").lower()
        if should in ("true", "false"):  # both vendors send this to steer their own SDKs
            retryable = should == "true"
        tag = ", ".join(str(x) for x in (etype, code) if x not in (None, ""))
        return self._error(
            kind,
            f"{message} ({tag})" if tag else message,
            url=url,
            status=status,
            retryable=retryable,
            retry_after=retry_after_seconds(headers, cap=self.retry_after_cap),
        )

    async def _send(self, url: str, headers: dict[str, str], body: dict) -> AsyncIterator["Retrying | httpx.Response"]:
        """POST ``body`` as JSON; yield a ``Retrying`` before each retry, then the open response.

        Retries (at most ``max_retries`` times) only before any byte of an answer arrived: on
        a retryable HTTP status (``RETRY_STATUSES``, steered by ``x-should-retry``) and on
        connection failures. The caller must close the response it gets.

        Raises:
            ModelError: the last failure, when it is not retryable or retries ran out.
        """
        import httpx

        client = self._http()
        attempt = 0
        while True:
            error: ModelError
            try:
                response = await client.send(client.build_request("POST", url, json=body, headers=headers), stream=True)
            except (httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
                error = self._error("timeout", f"no connection within {self.timeout:g} s ({type(exc).__name__})",
                                    url=url, status=None, retryable=True)
            except httpx.TimeoutException as exc:
                # The server took the request but sent no answer in time: sending it again
                # might run (and bill) it twice, so this is reported, not retried here.
                error = self._error("timeout", f"no response within {self.timeout:g} s ({type(exc).__name__})",
                                    url=url, status=None, retryable=True)
                raise error from None
            except (httpx.ConnectError, httpx.RemoteProtocolError) as exc:
                error = self._error("connection", f"cannot connect: {_exc_text(exc)}", url=url, status=None, retryable=True)
            except httpx.HTTPError as exc:
                raise self._error("connection", _exc_text(exc), url=url, status=None, retryable=False) from None
            else:
                if response.status_code < 400:
                    yield response
                    return
                try:
                    raw = await response.aread()
                except httpx.HTTPError:
                    raw = b""
                finally:
                    await response.aclose()
                error = self._response_error(response.status_code, response.headers, raw, url)
            if not error.retryable or attempt >= self.max_retries:
                if attempt:
                    error.args = (f"{error.args[0]} (after {attempt + 1} attempts)",)
                raise error
            attempt += 1
            delay = error.retry_after if error.retry_after is not None else backoff(attempt, self.retry_base, self.retry_cap)
            what = {"connection": "cannot connect", "timeout": "connect timeout"}.get(error.kind, error.kind.replace("_", " "))
            status = f" (HTTP {error.status})" if error.status is not None else ""
            yield Retrying(attempt, self.max_retries, delay, f"{self.label} {what}{status}")
            await asyncio.sleep(delay)

    async def _run(self, url: str, headers: dict[str, str], body: dict, assembler: "Assembler") -> AsyncIterator[StreamEvent]:
        """Send the request (with retries), feed the SSE stream to ``assembler``, yield its events.

        Ends with the assembler's ``Completed``. Any failure after the response began is
        raised as a ModelError carrying ``assembler.partial()``, never retried.
        """
        import httpx

        from httpx_sse import EventSource, SSEError

        response = None
        async with aclosing(self._send(url, headers, body)) as attempts:
            async for item in attempts:
                if isinstance(item, Retrying):
                    yield item
                else:
                    response = item
        assert response is not None
        try:
            ctype = response.headers.get("content-type", "").lower()
            if "event-stream" not in ctype and ("json" in ctype or "html" in ctype):
                for event in await self._whole_body(response, url, assembler):
                    yield event
                return
            try:
                async for sse in EventSource(response).aiter_sse():
                    for event in assembler.feed(sse.event, sse.data):
                        yield event
                    if assembler.done:
                        break
                final = assembler.finish()
            except SSEError as exc:  # a 2xx body that is not an event stream
                raise StreamError("bad_response", f"expected an event stream: {exc}") from None
            except httpx.HTTPError as exc:
                # The connection broke mid-stream; the answer may still be whole (OpenAI-style
                # servers can close after finish_reason without sending [DONE]).
                try:
                    final = assembler.finish()
                except StreamError:
                    timeout = isinstance(exc, httpx.TimeoutException)
                    raise self._error(
                        "timeout" if timeout else "incomplete_stream",
                        f"no data for {self.timeout:g} s mid-stream" if timeout else f"the stream broke: {_exc_text(exc)}",
                        url=url, status=response.status_code, retryable=True, partial=assembler.partial(),
                    ) from None
            for event in final:
                yield event
        except StreamError as exc:
            raise self._error(exc.kind, exc.detail, url=url, status=response.status_code, retryable=exc.retryable,
                              retry_after=exc.retry_after, partial=assembler.partial()) from None
        finally:
            await response.aclose()

    async def _whole_body(self, response: "httpx.Response", url: str, assembler: "Assembler") -> list[StreamEvent]:
        """A 2xx answer that is not a stream: an error object, a whole (non-streamed) reply, or junk."""
        raw = await response.aread()
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = None
        if isinstance(payload, dict) and payload.get("error"):
            raise self._response_error(response.status_code, response.headers, raw, url)
        if isinstance(payload, dict):
            events = assembler.from_json(payload)
            if events:
                return events
        ctype = response.headers.get("content-type", "")
        raise self._error("bad_response", f"expected an event stream, got {ctype or 'no content-type'}: {snippet(raw)}",
                          url=url, status=response.status_code, retryable=False)


# --- shared pieces of the retry and error rules ---------------------------------------------

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


def bad_tool_arguments(name: str, raw: str) -> StreamError:
    """The StreamError for a finished tool call whose arguments (``raw``, the JSON text as
    streamed) are not a JSON object. Retryable: a malformed call is a slip a new answer rarely
    repeats. (A call cut off by ``max_tokens`` is not one: the agent answers it as cut.)"""
    return StreamError(
        "bad_response", f"tool call {name!r} has arguments that are not a JSON object: {raw[:200]!r}", retryable=True
    )


class Accumulator:
    """A growing text (answer or thinking) that streams only once it is more than whitespace.

    Leading whitespace is held back and sent with the first visible fragment, so a
    whitespace-only text never opens an empty bubble, yet the streamed fragments still add up
    to the whole. Fragments are kept in a list: appending stays O(1) on long answers.
    """

    __slots__ = ("parts", "visible", "event")

    def __init__(self, event: type[TextDelta] | type[ThinkingDelta]) -> None:
        self.parts: list[str] = []
        self.visible = False
        self.event = event

    def add(self, fragment: str) -> list[StreamEvent]:
        """Append ``fragment``; the delta events to stream now (zero or one)."""
        if not fragment:
            return []
        self.parts.append(fragment)
        if self.visible:
            return [self.event(fragment)]
        if fragment.strip():
            self.visible = True
            return [self.event("".join(self.parts))]
        return []

    def value(self) -> str:
        return "".join(self.parts)


class Assembler(Protocol):
    """Turns one provider's stream into events and, at the end, one assistant message."""

    done: bool  # the terminal event arrived: stop reading

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        """Apply one SSE event; raises StreamError for an error the stream reports."""
        ...

    def finish(self) -> list[StreamEvent]:
        """Events that close the stream, ending with Completed; StreamError if it is incomplete."""
        ...

    def partial(self) -> dict | None:
        """The text and thinking assembled so far, as an assistant message, or None."""
        ...

    def from_json(self, payload: dict) -> list[StreamEvent]:
        """The events of a whole, non-streamed reply (ending with Completed), or [] if not one."""
        ...


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
    in_stream = status in (None, 200)
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


def _exc_text(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
