"""`scout-tui sessions`, `scout-tui export ID` and `scout-tui --fork ID[:N]`.

In-process through ``cli.main([...])`` where no model is involved; as real subprocesses
against a loopback model server where one is.
"""

from __future__ import annotations

import io
import sys

import json
from pathlib import Path

import pytest

from scout_tui.core.bus import Event
from scout_tui.cli import main, parse_fork
from scout_tui.core.errors import ScoutError
from scout_tui.store.event_log import Store
from tests.headless_helpers import env, scout  # noqa: F401 — a fixture
from tests.loopback import LoopbackServer, Reply, anthropic_stream


def say(role: str, text: str) -> Event:
    return Event.of(f"message.{role}", {"message": {"role": role, "content": [{"type": "text", "text": text}]}})


def tool_turn(store: Store, sid: str, output: str = "a.txt\nb.txt") -> None:
    """An assistant message calling bash, then the user message carrying its result."""
    use = {"type": "tool_use", "id": "toolu_9", "name": "bash", "input": {"command": "ls ünï"}}
    store.append(sid, Event.of("message.assistant", {"message": {"role": "assistant", "content": [use]}}))
    result = {"type": "tool_result", "tool_use_id": "toolu_9", "content": output, "is_error": False}
    store.append(sid, Event.of("message.user", {"message": {"role": "user", "content": [result]}}))


@pytest.fixture
def store(tmp_home: Path):
    with Store() as s:
        yield s


@pytest.fixture
def tree(store: Store, workdir: Path) -> dict[str, str]:
    """root (4 messages, a tool call) ⊃ branch at 1 ⊃ twig; plus a newer root, a deleted one, one elsewhere."""
    root = store.create_session(workdir)
    store.append(root, say("user", "List the files — ünï 😀"))
    tool_turn(store, root)
    store.append(root, say("assistant", "Two files."))
    branch = store.fork(root, 1).id
    store.append(branch, say("user", "Only text files?"))
    twig = store.fork(branch).id
    store.append(twig, say("user", "And hidden ones"))
    newer = store.create_session(workdir)
    store.append(newer, say("user", "Another task"))
    gone = store.create_session(workdir)
    store.delete(gone)
    elsewhere = store.create_session(workdir.parent)
    store.append(elsewhere, say("user", "Not here"))
    return {"root": root, "branch": branch, "twig": twig, "newer": newer, "gone": gone, "elsewhere": elsewhere}


# -- sessions ------------------------------------------------------------------------------


