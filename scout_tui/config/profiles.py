"""Provider profiles: the servers a run may talk to (``[providers.NAME]``: kind, base_url,
api_key_env, headers, models; built-in ``anthropic`` and ``openai``), checked and merged across
the config files, and the endpoint each provider gets: which URL its requests go to and which
key they carry, with a project's scout.toml never sending the person's key to a server it names.

``config.load_config`` reads the layers and calls these; ``Config.for_provider`` uses the result.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from scout_tui.config import files
from scout_tui.core.errors import ScoutError
from scout_tui.config.tomlpos import where

# The built-in profiles' key variables, read when no layer set api_key.
PROVIDER_KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
BUILTIN_KINDS = ("anthropic", "openai")
"""The wire formats a ``[providers.NAME]`` profile may speak (``kind``); each is also a built-in
profile of that name. A plugin's provider is chosen by its own name (``provider = "NAME"``)."""
PROFILE_KEYS = ("kind", "base_url", "api_key_env", "headers", "models")
ENDPOINT_KEYS = ("base_url", "api_key")
"""The top-level keys that belong to the provider named where they are set (see ``load_config``)."""



@dataclass(frozen=True)
class Profile:
    """A provider profile: a ``[providers.NAME]`` table merged across the config files (key by
    key, the project's file last), or a built-in one (``anthropic`` and ``openai``: kind their
    name, the vendor's URL, ANTHROPIC_API_KEY / OPENAI_API_KEY).

    ``kind`` is the wire format (one of ``BUILTIN_KINDS``, or a plugin provider's name for a
    profile made from ``provider = "NAME"`` alone); ``base_url`` None means the kind's default
    URL; ``api_key_env`` names the variable holding the key (the key itself is never in a
    profile); ``headers`` (names lower-cased) are sent with every request and never shown;
    ``models`` are the model ids offered for it, the first being its default model.
    ``sources`` maps each key a file set to "<path>:<line>"; ``origin`` is "<path>:<line>" of its
    first table, or "built-in". ``project_set`` lists which of base_url and api_key_env a
    project's scout.toml set to a value the person's own files (or the built-in) do not give.
    """

    name: str
    kind: str
    base_url: str | None = None
    api_key_env: str | None = None
    headers: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    models: tuple[str, ...] = ()
    origin: str = "built-in"
    sources: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    project_set: tuple[str, ...] = ()


def builtin_profiles() -> dict[str, Profile]:
    """The profiles that exist without any config: ``anthropic`` and ``openai``."""
    return {kind: Profile(kind, kind, api_key_env=PROVIDER_KEY_ENV[kind]) for kind in BUILTIN_KINDS}


@dataclass(frozen=True)
class Endpoint:
    """Where one provider's requests go and the key they carry, resolved from every layer
    (``load_config``): ``base_url`` None means the kind's default. Each ``*_source`` is a
    ``Config.sources`` value (None: not set). ``notes`` say what was not used, and why."""

    base_url: str | None = None
    base_url_source: str | None = None
    api_key: str | None = field(default=None, repr=False)
    api_key_source: str | None = None
    notes: tuple[str, ...] = ()


class Setting(NamedTuple):
    """A top-level base_url or api_key as one layer set it: ``source`` as ``Config.sources``
    says it, ``file`` the config file's path (None: env or flag), ``project`` whether that file
    is a project's own (``in_project``)."""

    value: Any
    source: str
    file: str | None
    project: bool


def place(setting: Setting, key: str, layers: list[files.ConfigFile]) -> str:
    """"<path>:<line>" of a top-level setting in a file, else its source ("env SCOUT_BASE_URL")."""
    for layer in layers:
        if setting.file is not None and str(layer.path) == setting.file:
            return where(setting.file, layer.text, (key,), line=1)
    return setting.source


def file_of(source: str | None) -> str | None:
    """The config file a ``Config.sources`` value names ("<path>" or "<path>:<line>"), or None."""
    if not source or source.startswith(("env ", "flag ")):
        return None
    return re.sub(r":\d+$", "", source)


