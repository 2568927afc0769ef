"""Looking at live processes from a test: what a tool started, and whether it is gone."""

from __future__ import annotations

import os
from pathlib import Path


def processes_with(token: str) -> list[int]:
    """Pids of live (not zombie) processes whose command line holds ``token`` (host pids, so
    it finds a process a sandbox started in its own PID namespace too)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                cmdline = (entry / "cmdline").read_bytes()
                stat = (entry / "stat").read_text()
            except OSError:
                continue  # exited while we looked
            if token.encode() in cmdline and stat[stat.rfind(")") + 2] not in "ZX":
                found.append(int(entry.name))
    return found
