"""Custom agents from markdown files (``extensions.agents``): where they are read, Claude Code's
front matter and tool names, bad files named by file and line and skipped, project files loaded
only once trusted, ``/agents`` in ``-p`` and the TUI."""

from __future__ import annotations

from pathlib import Path

import pytest

from scout_tui.config.trust import check_file, read_trusted, record_trust
from scout_tui.extensions.agents import (BUILTIN_AGENTS, describe_agents, discover_agents, project_agent_trust,
                                         resolve_model, task_description)

REVIEWER = """---
name: reviewer
description: Reviews a change for bugs and style.
tools: Read, Grep, Glob, WebFetch
model: inherit
---
You are a careful reviewer. Report file:line for each finding.
"""

YAML_LIST = """---
name: tester
description: "Runs the tests: says what fails."
tools:
  - Bash
  - Read
model: sonnet
---
Run the test suite and report.
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def trust_all(cwd: Path, home: Path) -> None:
    files, _ = project_agent_trust(cwd, home)
    record_trust(files)


def test_user_agents_load_with_claude_codes_front_matter(tmp_home, workdir):
    write(tmp_home / ".claude" / "agents", "reviewer.md", REVIEWER)
    write(tmp_home / ".agents" / "agents", "tester.md", YAML_LIST)
    agents, problems = discover_agents(workdir, tmp_home)
    by_name = {a.name: a for a in agents}
    assert list(by_name)[:2] == [a.name for a in BUILTIN_AGENTS]
    reviewer, tester = by_name["reviewer"], by_name["tester"]
    assert reviewer.tools == ("read", "grep", "glob") and reviewer.model is None
    assert reviewer.prompt.startswith("You are a careful reviewer") and reviewer.description.startswith("Reviews")
    assert tester.tools == ("bash", "read") and tester.model == "sonnet"
    assert problems == [f"{tmp_home / '.claude/agents/reviewer.md'}:4: tools: 'WebFetch' is not a tool scout-tui has "
                        "(known: bash, read, write, edit, grep, glob, skill, task, mcp__SERVER__TOOL); left out"]


@pytest.mark.parametrize("text, line, says", [
    ("---\nname: x\ndescription: d\n", 1, "no closing '---' line"),
    ("---\nname: Bad Name\ndescription: d\n---\nbody", 2, "agent name 'Bad Name'"),
    ("---\nname: quiet\n---\nbody", 1, "needs a description"),
    ("---\nname: x\ndescription: d\nthis is not a key value line\n---\n", 4, "expected 'key: value'"),
    ("---\nname: x\ndescription: d\ntools: [Read, Grep\n---\n", 4, "tools: expected names separated by commas"),
    ("---\nname: x\ndescription: d\ntools: Read; rm -rf /\n---\n", 4, "is not a tool name"),
])
def test_a_bad_agent_file_is_named_with_its_line_and_skipped(tmp_home, workdir, text, line, says):
    bad = write(tmp_home / ".agents" / "agents", "bad.md", text)
    write(tmp_home / ".agents" / "agents", "good.md", "---\ndescription: fine\n---\nok")
    agents, problems = discover_agents(workdir, tmp_home)
    assert [a.name for a in agents] == ["general", "explore", "good"]  # the others still load
    assert len(problems) == 1 and problems[0].startswith(f"{bad}:{line}: ") and says in problems[0], problems
    assert problems[0].endswith("(agent skipped)")


def test_a_project_agent_loads_only_once_trusted_and_again_after_a_change(tmp_home, workdir):
    path = write(workdir / ".agents" / "agents", "reviewer.md", REVIEWER)
    agents, problems = discover_agents(workdir, tmp_home)
    assert "reviewer" not in [a.name for a in agents]
    assert problems == [f"{path}: agent not loaded: it is new or changed since you trusted it; read it, then run "
                        "`scout-tui trust` (or /trust) to load it"]
    trust_all(workdir, tmp_home)
    assert "reviewer" in [a.name for a in discover_agents(workdir, tmp_home)[0]]
    path.write_text(REVIEWER.replace("careful", "reckless"))
    assert "reviewer" not in [a.name for a in discover_agents(workdir, tmp_home)[0]]
    assert check_file(path, read_trusted()[0]).state == "changed"


def test_a_later_file_replaces_an_earlier_agent_of_the_same_name(tmp_home, workdir):
    write(tmp_home / ".agents" / "agents", "explore.md", "---\ndescription: my own explorer\n---\nexplore my way")
    write(workdir / ".claude" / "agents", "reviewer.md", REVIEWER)
    write(workdir / ".agents" / "agents", "reviewer.md", REVIEWER.replace("careful", "strict"))
    trust_all(workdir, tmp_home)
    agents, problems = discover_agents(workdir, tmp_home)
    by_name = {a.name: a for a in agents}
    assert by_name["explore"].description == "my own explorer" and by_name["explore"].tools is None
    assert "strict" in by_name["reviewer"].prompt and by_name["reviewer"].source.endswith(".agents/agents/reviewer.md")


def test_the_task_description_lists_the_agents_in_a_stable_order(tmp_home, workdir):
    write(tmp_home / ".agents" / "agents", "zeta.md", "---\ndescription: last\n---\nz")
    write(tmp_home / ".agents" / "agents", "alpha.md", "---\ndescription: first\n---\na")
    agents, _ = discover_agents(workdir, tmp_home)
    text = task_description(agents)
    listed = [line.split(":")[0] for line in text.splitlines() if line.startswith("- ")]
    assert listed == ["- general", "- explore", "- alpha", "- zeta"]
    assert task_description(list(reversed(agents))) == text  # the bytes the provider caches stay put


def test_claude_code_model_aliases_become_the_newest_model_of_that_family(tmp_home):
    sonnet = resolve_model("sonnet", "anthropic")
    assert sonnet is not None and sonnet.startswith("claude-sonnet-")
    assert resolve_model("sonnet", "openai") is None  # the parent's model on another provider
    assert resolve_model("gpt-4.1-mini", "openai") == "gpt-4.1-mini"


def test_slash_agents_lists_them_in_p(tmp_home, workdir):
    import asyncio

    from scout_tui.config.layers import load_config
    from scout_tui.session.session import Session
    from scout_tui.session.slash import session_commands
    from scout_tui.store.event_log import Store

    write(tmp_home / ".agents" / "agents", "reviewer.md", REVIEWER)
    session = Session(Store(workdir.parent / "s.db"), workdir, load_config(workdir))
    parsed = session_commands(session).parse("/agents")
    said = asyncio.run(parsed.command.run(parsed.args))
    assert "**reviewer**" in said and "tools: read, grep, glob" in said and "WebFetch" in said
    assert said == describe_agents(*discover_agents(workdir))


async def test_slash_agents_in_the_tui(tmp_home, workdir):
    from scout_tui.widgets.chat_messages import Notice
    from tests.app_helpers import SIZE, make_app, rendered, send
    from tests.conftest import wait_until

    write(tmp_home / ".agents" / "agents", "reviewer.md", REVIEWER)
    app = make_app(workdir, None)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "/agents")
        await wait_until(pilot, lambda: any("Reviews a change" in rendered(n) for n in app.query(Notice)),
                         what="the agents listed")
        shown = next(rendered(n) for n in app.query(Notice) if "Reviews a change" in rendered(n))
        assert "reviewer" in shown and "explore" in shown and "WebFetch" in shown


def test_scout_tui_trust_lists_and_trusts_project_agents(tmp_home, workdir):
    import os
    import subprocess
    import sys

    path = write(workdir / ".agents" / "agents", "reviewer.md", REVIEWER)
    listed = subprocess.run([sys.executable, "-m", "scout_tui", "trust", "--list"], cwd=workdir, env=dict(os.environ),
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and "new" in listed.stdout and "reviewer.md" in listed.stdout, listed
    done = subprocess.run([sys.executable, "-m", "scout_tui", "trust", "--yes"], cwd=workdir, env=dict(os.environ),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert check_file(path, read_trusted()[0]).trusted
    assert "reviewer" in [a.name for a in discover_agents(workdir)[0]]
