"""Layered configuration: defaults < user scout.toml < project scout.toml < SCOUT_* env < flags.

Each layer may set any key of ``Config`` and the tables ``KNOWN_TABLES`` (kept in ``Config.extra``).
A name it does not know is a warning in ``Config.notes``, or an error when it looks like a safety
setting (``[permission]``): a misspelt deny rule must stop scout, not be dropped.

Provider profiles (``[providers.NAME]``: kind, base_url, api_key_env, headers, models) name the
servers a run may talk to (``profiles.py`` checks and merges them, and says which URL and key each
gets); ``provider`` chooses one, and ``Config.for_provider`` gives the settings of another (a
model switch mid-session).
"""

from __future__ import annotations

import difflib
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scout_tui.config import keys
from scout_tui.core.errors import ScoutError
# The config files' places and helpers live in files.py (profiles and catalog use them without
# this module); they are named here too, where most callers import them from.
from scout_tui.config.files import (CONFIG_FILE, ConfigFile, cache_dir, data_dir, describe_value, did_you_mean,
                                    in_project, user_config_dir)
from scout_tui.config.tomlpos import where

from scout_tui.config.profiles import (ENDPOINT_KEYS, Endpoint, Profile, Setting, builtin_profiles, check_profiles, endpoint,
                                left_to_others, merge_profiles)

if TYPE_CHECKING:
    from scout_tui.core.bus import ModelSwitch

PERMISSION_MODES = ("ask", "auto-edit", "plan", "yolo")
SANDBOX_MODES = ("workspace-write", "read-only", "off")
NOTIFY_MODES = ("auto", "bell", "off")
"""How a turn that ends (or an approval that waits) while the terminal is in the background is
said (``tui/notify.py``): a desktop notification where the terminal shows one, else the bell; only
the bell; nothing."""

# The tables a config file may hold: their keys are checked here, except [models."ID"] (checked
# by ``models.check_models_tables``), [plugins.NAME] (each plugin's own), [mcp] (``mcp.config``) and
# [hooks] (``extensions.hook_config``).
KNOWN_TABLES = ("compaction", "hooks", "mcp", "models", "permissions", "plugins", "providers", "sandbox")
# The keys of [permissions] and [sandbox]; ``table_keys`` gives [compaction]'s as well.
TABLE_KEYS: dict[str, tuple[str, ...]] = {
    "permissions": ("allow", "deny"),
    "sandbox": ("mode", "writable", "network"),
    "subagents": ("max_concurrent", "max_depth"),
}
# Names whose misspelling would quietly drop a safety setting: a name this close stops start-up.
SAFETY_NAMES = ("permissions", "sandbox", "permission_mode")
SAFETY_CUTOFF = 0.75
"""``difflib`` similarity at which an unknown name counts as a misspelt safety name
(``permission``: 0.95, ``sandbx``: 0.92, ``session``: 0.67)."""


