"""Helpers for tests that run ``scout-tui -p`` as a real subprocess: a fresh HOME with a test key
(fixture ``env``), a small repository (fixture ``repo``), and ``scout`` to run the command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scout_tui.config import keys

SECRET = "sk-SECRET-do-not-print-42"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment with its own HOME, data and config folders, and ``SECRET`` as the key."""
    home = tmp_path / "home"
    home.mkdir()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SCOUT_") and k not in keys.key_variables()}
    return {**clean, "HOME": str(home), "SCOUT_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config"),
            "ANTHROPIC_API_KEY": SECRET}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A folder holding notes.txt ("the answer is 42")."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "notes.txt").write_text("the answer is 42\n")
    return repo


def scout(args: list[str], cwd: Path, env: dict[str, str], piped: str = "") -> subprocess.CompletedProcess:
    """``python -m scout_tui ARGS`` in ``cwd`` with ``env`` and ``piped`` on its stdin (a pipe,
    as from ``echo``: ``-p`` reads it), its output captured as text."""
    return subprocess.run([sys.executable, "-m", "scout_tui", *args], cwd=cwd, env=env, input=piped,
                          capture_output=True, text=True, timeout=60)
