"""The bubblewrap sandbox for bash: real ``bwrap`` runs every command here; attempts to write
outside the workspace, read scout-tui's environment or reach the network must fail."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import tomllib
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from scout_tui.engine.agent import Agent
from scout_tui.engine.settings import AgentSettings
from scout_tui.backends import make_backend
from scout_tui.config.layers import Config, ConfigFile
from scout_tui.core.errors import ScoutError
from scout_tui.session.runtime import build_agent
from scout_tui.tools import ToolContext, ToolResult, builtin_registry
from scout_tui.tools import sandbox as sandbox_module
from scout_tui.tools import seccomp
from scout_tui.tools.sandbox import (SandboxSettings, available, filter_path, in_force, sandboxed, unix_sockets,
                                     wrap)
from scout_tui.tools.sandbox_after import blocked_note
from scout_tui.tools.sandbox_config import sandbox_from_config
from tests.loopback import LoopbackServer, Reply, anthropic_stream
from tests.process_helpers import processes_with

BWRAP_REASON = ("bwrap cannot run here (not installed, or namespaces are forbidden): install the "
                "Debian/Ubuntu package bubblewrap, as .ci/run does")
needs_bwrap = pytest.mark.skipif(not (sys.platform.startswith("linux") and available()), reason=BWRAP_REASON)

# The interpreter itself, not a venv's link to it: a venv under /tmp (a clone in /tmp, say) is
# hidden inside the sandbox, whose /tmp is private.
PY = shlex.quote(os.path.realpath(sys.executable))
BLOCKED = "the sandbox (workspace-write) blocked a write"


@pytest.fixture(autouse=True)
def _data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a sandboxed command's quarantine moves aside goes to a test's own data folder."""
    monkeypatch.setenv("SCOUT_HOME", str(tmp_path / "data"))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def outside() -> Iterator[Path]:
    """A real directory outside the workspace and outside /tmp (inside the sandbox, /tmp is a
    private tmpfs, where a write would succeed unseen and prove nothing)."""
    base = Path("/var/tmp") if os.access("/var/tmp", os.W_OK) else Path.home()
    path = Path(tempfile.mkdtemp(prefix="scout-sandbox-", dir=base))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def in_sandbox(workspace: Path, **settings: object) -> ToolContext:
    return ToolContext(cwd=workspace, sandbox=SandboxSettings(**settings))  # type: ignore[arg-type]


async def bash(ctx: ToolContext, command: str, **extra: object) -> ToolResult:
    return await builtin_registry().call("bash", {"command": command, **extra}, ctx)


# -- writes outside the workspace -----------------------------------------------------------

ESCAPES = {
    "cp": "cp a.txt {target}",
    "tee": "echo x | tee {target}",
    "git diff --output": "git diff --no-index --output={target} a.txt b.txt",
    "dd of=": "dd if=a.txt of={target} status=none",
    "python one-liner": PY + " -c \"open('{target}', 'w').write('x')\"",
    "script file": "printf 'echo x > {target}\\n' > s.sh && bash s.sh",
}


@needs_bwrap
@pytest.mark.parametrize("command", ESCAPES.values(), ids=ESCAPES.keys())
async def test_workspace_write_blocks_writes_outside_the_workspace(workspace: Path, outside: Path,
                                                                    command: str) -> None:
    (workspace / "a.txt").write_text("a\n")
    (workspace / "b.txt").write_text("b\n")
    target = outside / "x"
    result = await bash(in_sandbox(workspace), command.format(target=target))
    assert not target.exists()
    assert result.is_error and "Read-only file system" in result.content
    assert BLOCKED in result.content and "outside_sandbox: true" in result.content


@needs_bwrap
@pytest.mark.parametrize("command", [
    "touch {target}; mkdir -p build; echo ok > build/out.txt",
    "echo x > {target} || true",
    PY + " -c \"open('{target}', 'w')\" 2>&1 | tail -1",
    "cp a.txt {target}; echo copied",
], ids=["touch then a write that works", "redirect || true", "python through a pipe", "cp then echo"])
async def test_a_blocked_write_is_an_error_even_when_the_last_part_succeeds(workspace: Path, outside: Path,
                                                                           command: str) -> None:
    (workspace / "a.txt").write_text("a\n")
    target = outside / "x"
    result = await bash(in_sandbox(workspace), command.format(target=target))
    assert not target.exists()
    assert result.is_error, result.content
    assert BLOCKED in result.content and "outside_sandbox: true" in result.content
    assert "[exit code" not in result.content  # it did exit 0: the note says what failed
    assert result.notice and "sandbox (workspace-write) blocked a write" in result.notice  # the person reads it too


@needs_bwrap
async def test_output_that_only_quotes_a_refusal_is_not_an_error(workspace: Path) -> None:
    (workspace / "notes.py").write_text('if "Read-only file system" in text or "EROFS" in text:\n    pass\n'
                                        "# Permission denied: /etc/shadow\n")
    result = await bash(in_sandbox(workspace), "grep -n 'file system\\|denied' notes.py")
    assert not result.is_error and BLOCKED not in result.content, result.content


@needs_bwrap
async def test_a_refused_read_in_a_command_that_succeeds_is_not_blamed_on_the_sandbox(workspace: Path) -> None:
    result = await bash(in_sandbox(workspace), "cat /proc/1/environ /nonexistent/x 2>&1 | head -3; "
                                               "echo 'cat: /root/x: Permission denied'")
    assert not result.is_error and BLOCKED not in result.content, result.content