def endpoint(name: str, profile: Profile, settings: Mapping[str, list[Setting]], env: Mapping[str, str],
              layers: list[files.ConfigFile]) -> Endpoint:
    """Where provider ``name`` sends its requests, and which key, from the top-level
    ``settings`` that belong to it (``load_config``) and its ``profile``.

    A project's own scout.toml may name servers, but never send the person's key to one: the
    key goes to a URL a project's file chose only when it comes from that same file. A
    top-level ``base_url`` of the project is then not used (the person's own, or the default,
    is); a profile's ``base_url`` the project set (to a value the person's files do not give)
    is used without the key; a profile's ``api_key_env`` the project set is not read at all
    (a repository must not choose which of the person's secrets is sent). ``notes`` say so."""
    notes: list[str] = []
    urls, keys_set = settings.get("base_url", []), settings.get("api_key", [])
    url, key = (urls[-1] if urls else None), (keys_set[-1] if keys_set else None)
    table = f"[providers.{toml_key(name)}]"
    from_profile = False
    if profile.base_url is not None and not (url and url.file is None and url.source.startswith("flag ")):
        if url is not None:
            notes.append(f"{place(url, 'base_url', layers)}: base_url is not used with provider {name!r}: its "
                         f"profile {table} sets its own ({profile.sources.get('base_url', 'built-in')}).")
        source = profile.sources.get("base_url", profile.origin)
        url = Setting(profile.base_url, source, file_of(source), "base_url" in profile.project_set)
        from_profile = True
    var = profile.api_key_env
    if key is None and var and env.get(var):
        if "api_key_env" in profile.project_set:
            notes.append(f"{profile.sources.get('api_key_env')}: api_key_env {var} of {table} is not read: a project's "
                         "scout.toml chose it (a repository must not choose which of your secrets is sent); set it "
                         f"in {table} of {files.user_config_dir() / files.CONFIG_FILE} to use it.")
        else:
            key = Setting(env[var], f"env {var}", None, False)
    if url is not None and key is not None and url.project and key.file != url.file:
        if from_profile:
            notes.append(f"{url.source}: {table} base_url is used without your API key from {key.source}: a project's "
                         "scout.toml chose it (a repository must not send your key to a server it names); set the "
                         f"same base_url in {table} of {files.user_config_dir() / files.CONFIG_FILE}, or pass "
                         "--base-url, to "
                         "send it.")
            key = None
        else:
            notes.append(f"{place(url, 'base_url', layers)}: base_url is not used from a project's scout.toml while "
                         f"your API key comes from {key.source} (a repository must not send your key to a server it "
                         "names); set base_url in ~/.config/scout/scout.toml, SCOUT_BASE_URL or --base-url.")
            own = [setting for setting in urls if not setting.project]
            url = own[-1] if own else None
    return Endpoint(url.value if url else None, url.source if url else None, key.value if key else None,
                    key.source if key else None, tuple(notes))


def left_to_others(provider: str, chosen: Endpoint, settings: list[tuple[str, str, Setting]],
                    layers: list[files.ConfigFile], provider_source: str) -> list[str]:
    """Notes for top-level base_url and api_key settings that belong to another provider while
    ``provider`` has none: they are not used (once they were, and sent a request for one
    provider to another's server)."""
    notes: list[str] = []
    for key, value in (("base_url", chosen.base_url), ("api_key", chosen.api_key)):
        others = [(owner, setting) for owner, k, setting in settings if k == key and owner != provider]
        if value is None and others:
            owner, setting = others[-1]
            chose = "default" if provider_source == "default" else provider_source
            notes.append(f"{place(setting, key, layers)}: {key} belongs to provider {owner!r} and "
                         f"is not used with provider {provider!r} ({chose}); set it beside provider = {provider!r}, "
                         f"in [providers.{toml_key(provider)}], or with --{key.replace('_', '-')}.")
    return notes


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP token (RFC 9110, 5.6.2)


def check_profiles(path: Path, text: str, table: Mapping[str, Any]) -> None:
    """Check the ``[providers.NAME]`` tables of one config file.

    Each holds only ``PROFILE_KEYS``: ``kind`` one of ``BUILTIN_KINDS``; ``base_url`` an
    http(s) URL; ``api_key_env`` an environment variable's name; ``headers`` a table of header
    names to strings; ``models`` a list of model ids. A header's value and an ``api_key_env``
    that is no variable name (perhaps a key pasted in) are never quoted.

    Raises:
        ScoutError: "<path>:<line>: ..." naming the profile and key: an unknown (misspelt)
            key, a value of the wrong type or out of its choices.
    """
    section = table.get("providers")
    if section is None:
        return

    def at(*keys: str) -> str:
        return where(path, text, ("providers", *keys))

    if not isinstance(section, dict):
        raise ScoutError(f"{at()}: providers must be a table of provider profiles ([providers.NAME]), "
                         f"got {files.describe_value(section, 'providers')}")
    for name, profile in section.items():
        shown = f"[providers.{toml_key(name)}]"
        if not isinstance(profile, dict):
            raise ScoutError(f"{at(name)}: providers.{toml_key(name)} must be a table ({shown} with "
                             f"{', '.join(PROFILE_KEYS)}), got {files.describe_value(profile, name)}")
        if not name.strip():
            raise ScoutError(f"{at(name)}: a provider profile needs a name: [providers.NAME]")
        for key, value in profile.items():
            if key not in PROFILE_KEYS:
                hint = files.did_you_mean(key, PROFILE_KEYS) or f" (known: {', '.join(PROFILE_KEYS)})."
                raise ScoutError(f"{at(name, key)}: unknown key {key!r} in {shown}{hint}")
            wanted = _profile_value_problem(key, value)
            if wanted:
                raise ScoutError(f"{at(name, key)}: {key} in {shown} must be {wanted}")


