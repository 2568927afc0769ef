"""SVG snapshots of the main screen mid-conversation, with tool calls, in every shipped theme.

Update after an intended visual change with `pytest --snapshot-update tests/test_themes_snapshots.py`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scout_tui.app import ScoutApp
from scout_tui.bus import Event
from scout_tui.config import load_config
from scout_tui.store import Store
from scout_tui.themes import shipped_themes_dir
from tests.test_app import SIZE, settle
from tests.test_snapshots import fixed_ids, steady  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("fixed_ids")

SHIPPED = sorted(p.stem for p in shipped_themes_dir().glob("*.toml"))

ANSWER = """\
`notes.txt` holds the answer, and `missing.txt` does not exist:

```python
def answer() -> int:
    return 42  # from notes.txt
```

- one fact
- no *surprises*"""


def conversation(store: Store, repo: Path) -> str:
    """A stored session: a read that worked, a bash call that failed, an answer with code;
    and a fork of it after the first answer, so the tree shows a branch."""

    def message(sid: str, role: str, *content: dict) -> None:
        event = "message.user" if role == "user" else "message.assistant"
        store.append(sid, Event(event, {"message": {"role": role, "content": list(content)}}))

    sid = store.create_session(repo)
    message(sid, "user", {"type": "text", "text": "what does notes.txt say? and missing.txt?"})
    message(sid, "assistant", {"type": "text", "text": "Let me read both."},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "notes.txt"}},
            {"type": "tool_use", "id": "toolu_2", "name": "bash", "input": {"command": "cat missing.txt"}})
    message(sid, "user",
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "the answer is 42", "is_error": False},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "cat: missing.txt: No such file",
             "is_error": True})
    message(sid, "assistant", {"type": "text", "text": ANSWER})
    store.fork(sid, 2, title="try another file")
    return sid


@pytest.mark.parametrize("theme", SHIPPED)
def test_main_screen_mid_conversation(snap_compare, tmp_home: Path, workdir: Path, theme: str) -> None:
    sid = conversation(Store(), workdir)
    app = ScoutApp(load_config(workdir, flags={"api_key": "sk-test", "theme": theme}), cwd=workdir, resume=sid)

    async def run_before(pilot) -> None:
        await settle(app, pilot)
        assert app.theme == theme
        await steady(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