@needs_bwrap
async def test_workspace_stays_writable(workspace: Path) -> None:
    result = await bash(in_sandbox(workspace), "mkdir -p sub && echo hello > sub/f.txt && cat sub/f.txt")
    assert result.content == "hello\n" and not result.is_error
    assert (workspace / "sub" / "f.txt").read_text() == "hello\n"


@needs_bwrap
async def test_writable_paths_can_be_written(workspace: Path, outside: Path) -> None:
    ctx = in_sandbox(workspace, writable=(outside,))
    result = await bash(ctx, f"echo x > {outside}/x")
    assert not result.is_error, result.content
    assert (outside / "x").read_text() == "x\n"


@needs_bwrap
async def test_tmp_is_private(workspace: Path) -> None:
    name = f"/tmp/scout-sandbox-{uuid.uuid4().hex}"
    result = await bash(in_sandbox(workspace), f"echo x > {name} && cat {name}")
    assert result.content == "x\n"
    assert not Path(name).exists()


@needs_bwrap
async def test_read_only_mode_blocks_workspace_writes(workspace: Path) -> None:
    result = await bash(in_sandbox(workspace, mode="read-only"), "echo x > f.txt")
    assert not (workspace / "f.txt").exists()
    assert result.is_error and "the sandbox (read-only) blocked a write" in result.content


@needs_bwrap
async def test_read_only_mode_can_still_read_the_workspace(workspace: Path) -> None:
    (workspace / "f.txt").write_text("kept\n")
    assert (await bash(in_sandbox(workspace, mode="read-only"), "cat f.txt")).content == "kept\n"


async def test_off_runs_unsandboxed(workspace: Path) -> None:
    result = await bash(in_sandbox(workspace, mode="off"), "echo $PPID")
    assert int(result.content) == os.getpid()  # the shell's parent is this process, not bwrap


async def test_no_settings_runs_unsandboxed(workspace: Path) -> None:
    assert int((await bash(ToolContext(cwd=workspace), "echo $PPID")).content) == os.getpid()


async def test_failure_not_caused_by_the_sandbox_gets_no_note(workspace: Path) -> None:
    result = await bash(in_sandbox(workspace), "echo oops; exit 3")
    assert result.content == "oops\n[exit code 3]"


@needs_bwrap
async def test_the_agents_bash_calls_run_in_its_sandbox(workspace: Path, outside: Path) -> None:
    command = json.dumps({"command": f"echo x > {outside}/x"})
    replies = [Reply(anthropic_stream([], ("toolu_s", "bash", [command]))), Reply(anthropic_stream(["done"]))]
    with LoopbackServer(replies) as server:
        backend = make_backend("anthropic", model="m", api_key="sk-test", base_url=server.url, max_retries=0)
        agent = Agent(backend, builtin_registry(), AgentSettings(cwd=workspace, sandbox=SandboxSettings()))
        [e async for e in agent.run([], "write outside")]
    assert not (outside / "x").exists()
    assert BLOCKED in agent.messages[2]["content"][0]["content"]


# -- what runs outside the sandbox later ------------------------------------------------------

GIT = "git -c user.email=t@example.com -c user.name=t"


def git_repo(workspace: Path) -> None:
    """``workspace`` made a git repository with one commit, as a person's checkout would be."""
    subprocess.run(f"git init -q . && echo a > a.txt && {GIT} add a.txt && {GIT} commit -q -m one", shell=True,
                   cwd=workspace, check=True)


@needs_bwrap
async def test_a_commit_works_in_the_sandbox(workspace: Path) -> None:
    git_repo(workspace)
    result = await bash(in_sandbox(workspace), f"git checkout -q -b topic && echo b > b.txt && git add b.txt && "
                                               f"{GIT} commit -q -m two && git log --format=%s")
    assert result.content == "two\none\n", result.content
    assert (workspace / "b.txt").exists()


@needs_bwrap
async def test_git_config_cannot_be_written_from_the_sandbox(workspace: Path) -> None:
    git_repo(workspace)
    before = (workspace / ".git" / "config").read_text()
    result = await bash(in_sandbox(workspace), "echo '[core] fsmonitor = touch /var/tmp/pwned' >> .git/config")
    assert result.is_error and "Read-only file system" in result.content and BLOCKED in result.content
    result = await bash(in_sandbox(workspace), "git config core.fsmonitor 'touch /var/tmp/pwned'")
    assert result.is_error and BLOCKED in result.content  # git renames config.lock over it: EBUSY
    assert (workspace / ".git" / "config").read_text() == before


@needs_bwrap
async def test_git_hooks_cannot_be_planted_from_the_sandbox(workspace: Path) -> None:
    git_repo(workspace)
    result = await bash(in_sandbox(workspace), "printf '#!/bin/sh\\ntouch x\\n' > .git/hooks/post-checkout")
    assert result.is_error and BLOCKED in result.content
    assert not (workspace / ".git" / "hooks" / "post-checkout").exists()


@needs_bwrap
async def test_git_folder_cannot_be_swapped_for_one_with_another_config(workspace: Path) -> None:
    git_repo(workspace)
    result = await bash(in_sandbox(workspace), "mv .git .git-old")
    assert result.is_error and "Device or resource busy" in result.content
    assert (workspace / ".git" / "config").is_file() and not (workspace / ".git-old").exists()


@needs_bwrap
async def test_a_git_file_pointing_at_the_gitdir_is_read_only(workspace: Path) -> None:
    (workspace / ".git").write_text("gitdir: /srv/repo/.git/worktrees/ws\n")
    result = await bash(in_sandbox(workspace), "echo 'gitdir: ./evil' > .git")
    assert result.is_error and BLOCKED in result.content
    assert (workspace / ".git").read_text() == "gitdir: /srv/repo/.git/worktrees/ws\n"


