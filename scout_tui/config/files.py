"""Config files: where they live, what one read file holds, and how errors about them read.

A leaf of the config package: ``layers`` (which reads the files), ``profiles`` (their provider
tables) and ``catalog`` (its cache) use it, so none of them imports another for these.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from scout_tui.core.errors import ScoutError

CONFIG_FILE = "scout.toml"

CLAUDE_SETTINGS = (Path(".claude") / "settings.json", Path(".claude") / "settings.local.json")
"""A project's Claude Code settings files, read for their ``hooks`` and ``permissions``."""


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


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """One config file that was read: its path, text (rules quote their file and line) and
    parsed table."""

    path: Path
    text: str
    table: dict[str, Any]


def read_claude_settings(path: Path) -> tuple[str, Any] | None:
    """``(text, parsed JSON)`` of a ``CLAUDE_SETTINGS`` file, None when there is none.

    Raises:
        ScoutError: it cannot be read, or is not JSON (naming its line and column).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScoutError(f"{path}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        return text, json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScoutError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None


def json_line(text: str, keys: tuple[str, ...]) -> int:
    """The 1-based line of the last of ``keys`` in JSON ``text``, found in order (each after the
    one before); the line of the last found when one is missing."""
    position = 0
    for key in keys:
        match = re.compile(r'"%s"\s*:' % re.escape(json.dumps(key)[1:-1])).search(text, position)
        if match is None:
            break
        position = match.start()
    return text.count("\n", 0, position) + 1


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


def did_you_mean(word: str, known: Sequence[str]) -> str:
    """"; did you mean 'max_turns'?" for the closest of ``known`` to ``word`` (case ignored), or ""."""
    lowered = {name.lower(): name for name in known}
    close = difflib.get_close_matches(word.lower(), list(lowered), n=1)
    return f"; did you mean {lowered[close[0]]!r}?" if close else ""


def describe_value(value: Any, key: str) -> str:
    """How an error shows a bad value: never the api_key itself."""
    if key == "api_key":
        return type(value).__name__
    return f"{value!r} ({type(value).__name__})" if not isinstance(value, (dict, list)) else type(value).__name__
