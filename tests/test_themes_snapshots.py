"""SVG snapshots of the main screen mid-conversation, with tool calls, in every shipped theme.

Update after an intended visual change with `pytest --snapshot-update tests/test_themes_snapshots.py`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scout_tui.tui.app import ScoutApp
from scout_tui.config.layers import load_config
from scout_tui.store.event_log import Store
from scout_tui.theming.themes import shipped_themes_dir
from tests.app_helpers import SIZE, conversation, settle, steady

# The same ids, context estimate and session ages on every run.
pytestmark = pytest.mark.usefixtures("fixed_ids", "fixed_clock")

SHIPPED = sorted(p.stem for p in shipped_themes_dir().glob("*.toml"))


@pytest.mark.parametrize("theme", SHIPPED)
def test_main_screen_mid_conversation(snap_compare, tmp_home: Path, workdir: Path, theme: str) -> None:
    sid = conversation(Store(), workdir)
    app = ScoutApp(load_config(workdir, flags={"api_key": "sk-test", "theme": theme}), cwd=workdir, resume=sid)

    async def run_before(pilot) -> None:
        await settle(app, pilot)
        assert app.theme == theme
        await steady(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
