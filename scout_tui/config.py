"""Layered configuration: defaults < user scout.toml < project scout.toml < SCOUT_* env < flags.

Each layer may set any key of ``Config`` and the tables ``KNOWN_TABLES`` (kept in ``Config.extra``).
A name it does not know is a warning in ``Config.notes``, or an error when it looks like a safety
setting (``[permission]``): a misspelt deny rule must stop scout, not be dropped.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import platformdirs

from scout_tui import keys
from scout_tui.errors import ScoutError
from scout_tui.tomlpos import key_line

CONFIG_FILE = "scout.toml"

# The provider's own key variable, used when no layer set api_key.
PROVIDER_KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


def user_config_dir() -> Path:
    """The user's config directory: ``~/.config/scout`` on Linux (honours XDG_CONFIG_HOME)."""
    return Path(platformdirs.user_config_dir("scout"))


def data_dir() -> Path:
    """Where sessions live: ``$SCOUT_HOME`` if set, else the platform's user data dir."""
    home = os.environ.get("SCOUT_HOME")
    return Path(home) if home else Path(platformdirs.user_data_dir("scout-tui"))


def cache_dir() -> Path:
    """What can be built again (the models.dev extract): ``~/.cache/scout-tui`` on Linux
    (honours XDG_CACHE_HOME)."""
    return Path(platformdirs.user_cache_dir("scout-tui"))


PERMISSION_MODES = ("ask", "auto-edit", "yolo")
SANDBOX_MODES = ("workspace-write", "read-only", "off")

# The tables a config file may hold: their keys are checked here, except [models."ID"] (checked
# by ``models.check_models_tables``) and [plugins.NAME] (each plugin's own).
KNOWN_TABLES = ("compaction", "models", "permissions", "plugins", "sandbox")
# The keys of [permissions] and [sandbox]; ``table_keys`` gives [compaction]'s as well.
TABLE_KEYS: dict[str, tuple[str, ...]] = {
    "permissions": ("allow", "deny"),
    "sandbox": ("mode", "writable", "network"),
}
# Names whose misspelling would quietly drop a safety setting: a name this close stops start-up.
SAFETY_NAMES = ("permissions", "sandbox", "permission_mode")
SAFETY_CUTOFF = 0.75
"""``difflib`` similarity at which an unknown name counts as a misspelt safety name
(``permission``: 0.95, ``sandbx``: 0.92, ``session``: 0.67)."""


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """One config file that was read: its path, text (rules quote their file and line) and
    parsed table."""

    path: Path
    text: str
    table: dict[str, Any]


def in_project(path: str | Path, workspace: Path) -> bool:
    """Whether config file ``path`` is a project's own (read from a folder inside ``workspace``),
    which may tighten safety settings but not loosen them. Decided by the folder the file was
    read from, not by where the file resolves: a project's ``scout.toml`` that is a symlink to
    a file elsewhere is still the project's, and a user's file linked from a dotfiles repository
    is still the user's. ``path`` may be a ``Config.sources`` value ("env …" and "flag …" are not files)."""
    text = str(path)
    if not text or text.startswith(("env ", "flag ")):
        return False
    folder = os.path.realpath(os.path.dirname(os.path.abspath(text)))
    return Path(folder).is_relative_to(Path(workspace).resolve())


@dataclass
class Config:
    """Settings for one run. ``timeout`` is in seconds; ``max_tokens`` is per model reply.

    ``model`` None means the provider's default. ``api_key`` never appears in repr or
    ``sources`` values. ``extra`` holds every other top-level key or table (tables merged key
    by key across files); ``sources`` maps each set key to "<file path>", "env SCOUT_MODEL",
    "env ANTHROPIC_API_KEY" or "flag --model".
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
    auto_compact: str = "0.85"
    """Summarise the conversation once the prompt passes this share of the context window
    (a number in (0, 1]), or "off"."""
    compaction_model: str | None = None
    """The model that writes summaries (None: the session's model)."""
    extra: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    layers: list[ConfigFile] = field(default_factory=list, repr=False)
    """The config files read, user's first."""
    notes: list[str] = field(default_factory=list)
    """Warnings for the front end to show at start-up ("<path>:<line>: unknown key ...")."""

    def where(self, key: str) -> str:
        """Where ``key`` was set, for an error about its value: "<path>:<line>" of the config file
        that set it, "env SCOUT_PROVIDER", "flag --provider", or "default"."""
        source = self.sources.get(key)
        if source is None:
            return "default"
        for layer in self.layers:
            if str(layer.path) == source:
                line = key_line(layer.text, (key,))
                return f"{source}:{line}" if line else source
        return source

    def section(self, name: str) -> dict[str, Any]:
        """The ``[name]`` table from the config files, or {} when absent or not a table."""
        value = self.extra.get(name)
        return value if isinstance(value, dict) else {}


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
    "auto_compact": "share",
    "compaction_model": "str",
}
_CHOICES = {"permission_mode": PERMISSION_MODES, "cache_ttl": ("5m", "1h"), "prompt_cache_key": ("auto", "on", "off")}
_POSITIVE = {"max_tokens", "max_turns", "timeout", "context_window"}
_KIND_WORDS = {"str": "a string", "int": "a positive integer", "float": "a positive number",
               "share": 'a number above 0 and at most 1 (a share of the window), or "off"'}

