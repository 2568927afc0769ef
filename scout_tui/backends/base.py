"""What every backend shares: the request, the stream events, usage, stop reasons, and the
sending with retries (its rules: ``failures.py``).

A backend turns one provider's wire format into these events and, at the end, one assistant
message in the Anthropic content-block shape (``text``, ``thinking``, ``redacted_thinking``,
``tool_use``). Translation to and from the wire happens in the provider's file only.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import aclosing
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, AsyncGenerator, AsyncIterator, Mapping, Protocol

from scout_tui.backends.failures import (StreamError, backoff, classify, error_fields, exception_text, overflow_counts,
                                         retry_after_seconds, snippet)
from scout_tui.core.errors import ModelError
from scout_tui.core.redaction import redact

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
    extra_headers: Mapping[str, str] = {}
    """Headers sent with every request besides the backend's own, replacing any of the same
    name (a provider profile's ``headers``: a gateway's token, OpenRouter's ``x-title``). Their
    values may be secrets: redacted from error messages like the key (``_redact``)."""

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
        """``text`` with the API key and the extra headers' values blotted out (servers
        sometimes echo part of them back)."""
        secrets = [s for s in self.extra_headers.values() if len(s) >= 8]  # keys.MIN_SECRET: not "1" everywhere
        if self.api_key and len(self.api_key) >= 4:
            secrets.append(self.api_key)
        return redact(text, tuple(sorted(secrets, key=len, reverse=True))) if secrets else text

    def with_extra_headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        """``headers`` (the backend's own) with ``extra_headers`` added, an extra one replacing
        an own one whatever the case of its name."""
        if not self.extra_headers:
            return dict(headers)
        replaced = {name.lower() for name in self.extra_headers}
        return {**{k: v for k, v in headers.items() if k.lower() not in replaced}, **self.extra_headers}

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
        overflow: tuple[int | None, int | None] = (None, None),
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
            overflow=overflow,
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
            overflow=overflow_counts(payload, message) if kind == "context_overflow" else (None, None),
        )

    async def _send(self, url: str, headers: dict[str, str], body: dict) -> AsyncGenerator["Retrying | httpx.Response", None]:
        """POST ``body`` as JSON; yield a ``Retrying`` before each retry, then the open response.

        Retries (at most ``max_retries`` times) only before any byte of an answer arrived: on
        a retryable HTTP status (``RETRY_STATUSES``, steered by ``x-should-retry``) and on
        connection failures. The caller must close the response it gets.

        Raises:
            ModelError: the last failure, when it is not retryable or retries ran out.
        """
        import httpx

        client = self._http()
        headers = self.with_extra_headers(headers)
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
                error = self._error("connection", f"cannot connect: {exception_text(exc)}", url=url, status=None, retryable=True)
            except httpx.HTTPError as exc:
                raise self._error("connection", exception_text(exc), url=url, status=None, retryable=False) from None
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
                        f"no data for {self.timeout:g} s mid-stream" if timeout else f"the stream broke: {exception_text(exc)}",
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


class Accumulator:
    """A growing text (answer or thinking) that streams only once it is more than whitespace.

    Leading whitespace is held back and sent with the first visible fragment, so a
    whitespace-only text never opens an empty bubble, yet the streamed fragments still add up
    to the whole. Fragments are kept in a list: appending stays O(1) on long answers.

    ``lead`` is streamed just before the first visible fragment but is not part of the value:
    the separator between this block and an earlier one of the same message, so the streamed
    text reads as ``messages.message_text`` joins the blocks.
    """

    __slots__ = ("parts", "visible", "event", "lead")

    def __init__(self, event: type[TextDelta] | type[ThinkingDelta], lead: str = "") -> None:
        self.parts: list[str] = []
        self.visible = False
        self.event = event
        self.lead = lead

    def add(self, fragment: str) -> list[StreamEvent]:
        """Append ``fragment``; the delta events to stream now (zero or one)."""
        if not fragment:
            return []
        self.parts.append(fragment)
        if self.visible:
            return [self.event(fragment)]
        if fragment.strip():
            self.visible = True
            return [self.event(self.lead + "".join(self.parts))]
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
