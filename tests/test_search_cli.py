"""``scout-tui search`` from a shell, over sessions that real ``scout-tui -p`` runs wrote (a
loopback Anthropic server as the model, a fork made with ``--fork ID:N``)."""

from __future__ import annotations

import io
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from scout_tui.core.bus import MessageUser
from scout_tui.frontends import search_command
from scout_tui.store import projection
from scout_tui.store.event_log import Store
from scout_tui.store.search import SearchQuery
from tests.headless_helpers import env, repo, scout  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer, Reply, anthropic_stream


@pytest.fixture
def forked(repo, env) -> tuple[str, str]:
    """A session that asked about notes.txt, and a fork of it after its first answer whose
    ``read`` call printed build.log: "quokka_allocator" appears only in that tool output."""
    (repo / "build.log").write_text("linking done\nSegfault in quokka_allocator at 0x0\n")
    replies = [Reply(anthropic_stream(["It says the answer is 42."])),
               Reply(anthropic_stream(["Reading the log."], ("toolu_log", "read", ['{"path": "build.log"}']))),
               Reply(anthropic_stream(["The build crashed in the allocator."]))]
    with LoopbackServer(replies) as server:
        first = scout(["-p", "what do the notes say?", "--base-url", server.url], repo, env)
        assert first.returncode == 0, first.stderr
        [root] = Store(Path(env["SCOUT_HOME"]) / "sessions.db").sessions(repo)
        fork = scout(["--fork", f"{root.id}:2", "-p", "why did the build fail?", "--base-url", server.url], repo, env)
        assert fork.returncode == 0, fork.stderr
    store = Store(Path(env["SCOUT_HOME"]) / "sessions.db")
    branch = next(s for s in store.sessions(repo) if s.parent)
    assert store.index_backlog() == (6, 6)  # each turn left its messages indexed
    return root.id, branch.id


def test_a_word_only_in_a_forks_tool_output_is_found_with_its_session_branch_and_message(forked, repo, env):
    root, branch = forked
    done = scout(["search", "quokka_allocator", "--json"], repo, env)
    assert done.returncode == 0, done.stderr
    [hit] = json.loads(done.stdout)
    assert (hit["session"], hit["root"], hit["parent"], hit["fork_at"]) == (branch, root, root, 2)
    assert (hit["message"], hit["role"]) == (5, "tool_output")  # 2 shared, the prompt, the call, its result
    assert hit["title"] == "why did the build fail?" and hit["cwd"] == str(repo.resolve())
    start, end = hit["matches"][0]
    assert hit["snippet"][start:end] == "quokka_allocator"
    text = scout(["search", "quokka_allocator"], repo, env)
    assert f"{root[:8]} › {branch[:8]}  #5 tool_output" in text.stdout
    assert "Segfault in quokka_allocator at 0x0" in text.stdout


def test_a_phrase_must_appear_in_order_and_an_exclusion_leaves_a_hit_out(forked, repo, env):
    assert json.loads(scout(["search", '"segfault in quokka"', "--json"], repo, env).stdout)[0]["role"] == "tool_output"
    reversed_ = scout(["search", '"quokka in segfault"'], repo, env)
    assert reversed_.returncode == 1 and "no matches for" in reversed_.stderr
    assert scout(["search", "quokka_allocator", "-linking"], repo, env).returncode == 1
    kept = json.loads(scout(["search", "allocator", "-linking", "--json"], repo, env).stdout)
    assert [h["role"] for h in kept] == ["answer"]  # the answer, not the output that says "linking"


def test_this_directory_unless_all(forked, repo, env, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert scout(["search", "quokka_allocator"], elsewhere, env).returncode == 1
    [hit] = json.loads(scout(["search", "quokka_allocator", "--all", "--json"], elsewhere, env).stdout)
    assert hit["cwd"] == str(repo.resolve())


def test_a_query_of_only_exclusions_says_why(forked, repo, env):
    done = scout(["search", "-quokka"], repo, env)
    assert done.returncode == 1 and "a search needs a word to find" in done.stderr


def test_a_query_with_no_word_to_find_or_a_limit_below_one_says_why(repo, env):
    for query in ("🚀", "role:tool", "()"):
        done = scout(["search", query], repo, env)
        assert done.returncode == 1 and "nothing to search for in" in done.stderr, (query, done.stderr)
    for limit in ("0", "-3"):
        done = scout(["search", "KeyError", "--limit", limit], repo, env)
        assert done.returncode == 2 and f"--limit {limit}: at least 1 hit" in done.stderr


def test_a_reader_that_stops_early_is_not_nothing_found(repo, env):
    with Store(Path(env["SCOUT_HOME"]) / "sessions.db") as store:
        sid = store.create_session(repo)
        for n in range(1_500):  # ~300 KB of hits: more than a pipe holds, so the writer meets the closed end
            store.append(sid, MessageUser({"role": "user", "content": f"wallaby number {n} " + "padding " * 20}))
    search = subprocess.Popen([sys.executable, "-m", "scout_tui", "search", "wallaby", "--limit", "1500"], cwd=repo,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert search.stdout is not None and "wallaby" in search.stdout.readline()
    search.stdout.close()  # as `| head -1` does
    assert search.wait(timeout=60) == 0 and search.stderr is not None and search.stderr.read() == ""


@pytest.mark.parametrize("command, hint", [
    (["search", "KeyError"], "search from a project's directory, or with --all"),
    (["sessions"], "cd to a project's directory, or list them all with --all"),
    (["-p", "hello"], "cd to a project's directory"),
    ([], "cd to a project's directory"),  # the app: said before it needs a terminal
])
def test_a_command_from_a_deleted_directory_says_so(repo, env, tmp_path, command, hint):
    gone = tmp_path / "gone"
    gone.mkdir()
    with Store(Path(env["SCOUT_HOME"]) / "sessions.db") as store:
        store.append(store.create_session(gone), MessageUser({"role": "user", "content": "a KeyError here"}))
    done = subprocess.run(["sh", "-c", f'cd "{gone}" && rmdir "{gone}" && exec "$0" -m scout_tui "$@"',
                           sys.executable, *command], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr == f"scout-tui: the current directory was deleted or cannot be read: {hint}\n"


def test_an_old_stores_backlog_that_cannot_be_indexed_now_is_said_and_the_rest_searched(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(projection, "BUSY_TIMEOUT_MS", 50)
    monkeypatch.setattr(search_command, "BATCH", 1)
    monkeypatch.setenv("SCOUT_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    with Store(tmp_path / "sessions.db") as store:
        sid = store.create_session(tmp_path)
        store.append(sid, MessageUser({"role": "user", "content": "the first walrus"}))
        store.search(SearchQuery("walrus"))
        for n in range(3):
            store.append(sid, MessageUser({"role": "user", "content": f"walrus {n}"}))
    writer = sqlite3.connect(tmp_path / "sessions.db", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # as a long write in another process
    err = io.StringIO()
    try:
        assert search_command.search_command(["walrus", "--json"], err) == 0
    finally:
        writer.execute("COMMIT")
        writer.close()
    assert [hit["message"] for hit in json.loads(capsys.readouterr().out)] == [1]
    assert "cannot index more now (database is locked)" in err.getvalue()
    assert "the newest 3 messages were not searched: the store could not be written to index it" in err.getvalue()