PLANTS = {
    "plugin": ".agents/plugins/p.py",
    "skill": ".agents/skills/s/SKILL.md",
    "theme": ".scout/themes/t.toml",
    "project config": "scout.toml",
}


@needs_bwrap
@pytest.mark.parametrize("name", PLANTS.values(), ids=PLANTS.keys())
async def test_what_scout_tui_loads_at_start_cannot_be_planted_when_it_exists(workspace: Path, name: str) -> None:
    top = workspace / Path(name).parts[0]
    if top.name == "scout.toml":
        top.write_text("")
    else:
        top.mkdir()
    result = await bash(in_sandbox(workspace), f"mkdir -p $(dirname {name}) && echo pwned > {name}")
    assert result.is_error and BLOCKED in result.content
    assert not (workspace / name).exists() or "pwned" not in (workspace / name).read_text()


@needs_bwrap
async def test_the_sandbox_creates_nothing_in_the_workspace(workspace: Path) -> None:
    # Protecting a path that does not exist would leave an empty mount point in the repository:
    # the sandbox does not (what a command creates there is moved aside after it, tested below).
    assert (await bash(in_sandbox(workspace), "ls -A")).content == "(no output)"
    assert list(workspace.iterdir()) == []


def test_protected_paths_are_bound_read_only_after_the_workspace(tmp_path: Path) -> None:
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git" / "config").write_text("")
    (tmp_path / ".agents").mkdir()
    line = wrap(["true"], tmp_path, SandboxSettings(), bwrap="bwrap")
    workspace_bind = line.index("--bind")
    binds = [line[i + 1] for i, word in enumerate(line) if word == "--ro-bind-try"]
    assert binds == [str(tmp_path / ".git" / "config"), str(tmp_path / ".git" / "hooks"), str(tmp_path / ".agents")]
    pin = line.index("--bind", workspace_bind + 1)
    assert line[pin + 1] == str(tmp_path / ".git") and pin < line.index("--ro-bind-try")
    assert not (tmp_path / ".scout").exists() and not (tmp_path / "scout.toml").exists()  # nothing created
    assert "--ro-bind-try" not in wrap(["true"], tmp_path, SandboxSettings(mode="read-only"))


# -- sockets and scout-tui's config -----------------------------------------------------------


@pytest.fixture
def listening(outside: Path) -> Iterator[Path]:
    """A unix socket outside /tmp that accepts connections (a stand-in for an ssh agent)."""
    path = outside / "agent.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(4)
    yield path
    server.close()


def unix_connect(path: Path | str) -> str:
    return PY + f" -c \"import socket; socket.socket(socket.AF_UNIX).connect({str(path)!r}); print('connected')\""


