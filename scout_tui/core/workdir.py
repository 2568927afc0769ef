"""The directory a command runs in."""

from __future__ import annotations

from pathlib import Path

from scout_tui.core.errors import ScoutError


def working_directory(hint: str = "cd to a project's directory") -> Path:
    """The current directory, resolved.

    Raises:
        ScoutError: it was deleted (or cannot be read) since the shell entered it; ``hint`` says
            what to do instead.
    """
    try:
        return Path.cwd().resolve()
    except (FileNotFoundError, PermissionError):
        raise ScoutError(f"the current directory was deleted or cannot be read: {hint}") from None
