"""SVG snapshots of the plan dialog (pytest-textual-snapshot) at 120×40 and at 80×24, in plan
mode over a session that explored before proposing.

Update after an intended visual change with `pytest --snapshot-update tests/test_plan_snapshots.py`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from scout_tui.tools.approvals import PlanReview
from scout_tui.widgets.plan_dialog import PlanScreen
from tests.app_helpers import make_app, send, settle
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream
from tests.test_snapshots import settle_screen

pytestmark = pytest.mark.usefixtures("fixed_ids", "fixed_clock")

PLAN = """\
## Add a friendly greeting

The greeting is printed by `main()` in **app.py**; nothing else calls it.

1. Add `greet(name: str) -> str` to `app.py`, returning `f"Hello, {name}!"`
2. Call it from `main()` with the user's name from `sys.argv`
3. Add `tests/test_app.py` with a test for `greet`

```python
def greet(name: str) -> str:
    return f"Hello, {name}!"
```

- Risk: none; no other module imports `app.py`
"""

REVIEW = PlanReview("toolu_plan", PLAN, "add a friendly greeting to the app and test it", "auto-edit")


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_plan_dialog(snap_compare, tmp_home: Path, workdir: Path, size: tuple[int, int]) -> None:
    (workdir / "app.py").write_text("def main():\n    print('hi')\n")
    with LoopbackServer([Reply(anthropic_stream(["I read `app.py`: `main()` prints the greeting."]))]) as server:
        app = make_app(workdir, server, permission_mode="plan")

        async def run_before(pilot) -> None:
            await send(app, pilot, "add a friendly greeting to the app and test it")
            await settle(app, pilot)
            asyncio.ensure_future(app.review_plan(REVIEW))  # as the exit_plan call asks
            await wait_until(pilot, lambda: isinstance(app.screen, PlanScreen), what="the plan dialog")
            await settle_screen(pilot)

        assert snap_compare(app, terminal_size=size, run_before=run_before)