@pytest.fixture
def without_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sandbox as on a machine without the seccomp filter: what hides sockets by path must
    hold on its own there."""
    monkeypatch.setattr(sandbox_module, "filter_path", lambda: None)


@needs_bwrap
@pytest.mark.parametrize("mode", ["workspace-write", "read-only"])
async def test_the_ssh_agent_socket_is_hidden(workspace: Path, listening: Path, mode: str,
                                              monkeypatch: pytest.MonkeyPatch, without_filter: None) -> None:
    monkeypatch.setenv("SSH_AUTH_SOCK", str(listening))
    result = await bash(in_sandbox(workspace, mode=mode), unix_connect(listening))
    assert result.is_error and "connected" not in result.content
    assert "ConnectionRefusedError" in result.content


@needs_bwrap
async def test_the_user_runtime_folder_with_the_session_bus_is_hidden(workspace: Path, outside: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      without_filter: None) -> None:
    runtime = outside / "run-user"
    runtime.mkdir()
    bus = socket.socket(socket.AF_UNIX)
    bus.bind(str(runtime / "bus"))
    bus.listen(4)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    try:
        result = await bash(in_sandbox(workspace), f"ls -A {runtime}; " + unix_connect(runtime / "bus"))
    finally:
        bus.close()
    assert result.is_error and result.content.startswith("Traceback")  # ls showed an empty folder
    assert "FileNotFoundError" in result.content


async def test_without_the_sandbox_the_socket_is_reachable(workspace: Path, listening: Path) -> None:
    # What the test above is for: the same client unsandboxed connects.
    assert (await bash(in_sandbox(workspace, mode="off"), unix_connect(listening))).content == "connected\n"


@needs_bwrap
@pytest.mark.parametrize("mode", ["workspace-write", "read-only"])
async def test_scout_tuis_config_folder_is_hidden(workspace: Path, outside: Path, mode: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(outside / "config"))
    user = outside / "config" / "scout" / "scout.toml"
    user.parent.mkdir(parents=True)
    user.write_text(f'api_key = "{SECRET}"\n')
    result = await bash(in_sandbox(workspace, mode=mode), f"ls -A {user.parent}; base64 -w0 {user}")
    assert result.is_error and result.content.startswith(f"base64: {user}: No such file or directory")
    assert "c2stdGVzdC1zZWNyZXQ" not in result.content  # the key's base64


def test_hidden_sockets_and_folders_come_after_the_workspace(tmp_path: Path, outside: Path, listening: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSH_AUTH_SOCK", str(listening))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(outside / "config"))
    (outside / "config" / "scout").mkdir(parents=True)
    line = wrap(["true"], tmp_path, SandboxSettings(writable=(outside,)), bwrap="bwrap")
    assert line[line.index("/dev/null") + 1] == str(listening)
    assert line[line.index(str(outside / "config" / "scout")) - 1] == "--tmpfs"
    assert line.index("--bind-try") < line.index("/dev/null") < line.index(str(outside / "config" / "scout"))


def test_a_config_folder_holding_the_workspace_is_not_hidden(outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(outside))
    workspace = outside / "scout" / "project"
    workspace.mkdir(parents=True)
    assert str(outside / "scout") not in wrap(["true"], workspace, SandboxSettings())[:-4]


# -- unix sockets: the seccomp filter ------------------------------------------------------------

needs_filter = pytest.mark.skipif(seccomp.program() is None,
                                  reason=f"no seccomp filter for {seccomp.machine_name()} (x86_64 and aarch64 only)")


@pytest.fixture
def fresh_probe() -> Iterator[None]:
    """bwrap is probed again in this test, and again after it."""
    available.cache_clear()
    yield
    available.cache_clear()


@pytest.fixture
def abstract_socket() -> Iterator[str]:
    """A listening unix socket in the abstract namespace (no path: no mount can hide it)."""
    name = f"\0scout-test-{uuid.uuid4().hex}"
    server = socket.socket(socket.AF_UNIX)
    server.bind(name)
    server.listen(4)
    yield name
    server.close()


@needs_bwrap
@needs_filter
@pytest.mark.parametrize("mode", ["workspace-write", "read-only"])
async def test_a_unix_socket_outside_every_hidden_list_is_not_reachable(workspace: Path, listening: Path,
                                                                         mode: str) -> None:
    # listening is under /var/tmp (or HOME): visible in the sandbox, hidden by no path.
    result = await bash(in_sandbox(workspace, mode=mode), f"test -S {listening} && " + unix_connect(listening))
    assert result.is_error and "connected" not in result.content
    assert "PermissionError: [Errno 13] Permission denied" in result.content


@needs_bwrap
async def test_without_the_filter_that_socket_is_reachable(workspace: Path, listening: Path,
                                                           without_filter: None) -> None:
    # What the filter is for: a read-only bind does not stop connect().
    assert (await bash(in_sandbox(workspace), unix_connect(listening))).content == "connected\n"


@needs_bwrap
@needs_filter
async def test_an_abstract_unix_socket_is_not_reachable(workspace: Path, abstract_socket: str) -> None:
    result = await bash(in_sandbox(workspace), unix_connect(abstract_socket))
    assert result.is_error and "PermissionError: [Errno 13] Permission denied" in result.content


@needs_bwrap
async def test_without_the_filter_an_abstract_socket_is_reachable(workspace: Path, abstract_socket: str,
                                                                  without_filter: None) -> None:
    # Abstract sockets belong to the network namespace, which the sandbox shares when the network is on.
    assert (await bash(in_sandbox(workspace), unix_connect(abstract_socket))).content == "connected\n"


PAIRS = """
import asyncio, socket
a, b = socket.socketpair()
a.sendall(b"stream")
print(b.recv(6).decode())
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
a.send(b"seqpacket")
print(b.recv(9).decode())
async def main():
    proc = await asyncio.create_subprocess_exec("echo", "asyncio", stdout=asyncio.subprocess.PIPE)
    print((await proc.communicate())[0].decode().strip())
asyncio.run(main())
"""


@needs_bwrap
@needs_filter
@pytest.mark.parametrize("mode", ["workspace-write", "read-only"])
async def test_socketpairs_and_asyncio_still_work(workspace: Path, mode: str) -> None:
    (workspace / "pairs.py").write_text(PAIRS)
    result = await bash(in_sandbox(workspace, mode=mode), f"{PY} pairs.py")
    assert result.content == "stream\nseqpacket\nasyncio\n"


@needs_bwrap
@needs_filter
async def test_a_datagram_socketpair_is_refused(workspace: Path) -> None:
    # One of its sockets could sendto() any datagram socket of the host (journald, an abstract one).
    command = PY + " -c \"import socket; socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\""
    result = await bash(in_sandbox(workspace), command)
    assert result.is_error and "PermissionError: [Errno 13] Permission denied" in result.content


@needs_bwrap
async def test_everyday_commands_still_run(workspace: Path) -> None:
    git_repo(workspace)
    command = (f"git status --short && echo git ok && {PY} -c 'import asyncio; asyncio.run(asyncio.sleep(0)); "
               "print(\"asyncio ok\")'")
    if shutil.which("curl"):
        command += " && curl --version >/dev/null && echo curl ok"
    result = await bash(in_sandbox(workspace), command)
    assert result.content == "git ok\nasyncio ok\n" + ("curl ok\n" if shutil.which("curl") else "")


RAW_CALLS = """
import ctypes, errno, platform
libc = ctypes.CDLL(None, use_errno=True)
def call(*args):
    return "ok" if libc.syscall(*args) >= 0 else errno.errorcode[ctypes.get_errno()]
print("io_uring_setup", call(425, 1, None))
if platform.machine() == "x86_64":
    print("x32 socket(AF_UNIX)", call(0x40000000 | 41, 1, 1, 0))
