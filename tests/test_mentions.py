"""``@path`` mentions: the file's text (or folder's listing) goes to the model with the prompt;
the chat shows a chip; the workspace's paths are listed respecting .gitignore."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from scout_tui.session import mentions as mentions_module
from scout_tui.tools.permissions import Policy, parse_rule
from scout_tui.session.mentions import mention_of, mentioned_paths, mentions, prompt_content, typed_text
from scout_tui.widgets import Composer
from scout_tui.widgets.chat_messages import Notice, UserMessage
from scout_tui.session.workspace_files import list_files
from tests.app_helpers import SIZE, make_app, send, settle, write
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream


def test_mentions_are_existing_paths_after_whitespace_without_trailing_punctuation(tmp_path):
    (tmp_path / "a.py").write_text("x\n")
    (tmp_path / "src").mkdir()
    text = "see @a.py, and (@src/) but not @nobody or me@a.py or @a.py again"
    assert mentioned_paths(text, tmp_path) == ["a.py", "src/"]


def test_a_file_mention_carries_the_file_and_reads_back_as_a_chip(tmp_path):
    (tmp_path / "notes.txt").write_bytes(b"alpha\r\nbeta \xe2\x9c\x93\n")
    content, notes = prompt_content("sum up @notes.txt", tmp_path)
    assert notes == [] and content[0] == {"type": "text", "text": "sum up @notes.txt"}
    assert content[1]["text"] == '<mention path="notes.txt" kind="file" size="2 lines">\nalpha\r\nbeta ✓\n</mention>'
    message = {"role": "user", "content": content}
    assert [(m.path, m.kind, m.size, m.cut) for m in mentions(message)] == [("notes.txt", "file", "2 lines", "")]
    assert typed_text(message) == "sum up @notes.txt"


def test_a_long_file_is_cut_at_a_line_and_the_cut_is_said(tmp_path, monkeypatch):
    monkeypatch.setattr(mentions_module, "MAX_LINES", 3)
    (tmp_path / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    block = prompt_content("@long.txt", tmp_path)[0][1]
    assert "line 3\n" in block["text"] and "line 4\n" not in block["text"]
    assert mention_of(block).cut == "showing lines 1-3; read the file from line 4 for the rest"
    assert "[… cut: showing lines 1-3" in block["text"]


def test_a_file_over_the_byte_limit_ends_at_its_last_whole_line(tmp_path, monkeypatch):
    monkeypatch.setattr(mentions_module, "MAX_BYTES", 20)
    (tmp_path / "big.txt").write_text("0123456789\n0123456789\n0123456789\n")
    block = prompt_content("@big.txt", tmp_path)[0][1]
    body = block["text"].split("\n", 1)[1]
    assert body.startswith("0123456789\n[… cut: showing lines 1-1")
    assert mention_of(block).size == "33 bytes"


def test_binary_outside_and_denied_paths_are_not_attached_and_said_why(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "logo.png").write_bytes(b"\x89PNG\0\0data")
    (repo / ".env").write_text("SECRET=1\n")
    (tmp_path / "other.txt").write_text("outside\n")
    (repo / "link.txt").symlink_to(tmp_path / "other.txt")
    policy = Policy(deny=[parse_rule("read:.env", "scout.toml:3")], workspace=repo)
    content, notes = prompt_content("@logo.png @../other.txt @link.txt @.env", repo, policy)
    assert content == [{"type": "text", "text": "@logo.png @../other.txt @link.txt @.env"}]
    assert notes == ["@logo.png not attached: an image (10 bytes); only text files are attached",
                     "@../other.txt is outside the project: not attached (ask the model to read it).",
                     "@link.txt is outside the project: not attached (ask the model to read it).",
                     "@.env not attached: denied by the rule 'read:.env' (scout.toml:3)"]


def test_a_folder_mention_lists_its_entries_folders_first_without_ignored_ones(tmp_path):
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "b.py").write_text("")
    (tmp_path / "src" / "a.py").write_text("")
    (tmp_path / "src" / "skip.log").write_text("")
    (tmp_path / ".gitignore").write_text("*.log\n")
    (tmp_path / "src" / "pkg" / "c.py").write_text("")
    block = prompt_content("what is in @src/", tmp_path)[0][1]
    assert block["text"] == '<mention path="src/" kind="folder" size="3 entries">\npkg/\na.py\nb.py\n</mention>'


@pytest.mark.parametrize("git", [True, False], ids=["git repository", "plain folder"])
def test_the_workspace_listing_respects_gitignore_nested_too(tmp_path, git):
    if git:
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("build/\n*.tmp\n")
    for name in ["src/app.py", "src/x.tmp", "build/out.js", "docs/sub/keep.md", "docs/sub/drop.md"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    (tmp_path / "docs" / ".gitignore").write_text("sub/drop.md\n")
    paths = list_files(tmp_path).paths
    assert sorted(paths) == sorted([".gitignore", "docs/.gitignore", "docs/sub/keep.md", "src/app.py",
                                    "docs/", "docs/sub/", "src/"])


def test_ranking_prefers_a_name_starting_with_the_query_then_shorter_paths(tmp_path):
    for name in ["lib/render.py", "lib/deep/more/render.py", "tests/test_render.py", "readme.md", "src/r_e_n.py"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    files = list_files(tmp_path)
    assert files.rank("render")[:2] == ["lib/render.py", "lib/deep/more/render.py"]
    assert files.rank("ren")[:3] == ["lib/render.py", "lib/deep/more/render.py", "tests/test_render.py"]
    assert "src/r_e_n.py" in files.rank("ren")  # a subsequence still matches
    assert files.rank("REN")[0] == "lib/render.py"  # any case
    assert files.rank("zz") == []
    assert files.rank("")[:3] == ["lib/", "src/", "tests/"]  # the top level, folders first


@pytest.fixture
def repo(tmp_home: Path, workdir: Path) -> Path:
    return workdir


async def test_a_mention_sends_the_file_and_the_chat_shows_a_chip(repo):
    (repo / "notes.txt").write_text("the answer is 42\n")
    with LoopbackServer([Reply(anthropic_stream(["It says 42."]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "what does @notes.txt say? and @missing.txt")
            await settle(app, pilot)
            sent = json.loads(server.requests[0].body)["messages"][-1]["content"]
            assert sent[0]["text"] == "what does @notes.txt say? and @missing.txt"
            assert sent[1]["text"].startswith('<mention path="notes.txt" kind="file" size="1 line">\n'
                                              "the answer is 42\n")
            prompt = app.query_one(UserMessage)
            assert prompt.text == "what does @notes.txt say? and @missing.txt"  # what a fork puts back
            assert "@notes.txt  1 line" in str(prompt.render()) and "the answer is 42" not in str(prompt.render())
            # Up recalls what was typed, not the file
            await pilot.press("up")
            assert app.query_one(Composer).text == "what does @notes.txt say? and @missing.txt"


async def test_a_denied_mention_is_not_sent_and_the_chat_says_why(repo):
    (repo / ".env").write_text("TOKEN=abc\n")
    write(repo, "scout", '[permissions]\ndeny = ["read:.env"]\n')
    with LoopbackServer([Reply(anthropic_stream(["ok"]))]) as server:
        app = make_app(repo, server)
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "read @.env")
            await settle(app, pilot)
            assert "TOKEN" not in server.requests[0].body.decode()
            await wait_until(pilot, lambda: any("@.env not attached: denied" in n.text for n in app.query(Notice)))


def test_quoted_names_line_suffixes_and_backticks_are_mentions_and_unknown_paths_are_said(tmp_path):
    (tmp_path / "my notes [v2].txt").write_text("spaced\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("x\n")
    (tmp_path / "guide.md").write_text("g\n")
    text = 'see @"my notes [v2].txt", @src/main.py:12, `@guide.md` and @src/gone.py or @bob'
    assert mentioned_paths(text, tmp_path) == ["my notes [v2].txt", "src/main.py", "guide.md"]
    content, notes = prompt_content(text, tmp_path)
    assert [mention_of(b).path for b in content[1:]] == ["my notes [v2].txt", "src/main.py", "guide.md"]
    assert notes == ["@src/gone.py not found: not attached."]


def test_an_image_is_not_attached_and_said_to_be_an_image(tmp_path):
    (tmp_path / "shot.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    assert prompt_content("@shot.png", tmp_path)[1] == [
        "@shot.png not attached: an image (72 bytes); only text files are attached"]


def test_a_folder_query_lists_its_entries_not_itself(tmp_path):
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "mod.py").write_text("")
    (tmp_path / "src" / "app.py").write_text("")
    assert list_files(tmp_path).rank("src/") == ["src/pkg/", "src/app.py"]
    assert list_files(tmp_path).rank("SRC/")[:1] == ["src/pkg/"]
