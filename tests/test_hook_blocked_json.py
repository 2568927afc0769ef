"""``scout-tui -p --output-format json`` whose prompt a ``UserPromptSubmit`` hook blocks: the result
object says why, as the hook put it (a script reading only stdout learns it too)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.headless_helpers import env, repo, scout  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer


def test_the_json_result_of_a_blocked_prompt_holds_the_hooks_reason(repo, env):
    path = Path(env["XDG_CONFIG_HOME"]) / "scout" / "scout.toml"
    path.parent.mkdir(parents=True)
    path.write_text('[[hooks.UserPromptSubmit]]\n'
                    'command = "grep -q password && { echo \'no secrets in prompts\' >&2; exit 2; } || exit 0"\n')
    with LoopbackServer([]) as server:
        done = scout(["-p", "my password is hunter2", "--base-url", server.url, "--output-format", "json"], repo, env)
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["is_error"] is True
    assert "UserPromptSubmit hook blocked this prompt: no secrets in prompts" in result["error"]
    assert not server.requests
