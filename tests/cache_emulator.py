"""Loopback "providers" that bill a request body the way the APIs document their prompt caches.

``AnthropicCache`` and ``OpenAICache`` take the JSON body a backend would send and return the
usage the provider would report (or raise ``Rejected`` with the provider's 400 body);
``loopback_handler`` plugs either into ``loopback.LoopbackServer`` so tests and benchmarks can
watch real code pay for its prompts. Pure Python, no network, a clock you advance by hand.

Sources (read 2025-2026; each rule below names its own):
- Anthropic "Prompt caching": https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching
  (now platform.claude.com/docs/en/build-with-claude/prompt-caching).
- OpenAI "Prompt caching": https://platform.openai.com/docs/guides/prompt-caching and the
  "Prompt Caching 201" cookbook (github.com/openai/openai-cookbook, examples/Prompt_Caching_201.ipynb).
- Error bodies: /work/shared/fixtures/wire/*_400.json, and the messages quoted where raised.

Tokens are an estimate, not a tokenizer: characters / 4 of a canonical JSON, so figures are
deterministic and comparable between runs, not equal to the providers' counts.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

try:  # one module, whichever way the tests folder is on the path (pytest, benchmarks, a script)
    from tests.loopback import Recorded, Reply, anthropic_stream, openai_stream, sse
except ImportError:
    from loopback import Recorded, Reply, anthropic_stream, openai_stream, sse  # type: ignore[no-redef]

FIVE_MINUTES = 300.0
ONE_HOUR = 3600.0
TTL_SECONDS = {"5m": FIVE_MINUTES, "1h": ONE_HOUR}


class Rejected(Exception):
    """The provider would answer ``status`` with the JSON ``body`` (a dict) instead of a stream."""

    def __init__(self, status: int, body: dict):
        super().__init__(f"HTTP {status}: {json.dumps(body)}")
        self.status = status
        self.body = body


class _Clock:
    """Seconds, for cache lifetimes: a manual clock from 0 (``advance``) unless ``clock`` is given."""

    def __init__(self, clock: Callable[[], float] | None) -> None:
        self._clock = clock
        self._now = 0.0

    @property
    def now(self) -> float:
        return self._clock() if self._clock is not None else self._now

    def advance(self, seconds: float) -> None:
        """Move the manual clock forward by ``seconds`` (ignored when a ``clock`` was given)."""
        self._now += seconds


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


# --- Anthropic Messages ---------------------------------------------------------------------


def min_cacheable_tokens(model: str) -> int:
    """The shortest prefix, in tokens, that Anthropic caches for ``model``.

    From the docs' "Cache limitations": 4096 for Claude Opus 4.5 and later Opus and Claude Haiku
    4.5; 2048 for Claude Haiku 3.5 and Haiku 3; 1024 for the others (Sonnet 3.7 to 4.5, Opus 4,
    4.1). Shorter prefixes are processed without caching and without an error.
    """
    name = model.lower()
    if "claude-3-haiku" in name or "claude-3-5-haiku" in name:
        return 2048
    if "claude-haiku-4-5" in name:
        return 4096
    opus = re.search(r"claude-opus-(\d+)(?:-(\d{1,2}))?(?!\d)", name)
    if opus and (int(opus.group(1)), int(opus.group(2) or 0)) >= (4, 5):
        return 4096
    return 1024


@dataclass
class _Block:
    """One block position of the rendered prompt (a tool, a system text block, a content block)."""

    path: str  # where the API's error messages point: tools.0, system.1, messages.3.content.0
    tokens: int
    key: bytes  # identity: the block's JSON without its cache_control, with its section and role
    ttl: str | None  # the cache breakpoint's TTL, None when the block carries no cache_control
    count: int = 0  # cache_control markers on it (a tool_result's nested blocks may add several)


@dataclass
class _Entry:
    ttl: float  # seconds of idle life
    expires: float


def _invalid(message: str) -> Rejected:
    return Rejected(400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}})


class AnthropicCache:
    """Bills Messages API bodies with Anthropic's prompt caching rules; one instance = one
    organisation's cache (entries are shared by every request sent to it).

    Rules (docs "Prompt caching" unless said otherwise):

    - The prompt is rendered tools -> system -> messages. Every tool definition, system text
      block (a string system prompt is one) and message content block (a string content is one)
      is one *block position*. A block is a breakpoint when it carries
      ``cache_control: {"type": "ephemeral"[, "ttl": "5m"|"1h"]}`` (on a ``tool_result``, also
      when one of its nested content blocks does); a top-level ``cache_control`` ("automatic
      caching") puts one on the last block that can take one.
    - 400 when: more than 4 breakpoints ("A maximum of 4 blocks with cache_control may be
      provided. Found N."); a "1h" breakpoint after a "5m" one ("cache entries with a longer TTL
      must appear before shorter TTLs"); cache_control on an empty text block (the API's own
      message: "cache_control cannot be set for empty text blocks"), on a thinking block ("...
      thinking.cache_control: Extra inputs are not permitted", as the API answers) or on a
      message object.
    - A breakpoint whose prefix (every block up to and including it) holds at least
      ``min_tokens`` tokens writes a cache entry for that prefix; a shorter one caches nothing.
      An entry lives ``ttl`` (5 min or 1 h) since it was last written or read.
    - Reads: each breakpoint looks for an entry at its own position and at up to ``lookback``
      (20) block positions before it, nearest first; the longest prefix found over all
      breakpoints is the cache read. Entries exist only where an earlier request put a
      breakpoint, so a conversation that grows by more than 20 blocks past its last breakpoint
      finds nothing. (The guide says "up to 20 blocks before" the breakpoint, followed here;
      later write-ups of the docs count the breakpoint itself as the first of the 20: pass
      ``lookback=19`` for that stricter reading.)
    - Tokens past the read, up to the last caching breakpoint, are the cache write
      (``cache_creation_input_tokens``), each span billed at the TTL of the breakpoint that ends
      it (``cache_creation.ephemeral_5m_input_tokens`` / ``ephemeral_1h_input_tokens``, as in the
      docs' mixed-TTL example); tokens after it are ``input_tokens``.
    - Identity of a prefix: a chained hash of the model and every block's JSON (without
      ``cache_control``, so a marker changes neither identity nor size), its section and role;
      ``tool_choice`` and ``thinking`` are hashed where messages start (the docs' table: changing
      them invalidates the messages cache, not tools or system). A different model never hits.
    - Context window: input tokens (read + write + uncached) above ``context_window`` -> 400
      "prompt is too long: N tokens > W maximum" (fixture anthropic_error_prompt_too_long_400).
      ``max_tokens`` is not part of that check. When input + ``max_tokens`` exceeds the window,
      ``max_tokens_overflow="reject"`` answers like Claude 3.7-era models ("input length and
      `max_tokens` exceed context limit: I + M > W, decrease input length or `max_tokens` and try
      again", as users report it); the default ``"allow"`` accepts it, as Sonnet 4.5 and later do
      (the answer then stops with ``model_context_window_exceeded``).

    Args:
        min_tokens: the minimum cacheable prefix in tokens; None: ``min_cacheable_tokens(model)``.
        context_window: tokens of input the model accepts.
        lookback: block positions before a breakpoint searched for an entry.
        max_tokens_overflow: ``"allow"`` or ``"reject"`` (see above).
        clock: a function giving seconds; None: a manual clock starting at 0 (see ``advance``).
    """

    def __init__(
        self,
        *,
        min_tokens: int | None = None,
        context_window: int = 200_000,
        lookback: int = 20,
        max_tokens_overflow: str = "allow",
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.min_tokens = min_tokens
        self.context_window = context_window
        self.lookback = lookback
        self.max_tokens_overflow = max_tokens_overflow
        self._clock = _Clock(clock)
        self.entries: dict[bytes, _Entry] = {}

    @property
    def now(self) -> float:
        return self._clock.now

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass on the manual clock."""
        self._clock.advance(seconds)

    def tokens_of(self, body: dict) -> int:
        """Input tokens of ``body``: the sum over its block positions (see ``bill``)."""
        return sum(b.tokens for b in self._blocks(body))

    def bill(self, body: dict) -> dict:
        """The usage Anthropic would report in ``message_start.message.usage`` for ``body``.

        Returns ``{input_tokens, cache_creation_input_tokens, cache_read_input_tokens,
        cache_creation: {ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}, output_tokens: 0,
        service_tier}`` (tokens; the three input counts add up to the prompt's tokens) and
        updates the cache. Raises ``Rejected`` (HTTP 400, nothing cached) as the class
        docstring lists.
        """
        model = str(body.get("model", ""))
        blocks = self._blocks(body)
        self._check_breakpoints(blocks)
        total = sum(b.tokens for b in blocks)
        if total > self.context_window:
            raise _invalid(f"prompt is too long: {total} tokens > {self.context_window} maximum")
        max_tokens = int(body.get("max_tokens") or 0)
        if self.max_tokens_overflow == "reject" and total + max_tokens > self.context_window:
            raise _invalid(
                f"input length and `max_tokens` exceed context limit: {total} + {max_tokens} > "
                f"{self.context_window}, decrease input length or `max_tokens` and try again"
            )

        now = self.now
        self.entries = {k: e for k, e in self.entries.items() if e.expires > now}
        hashes, cumulative = [], []
        running, tokens = hashlib.sha256(b"model\0" + model.encode()).digest(), 0
        for block in blocks:
            running = hashlib.sha256(running + block.key).digest()
            tokens += block.tokens
            hashes.append(running)
            cumulative.append(tokens)
        breakpoints = [i for i, b in enumerate(blocks) if b.ttl is not None]

        read_at = -1  # block position of the longest prefix found in the cache
        for bp in breakpoints:
            for i in range(bp, max(bp - self.lookback, 0) - 1, -1):
                if hashes[i] in self.entries:
                    read_at = max(read_at, i)
                    break
        if read_at >= 0:
            entry = self.entries[hashes[read_at]]
            entry.expires = now + entry.ttl  # a read refreshes the entry

        minimum = self.min_tokens if self.min_tokens is not None else min_cacheable_tokens(model)
        written = {"5m": 0, "1h": 0}
        done = cumulative[read_at] if read_at >= 0 else 0
        for bp in breakpoints:
            if cumulative[bp] < minimum:
                continue  # too short to cache: no entry, no error
            ttl = TTL_SECONDS[blocks[bp].ttl]
            entry = self.entries.get(hashes[bp])
            if entry is None:
                self.entries[hashes[bp]] = _Entry(ttl, now + ttl)
            else:
                entry.ttl = max(entry.ttl, ttl)
                entry.expires = max(entry.expires, now + ttl)
            if cumulative[bp] > done:
                written[blocks[bp].ttl] += cumulative[bp] - done
                done = cumulative[bp]
        read = cumulative[read_at] if read_at >= 0 else 0
        write = written["5m"] + written["1h"]
        return {
            "input_tokens": total - read - write,
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
            "cache_creation": {"ephemeral_5m_input_tokens": written["5m"], "ephemeral_1h_input_tokens": written["1h"]},
            "output_tokens": 0,
            "service_tier": "standard",
        }

    # -- rendering ----------------------------------------------------------------------------

    def _blocks(self, body: dict) -> list[_Block]:
        blocks: list[_Block] = []
        for i, tool in enumerate(body.get("tools") or []):
            blocks.append(self._block(f"tools.{i}", "tools", None, tool))
        system = body.get("system")
        if isinstance(system, str):
            if system:
                blocks.append(self._block("system", "system", None, {"type": "text", "text": system}))
        else:
            for i, block in enumerate(system or []):
                blocks.append(self._block(f"system.{i}", "system", None, block))
        # Where messages start: the settings whose change invalidates the messages cache only.
        head = _dumps({"tool_choice": body.get("tool_choice"), "thinking": body.get("thinking")}).encode()
        for m, message in enumerate(body.get("messages") or []):
            if "cache_control" in message:
                raise _invalid(f"messages.{m}.cache_control: Extra inputs are not permitted")
            content = message.get("content")
            parts = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
            for c, block in enumerate(parts):
                block_ = self._block(f"messages.{m}.content.{c}", "messages", message.get("role"), block, first=c == 0)
                if m == 0 and c == 0:
                    block_.key = head + b"\0" + block_.key
                blocks.append(block_)
        if isinstance(body.get("cache_control"), dict):  # automatic caching: the last block that can take it
            for block, raw in reversed(list(zip(blocks, self._raw_blocks(body)))):
                if raw.get("type") not in ("thinking", "redacted_thinking") and not _empty_text(raw):
                    ttl = body["cache_control"].get("ttl", "5m")
                    if ttl not in TTL_SECONDS:
                        raise _invalid("cache_control.ephemeral.ttl: Input should be '5m' or '1h'")
                    if block.ttl is None:  # it takes one of the 4 breakpoints
                        block.ttl, block.count = ttl, 1
                    break
        return blocks

    @staticmethod
    def _raw_blocks(body: dict) -> list[dict]:
        out = list(body.get("tools") or [])
        system = body.get("system")
        out += ([{"type": "text", "text": system}] if system else []) if isinstance(system, str) else list(system or [])
        for message in body.get("messages") or []:
            content = message.get("content")
            out += [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        return out

    def _block(self, path: str, section: str, role: Any, block: dict, first: bool = False) -> _Block:
        markers = []
        bare = block
        if isinstance(block, dict):
            if "cache_control" in block:
                markers.append((path, block["cache_control"]))
                bare = {k: v for k, v in block.items() if k != "cache_control"}
                kind = block.get("type")
                if kind in ("thinking", "redacted_thinking"):
                    raise _invalid(f"{path}.{kind}.cache_control: Extra inputs are not permitted")
                if _empty_text(block):
                    raise _invalid(f"{path}.text: cache_control cannot be set for empty text blocks")
            nested = bare.get("content") if bare.get("type") == "tool_result" else None
            if isinstance(nested, list) and any(isinstance(n, dict) and "cache_control" in n for n in nested):
                stripped = []
                for j, n in enumerate(nested):
                    if isinstance(n, dict) and "cache_control" in n:
                        if _empty_text(n):
                            raise _invalid(f"{path}.content.{j}.text: cache_control cannot be set for empty text blocks")
                        markers.append((f"{path}.content.{j}", n["cache_control"]))
                        n = {k: v for k, v in n.items() if k != "cache_control"}
                    stripped.append(n)
                bare = {**bare, "content": stripped}
        text = _dumps(bare)
        ttl = None
        for where, control in markers:
            if not isinstance(control, dict) or control.get("type") != "ephemeral":
                raise _invalid(f"{where}.cache_control.type: Input should be 'ephemeral'")
            value = control.get("ttl", "5m")
            if value not in TTL_SECONDS:
                raise _invalid(f"{where}.cache_control.ephemeral.ttl: Input should be '5m' or '1h'")
            ttl = value if ttl is None else ("1h" if "1h" in (ttl, value) else "5m")
        key = _dumps([section, role, first, text]).encode()
        return _Block(path, math.ceil(len(text) / 4), key, ttl, len(markers))

    @staticmethod
    def _check_breakpoints(blocks: list[_Block]) -> None:
        found = sum(b.count for b in blocks)
        if found > 4:
            raise _invalid(f"A maximum of 4 blocks with cache_control may be provided. Found {found}.")
        seen_5m = None
        for b in blocks:
            if b.ttl == "5m" and seen_5m is None:
                seen_5m = b.path
            elif b.ttl == "1h" and seen_5m is not None:
                raise _invalid(
                    f"{b.path}.cache_control: a 'ttl: 1h' cache breakpoint may not come after a 'ttl: 5m' one "
                    f"({seen_5m}); cache entries with a longer TTL must appear before shorter TTLs."
                )


def _empty_text(block: dict) -> bool:
    return block.get("type") == "text" and not str(block.get("text", ""))


# --- OpenAI Chat Completions ----------------------------------------------------------------


@dataclass
class _Prompt:
    text: str
    ttl: float
    last_used: float


class OpenAICache:
    """Bills Chat Completions bodies with OpenAI's automatic prompt caching (docs "Prompt caching").

    Rules:

    - No markers. The prompt is the canonical JSON of ``tools`` followed by that of
      ``messages``; its tokens are characters / 4 (rounded up), token *i* being characters
      4i..4i+3, so two prompts share the tokens of their common leading characters.
    - Requests are routed by a hash of the first 256 tokens, combined with ``prompt_cache_key``
      when given: requests with different keys (or different models) never share a cache.
    - Prompts of at least 1024 tokens are cached whole once processed. A later request on the
      same route reads the longest prefix it shares with a live cached prompt, counted "in
      increments of 128 tokens" from 1024: cached = 1024 + 128*k <= the shared prefix; nothing
      under 1024.
    - Cached prompts are evicted after 5 minutes without use (the guide says 5-10 minutes,
      up to an hour off-peak; the shortest is taken); ``prompt_cache_retention: "24h"`` keeps
      them 24 hours ("extended prompt cache retention").
    - Context window: prompt tokens above ``context_window`` -> 400 ``context_length_exceeded``,
      with the message of fixture openai_error_context_length_400 (the messages / functions
      split when tools are sent). ``max_tokens`` is not part of the check.
    - ``reject_prompt_cache_key=True`` plays a strict OpenAI-compatible server that refuses the
      field: HTTP 400 with vLLM's ``ErrorResponse`` shape ``{object, message, type, param,
      code}`` as its ``RequestValidationError`` handler writes it when the request model forbids
      extra fields (vLLM <= 0.5's ``OpenAIBaseModel(extra="forbid")``; later vLLM accepts and
      ignores unknown fields with a warning). Fireworks answers the same pydantic message.

    Args:
        context_window: tokens of prompt the model accepts.
        min_tokens: the shortest cacheable prompt (1024).
        increment: cache-hit granularity past ``min_tokens`` (128).
        idle_ttl: seconds an unused cached prompt lives (300).
        route_tokens: leading tokens hashed for routing (256).
        reject_prompt_cache_key: answer 400 to a body carrying ``prompt_cache_key``.
        clock: a function giving seconds; None: a manual clock starting at 0 (see ``advance``).
    """

    def __init__(
        self,
        *,
        context_window: int = 128_000,
        min_tokens: int = 1024,
        increment: int = 128,
        idle_ttl: float = FIVE_MINUTES,
        route_tokens: int = 256,
        reject_prompt_cache_key: bool = False,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.context_window = context_window
        self.min_tokens = min_tokens
        self.increment = increment
        self.idle_ttl = idle_ttl
        self.route_tokens = route_tokens
        self.reject_prompt_cache_key = reject_prompt_cache_key
        self._clock = _Clock(clock)
        self.routes: dict[tuple, list[_Prompt]] = {}

    @property
    def now(self) -> float:
        return self._clock.now

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass on the manual clock."""
        self._clock.advance(seconds)

    @staticmethod
    def prompt_text(body: dict) -> str:
        """The canonical serialisation of ``body``'s prompt: tools JSON, then messages JSON."""
        tools = body.get("tools")
        return (_dumps(tools) if tools else "") + _dumps(body.get("messages") or [])

    def tokens_of(self, body: dict) -> int:
        """Prompt tokens of ``body``: characters of ``prompt_text`` / 4, rounded up."""
        return math.ceil(len(self.prompt_text(body)) / 4)

    def bill(self, body: dict) -> dict:
        """The usage OpenAI would report in the stream's last chunk for ``body``.

        Returns ``{prompt_tokens (cached included), completion_tokens: 0, total_tokens,
        prompt_tokens_details: {cached_tokens, audio_tokens: 0}}`` (tokens) and updates the
        cache. Raises ``Rejected`` as the class docstring lists.
        """
        key = body.get("prompt_cache_key")
        if key is not None and self.reject_prompt_cache_key:
            detail = [{"type": "extra_forbidden", "loc": ("body", "prompt_cache_key"),
                       "msg": "Extra inputs are not permitted", "input": key}]
            raise Rejected(400, {"object": "error", "message": str(detail), "type": "BadRequestError",
                                 "param": None, "code": 400})
        text = self.prompt_text(body)
        tokens = math.ceil(len(text) / 4)
        if tokens > self.context_window:
            tools = body.get("tools")
            if tools:
                functions = math.ceil(len(_dumps(tools)) / 4)
                detail = f" ({tokens - functions} in the messages, {functions} in the functions)"
                advice = "Please reduce the length of the messages or functions."
            else:
                detail, advice = "", "Please reduce the length of the messages."
            raise Rejected(400, {"error": {
                "message": f"This model's maximum context length is {self.context_window} tokens. "
                           f"However, your messages resulted in {tokens} tokens{detail}. {advice}",
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})

        now = self.now
        ttl = 86_400.0 if body.get("prompt_cache_retention") == "24h" else self.idle_ttl
        route = (body.get("model"), key, hashlib.sha256(text[: self.route_tokens * 4].encode()).hexdigest())
        alive = [p for p in self.routes.get(route, []) if p.last_used + p.ttl > now]
        best, hit = 0, None
        for prompt in alive:
            shared = _common_prefix(prompt.text, text) // 4  # whole tokens only
            if shared > best:
                best, hit = shared, prompt
        cached = 0
        if best >= self.min_tokens:
            cached = self.min_tokens + (best - self.min_tokens) // self.increment * self.increment
            hit.last_used = now
        if tokens >= self.min_tokens:
            # A cached prompt that this one extends is superseded by it (it holds every prefix).
            alive = [p for p in alive if not text.startswith(p.text)]
            alive.append(_Prompt(text, ttl, now))
        self.routes[route] = alive
        return {
            "prompt_tokens": tokens,
            "completion_tokens": 0,
            "total_tokens": tokens,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        }


def _common_prefix(a: str, b: str) -> int:
    """Characters ``a`` and ``b`` share at their start (binary search over C-speed compares)."""
    if b.startswith(a):
        return len(a)
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


# --- streams carrying the emulator's usage ----------------------------------------------------


def _events(body: bytes) -> list[tuple[str | None, dict | str]]:
    """An SSE body back into ``(event_name_or_None, data)`` pairs (data parsed when JSON)."""
    out: list[tuple[str | None, dict | str]] = []
    for frame in body.decode().split("\n\n"):
        name, data = None, []
        for line in frame.splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())
        if data:
            text = "\n".join(data)
            try:
                out.append((name, json.loads(text)))
            except ValueError:
                out.append((name, text))
    return out


def with_usage(body: bytes, usage: dict) -> bytes:
    """An Anthropic or OpenAI SSE ``body`` with its usage replaced by the emulator's ``usage``.

    Anthropic (``usage`` from ``AnthropicCache.bill``): ``message_start.message.usage`` gets the
    input, cache and ``cache_creation`` fields (its ``output_tokens`` stays, as the API sends a
    running count there); ``message_delta.usage.output_tokens`` is set when ``usage`` has a
    non-zero one. OpenAI (``usage`` from ``OpenAICache.bill``): the usage chunk gets
    ``prompt_tokens`` and ``prompt_tokens_details``; ``total_tokens`` is recomputed.
    """
    events = _events(body)
    for _, data in events:
        if not isinstance(data, dict):
            continue
        if data.get("type") == "message_start":
            message = data.setdefault("message", {})
            old = message.get("usage") or {}
            message["usage"] = {**{k: v for k, v in usage.items() if k != "output_tokens"},
                                "output_tokens": old.get("output_tokens", 1)}
        elif data.get("type") == "message_delta" and usage.get("output_tokens"):
            data.setdefault("usage", {})["output_tokens"] = usage["output_tokens"]
        elif isinstance(data.get("usage"), dict) and "prompt_tokens" in usage:
            u = data["usage"]
            u["prompt_tokens"] = usage["prompt_tokens"]
            u["prompt_tokens_details"] = dict(usage["prompt_tokens_details"])
            if usage.get("completion_tokens"):
                u["completion_tokens"] = usage["completion_tokens"]
            u["total_tokens"] = u["prompt_tokens"] + int(u.get("completion_tokens") or 0)
    return sse(events)


def anthropic_sse(usage: dict, texts: Sequence[str] = ("ok",), tool: tuple[str, str, list[str]] | None = None,
                  *, output_tokens: int = 20, stop_reason: str | None = None) -> bytes:
    """``loopback.anthropic_stream(texts, tool)`` carrying the full emulator ``usage``."""
    return with_usage(anthropic_stream(list(texts), tool, stop_reason=stop_reason, output_tokens=output_tokens), usage)


def openai_sse(usage: dict, texts: Sequence[str] = ("ok",), tool: tuple[str, str, list[str]] | None = None,
               *, completion_tokens: int = 20) -> bytes:
    """``loopback.openai_stream(texts, tool)`` carrying the full emulator ``usage``."""
    return with_usage(openai_stream(list(texts), tool, completion_tokens=completion_tokens), usage)


ScriptedReply = Callable[[dict, dict], bytes] | bytes


@dataclass
class Billed:
    """One request the handler billed: its body and the usage, or the rejection."""

    body: dict
    usage: dict | None = None
    rejected: Rejected | None = None


@dataclass
class _Handler:
    emulator: AnthropicCache | OpenAICache
    replies: list[ScriptedReply] | Callable[[dict, dict], bytes]
    billed: list[Billed] = field(default_factory=list)

    def __call__(self, recorded: Recorded) -> Reply:
        body = recorded.json()
        try:
            usage = self.emulator.bill(body)
        except Rejected as e:
            self.billed.append(Billed(body, rejected=e))
            return Reply(json.dumps(e.body).encode(), e.status, {"content-type": "application/json"})
        self.billed.append(Billed(body, usage))
        if callable(self.replies):
            return Reply(self.replies(body, usage))
        if not self.replies:
            return Reply(b'{"error": {"message": "no scripted reply left"}}', 500, {"content-type": "application/json"})
        reply = self.replies.pop(0)
        return Reply(reply(body, usage) if callable(reply) else with_usage(reply, usage))


def loopback_handler(
    emulator: AnthropicCache | OpenAICache,
    replies: Sequence[ScriptedReply] | Callable[[dict, dict], bytes],
) -> _Handler:
    """A ``LoopbackServer(handler=...)`` handler that bills every POST body with ``emulator``.

    ``replies`` is one function ``(request_body, usage) -> SSE bytes`` used for every request,
    or a list used in order whose items are such functions or SSE bodies (for example from
    ``loopback.anthropic_stream``), whose usage ``with_usage`` replaces by the emulator's. A
    rejected body is answered with the emulator's status and JSON error, and uses no reply;
    when the list runs out the answer is a 500. ``handler.billed`` lists what was billed.
    """
    return _Handler(emulator, replies if callable(replies) else list(replies))
