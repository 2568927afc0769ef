"""Workspace snapshots with git in scout-tui's own object store: captured changes, exact
restores, and the person's repository untouched. Real git, real temporary folders."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from scout_tui.checkpoints import snapshots as checkpoints_module
from scout_tui.checkpoints.snapshots import Change, Checkpoints, why_skipped


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True,
                          env={**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
                               "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@t"}).stdout


def state_of(repo: Path) -> dict[str, str]:
    """What a person's repository is, as git reports it: HEAD, index, stash, reflog, refs."""
    dot = repo / ".git"
    return {"head": git(repo, "rev-parse", "HEAD"), "index": (dot / "index").read_bytes().hex(),
            "stash": git(repo, "stash", "list"), "reflog": git(repo, "reflog"),
            "refs": git(repo, "for-each-ref"), "status": git(repo, "status", "--porcelain")}


@pytest.fixture(params=["git repository", "plain folder"])
def workspace(request, tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "a.txt").write_text("one\n")
    (folder / "src").mkdir()
    (folder / "src" / "app.py").write_text("print('hi')\n")
    (folder / ".gitignore").write_text("build/\n")
    (folder / "build").mkdir()
    (folder / "build" / "out.bin").write_bytes(b"\0" * 10)
    if request.param == "git repository":
        git(folder, "init", "-q")
        git(folder, "add", "-A")
        git(folder, "commit", "-qm", "start")
        (folder / "a.txt").write_text("one, staged\n")
        git(folder, "add", "a.txt")  # something staged, and a stash, that must stay as they are
        (folder / "src" / "app.py").write_text("print('stashed')\n")
        git(folder, "stash", "push", "-q", "--", "src/app.py")
    return folder


@pytest.fixture
def store(workspace: Path, tmp_path: Path) -> Checkpoints:
    return Checkpoints(workspace, root=tmp_path / "data" / "checkpoints")


def test_edits_new_files_deletions_and_renames_are_captured(workspace, store):
    before = store.snapshot()
    (workspace / "a.txt").write_text("two\n")
    (workspace / "new.md").write_text("# new\n")
    (workspace / "src" / "app.py").rename(workspace / "src" / "main.py")
    (workspace / ".gitignore").unlink()
    (workspace / "build" / "out.bin").unlink()  # ignored: never in a snapshot
    after = store.snapshot()
    assert store.changes(before.tree, after.tree) == [
        Change("deleted", ".gitignore"), Change("modified", "a.txt"), Change("added", "new.md"),
        Change("renamed", "src/main.py", "src/app.py")]
    assert "-one" in store.diff(before.tree, after.tree, ["a.txt"]) and "+two" in store.diff(before.tree, after.tree)


def test_a_command_s_changes_are_captured_like_any_other(workspace, store):
    before = store.snapshot()
    subprocess.run("mkdir -p gen && echo made > gen/out.txt && rm a.txt", shell=True, cwd=workspace, check=True)
    after = store.snapshot()
    assert store.changes(before.tree, after.tree) == [Change("deleted", "a.txt"), Change("added", "gen/out.txt")]


def test_restore_gives_back_the_exact_bytes_and_mode_and_removes_what_was_added(workspace, store):
    crlf = b"\xef\xbb\xbfline one\r\nline two\r\n"  # a BOM and CRLF line ends
    (workspace / "win.txt").write_bytes(crlf)
    script = workspace / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    before = store.snapshot()
    (workspace / "win.txt").write_bytes(b"rewritten\n")
    script.write_text("#!/bin/sh\necho changed\n")
    script.chmod(0o644)
    (workspace / "src" / "extra").mkdir()
    (workspace / "src" / "extra" / "added.py").write_text("x = 1\n")
    (workspace / "a.txt").unlink()
    after = store.snapshot()
    paths = [c.path for c in store.changes(before.tree, after.tree)]
    store.restore(before.tree, paths)
    assert (workspace / "win.txt").read_bytes() == crlf
    assert script.read_text() == "#!/bin/sh\necho hi\n" and script.stat().st_mode & stat.S_IXUSR
    assert (workspace / "a.txt").read_text() in ("one\n", "one, staged\n")
    assert not (workspace / "src" / "extra").exists()  # the added file and its now empty folder
    assert store.snapshot().tree == before.tree