"""


@needs_bwrap
@needs_filter
async def test_io_uring_and_x32_calls_cannot_go_around_the_filter(workspace: Path) -> None:
    (workspace / "raw.py").write_text(RAW_CALLS)
    result = await bash(in_sandbox(workspace), f"{PY} raw.py")
    assert result.content.startswith("io_uring_setup ENOSYS\n")  # as on a kernel without io_uring
    if seccomp.machine_name() == "x86_64":
        assert "x32 socket(AF_UNIX) EACCES" in result.content


I386_CALLS = """
import ctypes, mmap, struct
def int80(nr, *args):
    # push rbx; mov eax, nr; mov ebx, ecx, edx; int 0x80; pop rbx; ret: a 32-bit x86 syscall
    args = (*args, 0, 0, 0)[:3]
    code = (b"\\x53\\xb8" + struct.pack("<I", nr) + b"\\xbb" + struct.pack("<I", args[0]) + b"\\xb9"
            + struct.pack("<I", args[1]) + b"\\xba" + struct.pack("<I", args[2]) + b"\\xcd\\x80\\x5b\\xc3")
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    return ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))()
print("socket(AF_INET)", "ok" if int80(359, 2, 1) >= 0 else "refused")
print("socket(AF_UNIX)", int80(359, 1, 1))
print("socketcall(SYS_SOCKET)", int80(102, 1, 0))
print("socketpair(AF_UNIX, SOCK_DGRAM)", int80(360, 1, 2, 0))
"""


@needs_bwrap
@needs_filter
@pytest.mark.skipif(seccomp.machine_name() != "x86_64", reason="int 0x80 is x86")
async def test_32_bit_socket_calls_are_refused_too(workspace: Path) -> None:
    (workspace / "i386.py").write_text(I386_CALLS)
    unsandboxed = subprocess.run([sys.executable, workspace / "i386.py"], capture_output=True, text=True)
    if not unsandboxed.stdout.startswith("socket(AF_INET) ok"):
        pytest.skip("this kernel runs no 32-bit x86 calls (no IA32 emulation)")
    result = await bash(in_sandbox(workspace), f"{PY} i386.py")
    # -13 is -EACCES; unsandboxed, socketcall's NULL argument pointer gives -14 (EFAULT).
    assert result.content == ("socket(AF_INET) ok\nsocket(AF_UNIX) -13\nsocketcall(SYS_SOCKET) -13\n"
                              "socketpair(AF_UNIX, SOCK_DGRAM) -13\n")


@needs_bwrap
@needs_filter
async def test_the_filters_descriptor_is_closed_in_the_sandbox(workspace: Path) -> None:
    result = await bash(in_sandbox(workspace), "ls /proc/self/fd")
    assert "9" not in result.content.split()


@needs_filter
def test_wrap_hands_bwrap_the_filter_on_descriptor_9(tmp_path: Path) -> None:
    line = wrap(["true"], tmp_path, SandboxSettings(), bwrap="bwrap", seccomp_filter=True)
    path = filter_path()
    assert line[:5] == ["/bin/sh", "-c", 'exec 9<"$0" && exec "$@"', path, "bwrap"]
    assert line[line.index("--seccomp") + 1] == "9" and line.index("--seccomp") < line.index("--")
    assert Path(path).read_bytes() == seccomp.program()
    assert Path(path).stat().st_mode & 0o777 == 0o600


@needs_filter
def test_a_filter_file_that_went_missing_is_written_again() -> None:
    Path(filter_path()).unlink()  # a /tmp cleaner
    assert Path(filter_path()).read_bytes() == seccomp.program()


@needs_filter
def test_a_kernel_that_refuses_the_filter_keeps_the_sandbox_without_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      fresh_probe: None) -> None:
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\ncase " $* " in *" --seccomp "*)\n'
                    '  echo "bwrap: prctl(PR_SET_SECCOMP): Invalid argument" >&2; exit 1;;\nesac\nexit 0\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    assert available()
    assert "--seccomp" not in wrap(["true"], tmp_path, SandboxSettings())
    assert unix_sockets() == ("reachable but for the hidden ones: bwrap could not load the seccomp filter "
                              "(bwrap: prctl(PR_SET_SECCOMP): Invalid argument)")


@needs_bwrap
def test_a_machine_without_a_filter_runs_bwrap_directly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       fresh_probe: None) -> None:
    monkeypatch.setattr(seccomp, "machine_name", lambda: "riscv64")
    assert available()
    assert wrap(["true"], tmp_path, SandboxSettings(), bwrap="bwrap")[0] == "bwrap"
    assert unix_sockets() == ("reachable but for the hidden ones: no seccomp filter for riscv64 "
                              "(x86_64 and aarch64 only)")


@needs_bwrap
@needs_filter
def test_the_doctor_line_says_unix_sockets_are_blocked() -> None:
    assert unix_sockets().startswith("blocked: a command cannot open a unix socket")


# -- the environment of scout-tui -------------------------------------------------------------

SECRET = "sk-test-secret-only-in-scout-tui-0123456789"
SHOW_ENVIRONS = "cat /proc/$PPID/environ /proc/1/environ; for p in /proc/[0-9]*; do cat $p/environ; done 2>/dev/null"
# /proc/PID/environ is the environment a process started with, so the key must be there at the
# start of a scout-tui-like process (as when it was exported before running scout-tui).
RUN_TOOL = """
import asyncio, sys
from pathlib import Path
from scout_tui.config import keys
from scout_tui.config.layers import Config
from scout_tui.session.runtime import tool_environment
from scout_tui.tools import ToolContext, builtin_registry
from scout_tui.tools.sandbox import SandboxSettings
if sys.argv[4] == "withhold":
    keys.withhold()  # what build_agent does first
