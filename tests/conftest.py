"""Shared fixtures: an isolated home for config and sessions, the wire fixtures, a loopback model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

WIRE = Path(__file__).parent / "fixtures" / "wire"


@pytest.fixture
def tmp_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME, SCOUT_HOME and XDG dirs; no provider keys or SCOUT_* settings leak in."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SCOUT_HOME", str(home / ".scout-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    import os

    for key in list(os.environ):
        if key.startswith("SCOUT_") and key != "SCOUT_HOME" or key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "NO_COLOR"):
            monkeypatch.delenv(key, raising=False)
    return home


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary repository directory, made the current directory."""
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.chdir(repo)
    return repo


def wire(name: str) -> bytes:
    """The raw bytes of a shared wire fixture."""
    return (WIRE / name).read_bytes()


def expected(name: str) -> dict:
    """The ``*.expected.json`` sibling of a wire fixture, parsed."""
    stem = name.rsplit(".", 1)[0]
    return json.loads((WIRE / f"{stem}.expected.json").read_text())
