"""Release gate: the engine (agent, backends, tools, store, config, compaction, headless) imports
no Textual, so headless mode and any other front end share it whole."""

from __future__ import annotations

import subprocess
import sys

ENGINE = ["scout_tui.agent", "scout_tui.backends", "scout_tui.tools", "scout_tui.store", "scout_tui.projection",
          "scout_tui.store_queries", "scout_tui.sessions", "scout_tui.config",
          "scout_tui.compaction", "scout_tui.history", "scout_tui.runtime", "scout_tui.headless", "scout_tui.export", "scout_tui.skills",
          "scout_tui.plugins", "scout_tui.context", "scout_tui.budget", "scout_tui.summary", "scout_tui.cache_report",
          "scout_tui.models", "scout_tui.messages", "scout_tui.diffs", "scout_tui.tool_runner",
          "scout_tui.strategies", "scout_tui.tool_calls", "scout_tui.tokens", "scout_tui.tomlpos",
          "scout_tui.backends.failures", "scout_tui.bus", "scout_tui.commands"]


def test_the_engine_imports_no_textual():
    code = "import sys\n" + "".join(f"import {m}\n" for m in ENGINE) + "print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
