"""setuptools' packages for the wheel: every package under ``scout_tui/``, found, never listed by
hand, plus ``scout_tui.shipped_themes``, which ``pyproject.toml`` maps to the top-level ``themes/``
folder (discovery looks only under ``scout_tui/``). Everything else is in ``pyproject.toml``."""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["scout_tui", "scout_tui.*"]), "scout_tui.shipped_themes"])
