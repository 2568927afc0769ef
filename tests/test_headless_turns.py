"""`scout-tui -p` stopped mid-answer (Ctrl+C, SIGTERM) then continued with `-c`: the stopped prompt
goes once, with its partial answer and the interruption, before the new prompt."""

from __future__ import annotations

import functools
import json
import signal
import subprocess
import sys
import threading

import pytest

from scout_tui.core.messages import INTERRUPTED_TURN
from tests.headless_helpers import env, repo, scout  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer, Reply, anthropic_stream
from tests.subagent_helpers import GatedReply

SLOW = anthropic_stream(["first words ", "never sent"])
CUT = SLOW.index(b"event: content_block_delta", SLOW.index(b"first words"))


def started_with(signum: int, handler: signal.Handlers):
    """A ``preexec_fn`` giving the child ``signum``'s disposition ``handler``, whatever this test
    process inherited: a shell runs a job it put in the background (``pytest &``, a CI runner)
    with SIGINT ignored, and an ignored signal stays ignored across exec."""
    return functools.partial(signal.signal, signum, handler)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_p_run_stopped_mid_answer_is_continued_with_the_prompt_once_marked_interrupted(repo, env, signum):
    with LoopbackServer([Reply([SLOW[:CUT], SLOW[CUT:]], delay=600), Reply(anthropic_stream(["Second."]))]) as server:
        proc = subprocess.Popen([sys.executable, "-m", "scout_tui", "-p", "slow answer please", "--base-url", server.url,
                                 "--output-format", "stream-json"], cwd=repo, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=started_with(signum, signal.SIG_DFL))
        try:
            for line in proc.stdout:  # one event a line, flushed as it happens
                if json.loads(line)["type"] == "message.delta":
                    break
            proc.send_signal(signum)
            proc.communicate(timeout=60)  # only a guard against a hang
        finally:
            proc.kill()
        assert proc.returncode == 128 + signum
        done = scout(["-c", "-p", "another slow answer", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    sent = [(m["role"], [b["text"] for b in m["content"]]) for m in server.requests[1].json()["messages"]]
    assert sent == [("user", ["slow answer please"]), ("assistant", ["first words "]),
                    ("user", [INTERRUPTED_TURN, "another slow answer"])]


def test_a_p_run_started_with_nohup_outlives_its_terminal(repo, env):
    """`nohup scout-tui -p … &`: the run was started ignoring SIGHUP, so the terminal closing
    (SIGHUP) does not stop it; the answer ends as the server sends it."""
    opened = threading.Event()
    with LoopbackServer([GatedReply([SLOW[:CUT], anthropic_stream(["first words ", "and the rest."])[CUT:]],
                                    gate=opened)]) as server:
        proc = subprocess.Popen([sys.executable, "-m", "scout_tui", "-p", "a long job", "--base-url", server.url,
                                 "--output-format", "stream-json"], cwd=repo, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=started_with(signal.SIGHUP, signal.SIG_IGN))
        try:
            for line in proc.stdout:
                if json.loads(line)["type"] == "message.delta":
                    break
            proc.send_signal(signal.SIGHUP)  # ignored: the kernel drops it when it is sent
            opened.set()
            out, err = proc.communicate(timeout=60)  # only a guard against a hang
        finally:
            proc.kill()
    assert proc.returncode == 0, err
    assert json.loads(out.splitlines()[-1])["text"] == "first words and the rest."