def _profile_value_problem(key: str, value: Any) -> str:
    """What a profile's ``key`` must be, with what it is instead; "" when ``value`` is fine."""
    if key == "kind":
        if value in BUILTIN_KINDS:
            return ""
        return (f"one of {', '.join(BUILTIN_KINDS)} (the wire format), got {files.describe_value(value, key)}; a plugin's "
                "provider is chosen by its own name: provider = \"NAME\"")
    if key == "base_url":
        if isinstance(value, str) and re.match(r"https?://[^/\s]+", value) and not re.search(r"\s", value):
            return ""
        return f"an http:// or https:// URL, got {files.describe_value(value, key)}"
    if key == "api_key_env":
        if isinstance(value, str) and _ENV_NAME.fullmatch(value):
            return ""
        got = "a string that is no variable name" if isinstance(value, str) else type(value).__name__
        return f'the name of the environment variable holding the key (like "OPENROUTER_API_KEY"), not the key; got {got}'
    if key == "headers":
        if not isinstance(value, dict):
            return f'a table of header names to strings (headers = {{ "x-title" = "scout" }}), got {type(value).__name__}'
        for header, text in value.items():
            if not _HEADER_NAME.fullmatch(header):
                return f"a table of header names to strings; {header!r} is no header name"
            if not isinstance(text, str) or "\n" in text or "\r" in text:
                return f"a table of header names to strings; the value of {header!r} is not a one-line string"
        return ""
    if isinstance(value, list) and all(isinstance(m, str) and m.strip() for m in value):  # models
        return ""
    return f'a list of model ids (models = ["llama3.1"]), got {files.describe_value(value, key)}'


def toml_key(name: str) -> str:
    """``name`` as a TOML key: bare when it can be, else quoted."""
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)


def merge_profiles(layers: list[files.ConfigFile], cwd: Path) -> dict[str, Profile]:
    """The built-in profiles, then each ``[providers.NAME]`` merged key by key across
    ``layers`` (later wins; headers merge by name). Which of base_url and api_key_env a
    project's file set to a value the person's files (or the built-in) do not give is
    ``Profile.project_set``.

    Raises:
        ScoutError: a profile that is not built in has no ``kind`` ("<path>:<line>").
    """
    builtin = builtin_profiles()
    merged: dict[str, dict[str, Any]] = {}
    sources: dict[str, dict[str, str]] = {}
    persons: dict[str, dict[str, Any]] = {}
    origins: dict[str, str] = {}
    for layer in layers:
        section = layer.table.get("providers")
        if not isinstance(section, dict):
            continue
        project = files.in_project(layer.path, cwd)
        for name, table in section.items():
            origins.setdefault(name, where(layer.path, layer.text, ("providers", name), line=1))
            fields_, places = merged.setdefault(name, {}), sources.setdefault(name, {})
            for key, value in table.items():
                if key == "headers":
                    value = {**fields_.get("headers", {}), **{h.lower(): v for h, v in value.items()}}
                fields_[key] = value
                places[key] = where(layer.path, layer.text, ("providers", name, key), table=("providers", name),
                                    line=1)
                if not project:
                    persons.setdefault(name, {})[key] = value
    profiles = dict(builtin)
    for name, fields_ in merged.items():
        base = builtin.get(name)
        kind = fields_.get("kind", base.kind if base else None)
        if kind is None:
            raise ScoutError(f"{origins[name]}: [providers.{toml_key(name)}] needs kind = \"anthropic\" or "
                             "\"openai\" (the wire format its server speaks)")
        person = persons.get(name, {})
        trusted = {"base_url": person.get("base_url", base.base_url if base else None),
                   "api_key_env": person.get("api_key_env", base.api_key_env if base else None)}
        profiles[name] = Profile(
            name, kind,
            base_url=fields_.get("base_url", base.base_url if base else None),
            api_key_env=fields_.get("api_key_env", base.api_key_env if base else None),
            headers=dict(fields_.get("headers", {})),
            models=tuple(fields_.get("models", ())),
            origin=origins[name],
            sources=sources[name],
            project_set=tuple(k for k in trusted if k in fields_ and fields_[k] != trusted[k]),
        )
    return profiles