env = tool_environment(Config(provider="anthropic"))
env.pop("SCOUT_TEST_SECRET", None)
ctx = ToolContext(Path(sys.argv[1]), env=env, sandbox=SandboxSettings(mode=sys.argv[2]))
print(asyncio.run(builtin_registry().call("bash", {"command": sys.argv[3]}, ctx)).content)
"""


async def environments_seen(workspace: Path, mode: str, monkeypatch: pytest.MonkeyPatch, *, withhold: bool = False,
                            command: str = SHOW_ENVIRONS) -> str:
    """What ``SHOW_ENVIRONS`` prints run by the bash tool of a process whose own environment
    holds ``SECRET`` (a provider key, and a variable the tools' environment leaves out);
    ``withhold``: the process first takes the key variables out of its environment."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("SCOUT_TEST_SECRET", SECRET)
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", RUN_TOOL, str(workspace), mode, command,
                                                "withhold" if withhold else "keep",
                                                stdout=asyncio.subprocess.PIPE, env=dict(os.environ))
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0
    return out.decode()


@needs_bwrap
async def test_proc_shows_no_key_from_scout_tuis_environment(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = await environments_seen(workspace, "workspace-write", monkeypatch)
    assert "PATH=" in seen  # it did read environments, only not scout-tui's
    assert SECRET not in seen


async def test_without_the_sandbox_proc_shows_the_key(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What the sandbox is for: the same command unsandboxed reads its parent's environment.
    assert SECRET in await environments_seen(workspace, "off", monkeypatch)


async def test_once_withheld_the_key_is_not_in_proc_even_unsandboxed(workspace: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # keys.withhold blanks OPENAI_API_KEY in the process's initial environment block, which
    # /proc/$PPID/environ shows and unsetenv leaves alone. SCOUT_TEST_SECRET (no key variable)
    # stays: the proof that the tool did read scout-tui's environment.
    # Only scout-tui's own entry: other processes on the machine may hold such a variable.
    seen = await environments_seen(workspace, "off", monkeypatch, withhold=True, command="cat /proc/$PPID/environ")
    assert "SCOUT_TEST_SECRET=" in seen and "OPENAI_API_KEY" not in seen


# -- the network -------------------------------------------------------------------------------


@pytest.fixture
async def loopback_port() -> Iterator[int]:
    """A server on 127.0.0.1 that answers "hi" to every connection."""
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"hi")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()


def connect(port: int) -> str:
    return PY + f" -c \"import socket; print(socket.create_connection(('127.0.0.1', {port}), 5).recv(2))\""


@needs_bwrap
async def test_network_off_blocks_a_loopback_connection(workspace: Path, loopback_port: int) -> None:
    result = await bash(in_sandbox(workspace, network=False), connect(loopback_port))
    assert result.is_error and "b'hi'" not in result.content
    assert "ConnectionRefusedError" in result.content or "unreachable" in result.content


@needs_bwrap
async def test_network_is_on_by_default(workspace: Path, loopback_port: int) -> None:
    result = await bash(in_sandbox(workspace), connect(loopback_port))
    assert result.content == "b'hi'\n"


# -- stopping a sandboxed command ---------------------------------------------------------------


class Output:
    """An ``on_output`` callback a test can wait on."""

    def __init__(self) -> None:
        self.text = ""
        self.changed = asyncio.Event()

    def __call__(self, text: str) -> None:
        self.text += text
        self.changed.set()

    async def wait_for(self, piece: str) -> None:
        while piece not in self.text:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 60)  # a hang guard, not a timing


def long_sleep() -> tuple[str, str]:
    """A command whose background sleep has a unique argument, and that argument."""
    token = f"600.{uuid.uuid4().int % 10**9:09d}"
    return f"sleep {token} & echo started; wait", token


@needs_bwrap
async def test_timeout_kills_the_sandboxed_command(workspace: Path) -> None:
    command, token = long_sleep()
    result = await asyncio.wait_for(bash(in_sandbox(workspace), command, timeout=1), 60)
    assert "[timed out after 1 s; the command and its child processes were killed]" in result.content
    assert processes_with(token) == []


@needs_bwrap
async def test_cancellation_kills_the_sandboxed_command(workspace: Path) -> None:
    out = Output()
    command, token = long_sleep()
    ctx = ToolContext(cwd=workspace, on_output=out, sandbox=SandboxSettings())
    task = asyncio.create_task(bash(ctx, command))
    await out.wait_for("started")
    assert processes_with(token)  # bwrap, its init, the shell and the sleep
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 60)  # only the kill ends a 600 s sleep
    assert processes_with(token) == []


@needs_bwrap
async def test_stopping_the_call_kills_the_sandboxed_command(workspace: Path) -> None:
    out = Output()
    command, token = long_sleep()
    ctx = ToolContext(cwd=workspace, on_output=out, sandbox=SandboxSettings())
    task = asyncio.create_task(bash(ctx, command))
    await out.wait_for("started")
    ctx.stop.set()
    result = await asyncio.wait_for(task, 60)
    assert "[stopped by the user" in result.content
    assert processes_with(token) == []


# -- the command line -------------------------------------------------------------------------


def test_wrap_binds_the_workspace_after_the_private_tmp(tmp_path: Path) -> None:
    line = wrap(["bash", "-c", "x"], tmp_path, SandboxSettings(), bwrap="bwrap", seccomp_filter=False)
    assert line[:4] == ["bwrap", "--ro-bind", "/", "/"]
    assert line.index("--tmpfs") < line.index("--bind")
    assert line[line.index("--bind") + 1 : line.index("--bind") + 3] == [str(tmp_path), str(tmp_path)]
    assert line[-4:] == ["--", "bash", "-c", "x"]
    assert "--unshare-pid" in line and "--die-with-parent" in line
    assert "--new-session" not in line  # it would leave the process group bash kills
    assert "--unshare-net" not in line