def test_sessions_lists_this_directory_as_a_tree(tree: dict[str, str], capsys) -> None:
    assert main(["sessions"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split() == ["ID", "PARENT", "AT", "MSGS", "UPDATED", "TITLE"]
    cells = [(r[:8], r[10:18].strip(), r[20:24].strip(), r[26:31].strip(), r[51:]) for r in rows]
    assert cells == [
        (tree["newer"][:8], "-", "-", "1", "Another task"),
        (tree["root"][:8], "-", "-", "4", "List the files — ünï 😀"),
        (tree["branch"][:8], tree["root"][:8], "1", "2", "└ Only text files?"),
        (tree["twig"][:8], tree["branch"][:8], "2", "3", "  └ And hidden ones"),
    ]


def test_a_fork_without_a_prompt_of_its_own_reads_fork_of_as_in_the_sessions_pane(store: Store, workdir: Path,
                                                                                   capsys) -> None:
    from scout_tui.widgets.session_rows import session_label

    root = store.create_session(workdir)
    store.append(root, say("user", "calc div fix"))
    store.append(root, say("assistant", "Fixed."))
    fork = store.fork(root, 2).id
    assert main(["sessions"]) == 0
    rows = {r[:8]: r[51:] for r in capsys.readouterr().out.splitlines()[1:]}
    assert rows[root[:8]] == "calc div fix" and rows[fork[:8]] == "└ fork of calc div fix"
    info = next(i for i in store.sessions() if i.id == fork)
    line = "".join(text for text, _ in session_label(info, current=False, now=info.updated, room=200))
    assert "⑂ at 2 fork of calc div fix" in line
    assert main(["export", fork[:8]]) == 0
    assert capsys.readouterr().out.startswith("# fork of calc div fix\n")


def test_sessions_all_groups_every_directory(tree: dict[str, str], workdir: Path, capsys) -> None:
    assert main(["sessions", "--all"]) == 0
    out = capsys.readouterr().out
    assert str(workdir.parent.resolve()) in out.splitlines() and str(workdir.resolve()) in out.splitlines()
    assert tree["elsewhere"][:8] in out and tree["root"][:8] in out and tree["gone"][:8] not in out


def test_sessions_json_gives_every_field_and_the_depth(tree: dict[str, str], capsys) -> None:
    assert main(["sessions", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(s["id"], s["depth"]) for s in listed] == [
        (tree["newer"], 0), (tree["root"], 0), (tree["branch"], 1), (tree["twig"], 2)]
    assert listed[2]["parent"] == tree["root"] and listed[2]["fork_at"] == 1 and listed[2]["message_count"] == 2
    assert set(listed[0]) >= {"cwd", "title", "created", "updated", "input_tokens", "output_tokens", "deleted"}


def test_sessions_without_a_store_says_so_and_creates_none(tmp_home: Path, workdir: Path, capsys) -> None:
    assert main(["sessions"]) == 0
    assert "no sessions in" in capsys.readouterr().err
    assert not (tmp_home / ".scout-data").exists()


def test_sessions_titles_cannot_drive_the_terminal(store: Store, workdir: Path, capsys) -> None:
    store.create_session(workdir, title="evil\x1b]52;c;aGk=\x07 title\nsecond line")
    main(["sessions"])
    out = capsys.readouterr().out
    assert "\x1b" not in out and out.splitlines()[-1].endswith("evil title second line")


# -- export ----------------------------------------------------------------------------------


def test_export_markdown_is_a_transcript_with_ancestry(tree: dict[str, str], capsys) -> None:
    assert main(["export", tree["twig"][:6]]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# And hidden ones\n")
    assert f"forked from: `{tree['root'][:8]}` → `{tree['branch'][:8]}` (shares its first 2 messages)" in out
    assert [line for line in out.splitlines() if line.startswith("## ")] == [
        "## 1 · user", "## 2 · user", "## 3 · user"]
    assert f"*From session `{tree['root'][:8]}`:*" in out and "(this session)" in out


def test_export_markdown_fences_tool_calls_and_results(store: Store, workdir: Path, capsys) -> None:
    sid = store.create_session(workdir)
    store.append(sid, say("user", "show me"))
    tool_turn(store, sid, output="```\ninner fence\n```")
    assert main(["export", sid]) == 0
    out = capsys.readouterr().out
    assert "**Tool call** `bash` (`toolu_9`)\n\n```json\n{\n  \"command\": \"ls ünï\"\n}\n```" in out
    assert "**Tool result** for `toolu_9`\n\n````\n```\ninner fence\n```\n````" in out


def test_export_json_has_the_session_its_ancestry_and_all_messages(tree: dict[str, str], store: Store, capsys) -> None:
    assert main(["export", tree["twig"], "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["session"]["id"] == tree["twig"] and doc["session"]["fork_at"] == 2
    assert [a["id"] for a in doc["session"]["ancestry"]] == [tree["root"], tree["branch"]]
    assert doc["messages"] == store.messages(tree["twig"])


def test_export_works_for_a_deleted_session(tree: dict[str, str], capsys) -> None:
    assert main(["export", tree["gone"]]) == 0
    assert "deleted (hidden from listings)" in capsys.readouterr().out


# -- errors -----------------------------------------------------------------------------------


@pytest.fixture
def ambiguous(store: Store, workdir: Path) -> None:
    for fake in ("abcd1111", "abcd2222"):
        store.append(fake, Event.of("session.create", {"id": fake, "cwd": str(workdir)}))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["export", "ffff0000"], "no session matches 'ffff0000'"),
        (["export", "abcd"], "session id prefix 'abcd' is ambiguous: abcd1111, abcd2222"),
        (["--fork", "ffff0000"], "no session matches 'ffff0000'"),
        (["--fork", "abcd"], "ambiguous"),
        (["--fork", "abcd1111:x"], "bad fork point 'x'"),
        (["--fork", "abcd1111:-1"], "bad fork point '-1'"),
        (["--fork", "abcd1111:1"], "cannot fork session abcd1111 at message 1: it has 0"),
        (["--fork", ":3"], "expected ID or ID:N"),
        (["--fork", "abcd1111", "-c"], "cannot be combined with --resume or -c"),
        (["-p", "hi", "--fork", "abcd1111:7"], "cannot fork session abcd1111 at message 7"),
    ],
)
def test_errors_exit_1_with_a_message(ambiguous: None, capsys, monkeypatch, argv: list[str], message: str) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")  # so -p reaches the fork check, not the key check
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # nothing piped (-p reads a stdin that is not a terminal)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("scout-tui: ") and message in err


def test_parse_fork_reads_an_id_and_an_optional_count() -> None:
    assert parse_fork("abcd1234") == ("abcd1234", None)
    assert parse_fork("abcd1234:0") == ("abcd1234", 0)
    assert parse_fork("abcd1234:12") == ("abcd1234", 12)
    with pytest.raises(ScoutError, match="bad fork point '²'"):
        parse_fork("abcd:²")


# -- as real processes, with a loopback model ----------------------------------------------------




def test_a_prompt_that_is_a_subcommand_name_is_still_a_prompt(tmp_path: Path, env: dict[str, str]) -> None:
    with LoopbackServer([Reply(anthropic_stream(["You asked about sessions."]))]) as server:
        done = scout(["-p", "sessions", "--base-url", server.url], tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You asked about sessions.\n"
    assert server.requests[0].json()["messages"][0]["content"][0]["text"] == "sessions"


def test_fork_with_print_continues_a_new_branch_headless(tmp_path: Path, env: dict[str, str]) -> None:
    with Store(Path(env["SCOUT_HOME"]) / "sessions.db") as store:
        parent = store.create_session(tmp_path)
        store.append(parent, say("user", "List the files"))
        tool_turn(store, parent)
        store.append(parent, say("assistant", "Two files."))
    with LoopbackServer([Reply(anthropic_stream(["Only a.txt is text."]))]) as server:
        done = scout(["--fork", f"{parent[:8]}:2", "-p", "Which are text?", "--base-url", server.url], tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert "forked at message 3 instead of 2" in done.stderr  # 2 would split the call from its result
    sent = server.requests[0].json()["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[-1]["content"][0]["type"] == "tool_result" and sent[-1]["content"][-1]["text"] == "Which are text?"
    with Store(Path(env["SCOUT_HOME"]) / "sessions.db") as store:
        [(root, root_depth), (branch, branch_depth)] = store.tree(tmp_path)
        assert (root_depth, branch_depth) == (0, 1)
        assert root.id == parent and root.message_count == 4  # the parent is untouched
        assert (branch.parent, branch.fork_at, branch.message_count) == (parent, 3, 5)
        assert store.messages(branch.id)[-1]["content"][0]["text"] == "Only a.txt is text."


def test_fork_without_a_count_shares_every_message(tmp_path: Path, env: dict[str, str]) -> None:
    with Store(Path(env["SCOUT_HOME"]) / "sessions.db") as store:
        parent = store.create_session(tmp_path)
        store.append(parent, say("user", "one"))
        store.append(parent, say("assistant", "two"))
    with LoopbackServer([Reply(anthropic_stream(["three"]))]) as server:
        done = scout(["--fork", parent, "-p", "again", "--base-url", server.url], tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert [m["content"][0]["text"] for m in server.requests[0].json()["messages"]] == ["one", "two", "again"]


def test_sessions_subcommand_runs_as_the_console_script_would(tmp_path: Path, env: dict[str, str]) -> None:
    with Store(Path(env["SCOUT_HOME"]) / "sessions.db") as store:
        sid = store.create_session(tmp_path)
    done = scout(["sessions", "--json"], tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert [s["id"] for s in json.loads(done.stdout)] == [sid]


def test_help_lists_every_other_command():
    # `diff` and `restore` worked but --help did not say so (seen by a new user)
    import re

    from scout_tui.cli import EPILOG, SUBCOMMANDS

    listed = set(re.findall(r"^  scout-tui (\w+)", EPILOG, re.MULTILINE))
    assert listed == set(SUBCOMMANDS)
