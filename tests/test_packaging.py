"""The built wheel carries the shipped themes and the entry points."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_includes_the_default_theme_and_the_console_script(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    [wheel] = tmp_path.glob("scout_tui-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "scout_tui/shipped_themes/scout-dark.toml" in names
    assert "scout_tui/__main__.py" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "scout-tui = scout_tui.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
