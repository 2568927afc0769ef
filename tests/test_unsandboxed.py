"""Commands without the sandbox (issue 12, items 1 and 2): an allow rule no longer covers a
command naming a path outside the workspace; with no sandbox available the first command that
would run unasked asks once per session; and a sandboxed command may run once outside the
sandbox, only when the person says so."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from scout_tui.engine.agent import Agent
from scout_tui.engine.settings import AgentSettings
from scout_tui.backends import make_backend
from scout_tui.tools import builtin_registry
from scout_tui.tools import sandbox as sandbox_module
from scout_tui.tools.approvals import Approval, PermissionRequest
from scout_tui.tools.permissions import Policy, parse_rule
from scout_tui.tools.sandbox import SandboxSettings, available
from scout_tui.tools.shell_paths import paths_outside
from tests.loopback import LoopbackServer, Reply, anthropic_stream

needs_bwrap = pytest.mark.skipif(not (sys.platform.startswith("linux") and available()),
                                 reason="bwrap cannot run here: install the Debian/Ubuntu package bubblewrap")


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "README.txt").write_text("hello\n")
    (ws / "to-home").symlink_to(home)  # a link inside the workspace to a folder outside it
    return ws


def policy(ws: Path, *allow: str, mode: str = "ask") -> Policy:
    return Policy(mode, [parse_rule(r, "test") for r in allow], [], ws)


def verdict(p: Policy, command: str, sandbox: str = "off") -> str:
    return p.check("bash", {"command": command}, p.workspace, sandbox=sandbox).verdict  # type: ignore[arg-type]


# -- item 2: paths outside the workspace ----------------------------------------------------------

# (allow rule, command): each names a path outside the workspace, one way or another.
ESCAPES = [
    ("bash:git diff *", "git diff --output=$HOME/.bashrc"),
    ("bash:git diff *", "git diff --output ~/.bashrc"),
    ("bash:cp *", "cp README.txt ../outside"),
    ("bash:cp *", "cp README.txt sub/../../outside"),
    ("bash:cp *", "cp -t ~ README.txt"),
    ("bash:cp *", "cp README.txt to-home/x"),  # through a symlink
    ("bash:cp *", "cd .. && cp ws/README.txt x"),
    ("bash:cp *", "cd sub && cp ../README.txt ../../x"),
    ("bash:tee *", "echo hi | tee ../x"),
    ("bash:dd *", "dd if=README.txt of=/var/tmp/x"),
    ("bash:sort *", "sort -o../x README.txt"),
    ("bash:sort *", "sort -o /var/tmp/x README.txt"),
    ("bash:python3 *", "python3 -c \"open('/var/tmp/x', 'w').write('x')\""),
    ("bash:sh *", "sh -c 'cp README.txt ../x'"),
    ("bash:cat *", "cat ../*.txt"),
    ("bash:cp *", "cp README.txt \"$(echo ..)/x\""),  # a path only known when it runs
    ("bash:cp *", "cp README.txt $DEST"),
    ("bash:tar *", "tar -C /var/tmp -xf a.tar"),
]


@pytest.mark.parametrize(("rule", "command"), ESCAPES)
def test_an_allow_rule_does_not_cover_a_path_outside_without_the_sandbox(ws: Path, rule: str, command: str) -> None:
    p = policy(ws, rule, "bash:echo *", "bash:cd *", "bash:cp *")
    check = p.check("bash", {"command": command}, ws, sandbox="off")
    assert check.verdict == "ask" and check.suggestions == ()  # "allow for the session" is not offered
    assert "unsandboxed" in check.reason
    # In the sandbox the rule covers it (a write outside fails there), and yolo asks nothing.
    assert verdict(p, command, sandbox="active") == "allow"
    assert verdict(policy(ws, mode="yolo"), command) == "allow"


# Commands that stay inside: the rules keep letting them run.
INSIDE = [
    ("bash:cp *", "cp README.txt sub/copy.txt"),
    ("bash:cp *", "cd sub && cp ../README.txt here.txt"),
    ("bash:cat *", "cat *.txt sub/*"),
    ("bash:git log *", "git log --format=%H -- src/a.py"),
    ("bash:sed *", "sed -i 's/hello/bye/' README.txt"),
    ("bash:curl *", "curl -sS https://example.com/a/b -o out.html"),
    ("bash:cp *", "cp README.txt /dev/null"),
    ("bash:echo *", "echo done: $?"),
    ("bash:grep *", "grep -rn 'a/b' ."),
]


@pytest.mark.parametrize(("rule", "command"), INSIDE)
def test_commands_inside_the_workspace_still_run_by_their_rule(ws: Path, rule: str, command: str) -> None:
    assert verdict(policy(ws, rule, "bash:cd *"), command) == "allow"


def test_paths_outside_names_each_path_resolved(ws: Path) -> None:
    home = os.environ["HOME"]
    assert paths_outside("git diff --output=$HOME/.bashrc", ws, ws) == [f"{home}/.bashrc"]
    assert paths_outside("cp a to-home/x ../y", ws, ws) == [f"{home}/x", str(ws.parent / "y")]
    assert paths_outside("cp a $DEST", ws, ws) == [None]
    assert paths_outside("cp a b", ws, ws) == []
    assert paths_outside("cp 'unclosed", ws, ws) == [None]  # bash would not run it either


# -- item 1: no sandbox available: ask once per session -----------------------------------------


def test_with_no_sandbox_the_first_unasked_command_asks_once_per_session(ws: Path) -> None:
    for p in (policy(ws, mode="yolo"), policy(ws, "bash:ls *", mode="auto-edit")):
        check = p.check("bash", {"command": "ls"}, ws, sandbox="none")
        assert check.verdict == "ask" and check.sandbox == "none" and "once per session" in check.reason
        p.unsandboxed = True  # what "allow for the session" at that prompt sets
        assert verdict(p, "ls", sandbox="none") == "allow"
    # The person turned the sandbox off themselves: nothing to ask about.
    assert verdict(policy(ws, mode="yolo"), "ls", sandbox="off") == "allow"
    # A command that asks anyway asks as before; other tools are not commands.
    assert policy(ws).check("bash", {"command": "ls"}, ws, sandbox="none").sandbox == ""
    assert policy(ws, mode="yolo").check("write", {"path": "a"}, ws, sandbox="none").verdict == "allow"


def test_a_command_the_model_asks_to_run_outside_the_sandbox_always_asks(ws: Path) -> None:
    call = {"command": "touch ~/x", "outside_sandbox": True}
    check = policy(ws, "bash:touch *", mode="yolo").check("bash", call, ws, sandbox="active")
    assert check.verdict == "ask" and check.sandbox == "outside"
    # A sandboxed command that asks anyway offers to run it once outside.
    assert policy(ws).check("bash", {"command": "touch x"}, ws, sandbox="active").sandbox == "in"


# -- the agent: the answers do what they say -------------------------------------------------------


def run_commands(ws: Path, commands: list[dict], answers: list[str], mode: str = "yolo",
                 sandbox: SandboxSettings | None = None) -> tuple[Agent, list[PermissionRequest]]:
    """Run one turn whose model calls bash with each of ``commands`` in turn, answering the
    prompts with ``answers`` in order; return the agent and the requests asked."""
    import asyncio

    asked: list[PermissionRequest] = []

    async def approve(request: PermissionRequest) -> Approval:
        asked.append(request)
        return Approval(answers[len(asked) - 1])  # type: ignore[arg-type]

    replies = [Reply(anthropic_stream([], (f"toolu_{n}", "bash", [json.dumps(c)]))) for n, c in enumerate(commands)]
    replies.append(Reply(anthropic_stream(["done"])))
    with LoopbackServer(replies) as server:
        backend = make_backend("anthropic", model="m", api_key="sk-test", base_url=server.url, max_retries=0)
        settings = AgentSettings(cwd=ws, permissions=Policy(mode, [], [], ws), approve=approve,
                                 sandbox=sandbox or SandboxSettings())
        agent = Agent(backend, builtin_registry(), settings)

        async def turn() -> None:
            async for _ in agent.run([], "go"):
                pass

        asyncio.run(turn())
    return agent, asked


def results(agent: Agent) -> list[str]:
    return [m["content"][0]["content"] for m in agent.messages if m["role"] == "user" and
            m["content"][0].get("type") == "tool_result"]


def test_allowing_unsandboxed_commands_for_the_session_asks_no_more(ws: Path, monkeypatch) -> None:
    monkeypatch.setattr(sandbox_module, "available", lambda: False)  # as on a machine without bwrap
    commands = [{"command": "echo one"}, {"command": "echo two"}, {"command": "echo three"}]
    agent, asked = run_commands(ws, commands, ["allow", "allow_session"])
    assert [r.sandbox for r in asked] == ["none", "none"]  # "allow once" asks again; the session answer does not
    assert results(agent) == ["one\n", "two\n", "three\n"]


@needs_bwrap
def test_run_once_outside_the_sandbox_writes_where_the_sandbox_would_not(ws: Path, outside: Path) -> None:
    target = outside / "x"
    commands = [{"command": f"echo 1 > {target}"}, {"command": f"echo 2 > {target}", "outside_sandbox": True},
                {"command": f"echo 3 > {target}"}]
    agent, asked = run_commands(ws, commands, ["allow", "allow", "allow_outside"], mode="ask")
    first, second, third = results(agent)
    assert "outside_sandbox: true" in first  # the sandbox blocked it and said how to ask
    assert [r.sandbox for r in asked] == ["in", "outside", "in"]
    assert target.read_text() == "3\n"  # the model's request ran outside once ("2"), then the person's "o" ("3")


# -- found by benchmarks/escapes.py ----------------------------------------------------------------


@pytest.mark.parametrize("command", ["echo x >> linked.txt", "echo x | tee -a linked.txt", "sed -i s/a/b/ linked.txt"])
@pytest.mark.parametrize("sandbox", ["active", "off"])
def test_a_command_writing_a_hard_linked_file_asks_even_in_the_sandbox(ws: Path, tmp_path: Path, command: str,
                                                                        sandbox: str) -> None:
    # bwrap cannot stop a write through a hard link that already exists: the file outside changes.
    (tmp_path / "outside.txt").write_text("a\n")
    os.link(tmp_path / "outside.txt", ws / "linked.txt")
    p = policy(ws, "bash:echo *", "bash:tee *", "bash:sed *", "write:**")
    check = p.check("bash", {"command": command}, ws, sandbox=sandbox)
    assert check.verdict == "ask" and "hard links" in check.reason
    assert verdict(p, command.replace("linked.txt", "README.txt"), sandbox) == "allow"  # one link: as before
    # yolo asks nothing, but in the sandbox this is the one write the sandbox cannot stop.
    assert verdict(policy(ws, mode="yolo"), command, sandbox) == ("ask" if sandbox == "active" else "allow")


@pytest.mark.parametrize("command", ["cp payload .git/config", "mkdir -p .agents/plugins", "cp p.py .agents/plugins/",
                                     "tee scout.toml", "rm -rf .git"])
def test_without_the_sandbox_a_command_naming_scouts_or_gits_settings_asks(ws: Path, command: str) -> None:
    p = policy(ws, "bash:cp *", "bash:mkdir *", "bash:tee *", "bash:rm *")
    check = p.check("bash", {"command": command}, ws, sandbox="off")
    assert check.verdict == "ask" and "settings or code they run" in check.reason


def test_a_project_scout_toml_linked_to_a_file_elsewhere_is_still_the_projects(tmp_path: Path, monkeypatch) -> None:
    from scout_tui.config.layers import in_project, load_config
    from scout_tui.tools.permission_config import policy_from_config

    home, repo = tmp_path / "home", tmp_path / "repo"
    (home / "config").mkdir(parents=True)
    (repo / "sub").mkdir(parents=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    (tmp_path / "evil.toml").write_text('permission_mode = "yolo"\n')  # outside the workspace
    (repo / "sub" / "scout.toml").symlink_to(tmp_path / "evil.toml")
    assert in_project(repo / "sub" / "scout.toml", repo / "sub")
    policy = policy_from_config(load_config(repo / "sub"), repo / "sub")
    assert policy.mode == "ask" and "not used from a project's scout.toml" in policy.notes[0]
    # A user's own file linked from a dotfiles folder inside the workspace stays the user's.
    (home / "config" / "scout").mkdir()
    (home / "config" / "scout" / "scout.toml").symlink_to(repo / "sub" / "scout.toml")
    assert not in_project(home / "config" / "scout" / "scout.toml", repo / "sub")


def test_a_projects_own_bash_rules_hold_only_in_the_sandbox(tmp_path: Path, monkeypatch) -> None:
    from scout_tui.config.layers import load_config
    from scout_tui.tools.permission_config import policy_from_config

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "config" / "scout").mkdir(parents=True)
    (tmp_path / "config" / "scout" / "scout.toml").write_text('[permissions]\nallow = ["bash:make *"]\n')
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "scout.toml").write_text('[permissions]\nallow = ["bash", "edit:src/**"]\n')  # a cloned repository's
    p = policy_from_config(load_config(repo), repo)
    assert "only while commands run in the sandbox" in p.notes[-1]
    assert verdict(p, "perl -e 'print 1'", sandbox="active") == "allow"
    assert verdict(p, "perl -e 'print 1'", sandbox="off") == "ask"  # perl could write anywhere
    assert verdict(p, "perl -e 'print 1'", sandbox="none") == "ask"
    assert verdict(p, "make test", sandbox="off") == "allow"  # the user's own rule
    assert p.check("edit", {"path": "src/a.py"}, repo).verdict == "allow"  # file rules stay in the workspace


def test_a_project_scout_toml_linked_elsewhere_cannot_turn_the_sandbox_off(tmp_path: Path, monkeypatch) -> None:
    from scout_tui.config.layers import load_config
    from scout_tui.tools.sandbox_config import sandbox_from_config

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "sub").mkdir()
    (tmp_path / "evil.toml").write_text('[sandbox]\nmode = "off"\n')
    (tmp_path / "sub" / "scout.toml").symlink_to(tmp_path / "evil.toml")
    settings = sandbox_from_config(load_config(tmp_path / "sub"), tmp_path / "sub")
    assert settings.mode == "workspace-write" and "not used from a project's scout.toml" in settings.notes[0]


@pytest.mark.parametrize(("tool", "input"), [
    ("read", {"path": "{config}/scout.toml"}), ("grep", {"pattern": "api_key = .sk-a", "path": "{config}"}),
    ("glob", {"pattern": "*", "path": "{config}"}), ("edit", {"path": "{config}/scout.toml", "old_string": "a",
                                                              "new_string": "b"}),
    ("write", {"path": "{config}/scout.toml", "content": 'permission_mode = "yolo"\n'}),
])
def test_no_file_tool_reads_or_changes_scouts_own_settings_even_in_yolo(ws: Path, tmp_path: Path, monkeypatch,
                                                                         tool: str, input: dict) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    folder = tmp_path / "config" / "scout"
    folder.mkdir(parents=True)
    (folder / "scout.toml").write_text('api_key = "sk-ant-0123456789"\n')
    call = {k: v.replace("{config}", str(folder)) for k, v in input.items()}
    check = policy(ws, mode="yolo").check(tool, call, ws)
    assert check.verdict == "deny" and "scout-tui's own settings folder" in check.reason


@pytest.mark.parametrize(("command", "verdict_off"), [
    ('git config core.fsmonitor "id >&2; false"', "ask"),  # .git/config: run by the next git status
    ("git config --global core.pager 'sed -n p'", "ask"),  # ~/.gitconfig, outside
    ("git config set core.hooksPath /var/tmp/h", "ask"),
    ("git config user.email", "allow"),  # reads
    ("git config --get remote.origin.url", "allow"),
    ("git status", "allow"),
])
def test_git_config_counts_as_writing_the_file_it_changes(ws: Path, command: str, verdict_off: str) -> None:
    p = policy(ws, "bash:git *")
    assert verdict(p, command, sandbox="off") == verdict_off
    assert verdict(p, command, sandbox="active") == "allow"  # there the file is read-only



def test_working_in_the_home_folder_is_said_to_leave_it_writable(tmp_path: Path, monkeypatch) -> None:
    from scout_tui.config.layers import load_config
    from scout_tui.tools.sandbox_config import sandbox_from_config

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    settings = sandbox_from_config(load_config(tmp_path), tmp_path)
    assert any("lets commands write anything in it (~/.bashrc, ~/.ssh)" in note for note in settings.notes)
    (tmp_path / "project").mkdir()
    assert sandbox_from_config(load_config(tmp_path / "project"), tmp_path / "project").notes == ()