def test_the_person_s_repository_is_identical_before_and_after(tmp_path):
    repo = tmp_path / "work"
    repo.mkdir()
    (repo / "a.txt").write_text("one\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    (repo / "a.txt").write_text("staged\n")
    git(repo, "add", "a.txt")
    (repo / "b.txt").write_text("stash me\n")
    git(repo, "stash", "push", "-q", "-u", "--", "b.txt")
    (repo / "c.txt").write_text("untracked\n")
    was = state_of(repo)
    store = Checkpoints(repo, root=tmp_path / "data")
    before = store.snapshot()
    (repo / "c.txt").write_text("changed\n")
    after = store.snapshot()
    store.restore(before.tree, [c.path for c in store.changes(before.tree, after.tree)])
    assert state_of(repo) == was
    assert not (repo / ".git" / "scout-index").exists() and (store.git_dir / "scout-index").exists()


def test_large_files_are_left_out_and_said(workspace, store, monkeypatch):
    monkeypatch.setattr(checkpoints_module, "MAX_FILE_BYTES", 100)
    (workspace / "big.log").write_bytes(b"x" * 101)
    first = store.snapshot()
    assert first.skipped == ("big.log",) and store.file(first.tree, "big.log") is None
    (workspace / "a.txt").write_bytes(b"y" * 200)  # grew past the limit after being taken
    grown = store.snapshot()
    assert "a.txt" in grown.skipped and store.file(grown.tree, "a.txt") is None
    assert why_skipped("a.txt") == "over 0 MB"  # MAX_FILE_BYTES is 100 here


def test_a_git_repository_inside_the_workspace_is_said_to_be_left_out_not_kept_as_a_commit_id(workspace, store):
    nested = workspace / "vendor" / "lib"
    nested.mkdir(parents=True)
    git(nested, "init", "--quiet")
    (nested / "lib.py").write_text("x = 1\n")
    git(nested, "add", "lib.py")
    git(nested, "commit", "--quiet", "-m", "lib")
    first = store.snapshot()
    assert first.skipped == ("vendor/lib/",) and why_skipped("vendor/lib/") == "a git repository of its own"
    assert store.file(first.tree, "vendor/lib") is None  # no gitlink: a restore could not bring its files back
    (workspace / "a.txt").write_text("changed\n")
    assert store.snapshot().skipped == ("vendor/lib/",)


def test_two_workspaces_have_their_own_stores(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    for folder in (one, two):
        folder.mkdir()
        (folder / "f.txt").write_text(folder.name)
    root = tmp_path / "data"
    a, b = Checkpoints(one, root=root), Checkpoints(two, root=root)
    assert a.git_dir != b.git_dir
    assert a.file(a.snapshot().tree, "f.txt") == b"one" and b.file(b.snapshot().tree, "f.txt") == b"two"


def test_the_person_s_git_environment_does_not_redirect_the_store(workspace, store, monkeypatch, tmp_path):
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere.git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "elsewhere.index"))
    store.snapshot()
    assert not (tmp_path / "elsewhere.git").exists() and not (tmp_path / "elsewhere.index").exists()


def test_a_file_changed_by_someone_else_after_the_turn_is_found_before_a_restore(workspace, store):
    before = store.snapshot()
    (workspace / "a.txt").write_text("the turn's edit\n")
    (workspace / "new.md").write_text("the turn's file\n")
    after = store.snapshot()
    turn = [c.path for c in store.changes(before.tree, after.tree)]
    assert store.changed_since(after.tree, turn) == []
    (workspace / "a.txt").write_text("the person's edit after the turn\n")
    (workspace / "other.txt").write_text("not the turn's\n")
    assert store.changed_since(after.tree, turn) == ["a.txt"]


# -- a turn's checkpoint (the agent) ------------------------------------------------------------

async def test_a_turn_that_writes_ends_with_a_checkpoint_and_a_read_only_one_without(tmp_path):
    import json

    from scout_tui.core.bus import Checkpoint
    from scout_tui.tools.permissions import Policy
    from tests.agent_helpers import collect, make_agent
    from tests.loopback import LoopbackServer, Reply, anthropic_stream

    work = tmp_path / "work"
    work.mkdir()
    (work / "old.txt").write_text("old\n")
    write = ("toolu_w", "write", [json.dumps({"path": "new.txt", "content": "made\n"})])
    bash = ("toolu_b", "bash", [json.dumps({"command": "rm old.txt"})])
    read = ("toolu_r", "read", [json.dumps({"path": "new.txt"})])
    replies = [Reply(anthropic_stream(["Writing."], write)), Reply(anthropic_stream(["Removing."], bash)),
               Reply(anthropic_stream(["Done."])), Reply(anthropic_stream(["Reading."], read)),
               Reply(anthropic_stream(["Read."]))]
    store = Checkpoints(work, root=tmp_path / "data")
    with LoopbackServer(replies) as server:
        agent = make_agent(server, work, permissions=Policy(mode="yolo", workspace=work), checkpoints=store)
        events = await collect(agent, [], "make new.txt, remove old.txt")
        [checkpoint] = [e for e in events if isinstance(e, Checkpoint)]
        assert events[-1] is checkpoint and events[-2].type == "turn.end"
        assert checkpoint.turn == 0 and checkpoint.files == [
            {"status": "added", "path": "new.txt", "old_path": None},
            {"status": "deleted", "path": "old.txt", "old_path": None}]
        assert store.file(checkpoint.before, "old.txt") == b"old\n" and store.file(checkpoint.after, "new.txt") == b"made\n"
        again = await collect(agent, agent.messages, "read it")  # read-only: no snapshot, no checkpoint
        assert not any(isinstance(e, Checkpoint) for e in again)


