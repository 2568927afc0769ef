"""Layered configuration: defaults < user scout.toml < project scout.toml < SCOUT_* env < flags.

Each layer may set any key of ``Config``; unknown top-level keys and tables (``[compaction]``)
are kept in ``Config.extra`` for later features. ``Config.sources`` says where each key came from.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import platformdirs

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


PERMISSION_MODES = ("ask", "auto-edit", "yolo")


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """One config file that was read: its path, text (rules quote their file and line) and
    parsed table."""

    path: Path
    text: str
    table: dict[str, Any]


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

assert set(_KINDS) | {"extra", "sources", "layers"} == {f.name for f in fields(Config)}


def load_config(
    cwd: Path | None = None,
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> Config:
    """Build the Config from every layer; later layers win key by key.

    Layers: defaults < ``user_config_dir()/scout.toml`` < ``cwd/scout.toml`` (cwd defaults to
    the current directory) < ``SCOUT_<KEY>`` variables of ``env`` (default ``os.environ``;
    empty values are ignored) < ``flags`` (key -> value; None values ignored). When no layer
    sets ``api_key``, it comes from ANTHROPIC_API_KEY (provider anthropic) or OPENAI_API_KEY
    (provider openai).

    Raises:
        ScoutError: a file is unreadable or malformed TOML ("<path>:<line>:<col>: invalid
            TOML: ..."), a file value has the wrong type ("<path>:<line>: max_turns must be
            ..."), or an env variable or flag does not convert ("SCOUT_MAX_TOKENS must be ...").
    """
    env = os.environ if env is None else env
    cwd = Path.cwd() if cwd is None else Path(cwd)
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    sources: dict[str, str] = {}
    layers: list[ConfigFile] = []

    seen: set[Path] = set()
    for path in (user_config_dir() / CONFIG_FILE, cwd / CONFIG_FILE):
        resolved = path.resolve()
        if resolved in seen or not path.is_file():
            continue
        seen.add(resolved)
        text, table = _read_toml(path)
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

    return Config(**values, extra=extra, sources=sources, layers=layers)


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
    if ok and key in _POSITIVE and value <= 0:
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
    if number is None or number <= 0 or number != number:  # NaN fails every comparison
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