def test_wrap_cuts_the_network_when_it_is_off(tmp_path: Path) -> None:
    assert "--unshare-net" in wrap(["true"], tmp_path, SandboxSettings(network=False))


def test_wrap_binds_the_workspace_read_only_in_read_only_mode(tmp_path: Path) -> None:
    line = wrap(["true"], tmp_path, SandboxSettings(mode="read-only", writable=(Path("/srv"),)))
    assert "--bind" not in line and "--bind-try" not in line
    assert line.count(str(tmp_path)) == 3  # --ro-bind SRC DEST, --chdir


def test_permission_denied_inside_the_workspace_is_not_blamed_on_the_sandbox(tmp_path: Path) -> None:
    settings = SandboxSettings()
    assert blocked_note(f"bash: {tmp_path}/f: Permission denied", tmp_path, settings) is None
    assert blocked_note("bash: /etc/passwd: Permission denied", tmp_path, settings)


@needs_bwrap
def test_a_plugin_starts_its_process_in_the_sandbox_the_same_way(tmp_path: Path) -> None:
    assert sandboxed(["make"], tmp_path, SandboxSettings()) == wrap(["make"], tmp_path, SandboxSettings())
    assert sandboxed(["make"], tmp_path, SandboxSettings(mode="off")) == ["make"]
    assert sandboxed(["make"], tmp_path, None) == ["make"]


def test_in_force_is_off_without_settings() -> None:
    assert in_force(None) == "off"
    assert in_force(SandboxSettings(mode="off")) == "off"


# -- configuration -----------------------------------------------------------------------------


def config_with(*files: tuple[Path, str]) -> Config:
    return Config(layers=[ConfigFile(path, text, tomllib.loads(text)) for path, text in files])


def test_defaults_to_workspace_write_with_network(tmp_path: Path) -> None:
    assert sandbox_from_config(Config(), tmp_path) == SandboxSettings("workspace-write", (), True)


def test_settings_come_from_the_sandbox_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    user = tmp_path / "home" / "scout.toml"
    settings = sandbox_from_config(config_with(
        (user, '[sandbox]\nmode = "read-only"\nnetwork = false\nwritable = ["~/.cache", "../shared"]\n')),
        tmp_path / "ws")
    assert settings == SandboxSettings("read-only", (tmp_path / "home" / ".cache", tmp_path / "shared"), False)


def test_a_bad_mode_names_the_file_and_line(tmp_path: Path) -> None:
    user = tmp_path / "scout.toml"
    with pytest.raises(ScoutError, match=rf"^{user}:3: sandbox.mode must be one of workspace-write, read-only, off, "
                                         r"got 'workspace'"):
        sandbox_from_config(config_with((user, 'model = "m"\n[sandbox]\nmode = "workspace"\n')), tmp_path / "ws")


def test_an_unknown_key_names_the_file_and_line(tmp_path: Path) -> None:
    user = tmp_path / "scout.toml"
    with pytest.raises(ScoutError, match=rf"^{user}:2: unknown key 'writeable' in \[sandbox\]"):
        sandbox_from_config(config_with((user, '[sandbox]\nwriteable = ["/srv"]\n')), tmp_path / "ws")


@pytest.mark.parametrize("text, message", [
    ('sandbox = "off"\n', r":1: \[sandbox\] must be a table"),
    ('[sandbox]\nnetwork = "no"\n', r":2: sandbox.network must be true or false"),
    ('[sandbox]\nwritable = "/srv"\n', r":2: sandbox.writable must be a list of paths"),
])
def test_bad_values_name_the_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ScoutError, match=message):
        sandbox_from_config(config_with((tmp_path / "scout.toml", text)), tmp_path / "ws")