@dataclass
class Config:
    """Settings for one run. ``timeout`` is in seconds; ``max_tokens`` is per model reply.

    ``provider`` names the profile in use (``profiles``); ``base_url`` and ``api_key`` are its
    resolved endpoint. ``model`` None means the profile's default (its first ``models`` entry,
    else the kind's). ``api_key`` never appears in repr or ``sources`` values. ``extra`` holds
    every other top-level key or table (tables merged key by key across files); ``sources``
    maps each set key to "<file path>", "<file path>:<line>" (a profile's key), "env
    SCOUT_MODEL", "env ANTHROPIC_API_KEY" or "flag --model".
    """

    provider: str = "anthropic"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    max_tokens: int = 8192
    max_turns: int = 50
    timeout: float = 600.0
    theme: str = "scout-dark"
    context_window: int | None = None
    """The model's context window in tokens; None: looked up by model id."""
    permission_mode: str = "ask"
    """One of ``PERMISSION_MODES``: what runs without asking (see ``tools.permissions``)."""
    cache_ttl: str = "5m"
    """Anthropic cache breakpoints' lifetime: "5m", or "1h" for the parts that stay put."""
    prompt_cache_key: str = "auto"
    """OpenAI's ``prompt_cache_key``: "auto" (api.openai.com only), "on" or "off"."""
    checkpoints: str = "on"
    """Snapshot the workspace around each turn that may change files (``checkpoints.py``): "on" or "off"."""
    auto_compact: str = "0.85"
    """Summarise the conversation once the prompt passes this share of the context window
    (a number in (0, 1]), or "off"."""
    compaction_model: str | None = None
    """The model that writes summaries (None: the session's model)."""
    notify: str = "auto"
    """One of ``NOTIFY_MODES``: what the TUI sends when a turn ends or an approval waits unseen."""
    extra: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    layers: list[ConfigFile] = field(default_factory=list, repr=False)
    """The config files read, user's first."""
    notes: list[str] = field(default_factory=list)
    """Warnings for the front end to show at start-up ("<path>:<line>: unknown key ...")."""
    profiles: dict[str, Profile] = field(default_factory=builtin_profiles, repr=False)
    """Every profile by name: the built-in ones and those of ``[providers.NAME]``."""
    endpoints: dict[str, Endpoint] = field(default_factory=dict, repr=False)
    """The resolved endpoint of every profile and of every provider a layer set a key for."""

    @property
    def profile(self) -> Profile:
        """The profile in use: ``profiles[provider]``, or for a name no profile has (a plugin's
        provider) one of that kind."""
        return self.profiles.get(self.provider) or Profile(self.provider, self.provider)

    def for_provider(self, provider: str, model: str | None = None, *, origin: str = "model switch") -> Config:
        """These settings with profile ``provider`` and ``model`` (None: the profile's default
        model) in use: its base_url, key and headers as ``load_config`` resolved them for it
        (the top-level base_url and api_key that belong to it, ``--base-url`` and ``--api-key``
        only for the provider the run started with). ``origin`` is where ``where`` says the
        provider and model were set. The ``context_window`` setting is dropped when the model
        changes (it described the other one; ``[models."ID"]`` tables still apply). ``notes``
        holds only what the new endpoint could not use. Unknown names are not refused here:
        ``runtime.check_provider`` says what is known."""
        endpoint = self.endpoints.get(provider)
        if endpoint is None and provider == self.provider:  # a Config built in code
            endpoint = Endpoint(self.base_url, self.sources.get("base_url"), self.api_key, self.sources.get("api_key"))
        endpoint = endpoint or Endpoint()
        sources = {k: v for k, v in self.sources.items() if k not in ("provider", "model", *ENDPOINT_KEYS)}
        sources["provider"] = origin
        if model is not None:
            sources["model"] = origin
        if endpoint.base_url_source:
            sources["base_url"] = endpoint.base_url_source
        if endpoint.api_key_source:
            sources["api_key"] = endpoint.api_key_source
        window = self.context_window
        if (provider, model) != (self.provider, self.model):
            window = None
            sources.pop("context_window", None)
        return replace(self, provider=provider, model=model, base_url=endpoint.base_url, api_key=endpoint.api_key,
                       context_window=window, sources=sources, notes=list(endpoint.notes))

    def provider_keys(self) -> list[str]:
        """Every key a profile of this run may send (the one in use and each other profile's),
        for redaction and for keeping them out of tools' environments. Never shown."""
        found = [self.api_key, *(e.api_key for e in self.endpoints.values())]
        return [key for key in dict.fromkeys(found) if key]

    def where(self, key: str) -> str:
        """Where ``key`` was set, for an error about its value: "<path>:<line>" of the config file
        that set it, "env SCOUT_PROVIDER", "flag --provider", or "default"."""
        source = self.sources.get(key)
        if source is None:
            return "default"
        for layer in self.layers:
            if str(layer.path) == source:
                return where(source, layer.text, (key,))
        return source

    def section(self, name: str) -> dict[str, Any]:
        """The ``[name]`` table from the config files, or {} when absent or not a table."""
        value = self.extra.get(name)
        return value if isinstance(value, dict) else {}


