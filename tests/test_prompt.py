"""The system prompt names the assistant's tools, where it works, the date, and AGENTS.md (clipped:
the memory files' budget, ``tests/test_memory.py``)."""

from __future__ import annotations

import datetime as dt
import platform

from scout_tui.session.memory import MEMORY_BUDGET
from scout_tui.session.prompt import system_prompt


def test_system_prompt_carries_tools_directory_platform_date_and_clipped_agents_md(tmp_home, workdir):
    (workdir / "AGENTS.md").write_text("Use tabs.\n" + "x" * (MEMORY_BUDGET + 500) + "TAIL-MARKER")
    prompt = system_prompt(workdir, ["bash", "read"], today=dt.date(2026, 11, 30))
    assert "bash, read" in prompt and str(workdir) in prompt and platform.system() in prompt
    assert "2026-11-30" in prompt and "Use tabs." in prompt
    assert "TAIL-MARKER" not in prompt and prompt.count("x") >= MEMORY_BUDGET - 20