def test_a_folder_of_too_many_files_is_refused_not_copied(workspace, store, monkeypatch):
    from scout_tui.core.errors import ScoutError

    monkeypatch.setattr(checkpoints_module, "MAX_NEW_FILES", 2)
    for n in range(3):
        (workspace / f"many{n}.txt").write_text("x")
    with pytest.raises(ScoutError, match='over the 2 a checkpoint takes; set checkpoints = "off"'):
        store.snapshot()


async def test_a_turn_that_writes_a_file_as_it_was_records_no_checkpoint(tmp_path):
    # Seen in tmux: /undo then offered to undo a turn with no files listed.
    import json

    from scout_tui.core.bus import Checkpoint
    from scout_tui.tools.permissions import Policy
    from tests.agent_helpers import collect, make_agent
    from tests.loopback import LoopbackServer, Reply, anthropic_stream

    work = tmp_path / "work"
    work.mkdir()
    (work / "same.txt").write_text("same\n")
    read = ("toolu_r", "read", [json.dumps({"path": "same.txt"})])
    write = ("toolu_w", "write", [json.dumps({"path": "same.txt", "content": "same\n"})])
    replies = [Reply(anthropic_stream(["Reading."], read)), Reply(anthropic_stream(["Writing."], write)),
               Reply(anthropic_stream(["Done."]))]
    with LoopbackServer(replies) as server:
        agent = make_agent(server, work, permissions=Policy(mode="yolo", workspace=work),
                           checkpoints=Checkpoints(work, root=tmp_path / "data"))
        events = await collect(agent, [], "write it as it is")
    assert any(e.type == "tool.end" and not e.data["is_error"] for e in events)
    assert not any(isinstance(e, Checkpoint) for e in events)


async def test_a_file_a_turn_grew_past_the_limit_is_named_and_left_out_of_what_undo_touches(tmp_path, monkeypatch):
    import json

    from scout_tui.core.bus import Checkpoint, Notice
    from scout_tui.tools.permissions import Policy
    from tests.agent_helpers import collect, make_agent
    from tests.loopback import LoopbackServer, Reply, anthropic_stream

    monkeypatch.setattr(checkpoints_module, "MAX_FILE_BYTES", 100)
    work = tmp_path / "work"
    work.mkdir()
    (work / "app.log").write_text("small\n")  # taken in the first snapshot, then grown past 100 bytes
    bash = ("toolu_b", "bash", [json.dumps({"command": "yes log | head -c 500 >> app.log; echo x > note.txt"})])
    replies = [Reply(anthropic_stream(["Running."], bash)), Reply(anthropic_stream(["Done."]))]
    store = Checkpoints(work, root=tmp_path / "data")
    with LoopbackServer(replies) as server:
        agent = make_agent(server, work, permissions=Policy(mode="yolo", workspace=work), checkpoints=store)
        events = await collect(agent, [], "log a lot")
    [checkpoint] = [e for e in events if isinstance(e, Checkpoint)]
    assert [f["path"] for f in checkpoint.files] == ["note.txt"]  # not app.log "deleted"
    assert checkpoint.skipped == ["app.log"]
    [notice] = [e for e in events if isinstance(e, Notice)]
    assert "so /undo leaves them as they are: app.log (over 0 MB)" in notice.text


def test_two_processes_snapshotting_one_workspace_each_see_their_own_change(workspace, tmp_path):
    # One store, one index: without the lock, a `git add` refused for the other's index.lock
    # left the changed file out, and the snapshot said the file was as before.
    import sys

    script = """
import sys
from pathlib import Path
from scout_tui.checkpoints.snapshots import Checkpoints
work, root, name = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
store = Checkpoints(work, root=root)
for n in range(25):
    (work / name).write_text(f"{n}\\n")
    tree = store.snapshot().tree
    assert store.file(tree, name) == f"{n}\\n".encode(), (name, n)
"""
    procs = [subprocess.Popen([sys.executable, "-c", script, str(workspace), str(tmp_path / "data"), f"{who}.txt"],
                              stderr=subprocess.PIPE, text=True) for who in ("one", "two", "three")]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], errors