def resumed_config(config: Config, switch: ModelSwitch | None) -> Config:
    """``config`` for a session reopened (``--resume``, ``-c``, ``--fork``): with the profile and
    model of its last ``switch`` (``Store.model_switch``), unless this run's flags chose the
    model or the provider (``--model``, ``--provider``): the person's word for this run wins.
    ``where("provider")`` then says "the session's model switch"."""
    if switch is None:
        return config
    if any(config.sources.get(key, "").startswith("flag ") for key in ("model", "provider")):
        return config
    return config.for_provider(switch.provider, switch.model, origin="the session's model switch")


# Key -> expected type ("str", "int", "float"), for every settable field.
_KINDS: dict[str, str] = {
    "provider": "str",
    "model": "str",
    "base_url": "str",
    "api_key": "str",
    "max_tokens": "int",
    "max_turns": "int",
    "timeout": "float",
    "theme": "str",
    "context_window": "int",
    "permission_mode": "str",
    "cache_ttl": "str",
    "prompt_cache_key": "str",
    "checkpoints": "str",
    "auto_compact": "share",
    "compaction_model": "str",
    "notify": "str",
}
_CHOICES = {"permission_mode": PERMISSION_MODES, "cache_ttl": ("5m", "1h"), "prompt_cache_key": ("auto", "on", "off"),
            "checkpoints": ("on", "off"), "notify": NOTIFY_MODES}
_POSITIVE = {"max_tokens", "max_turns", "timeout", "context_window"}
_KIND_WORDS = {"str": "a string", "int": "a positive integer", "float": "a positive number",
               "share": 'a number above 0 and at most 1 (a share of the window), or "off"'}

assert set(_KINDS) | {"extra", "sources", "layers", "notes", "profiles", "endpoints"} == {f.name for f in fields(Config)}