def test_a_projects_own_file_cannot_loosen_the_sandbox(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    user = tmp_path / "home" / "scout.toml"
    project = workspace / "scout.toml"
    settings = sandbox_from_config(config_with(
        (user, '[sandbox]\nmode = "read-only"\nnetwork = false\n'),
        (project, '[sandbox]\nmode = "off"\nnetwork = true\nwritable = ["/"]\n')), workspace)
    assert (settings.mode, settings.writable, settings.network) == ("read-only", (), False)
    assert [note.split(": ")[0] for note in settings.notes] == [f"{project}:2", f"{project}:3", f"{project}:4"]


def test_a_projects_own_file_can_tighten_the_sandbox(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = sandbox_from_config(config_with(
        (workspace / "scout.toml", '[sandbox]\nmode = "read-only"\nnetwork = false\n')), workspace)
    assert (settings.mode, settings.network, settings.notes) == ("read-only", False, ())


def test_build_agent_gives_the_agent_the_configs_sandbox(tmp_path: Path) -> None:
    user = tmp_path / "scout.toml"
    config = config_with((user, '[sandbox]\nmode = "read-only"\n'))
    config.api_key = "sk-test-key-123"
    agent = build_agent(config, tmp_path)
    assert agent.sandbox == SandboxSettings(mode="read-only")


@needs_bwrap
@pytest.mark.parametrize("command", ["mkdir -p .agents/plugins && echo 'print(1)' > .agents/plugins/p.py",
                                     "echo 'mode = \"off\"' > scout.toml", "mkdir .scout"])
async def test_what_a_sandboxed_command_creates_of_scouts_own_code_is_moved_aside(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    # A mount can only make read-only what exists; a plugin planted where none was would run,
    # unsandboxed, at scout-tui's next start.
    monkeypatch.setenv("SCOUT_HOME", str(tmp_path / "data"))
    result = await bash(in_sandbox(workspace), command)
    assert not [name for name in (".agents", ".scout", "scout.toml") if os.path.lexists(workspace / name)]
    assert "would run outside the sandbox later" in result.content and "use the write or edit tool" in result.content
    assert result.notice and "moved to" in result.notice  # for the person too, not only the model
    [folder] = (tmp_path / "data" / "quarantine").iterdir()
    assert list(folder.iterdir())  # kept for the person to review, not deleted


@needs_bwrap
async def test_a_command_that_creates_nothing_protected_is_left_alone(workspace: Path) -> None:
    result = await bash(in_sandbox(workspace), "mkdir -p src && echo x > src/a.txt")
    assert (workspace / "src" / "a.txt").exists() and "scout-tui would load" not in result.content


def test_network_off_without_the_sandbox_is_said_to_have_no_effect(tmp_path: Path) -> None:
    settings = sandbox_from_config(config_with((tmp_path / "u.toml", '[sandbox]\nmode = "off"\nnetwork = false\n')),
                                   tmp_path / "ws")
    assert any("commands get no network only where bwrap can run" in note for note in settings.notes)


@needs_bwrap
async def test_with_the_sandbox_off_network_false_still_cuts_the_network(workspace: Path, outside: Path) -> None:
    # mode = "off": no filesystem sandbox (a write outside works), but no network either.
    import socket

    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        command = (f"{PY} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3)\"; "
                   f"echo x > {outside}/written")
        result = await bash(in_sandbox(workspace, mode="off", network=False), command)
    assert (outside / "written").exists()
    assert "Connection refused" in result.content or "unreachable" in result.content


@needs_bwrap
async def test_a_plugin_planted_by_a_command_cancelled_with_esc_is_moved_aside_too(
        workspace: Path, tmp_path: Path) -> None:
    ctx = in_sandbox(workspace)
    printed = asyncio.Event()
    ctx.on_output = lambda text: printed.set()
    call = asyncio.create_task(bash(ctx, "mkdir -p .agents/plugins && echo x > .agents/plugins/p.py && "
                                         "echo planted && sleep 600"))
    await asyncio.wait_for(printed.wait(), 60)
    call.cancel()  # what Esc and SIGHUP do to the turn
    with pytest.raises(asyncio.CancelledError):
        await call
    assert not os.path.lexists(workspace / ".agents")
    assert list((tmp_path / "data" / "quarantine").iterdir())


@needs_bwrap
async def test_git_hooks_or_commondir_made_in_a_repository_are_moved_aside(workspace: Path) -> None:
    (workspace / ".git").mkdir()  # a repository (git init would have made hooks/: here there are none)
    result = await bash(in_sandbox(workspace), "mkdir .git/hooks && echo 'touch pwned' > .git/hooks/pre-commit; "
                                               "echo /elsewhere > .git/commondir")
    assert not os.path.lexists(workspace / ".git" / "hooks") and not os.path.lexists(workspace / ".git" / "commondir")
    assert ".git/hooks, .git/commondir" in result.content


@needs_bwrap
async def test_the_folder_core_hookspath_names_is_read_only(workspace: Path) -> None:
    # husky and the like point git at hooks in the worktree, where .git/hooks protects nothing.
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text('[core]\n\trepositoryformatversion = 0\n\thooksPath = ".husky"\n')
    (workspace / ".husky").mkdir()
    (workspace / ".husky" / "pre-commit").write_text("echo ok\n")
    result = await bash(in_sandbox(workspace), "echo 'touch pwned' > .husky/pre-commit")
    assert result.is_error and (workspace / ".husky" / "pre-commit").read_text() == "echo ok\n"
    assert (await bash(in_sandbox(workspace), "echo x > other.txt && cat other.txt")).content == "x\n"


@needs_bwrap
async def test_scout_tuis_own_environment_inside_the_workspace_is_read_only(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Working on a project whose own .venv runs scout-tui: a .pth file written there would run
    # at scout-tui's next start, before any trust gate.
    venv = workspace / ".venv" / "lib" / "site-packages"
    venv.mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(workspace / ".venv"))
    result = await bash(in_sandbox(workspace), "echo 'import os' > .venv/lib/site-packages/evil.pth")
    assert result.is_error and not (venv / "evil.pth").exists()


@needs_bwrap
async def test_a_repository_a_command_nests_in_the_index_is_moved_aside(workspace: Path) -> None:
    # git status recurses into a gitlink's repository and runs its core.fsmonitor, outside the sandbox.
    git = "git -c user.email=a@b -c user.name=a"
    subprocess.run(f"git init -q && echo a > a && {git} add a && {git} commit -qm a", shell=True, cwd=workspace,
                   check=True)
    result = await bash(in_sandbox(workspace), f"mkdir sub && cd sub && git init -q && echo b > b && {git} add b && "
                                               f"{git} commit -qm b && git config core.fsmonitor 'touch pwned; false' && "
                                               "cd .. && git add sub")
    assert not (workspace / "sub" / ".git").exists() and (workspace / "sub" / "b").exists()
    assert "sub/.git" in result.content and "moved to" in result.content
    subprocess.run(["git", "status"], cwd=workspace, capture_output=True)  # the person's next git status
    assert not list(workspace.rglob("pwned"))


@needs_bwrap
async def test_an_ordinary_commit_in_the_sandbox_moves_nothing(workspace: Path) -> None:
    git = "git -c user.email=a@b -c user.name=a"
    subprocess.run("git init -q", shell=True, cwd=workspace, check=True)
    result = await bash(in_sandbox(workspace), f"echo a > a && {git} add a && {git} commit -qm a && echo done")
    assert result.content == "done\n"
