"""``/model``: switching the model or provider profile mid-session.

A feature of ``ScoutApp`` (app.py). The switch is a ``session.model`` event: shown in the chat
and the status bar, stored in the session (a reopened session goes on with it), and in force
from the next model request (``runtime.switch_agent``; one streaming now finishes as it began).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING


from scout_tui.core.errors import ScoutError
from scout_tui.tui.feature import Feature, feature_work

if TYPE_CHECKING:
    from scout_tui.core.bus import ModelSwitch
    from scout_tui.config.layers import Config


class Models(Feature):
    """``/model`` and the model picker for ``ScoutApp``."""

    model_chosen_for: str | None = None
    """The session opened at start-up, whose model the command line chose already."""

    def _model_command(self, args: str) -> None:
        """``/model`` opens the picker; ``/model MODEL`` switches model on this provider;
        ``/model PROVIDER`` to that profile's default model; ``/model PROVIDER MODEL`` both."""
        words = args.split()
        if not words:
            from textual.command import CommandPalette

            from scout_tui.tui.model_picker import ModelPicker

            self.app.push_screen(CommandPalette(providers=[ModelPicker], placeholder="Switch model…"))
        elif len(words) == 1 and words[0] in self.app.start_config.profiles:
            self.choose_model(words[0], "")
        elif len(words) == 1:
            self.choose_model(self.app.session.config.provider, words[0])
        elif len(words) == 2:
            self.choose_model(words[0], words[1])
        else:
            self.app.chat.add_notice("Use `/model` (the picker), `/model MODEL`, `/model PROVIDER` or "
                                 "`/model PROVIDER MODEL`.", "error")

    @feature_work(exclusive=True, group="model-switch")
    async def choose_model(self, provider: str, model: str) -> None:
        """Switch to profile ``provider`` and ``model`` ("" for its default) from the next
        request, recorded in the session; an unknown provider or a bad ``[models]`` table is
        said in the chat."""
        if provider not in self.app.start_config.profiles:
            known = ", ".join(sorted(self.app.start_config.profiles))
            self.app.chat.add_notice(f"No provider profile `{provider}` (known: {known}); define one as "
                                 f"`[providers.{provider}]` in scout.toml.", "error")
            return
        listed = self.app.server_models.get(provider)
        if model and isinstance(listed, list) and listed and model not in listed:
            self.app.chat.add_notice(f"`{model}` is not among the models {provider}'s server lists; switching anyway "
                                 "(`/model` shows them).", "warning")
        await self.use_config(self.app.start_config.for_provider(provider, model or None), record=True)

    @feature_work(exclusive=True, group="model-switch")
    async def session_model(self, session_id: str, switch: ModelSwitch | None) -> None:
        """A session was opened in the app: go on with its last ``switch``, or the run's own model
        when it has none. (The session the app opened with, by ``--resume`` or ``-c``, has its
        model from the command line already: ``config.resumed_config``, where ``--model`` wins.)"""
        if session_id == self.model_chosen_for:
            self.model_chosen_for = None  # once: a later reopening goes on with the session's model
            return
        new = self.app.start_config.for_provider(switch.provider, switch.model) if switch is not None else self.app.start_config
        if _model_of(new) != _model_of(self.app.session.config):
            await self.use_config(new, record=False)

    async def use_config(self, new: Config, *, record: bool) -> None:
        """Make ``new``'s provider and model the session's from the next request; show the
        switch, and with ``record`` store it (``session.model``)."""
        from scout_tui.config import keys
        from scout_tui.session.runtime import calibrated, model_metadata_asking_the_server, secret_settings

        await self.app.model_ready.wait()  # the first model's metadata must not land after this one's
        try:  # models.dev's data costs ~80 ms of CPU the first time, and a local server is asked
            info = await asyncio.to_thread(asyncio.run, model_metadata_asking_the_server(new))
            self.app.keys_withheld(tuple(keys.secrets(secret_settings(new))))
            calibration = await asyncio.to_thread(calibrated, new) if self.app.session.agent is not None else None
            event = self.app.session.switch_model(new, info, calibration=calibration)  # sets self.app.session.config
        except ScoutError as e:
            self.app.chat.add_notice(str(e), "error")
            return
        self.app.long_session.model_info = info
        for note in new.notes:
            self.app.chat.add_notice(note, "warning")
        if record:
            await self.app.delivery.deliver(event)  # shown (show.py), and stored when there is a session
        else:
            self.app.bus.emit(event)  # the session holds it already

    def record_switch(self) -> None:
        """A new session now exists (its first message is coming): when its model is not the
        run's own (a ``/model`` before, or in the session open before it), store that, so that
        reopening it goes on with that model."""
        if _model_of(self.app.session.config) != _model_of(self.app.start_config) and self.app.session.id is not None:
            from scout_tui.core.bus import ModelSwitch

            self.app.store.append(self.app.session.id, ModelSwitch(*_model_of(self.app.session.config)))


def _model_of(config: Config) -> tuple[str, str]:
    """``(provider profile, model)`` that ``config`` sends requests with."""
    from scout_tui.session.runtime import model_name

    return config.provider, model_name(config)
