"""`scout-tui diff ID` and `scout-tui restore ID --to N`, as subprocesses, after -p turns that
changed files (a real model loopback, real git, the checkpoint events in the real store)."""

from __future__ import annotations

import json
from pathlib import Path

from scout_tui.store.event_log import Store
from tests.headless_helpers import env, repo, scout  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer, Reply, anthropic_stream


def _two_turns(repo: Path, env: dict[str, str]) -> str:
    """Two -p turns of one session: the first writes new.txt, the second edits notes.txt."""
    write = ("toolu_w", "write", [json.dumps({"path": "new.txt", "content": "made\n"})])
    edit = ("toolu_e", "edit", [json.dumps({"path": "notes.txt", "old_string": "42", "new_string": "43"})])
    read = ("toolu_r", "read", [json.dumps({"path": "notes.txt"})])  # edit needs the file read first
    replies = [Reply(anthropic_stream(["Writing."], write)), Reply(anthropic_stream(["Done."])),
               Reply(anthropic_stream(["Reading."], read)), Reply(anthropic_stream(["Editing."], edit)),
               Reply(anthropic_stream(["Done."]))]
    with LoopbackServer(replies) as server:
        for args in (["-p", "make new.txt"], ["-c", "-p", "change the answer"]):
            done = scout([*args, "--base-url", server.url, "--permission-mode", "yolo"], repo, env)
            assert done.returncode == 0, done.stderr
    [session] = Store(Path(env["SCOUT_HOME"]) / "sessions.db").sessions(repo)
    return session.id


def test_diff_lists_each_turn_s_files_and_their_diff(repo, env):
    sid = _two_turns(repo, env)
    done = scout(["diff", sid[:8]], repo, env)
    assert done.returncode == 0, done.stderr
    assert "# turn at message 0: 1 file\nadded     new.txt\n" in done.stdout
    assert "# turn at message 4: 1 file\nmodified  notes.txt\n" in done.stdout
    assert "-the answer is 42\n+the answer is 43" in done.stdout
    assert "+made" in done.stdout
    stat = scout(["diff", sid[:8], "--stat"], repo, env)
    assert "@@" not in stat.stdout and "modified  notes.txt" in stat.stdout


def test_restore_to_a_turn_puts_the_files_back_and_dry_run_changes_nothing(repo, env):
    sid = _two_turns(repo, env)
    dry = scout(["restore", sid[:8], "--to", "0", "--dry-run"], repo, env)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines() == ["would remove new.txt", "would restore notes.txt"]
    assert (repo / "new.txt").exists() and "43" in (repo / "notes.txt").read_text()
    (repo / "new.txt").write_text("edited by me after the session\n")
    flagged = scout(["restore", sid[:8], "--to", "0", "--dry-run"], repo, env)  # the plan, the edit named
    assert flagged.returncode == 0 and flagged.stdout.splitlines() == [
        "would remove new.txt (changed since by someone else: only --force overwrites it)", "would restore notes.txt"]
    refused = scout(["restore", sid[:8], "--to", "0"], repo, env)
    assert refused.returncode == 1 and "changed since the session's last turn, not by it: new.txt" in refused.stderr
    assert (repo / "new.txt").read_text() == "edited by me after the session\n"
    done = scout(["restore", sid[:8], "--to", "0", "--force"], repo, env)
    assert done.returncode == 0, done.stderr
    assert not (repo / "new.txt").exists() and (repo / "notes.txt").read_text() == "the answer is 42\n"
    events = Store(Path(env["SCOUT_HOME"]) / "sessions.db").checkpoint_events(sid)
    assert [(d["turn"], d["redo"]) for kind, d in events if kind == "checkpoint.restore"] == [(0, False)]
    again = scout(["restore", sid[:8], "--to", "0"], repo, env)  # recorded: nothing is left to take back
    assert again.returncode == 1 and "undone already" in again.stderr


def test_restore_of_a_fork_takes_back_the_parent_s_turns_it_shares(repo, env):
    sid = _two_turns(repo, env)
    store = Store(Path(env["SCOUT_HOME"]) / "sessions.db")
    branch = store.fork(sid, 4)  # shares the first turn only
    done = scout(["restore", branch.id[:8], "--to", "0"], repo, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["remove new.txt"]  # not notes.txt: the branch did not change it
    assert not (repo / "new.txt").exists() and "43" in (repo / "notes.txt").read_text()