assert set(_KINDS) | {"extra", "sources", "layers", "notes"} == {f.name for f in fields(Config)}


def load_config(
    cwd: Path | None = None,
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> Config:
    """Build the Config from every layer; later layers win key by key.

    Layers: defaults < ``user_config_dir()/scout.toml`` < ``cwd/scout.toml`` (cwd defaults to
    the current directory) < ``SCOUT_<KEY>`` variables of ``env`` (default ``os.environ`` with the key
    variables ``keys.withhold`` took out of it;
    empty values are ignored) < ``flags`` (key -> value; None values ignored). When no layer
    sets ``api_key``, it comes from ANTHROPIC_API_KEY (provider anthropic) or OPENAI_API_KEY
    (provider openai).

    Unknown names in the files are ``Config.notes`` or errors, as ``check_names`` says.

    Raises:
        ScoutError: a file is unreadable or malformed TOML ("<path>:<line>:<col>: invalid
            TOML: ..."), a file value has the wrong type or is out of range, NaN or infinite
            ("<path>:<line>: max_turns must be ..."), a safety name is unknown or misspelt
            (see ``check_names``), or an env variable or flag does not convert
            ("SCOUT_MAX_TOKENS must be ...").
    """
    env = keys.environment() if env is None else env
    cwd = Path.cwd() if cwd is None else Path(cwd)
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    sources: dict[str, str] = {}
    layers: list[ConfigFile] = []
    notes: list[str] = []

    seen: set[Path] = set()
    for path in (user_config_dir() / CONFIG_FILE, cwd / CONFIG_FILE):
        resolved = path.resolve()
        if resolved in seen or not path.is_file():
            continue
        seen.add(resolved)
        text, table = _read_toml(path)
        notes.extend(check_names(path, text, table))
        layers.append(ConfigFile(path, text, table))
        for key, value in table.items():
            if key in _KINDS:
                values[key] = _check_file_value(path, text, key, value)
            else:
                extra[key] = merge_tables(extra.get(key), value)
            sources[key] = str(path)

    for key in _KINDS:
        var = f"SCOUT_{key.upper()}"
        raw = env.get(var)
        if raw:
            values[key] = _coerce(key, raw, var)
            sources[key] = f"env {var}"

    for key, value in (flags or {}).items():
        if value is None:
            continue
        flag = f"--{key.replace('_', '-')}"
        if key not in _KINDS:
            raise ScoutError(f"unknown setting {key!r} (flag {flag})")
        values[key] = _coerce(key, value, f"flag {flag}")
        sources[key] = f"flag {flag}"

    if values.get("api_key") is None:
        var = PROVIDER_KEY_ENV.get(values.get("provider", Config.provider))
        if var and env.get(var):
            values["api_key"] = env[var]
            sources["api_key"] = f"env {var}"

    _keep_keys_home(values, sources, layers, cwd, notes)
    return Config(**values, extra=extra, sources=sources, layers=layers, notes=notes)


def _keep_keys_home(values: dict[str, Any], sources: dict[str, str], layers: list[ConfigFile], cwd: Path,
                    notes: list[str]) -> None:
    """A project's own ``scout.toml`` may not send the person's key elsewhere: its ``base_url``
    is not used when the key comes from anywhere but that same file (the environment, the
    user's file, a flag); the user's own ``base_url``, if any, stays. ``notes`` says so."""
    where = sources.get("base_url", "")
    if not values.get("api_key") or not in_project(where, cwd) or sources.get("api_key") == where:
        return
    user = [layer for layer in layers if not in_project(layer.path, cwd) and "base_url" in layer.table]
    if user:
        values["base_url"], sources["base_url"] = user[-1].table["base_url"], str(user[-1].path)
    else:
        values.pop("base_url")
        sources.pop("base_url")
    line = key_line(next(layer.text for layer in layers if str(layer.path) == where), ("base_url",))
    notes.append(f"{where}:{line or 1}: base_url is not used from a project's scout.toml while your API key comes "
                 f"from {sources['api_key']} (a repository must not send your key to a server it names); set "
                 "base_url in ~/.config/scout/scout.toml, SCOUT_BASE_URL or --base-url.")


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

    def where(*keys: str) -> str:
        line = key_line(text, keys)
        return f"{path}:{line}" if line else str(path)

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
            raise ScoutError(f"{where(key)}: unknown {shown}; did you mean {safety[0]!r}? scout-tui stops here: "
                             "a misspelt safety setting would be ignored")
        notes.append(f"{where(key)}: unknown {shown} is ignored{hint or '.'}")

    for name in ("compaction", *TABLE_KEYS):
        section = table.get(name)
        if name == "sandbox" and section is not None and not isinstance(section, dict):
            raise ScoutError(f"{where(name)}: sandbox must be a table ([sandbox]), got {_describe(section, name)}")
        if not isinstance(section, dict):
            continue  # the table's reader says what is wrong with it
        known = table_keys(name)
        for key in section:
            if key in known:
                continue
            message = f"{where(name, key)}: unknown key {key!r} in [{name}]"
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
                raise ScoutError(f"{where('sandbox', key)}: sandbox.{key} must be {wanted}, "
                                 f"got {_describe(sandbox[key], key)}")
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
    but models and plugins). [compaction]'s come from ``strategies.SETTING_NAMES``, imported
    only when a file has that table: start-up does not need the strategies."""
    if name == "compaction":
        from scout_tui.strategies import SETTING_NAMES

        return SETTING_NAMES
    return TABLE_KEYS[name]


def did_you_mean(word: str, known: Sequence[str]) -> str:
    """"; did you mean 'max_turns'?" for the closest of ``known`` to ``word`` (case ignored), or ""."""
    lowered = {name.lower(): name for name in known}
    close = difflib.get_close_matches(word.lower(), list(lowered), n=1)
    return f"; did you mean {lowered[close[0]]!r}?" if close else ""


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
            line = key_line(text, (key,))
            where = f"{path}:{line}" if line else str(path)
            raise ScoutError(f"{where}: {key} must be {_KIND_WORDS[kind]}, got {_describe(value, key)}")
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
        line = key_line(text, (key,))
        where = f"{path}:{line}" if line else str(path)
        raise ScoutError(f"{where}: {key} must be one of {', '.join(_CHOICES[key])}, got {value!r}")
    if not ok:
        line = key_line(text, (key,))
        where = f"{path}:{line}" if line else str(path)
        raise ScoutError(f"{where}: {key} must be {_KIND_WORDS[kind]}, got {_describe(value, key)}")
    return float(value) if kind == "float" else value


def _coerce(key: str, value: Any, origin: str) -> Any:
    """Convert an env or flag value (usually a string) to ``key``'s type; else ScoutError."""
    kind = _KINDS[key]
    if kind == "share":
        share = _share(value)
        if share is None:
            raise ScoutError(f"{origin} must be {_KIND_WORDS[kind]}, got {_describe(value, key)}")
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
        raise ScoutError(f"{origin} must be {_KIND_WORDS[kind]}, got {_describe(value, key)}")
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


def _describe(value: Any, key: str) -> str:
    """How an error shows a bad value: never the api_key itself."""
    if key == "api_key":
        return type(value).__name__
    return f"{value!r} ({type(value).__name__})" if not isinstance(value, (dict, list)) else type(value).__name__


def merge_tables(old: Any, new: Any) -> Any:
    """Tables merge key by key (``new`` wins); any other value is replaced by ``new``."""
    if isinstance(old, dict) and isinstance(new, dict):
        merged = dict(old)
        for key, value in new.items():
            merged[key] = merge_tables(merged.get(key), value)
        return merged
    return new
