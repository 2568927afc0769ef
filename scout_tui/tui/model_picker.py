"""``/model``'s picker, in the command palette: the configured models at once (the one in use
first, then every provider profile's ``models``), then the models the current provider's
server lists (``providers.list_models``, asked once per run, its answer kept), each hit
switching to that provider and model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from scout_tui.core.errors import ScoutError
from scout_tui.widgets.completion_list import highlighted

if TYPE_CHECKING:
    from scout_tui.tui.app import ScoutApp

Choose = Callable[[str, str], object]


class ModelPicker(Provider):
    """The models to switch to, for ``CommandPalette``: the configured ones and those the
    server lists (asked once, kept in ``ScoutApp.server_models``); a choice switches with
    ``Models.choose_model``."""

    @property
    def scout_app(self) -> ScoutApp:
        """The palette's app: scout-tui's (``Provider.app`` is typed as any ``App``)."""
        return cast("ScoutApp", self.app)

    async def _choices(self):
        """``(label, provider, model, help)`` for every choice: configured ones first, then the
        server's (asked here the first time; the palette shows hits as they come)."""
        from scout_tui.session.providers import configured_models

        app = self.scout_app
        config = app.session.config
        choices = configured_models(config)
        # In a thread: it imports the engine (runtime), which a thread may be importing already.
        unset = await asyncio.to_thread(_keys_missing, app, choices)
        seen = set()
        for n, (provider, model) in enumerate(choices):
            seen.add((provider, model))
            state = "in use" if n == 0 else "configured"
            yield f"{provider} · {model}", provider, model, f"{state} · no key: {unset[n]}" if unset[n] else state
        listed = app.server_models.get(config.provider)
        if listed is None:
            listed = app.server_models[config.provider] = await _ask(config)
        if isinstance(listed, str):
            yield f"⚠ {listed}", config.provider, "", "the configured models are above"
            return
        for model in listed:
            if (config.provider, model) not in seen:
                yield f"{config.provider} · {model}", config.provider, model, "listed by the server"

    def _command(self, provider: str, model: str):
        choose: Choose = self.scout_app.models.choose_model
        return (lambda: choose(provider, model)) if model else (lambda: None)

    async def discover(self) -> Hits:
        async for label, provider, model, help in self._choices():
            yield DiscoveryHit(label, self._command(provider, model), help=help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        async for label, provider, model, help in self._choices():
            if (score := matcher.match(label)) > 0:
                yield Hit(score, highlighted(matcher, label), self._command(provider, model), text=label, help=help)


def _keys_missing(app, choices: list[tuple[str, str]]) -> list[str]:
    """For each ``(profile, model)`` of ``choices``, what a switch to it would lack
    (``runtime.missing_key``: "OPENAI_API_KEY is not set"), or "": it has a key, needs none, or
    is a plugin's provider (which decides for itself)."""
    from scout_tui.session.runtime import missing_key

    plugins = app.plugins.providers if app.plugins else ()
    return ["" if provider in plugins else missing_key(app.start_config.for_provider(provider, model))
            for provider, model in choices]


async def _ask(config) -> list[str] | str:
    """The server's model ids, or why it could not say (one line)."""
    from scout_tui.session.providers import list_models

    try:
        return await list_models(config)
    except ScoutError as e:
        return str(e)