def load_config(
    cwd: Path | None = None,
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> Config:
    """Build the Config from every layer; later layers win key by key.

    Layers: defaults < ``user_config_dir()/scout.toml`` < ``cwd/scout.toml`` (cwd defaults to
    the current directory) < ``SCOUT_<KEY>`` variables of ``env`` (default ``os.environ`` with the key
    variables ``keys.withhold`` took out of it;
    empty values are ignored) < ``flags`` (key -> value; None values ignored).

    ``provider`` names a profile (``[providers.NAME]`` or built-in). Its base_url is, first
    found: ``--base-url``; the profile's own ``base_url``; the top-level ``base_url`` that
    belongs to it; the kind's default. A top-level ``base_url`` or ``api_key`` in a file or a
    ``SCOUT_*`` variable belongs to the provider named in that layer or an earlier one, else to
    the provider the files and environment chose (default anthropic): a base_url set for
    Anthropic does not send ``--provider openai`` there, while ``SCOUT_PROVIDER=openai`` and
    a file's base_url go together as before. The key is the top-level ``api_key`` that belongs
    to the provider (``--api-key`` to the one chosen), else its profile's ``api_key_env``.
    A project's file never sends the person's key to a server it names (``_endpoint``).

    Unknown names in the files are ``Config.notes`` or errors, as ``check_names`` says.

    Raises:
        ScoutError: a file is unreadable or malformed TOML ("<path>:<line>:<col>: invalid
            TOML: ..."), a file value has the wrong type or is out of range, NaN or infinite
            ("<path>:<line>: max_turns must be ..."), a safety name is unknown or misspelt
            (see ``check_names``), a ``[providers.NAME]`` table is bad (``check_profiles``,
            or a profile without a kind), or an env variable or flag does not convert
            ("SCOUT_MAX_TOKENS must be ...").
    """
    env = keys.environment() if env is None else env
    cwd = Path.cwd() if cwd is None else Path(cwd)
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    sources: dict[str, str] = {}
    layers: list[ConfigFile] = []
    notes: list[str] = []
    endpoint_settings: list[tuple[str, str, Setting]] = []  # (provider in force, key, setting), in layer order

    def layer_done(layer_values: dict[str, Any], layer_sources: dict[str, str], file: str | None) -> None:
        """Apply one layer: its endpoint keys are kept apart, for the provider named there or
        before ("" while none is: the files' and environment's choice, filled in below)."""
        named = layer_values.get("provider", values.get("provider", ""))
        for key, value in layer_values.items():
            if key in ENDPOINT_KEYS:
                project = file is not None and in_project(file, cwd)
                endpoint_settings.append((named, key, Setting(value, layer_sources[key], file, project)))
            else:
                values[key] = value
                sources[key] = layer_sources[key]

    seen: set[Path] = set()
    for path in (user_config_dir() / CONFIG_FILE, cwd / CONFIG_FILE):
        resolved = path.resolve()
        if resolved in seen or not path.is_file():
            continue
        seen.add(resolved)
        text, table = _read_toml(path)
        notes.extend(check_names(path, text, table))
        check_profiles(path, text, table)
        layers.append(ConfigFile(path, text, table))
        found: dict[str, Any] = {}
        for key, value in table.items():
            if key in _KINDS:
                found[key] = _check_file_value(path, text, key, value)
            else:
                extra[key] = merge_tables(extra.get(key), value)
                sources[key] = str(path)
        layer_done(found, dict.fromkeys(found, str(path)), str(path))

    found, origins = {}, {}
    for key in _KINDS:
        var = f"SCOUT_{key.upper()}"
        raw = env.get(var)
        if raw:
            found[key], origins[key] = _coerce(key, raw, var), f"env {var}"
    layer_done(found, origins, None)
    configured = values.get("provider", Config.provider)  # what the files and environment chose
    endpoint_settings = [(named or configured, key, setting) for named, key, setting in endpoint_settings]

    found, origins = {}, {}
    for key, value in (flags or {}).items():
        if value is None:
            continue
        flag = f"--{key.replace('_', '-')}"
        if key not in _KINDS:
            raise ScoutError(f"unknown setting {key!r} (flag {flag})")
        found[key], origins[key] = _coerce(key, value, f"flag {flag}"), f"flag {flag}"
    layer_done(found, origins, None)

    profiles = merge_profiles(layers, cwd)
    provider = values.get("provider", Config.provider)
    endpoint_settings = [(named or provider, key, setting) for named, key, setting in endpoint_settings]  # flags
    by_provider: dict[str, dict[str, list[Setting]]] = {}
    for in_force, key, setting in endpoint_settings:
        by_provider.setdefault(in_force, {}).setdefault(key, []).append(setting)
    endpoints = {
        name: endpoint(name, profiles.get(name) or Profile(name, name), by_provider.get(name, {}), env, layers)
        for name in (*profiles, *by_provider, provider)
    }
    chosen = endpoints[provider]
    for key, value, source in (("base_url", chosen.base_url, chosen.base_url_source),
                               ("api_key", chosen.api_key, chosen.api_key_source)):
        if value is not None and source is not None:
            values[key], sources[key] = value, source
    notes.extend(chosen.notes)
    notes.extend(left_to_others(provider, chosen, endpoint_settings, layers, sources.get("provider", "default")))
    return Config(**values, extra=extra, sources=sources, layers=layers, notes=notes, profiles=profiles,
                  endpoints=endpoints)


def check_names(path: Path, text: str, table: Mapping[str, Any]) -> list[str]:
    """Check the names in one config file's parsed ``table``; return a warning per unknown one.

    Each warning reads "<path>:<line>: unknown key 'max_turn' is ignored; did you mean
    'max_turns'?" (``difflib.get_close_matches`` gives the suggestion). Unknown keys of
    ``[compaction]`` are warnings too (a plugin strategy may read them).

    Raises:
        ScoutError: "<path>:<line>: ..." for what would silently weaken a safety setting: an
            unknown top-level name within ``SAFETY_CUTOFF`` of ``SAFETY_NAMES`` (``[permission]``,
            ``[Sandbox]``, ``permision_mode``); an unknown key in ``[permissions]`` or
            ``[sandbox]``; a ``[sandbox]`` that is not a table or holds a value of the wrong type.
    """
    notes: list[str] = []

    for key, value in table.items():
        if key in _KINDS or key in KNOWN_TABLES:
            continue
        shown = f"table [{key}]" if isinstance(value, dict) else f"key {key!r}"
        hint = did_you_mean(key, [*_KINDS, *KNOWN_TABLES])
        safety = difflib.get_close_matches(key.lower().replace("-", "_"), SAFETY_NAMES, n=1, cutoff=SAFETY_CUTOFF)
        if not safety and hint and hint.split("'")[1] in SAFETY_NAMES:
            safety = [hint.split("'")[1]]  # [perms]: further off, but the closest known name is a safety one
        if not safety:
            safety = _looks_like_safety(key, value)
        if safety:
            raise ScoutError(f"{where(path, text, (key,))}: unknown {shown}; did you mean {safety[0]!r}? scout-tui stops here: "
                             "a misspelt safety setting would be ignored")
        notes.append(f"{where(path, text, (key,))}: unknown {shown} is ignored{hint or '.'}")

    for name in ("compaction", *TABLE_KEYS):
        section = table.get(name)
        if name == "sandbox" and section is not None and not isinstance(section, dict):
            raise ScoutError(f"{where(path, text, (name,))}: sandbox must be a table ([sandbox]), got {describe_value(section, name)}")
        if not isinstance(section, dict):
            continue  # the table's reader says what is wrong with it
        known = table_keys(name)
        for key in section:
            if key in known:
                continue
            message = f"{where(path, text, (name, key))}: unknown key {key!r} in [{name}]"
            hint = did_you_mean(key, known) or f" (known: {', '.join(known)})."
            if name in ("permissions", "sandbox"):
                raise ScoutError(f"{message}{hint} scout-tui stops here: a misspelt safety setting would be ignored")
            notes.append(f"{message} is ignored unless a plugin strategy reads it{hint}")
    sandbox = table.get("sandbox")
    if isinstance(sandbox, dict):
        checks = {
            "mode": (lambda v: v in SANDBOX_MODES, f"one of {', '.join(SANDBOX_MODES)}"),
            "writable": (lambda v: isinstance(v, list) and all(isinstance(p, str) and p for p in v),
                         'a list of paths, like ["~/.cache"]'),
            "network": (lambda v: isinstance(v, bool), "true or false"),
        }
        for key, (ok, wanted) in checks.items():
            if key in sandbox and not ok(sandbox[key]):
                raise ScoutError(f"{where(path, text, ('sandbox', key))}: sandbox.{key} must be {wanted}, "
                                 f"got {describe_value(sandbox[key], key)}")
    return notes


def _looks_like_safety(key: str, value: Any) -> list[str]:
    """The safety table an unknown name seems meant for, by what it holds: a top-level ``allow``
    or ``deny`` (``[permissions]`` forgotten), a table of ``allow``/``deny`` rules, or one of
    ``writable``/``network`` (``[sandbox]``). Empty when it looks like neither."""
    if key in ("allow", "deny"):
        return ["permissions"]
    if isinstance(value, dict) and {"allow", "deny"} & set(value):
        return ["permissions"]
    if isinstance(value, dict) and {"writable", "network"} & set(value):
        return ["sandbox"]
    return []


def table_keys(name: str) -> tuple[str, ...]:
    """The keys scout-tui reads in table ``name`` of a config file (one of ``KNOWN_TABLES``
    but models and plugins). [compaction]'s come from ``compaction_table.SETTING_NAMES``, imported
    only when a file has that table: start-up does not need the strategies."""
    if name == "compaction":
        from scout_tui.config.compaction_table import SETTING_NAMES

        return SETTING_NAMES
    return TABLE_KEYS[name]


def read_text(path: Path, what: str = "config") -> str:
    """A TOML file's text. Raises ScoutError naming the file (and the line of a non-UTF-8 byte)."""
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ScoutError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise ScoutError(f"{path}:{line}: invalid TOML: not UTF-8 text") from None


def _read_toml(path: Path) -> tuple[str, dict[str, Any]]:
    """The text and parsed table of a TOML file; errors name the file (and line)."""
    text = read_text(path)
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScoutError(toml_error(path, text, exc)) from None


def toml_error(path: Path, text: str, exc: tomllib.TOMLDecodeError) -> str:
    """"<path>:<line>:<col>: invalid TOML: <reason>" from tomllib's message.

    Python 3.11's TOMLDecodeError carries the position only inside its message
    ("... (at line 3, column 5)" or "... (at end of document)"); lineno arrived in 3.14.
    """
    message = str(exc)
    match = re.search(r"\s*\(at line (\d+), column (\d+)\)$", message)
    if match:
        return f"{path}:{match[1]}:{match[2]}: invalid TOML: {message[: match.start()]}"
    match = re.search(r"\s*\(at end of document\)$", message)
    if match:
        line = text.count("\n") + (0 if text.endswith("\n") else 1)
        return f"{path}:{max(line, 1)}: invalid TOML: {message[: match.start()]} at end of file"
    return f"{path}: invalid TOML: {message}"


def _check_file_value(path: Path, text: str, key: str, value: Any) -> Any:
    """``value`` if it has ``key``'s type (an int is accepted for a float); else ScoutError."""
    kind = _KINDS[key]
    if kind == "share":
        share = _share(value)
        if share is None:
            raise ScoutError(f"{where(path, text, (key,))}: {key} must be {_KIND_WORDS[kind]}, "
                             f"got {describe_value(value, key)}")
        return share
    ok = (
        isinstance(value, str)
        if kind == "str"
        else isinstance(value, int) and not isinstance(value, bool)
        if kind == "int"
        else isinstance(value, (int, float)) and not isinstance(value, bool)
    )
    if ok and key in _POSITIVE and not (math.isfinite(value) and value > 0):
        ok = False
    if ok and key in _CHOICES and value not in _CHOICES[key]:
        raise ScoutError(f"{where(path, text, (key,))}: {key} must be one of {', '.join(_CHOICES[key])}, got {value!r}")
    if not ok:
        raise ScoutError(f"{where(path, text, (key,))}: {key} must be {_KIND_WORDS[kind]}, "
                         f"got {describe_value(value, key)}")
    return float(value) if kind == "float" else value


def _coerce(key: str, value: Any, origin: str) -> Any:
    """Convert an env or flag value (usually a string) to ``key``'s type; else ScoutError."""
    kind = _KINDS[key]
    if kind == "share":
        share = _share(value)
        if share is None:
            raise ScoutError(f"{origin} must be {_KIND_WORDS[kind]}, got {describe_value(value, key)}")
        return share
    if kind == "str":
        if key in _CHOICES and str(value) not in _CHOICES[key]:
            raise ScoutError(f"{origin} must be one of {', '.join(_CHOICES[key])}, got {str(value)!r}")
        return str(value)
    try:
        if isinstance(value, bool):
            raise ValueError
        number = int(value) if kind == "int" else float(value)
    except (TypeError, ValueError):
        number = None
    if number is None or not (math.isfinite(number) and number > 0):
        raise ScoutError(f"{origin} must be {_KIND_WORDS[kind]}, got {describe_value(value, key)}")
    return number


def _share(value: Any) -> str | None:
    """A share setting as stored ("off" or the number's text), or None when invalid."""
    if value is False or (isinstance(value, str) and value.strip().lower() in ("off", "false", "no")):
        return "off"
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return repr(number) if 0 < number <= 1 else None


def share_setting(value: str) -> float | None:
    """A share setting's number (``Config.auto_compact``), or None for "off"."""
    return None if value == "off" else float(value)


def merge_tables(old: Any, new: Any) -> Any:
    """Tables merge key by key (``new`` wins); any other value is replaced by ``new``."""
    if isinstance(old, dict) and isinstance(new, dict):
        merged = dict(old)
        for key, value in new.items():
            merged[key] = merge_tables(merged.get(key), value)
        return merged
    return new
