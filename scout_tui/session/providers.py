"""What a model picker offers: the models a provider profile's server lists (``list_models``) and
the models the configuration names (``configured_models``), as (profile name, model id).

Wire formats: OpenAI ``GET /v1/models`` (https://platform.openai.com/docs/api-reference/models/list,
also served by Ollama, vLLM, llama.cpp and OpenRouter) and Anthropic ``GET /v1/models``
(https://docs.anthropic.com/en/api/models-list: pages of ``limit`` models, ``has_more`` and
``last_id``, the next page asked with ``after_id``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from scout_tui.config.layers import Config
from scout_tui.core.errors import ScoutError

if TYPE_CHECKING:  # httpx costs ~130 ms to import: loaded when a list is asked for
    import httpx

ANTHROPIC_PAGE = 1000
"""Models asked for per page of Anthropic's list (its maximum ``limit``)."""
MAX_PAGES = 100
"""Pages read at most: a server that keeps saying ``has_more`` does not hold the picker forever."""
LIST_TIMEOUT = 10.0
"""Seconds to wait for a connection and for each answer."""


async def list_models(config: Config, provider: str | None = None, *, transport: Any = None,
                      timeout: float = LIST_TIMEOUT) -> list[str]:
    """The model ids the server of profile ``provider`` (None: the one in use) lists, in its
    order, without repeats. The request goes where that profile's model requests go, with
    its key and headers (``Config.for_provider``): an OpenAI-compatible server is asked
    ``GET {base_url}/models`` (``{"data": [{"id": ...}]}``), Anthropic ``GET {base_url}/v1/models``
    page after page. ``transport`` is an ``httpx.AsyncBaseTransport`` (tests); ``timeout`` is
    in seconds.

    Raises:
        ScoutError: one line naming the provider, the URL and what failed: no answer within
            ``timeout``, no connection, an HTTP error status (with the server's message), an
            answer that is no model list, or a profile whose kind has no model list (a
            plugin's provider). Never the key nor a header's value.
    """
    import httpx

    from scout_tui.backends import PROVIDERS

    target = config if provider in (None, config.provider) else config.for_provider(provider)
    kind = target.profile.kind
    backend = PROVIDERS.get(kind)
    if kind not in ("anthropic", "openai") or backend is None:
        raise ScoutError(f"provider {target.provider!r} (kind {kind!r}) has no model list scout-tui can ask for")
    base = (target.base_url or backend.default_base_url).rstrip("/")
    label = f"provider {target.provider!r} ({backend.label})"
    secrets = [s for s in (target.api_key, *target.profile.headers.values()) if s and len(s) >= 4]
    headers: dict[str, str] = {"accept": "application/json"}
    if kind == "anthropic":
        from scout_tui.backends.anthropic import API_VERSION

        headers["anthropic-version"] = API_VERSION
        if target.api_key:
            headers["x-api-key"] = target.api_key
    elif target.api_key:
        headers["authorization"] = f"Bearer {target.api_key}"
    replaced = {name.lower() for name in target.profile.headers}
    headers = {**{k: v for k, v in headers.items() if k not in replaced}, **target.profile.headers}

    async with httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(timeout), headers=headers) as client:
        if kind == "openai":
            return _ids(await _get(client, f"{base}/models", None, label, timeout, secrets))
        found: list[str] = []
        after: str | None = None
        for _ in range(MAX_PAGES):
            params = {"limit": str(ANTHROPIC_PAGE), **({"after_id": after} if after else {})}
            page = await _get(client, f"{base}/v1/models", params, label, timeout, secrets)
            found += _ids(page)
            last = page.get("last_id")
            if not page.get("has_more"):
                break
            if not isinstance(last, str) or not last or last == after:
                raise ScoutError(_redact(f"{label}: cannot list models: {_shown(base)}/v1/models said has_more "
                                         "without a new last_id to ask the next page after", secrets))
            after = last
        return list(dict.fromkeys(found))


async def _get(client: httpx.AsyncClient, url: str, params: dict[str, str] | None, label: str, timeout: float,
               secrets: list[str]) -> dict:
    """The JSON object ``url`` answers; any failure a ScoutError saying which (see ``list_models``)."""
    import httpx

    from scout_tui.backends.failures import error_fields, exception_text, snippet

    where = _shown(url)
    try:
        response = await client.get(url, params=params)
    except httpx.TimeoutException:
        raise ScoutError(_redact(f"{label}: cannot list models: no answer from {where} within {timeout:g} s",
                                 secrets)) from None
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise ScoutError(_redact(f"{label}: cannot list models: cannot connect to {where}: {exception_text(exc)}",
                                 secrets)) from None
    try:
        payload: Any = json.loads(response.content)
    except ValueError:
        payload = None
    if response.status_code >= 400:
        _, _, message = error_fields(payload)
        detail = " ".join(message.split()) if message else snippet(response.content) or "(empty body)"
        raise ScoutError(_redact(f"{label}: cannot list models (HTTP {response.status_code} from {where}): {detail}",
                                 secrets))
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
        got = snippet(response.content) or "an empty body"
        raise ScoutError(_redact(f"{label}: cannot list models: {where} answered with no model list (expected "
                                 f'{{"data": [{{"id": ...}}]}}), got {got}', secrets))
    return payload


def _ids(payload: dict) -> list[str]:
    """The ``id`` of each entry of a model list's ``data`` (entries without one are skipped)."""
    return [entry["id"] for entry in payload["data"] if isinstance(entry, dict) and isinstance(entry.get("id"), str)
            and entry["id"]]


def _shown(url: str) -> str:
    """``url`` with the password of a ``user:password@`` part replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{parts.netloc.rpartition('@')[2]}"))


def _redact(text: str, secrets: list[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "[redacted]")
    return text


def configured_models(config: Config) -> list[tuple[str, str]]:
    """The picker's configured choices as ``(profile name, model id)``: the model in use first
    (``runtime.model_name``), then each profile's ``models`` in the order the profiles were
    defined (built-in ones first), or its default model when it lists none (so the picker
    can always go back), without repeats. No server is asked."""
    from scout_tui.session.runtime import model_name

    choices = [(config.provider, model_name(config))]
    for name, profile in config.profiles.items():
        choices += [(name, model) for model in profile.models] or [(name, model_name(config.for_provider(name)))]
    return list(dict.fromkeys(choices))
