"""Model providers by name: the built-ins and any a plugin registers (later registration wins).

``make_backend("anthropic", model=..., api_key=...)`` builds one; ``PROVIDERS`` maps a name to
a ``Backend`` subclass or a factory taking the same keyword arguments.
"""

from __future__ import annotations

from typing import Any, Callable

from scout_tui.backends.anthropic import AnthropicBackend
from scout_tui.backends.base import Backend
from scout_tui.backends.openai import OpenAIBackend
from scout_tui.core.errors import ScoutError

PROVIDERS: dict[str, type[Backend]] = {
    "anthropic": AnthropicBackend,
    "openai": OpenAIBackend,
}


def register_provider(name: str, cls_or_factory: type[Backend] | Callable[..., Backend]) -> None:
    """Make ``name`` build backends with ``cls_or_factory`` (replacing any earlier one)."""
    PROVIDERS[name] = cls_or_factory  # type: ignore[assignment]  # a class is a factory too; the table's type names the classes


def make_backend(provider: str, **kwargs: Any) -> Backend:
    """A backend for ``provider``; ``kwargs`` are ``Backend``'s (model, api_key, base_url,
    timeout, max_retries, transport). A missing or empty ``model`` means the provider's
    ``default_model``; a None ``base_url`` or ``api_key`` means its default / none.

    Raises:
        ScoutError: naming the unknown provider and the known ones.
    """
    factory = PROVIDERS.get(provider)
    if factory is None:
        known = ", ".join(sorted(PROVIDERS))
        raise ScoutError(f"Unknown model provider {provider!r}: choose one of {known}.")
    if not kwargs.get("model"):
        kwargs["model"] = getattr(factory, "default_model", "")
    return factory(**kwargs)


__all__ = ["PROVIDERS", "Backend", "AnthropicBackend", "OpenAIBackend", "make_backend", "register_provider"]
