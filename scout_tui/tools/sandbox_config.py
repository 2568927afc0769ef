"""The ``[sandbox]`` table of the config files as ``SandboxSettings``: later files win key by key,
and a project's own ``scout.toml`` may tighten the sandbox but not loosen it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scout_tui.config.layers import SANDBOX_MODES, TABLE_KEYS, in_project
from scout_tui.core.errors import ScoutError
from scout_tui.config.tomlpos import where

# The names live in config.py, which checks every file's [sandbox] table as it loads it.
MODES = SANDBOX_MODES
"""``workspace-write``: the workspace, /tmp and ``writable`` paths can be written, nothing else;
``read-only``: nothing but the private /tmp; ``off``: commands run unsandboxed."""

DEFAULT_MODE = "workspace-write"
KEYS = TABLE_KEYS["sandbox"]


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    """How commands are sandboxed: ``mode`` (one of ``MODES``), ``writable`` (extra absolute
    paths the command may write in ``workspace-write`` mode), ``network`` (False: no network,
    loopback included). ``notes``: what the config asked for that was not used, and why, for the
    front end to show."""

    mode: str = DEFAULT_MODE
    writable: tuple[Path, ...] = ()
    network: bool = True
    notes: tuple[str, ...] = ()


_STRICTNESS = {"off": 0, "workspace-write": 1, "read-only": 2}


def sandbox_from_config(config: Any, workspace: Path) -> SandboxSettings:
    """The ``SandboxSettings`` of a ``Config``: the ``[sandbox]`` tables of its files, later
    files winning key by key (``writable`` paths add up). Without a ``mode``: ``workspace-write``,
    in force where bwrap works (``in_force``). ``writable`` paths have ``~`` expanded and are relative to
    ``workspace``.

    A project's own ``scout.toml`` (inside ``workspace``) may tighten the sandbox but not loosen
    it: a ``mode`` looser than the user's (``off`` always) and its ``writable`` paths are not used (a cloned repository cannot
    open its own sandbox), which ``notes`` says.

    Raises:
        ScoutError: ``[sandbox]`` not a table, an unknown key, a mode not in ``MODES``,
            ``writable`` not a list of strings, ``network`` not true or false; each naming the
            file and line.
    """
    workspace = Path(workspace).resolve()
    mode: str | None = None
    network = True
    writable: list[Path] = []
    notes: list[str] = []
    for layer in config.layers:
        table = layer.table.get("sandbox")
        if table is None:
            continue
        path, text = layer.path, layer.text

        def at(*key: str) -> str:
            return where(path, text, ("sandbox", *key), table=("sandbox",))

        if not isinstance(table, dict):
            raise ScoutError(f"{at()}: [sandbox] must be a table")
        for unknown in sorted(set(table) - set(KEYS)):
            raise ScoutError(f"{at(unknown)}: unknown key {unknown!r} in [sandbox] (known: {', '.join(KEYS)})")
        project = in_project(path, workspace)
        if "mode" in table:
            value = table["mode"]
            if value not in MODES:
                raise ScoutError(f"{at('mode')}: sandbox.mode must be one of {', '.join(MODES)}, got {value!r}")
            current = mode or DEFAULT_MODE
            if project and _STRICTNESS[value] < _STRICTNESS[current]:
                notes.append(f"{at('mode')}: sandbox.mode = {value!r} is not used from a project's scout.toml (a "
                             "repository cannot loosen its own sandbox); set it in ~/.config/scout/scout.toml. "
                             f"Mode: {current}.")
            else:
                mode = value
        if "network" in table:
            value = table["network"]
            if not isinstance(value, bool):
                raise ScoutError(f"{at('network')}: sandbox.network must be true or false, got {value!r}")
            if project and value and not network:
                notes.append(f"{at('network')}: sandbox.network = true is not used from a project's scout.toml "
                             "(a repository cannot open its own sandbox); set it in ~/.config/scout/scout.toml.")
            network = value if not project else network and value
        if "writable" in table:
            value = table["writable"]
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise ScoutError(f"{at('writable')}: sandbox.writable must be a list of paths like "
                                 "[\"~/.cache/pip\", \"../shared\"]")
            if project and value:
                notes.append(f"{at('writable')}: sandbox.writable is not used from a project's scout.toml (a "
                             "repository cannot widen its own sandbox); set it in ~/.config/scout/scout.toml.")
            else:
                writable += [_absolute(v, workspace) for v in value]
    if (mode or DEFAULT_MODE) == "workspace-write" and workspace in (Path.home().resolve(), Path("/")):
        notes.append(f"The working directory is {workspace}: the sandbox lets commands write anything in it "
                     "(~/.bashrc, ~/.ssh). Start scout-tui in a project folder.")
    if mode == "off" and not network:
        notes.append("[sandbox] network = false with mode = \"off\": commands get no network only where bwrap can "
                     "run (`scout-tui doctor` says), and nothing else of the sandbox.")
    return SandboxSettings(mode or DEFAULT_MODE, tuple(dict.fromkeys(writable)), network, tuple(notes))


def _absolute(text: str, workspace: Path) -> Path:
    """``text`` with ``~`` expanded, relative to ``workspace``, symlinks resolved."""
    path = Path(text).expanduser()
    return (path if path.is_absolute() else workspace / path).resolve()
