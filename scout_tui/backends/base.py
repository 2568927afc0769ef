"""What every backend shares: the request, the stream events, usage, stop reasons, retries.

A backend turns one provider's wire format into these events and, at the end, one assistant
message in the Anthropic content-block shape (``text``, ``thinking``, ``redacted_thinking``,
``tool_use``). Translation to and from the wire happens in the provider's file only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, AsyncIterator

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

    def as_dict(self) -> dict[str, int | None]:
        return asdict(self)

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            None
            if self.reasoning_tokens is None and other.reasoning_tokens is None
            else (self.reasoning_tokens or 0) + (other.reasoning_tokens or 0),
        )


@dataclass(slots=True)
class Request:
    """One model call: the system prompt, the conversation, the tools offered.

    ``messages`` is in the Anthropic content-block shape; ``tools`` is a list of
    ``{"name", "description", "input_schema"}`` (JSON Schema objects); ``max_tokens`` caps
    the answer's output tokens.
    """

    model: str
    messages: list[dict]
    system: str = ""
    tools: list[dict] = field(default_factory=list)
    max_tokens: int = 8192


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
