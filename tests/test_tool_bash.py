"""The bash tool, run through the built-in registry with real subprocesses."""

from __future__ import annotations

import asyncio
import os
import re
import sys
import tracemalloc
import uuid
from pathlib import Path

import pytest

from scout_tui.tools import ToolContext, ToolResult, builtin_registry
from scout_tui.tools.bash import MAX_OUTPUT_CHARS
from tests.process_helpers import processes_with

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to see processes")


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie awaiting its reaper counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def live_members(pgid: int) -> list[int]:
    """Pids of live processes whose process group is ``pgid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue  # exited while we looked
            state, _ppid, pgrp = stat[stat.rfind(")") + 2 :].split()[:3]
            if int(pgrp) == pgid and state not in "ZX":
                found.append(int(entry.name))
    return found


class Output:
    """An ``on_output`` callback that records chunks and lets a test await a piece of text."""

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.changed = asyncio.Event()

    def __call__(self, text: str) -> None:
        self.chunks.append(text)
        self.changed.set()

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    async def wait_for(self, pattern: str) -> re.Match[str]:
        while not (m := re.search(pattern, self.text)):
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 60)  # a hang guard, not a timing
        return m


@pytest.fixture
def out() -> Output:
    return Output()


@pytest.fixture
def ctx(tmp_path: Path, out: Output) -> ToolContext:
    return ToolContext(cwd=tmp_path, on_output=out)


async def bash(ctx: ToolContext, command: str, **extra: object) -> ToolResult:
    return await builtin_registry().call("bash", {"command": command, **extra}, ctx)


async def test_success_returns_output_without_status_line(ctx: ToolContext) -> None:
    result = await bash(ctx, "echo hello")
    assert result == ToolResult("hello\n", is_error=False)


async def test_nonzero_exit_is_an_error_with_its_code_and_merged_stderr(ctx: ToolContext) -> None:
    result = await bash(ctx, "echo out; echo err >&2; exit 3")
    assert result.is_error
    assert result.content == "out\nerr\n[exit code 3]"


async def test_no_output_says_so(ctx: ToolContext) -> None:
    assert (await bash(ctx, "true")).content == "(no output)"


async def test_runs_in_the_context_directory_with_stdin_closed(ctx: ToolContext, tmp_path: Path) -> None:
    # `cat` would wait forever on an open stdin; with /dev/null it ends at once.
    result = await bash(ctx, "pwd; cat")
    assert result.content == f"{tmp_path}\n"


async def test_killed_by_signal_is_reported(ctx: ToolContext) -> None:
    result = await bash(ctx, "kill -TERM $$")
    assert result.is_error
    assert result.content.endswith("[killed by signal SIGTERM]")


async def test_output_streams_before_the_command_ends(ctx: ToolContext, out: Output, tmp_path: Path) -> None:
    task = asyncio.create_task(bash(ctx, "echo first; until [ -e go ]; do sleep 0.01; done; echo second"))
    await out.wait_for("first")
    assert not task.done()
    (tmp_path / "go").touch()
    result = await task
    assert result.content == "first\nsecond\n"
    assert out.chunks[0] == "first\n"


async def test_multibyte_character_split_across_reads_survives(ctx: ToolContext, out: Output, tmp_path: Path) -> None:
    # "é" is C3 A9; the first byte arrives in one read, the second in a later one.
    task = asyncio.create_task(bash(ctx, r"printf 'a\xc3'; until [ -e go ]; do sleep 0.01; done; printf '\xa9\n'"))
    await out.wait_for("a")
    (tmp_path / "go").touch()
    result = await task
    assert result.content == "aé\n"
    assert out.text == "aé\n"


async def test_invalid_utf8_becomes_replacement_characters(ctx: ToolContext) -> None:
    assert (await bash(ctx, r"printf 'x\xffy'")).content == "x\ufffdy"


async def test_timeout_kills_the_whole_process_group(ctx: ToolContext, out: Output) -> None:
    # The timeout leaves time to print both ids on a loaded machine; what is tested is the kill.
    result = await asyncio.wait_for(bash(ctx, "echo $$; sleep 600 & echo $!; wait", timeout=2), 60)
    assert result.is_error
    assert "[timed out after 2 s; the command and its child processes were killed]" in result.content
    shell, child = map(int, out.text.split())
    assert not running(child)
    assert live_members(shell) == []


async def test_timeout_escalates_to_sigkill_when_sigterm_is_ignored(ctx: ToolContext, out: Output) -> None:
    # An ignored signal stays ignored across exec, so the background sleep ignores SIGTERM too.
    # Found by its unique argument: the check holds however late the shell got to print.
    token = f"30.{uuid.uuid4().int % 10**9:09d}"
    result = await bash(ctx, f"trap '' TERM; sleep {token} & wait", timeout=1)
    assert result.is_error and "timed out" in result.content
    assert processes_with(token) == []


async def test_cancellation_kills_the_group_and_reraises(ctx: ToolContext, out: Output) -> None:
    task = asyncio.create_task(bash(ctx, "echo $$; sleep 600 & echo $!; wait"))
    m = await out.wait_for(r"(\d+)\n(\d+)\n")
    shell, child = int(m[1]), int(m[2])
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 60)  # only the kill ends a 600 s sleep
    assert not running(shell) and not running(child)
    assert live_members(shell) == []


async def test_background_job_holding_the_pipe_does_not_block_the_result(ctx: ToolContext, out: Output) -> None:
    result = await asyncio.wait_for(bash(ctx, "sleep 600 & echo $!"), 60)  # not held for the 600 s
    child = int(out.text.split()[0])
    try:
        assert not result.is_error
        assert "background processes still hold its output open" in result.content
    finally:
        os.kill(child, 9)


async def test_long_output_keeps_head_and_tail_with_a_truthful_marker(ctx: ToolContext) -> None:
    full = "".join(f"{i}\n" for i in range(1, 100_001))
    result = await bash(ctx, "seq 1 100000")
    head, marker, tail = re.split(r"\n(\[\.\.\. \d+ characters omitted \.\.\.\])\n", result.content)
    assert len(result.content) <= MAX_OUTPUT_CHARS + 100
    assert full.startswith(head + "\n") and full.endswith(tail)
    assert tail.startswith(tuple("0123456789")) and tail.endswith("100000\n")
    omitted = int(re.search(r"\d+", marker)[0])
    assert len(head) + 1 + omitted + len(tail) == len(full)


async def test_huge_output_is_read_in_bounded_memory(tmp_path: Path) -> None:
    streamed = 0

    def count(text: str) -> None:
        nonlocal streamed
        streamed += len(text)

    tracemalloc.start()
    try:
        result = await bash(ToolContext(tmp_path, on_output=count), "head -c 50000000 /dev/zero | tr '\\0' x")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert streamed == 50_000_000
    assert "[... 49970000 characters omitted ...]" in result.content
    assert peak < 3_000_000  # bytes, against 50 MB of output


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "'command' must be a non-empty string"),
        ({"command": "  "}, "'command' must be a non-empty string"),
        ({"command": "true", "timeout": -1}, "'timeout' must be a number of seconds"),
        ({"command": "true", "timeout": "5"}, "'timeout' must be a number of seconds"),
        ({"command": "true", "timeout": 10_000}, "at most 600"),
    ],
)
async def test_bad_arguments_are_error_results(ctx: ToolContext, arguments: dict, message: str) -> None:
    result = await builtin_registry().call("bash", arguments, ctx)
    assert result.is_error and result.content.startswith("bash: ") and message in result.content


async def test_nul_bytes_are_removed_from_what_the_model_reads(tmp_path):
    from scout_tui.tools import ToolContext, builtin_registry

    result = await builtin_registry().call("bash", {"command": "printf 'a\\000\\000b'"}, ToolContext(tmp_path))
    assert "\x00" not in result.content
    assert result.content.startswith("ab") and "2 NUL bytes removed" in result.content
