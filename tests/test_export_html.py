"""`scout-tui export ID --format html` and `/export`: one self-contained page of a session's whole
branch tree, read back with ``html.parser`` as a browser would parse it; and, where Debian's
``chromium`` is installed, rendered headless with its console checked for errors.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from scout_tui.cli import main
from scout_tui.core.bus import Event
from scout_tui.store.event_log import Store
from tests.headless_helpers import env, repo  # noqa: F401 — fixtures
from tests.test_cli_sessions import store  # noqa: F401 — a fixture: a Store in a fresh home

KEY = "sk-ant-api03-exportTESTkey0123456789abcdef"
DIFF = "--- a/greet.py\n+++ b/greet.py\n@@ -1 +1 @@\n-print('helo')\n+print('hello')\n"
EVIL = "<script>alert('from a tool')</script>"


def say(role: str, *content: dict) -> Event:
    return Event.of(f"message.{role}", {"message": {"role": role, "content": list(content)}})


def text(value: str) -> dict:
    return {"type": "text", "text": value}


@pytest.fixture
def tree(store: Store, workdir: Path) -> dict[str, str]:
    """A root with a tool call that edits a file (its diff in ``tool.end``), a checkpoint and a
    compaction; a branch forked after the tool call that goes another way."""
    root = store.create_session(workdir)
    store.append(root, say("user", text("Fix the greeting in **greet.py**")))
    use = {"type": "tool_use", "id": "toolu_edit", "name": "edit",
           "input": {"path": "greet.py", "old": "helo", "new": "hello"}}
    store.append(root, say("assistant", text("I will edit it:\n\n```python\nprint('hello')\n```"), use))
    store.append(root, Event.of("tool.end", {"id": "toolu_edit", "name": "edit", "content": "edited", "is_error": False,
                                             "elapsed": 0.2, "diff": DIFF}))
    output = f"edited greet.py\n{EVIL}\nthe key was {KEY}"
    store.append(root, say("user", {"type": "tool_result", "tool_use_id": "toolu_edit", "content": output,
                                    "is_error": False}))
    store.append(root, say("assistant", text("Root answer: the greeting is fixed.")))
    store.append(root, Event.of("checkpoint", {"turn": 0, "before": "a" * 40, "after": "b" * 40,
                                               "files": [{"status": "modified", "path": "greet.py"}]}))
    store.append(root, Event.of("session.compacted", {
        "at": 2, "count": 4, "summary": "Summary: the greeting was fixed in greet.py.", "model": "claude-test",
        "tokens_before": 900, "tokens_after": 120, "usage": {"input_tokens": 900, "output_tokens": 40},
        "cost": 0.01, "focus": "", "by": "person"}))
    store.append(root, say("user", text("Root follow-up after the compaction")))
    branch = store.fork(root, 4).id
    store.append(branch, say("user", text("Branch prompt: say it in French")))
    store.append(branch, say("assistant", text("Branch answer: bonjour")))
    return {"root": root, "branch": branch}


class Page(HTMLParser):
    """What a browser would read in the page: its text, its tags with their attributes, the
    contents of its ``<style>`` and ``<script>`` elements."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.styles: list[str] = []
        self.scripts: list[str] = []
        self._in: str | None = None
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in = tag if tag in ("style", "script") else None

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "style":
            self.styles.append(data)
        elif self._in == "script":
            self.scripts.append(data)
        else:
            self.text.append(data)

    def all_text(self) -> str:
        return "".join(self.text)

    def by_id(self, tag: str) -> dict[str, dict[str, str | None]]:
        return {str(a["id"]): a for t, a in self.tags if t == tag and a.get("id")}


def export(tree: dict[str, str], tmp_path: Path, which: str = "branch") -> str:
    out = tmp_path / "export.html"
    assert main(["export", tree[which][:8], "--format", "html", "-o", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def test_the_page_holds_every_message_of_both_branches(tree: dict[str, str], tmp_path: Path) -> None:
    page = Page(export(tree, tmp_path))
    shown = page.all_text()
    for words in ("Fix the greeting in", "I will edit it:", "Root answer: the greeting is fixed.",
                  "Root follow-up after the compaction", "Branch prompt: say it in French", "Branch answer: bonjour"):
        assert words in shown
    sections = page.by_id("section")
    assert set(sections) == {f"b-{tree['root']}", f"b-{tree['branch']}"}
    assert sections[f"b-{tree['branch']}"]["data-parent"] == tree["root"]
    assert sections[f"b-{tree['branch']}"]["data-start"] == "4"
    articles = page.by_id("article")  # each message once, in the branch that stores it, numbered as --fork counts
    assert sorted(articles) == sorted([*(f"m-{tree['root'][:8]}-{n}" for n in range(1, 6)),
                                       f"m-{tree['branch'][:8]}-5", f"m-{tree['branch'][:8]}-6"])
    links = [a["href"] for t, a in page.tags if t == "a" and "branch-link" in str(a.get("class"))]
    assert links == [f"#b-{tree['root']}", f"#b-{tree['branch']}"]


def test_the_tool_call_is_collapsible_with_its_input_output_and_coloured_diff(tree: dict[str, str],
                                                                              tmp_path: Path) -> None:
    page = Page(export(tree, tmp_path))
    details = [a for t, a in page.tags if t == "details" and a.get("id") == "t-toolu_edit"]
    assert details and "open" not in details[0]
    shown = page.all_text()
    assert '"old": "helo"' in shown and "edited greet.py" in shown
    classes = [a.get("class") for t, a in page.tags if t == "span"]
    assert "d-add" in classes and "d-remove" in classes and "+print('hello')" in shown
    assert "⚑ Checkpoint of the turn at message 1: changed greet.py (modified)" in shown
    assert "Compacted by claude-test. Summarises messages 0–1 of 4" in shown
    assert "Summary: the greeting was fixed" in shown


def test_a_script_a_tool_printed_is_text_not_a_script(tree: dict[str, str], tmp_path: Path) -> None:
    html = export(tree, tmp_path)
    page = Page(html)
    assert EVIL in page.all_text()  # shown as written
    assert len(page.scripts) == 1 and "alert" not in page.scripts[0]  # the page's own script only
    assert "&lt;script&gt;alert(" in html


def test_the_page_fetches_nothing(tree: dict[str, str], store: Store, tmp_path: Path) -> None:
    store.append(tree["branch"], say("assistant", text("See [the docs](https://example.org/docs) and "
                                                       "![a diagram](https://example.org/d.png)")))
    page = Page(export(tree, tmp_path))
    assert not [a for t, a in page.tags if t == "link"]
    assert not [a for t, a in page.tags if a.get("src") and not str(a["src"]).startswith("data:")]
    hrefs = [str(a["href"]) for t, a in page.tags if a.get("href")]
    external = [h for h in hrefs if not h.startswith("#")]
    assert external == ["https://example.org/docs", "https://example.org/d.png"]  # links in the message, no fetch
    styles = "".join(page.styles)
    assert "@import" not in styles and not re.search(r"url\(", styles)
    policy = next(a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert str(policy).startswith("default-src 'none';")


def test_no_key_in_a_tool_output_or_the_environment_reaches_the_page(tree: dict[str, str], store: Store,
                                                                     tmp_path: Path, monkeypatch) -> None:
    env_key = "sk-proj-ENVexportKEY9876543210zyxw"
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", env_key)
    store.append(tree["branch"], say("assistant", text(f"the environment said OPENAI_API_KEY={env_key}")))
    html = export(tree, tmp_path)
    assert KEY not in html and env_key not in html
    assert "the key was [redacted]" in Page(html).all_text()
    assert "OPENAI_API_KEY=[redacted]" in Page(html).all_text()


def test_the_page_takes_the_configured_theme_colours(tree: dict[str, str], tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SCOUT_THEME", "solarized-light")
    styles = "".join(Page(export(tree, tmp_path)).styles)
    theme = styles[styles.index(":root", styles.index(":root") + 1):].lower()  # the theme's block, after the defaults
    assert "--background: #fdf6e3;" in theme and "--accent:" in theme and "--error:" in theme


def test_html_to_a_terminal_goes_to_a_file_named_for_the_session(tree: dict[str, str], workdir: Path,
                                                                 monkeypatch, capsys) -> None:
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert main(["export", tree["root"][:8], "--format", "html"]) == 0
    written = workdir / f"scout-{tree['root'][:8]}.html"
    assert written.is_file() and f"wrote {written}" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "expected"), [
    ("", ("html", None)), ("md", ("md", None)), ("json out/s.json", ("json", Path("out/s.json"))),
    ("notes.md", ("md", Path("notes.md"))), ("my page", ("html", Path("my page"))),
])
def test_export_arguments(args: str, expected: tuple) -> None:
    from scout_tui.session.exporting import parse_export_args

    assert parse_export_args(args) == expected


CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_chromium_renders_the_page_with_no_console_error(tree: dict[str, str], tmp_path: Path) -> None:
    page = tmp_path / "export.html"
    assert main(["export", tree["branch"][:8], "--format", "html", "-o", str(page)]) == 0
    shot = tmp_path / "shot.png"
    done = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
         "--enable-logging=stderr", "--v=0", f"--screenshot={shot}", "--window-size=1280,900", page.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 10_000, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert console == [], json.dumps(console, indent=1)


# -- /export in the TUI ------------------------------------------------------------------------


async def test_slash_export_writes_the_page_of_a_real_turn_in_the_theme_on_screen(tmp_home: Path, workdir: Path) -> None:
    from scout_tui.theming.export_colours import page_colours
    from scout_tui.widgets.chat_view import Notice
    from tests.app_helpers import SIZE, make_app, send, settle
    from tests.conftest import wait_until
    from tests.loopback import LoopbackServer, Reply, anthropic_stream

    call = ("toolu_w", "write", [json.dumps({"path": "greet.py", "content": "print('hello')\n"})])
    replies = [Reply(anthropic_stream(["Fixing it."], call)), Reply(anthropic_stream(["Fixed the **greeting**."]))]
    notices = lambda: " ".join(n.text for n in app.query(Notice))  # noqa: E731
    with LoopbackServer(replies) as server:
        app = make_app(workdir, server, permission_mode="yolo", theme="nord")
        async with app.run_test(size=SIZE) as pilot:
            await send(app, pilot, "fix greet.py")
            await settle(app, pilot)
            await send(app, pilot, "/export")
            await wait_until(pilot, lambda: "Exported" in notices(), what="the export's notice")
            written = workdir / f"scout-{app.session.id[:8]}.html"
            assert f"`{written}`" in notices()
            background = page_colours(app.current_theme)["background"]
            await send(app, pilot, "/export md missing/folder/out.md")
            await wait_until(pilot, lambda: "Not exported" in notices(), what="the failure's notice")
            assert f"{workdir / 'missing/folder/out.md'}: cannot write the export" in notices()
    page = Page(written.read_text(encoding="utf-8"))
    shown = page.all_text()
    assert "fix greet.py" in shown and "Fixed the greeting." in shown
    assert "+++ b/greet.py" in shown and "+print('hello')" in shown  # the write's diff, from its tool.end
    assert app.current_theme.name == "nord" and f"--background: {background};" in "".join(page.styles)


# -- /export over ACP -------------------------------------------------------------------------


async def test_acp_slash_export_writes_the_file_and_says_where(repo: Path, env: dict[str, str]) -> None:
    from tests.acp_helpers import RecordingClient, acp_process, text as acp_text
    from tests.headless_helpers import SECRET
    from tests.loopback import LoopbackServer, Reply, anthropic_stream

    client = RecordingClient()
    with LoopbackServer([Reply(anthropic_stream([f"Hello from the model; the key is {SECRET}."]))]) as server:
        async with acp_process(repo, env, client, "--base-url", server.url) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            await conn.prompt(session_id=session.session_id, prompt=acp_text("hi"))
            done = await conn.prompt(session_id=session.session_id, prompt=acp_text("/export"))
    assert done.stop_reason == "end_turn"
    [written] = list(repo.glob("scout-*.html"))
    said = [u.content.text for u in client.of(session.session_id) if u.session_update == "agent_message_chunk"]
    assert said[-1] == f"Exported this session (html) to `{written}`."
    shown = Page(written.read_text(encoding="utf-8")).all_text()
    assert "Hello from the model; the key is [redacted]." in shown and SECRET not in shown


def test_a_subagent_s_session_exports_as_its_own_conversation(tree: dict[str, str], store: Store,
                                                             tmp_path: Path) -> None:
    child = store.create_subagent(tree["root"], call="toolu_task", agent="explore", description="look around")
    store.append(child, say("user", text("Subagent prompt: list the tests")))
    store.append(child, say("assistant", text("Subagent answer: two tests")))
    out = tmp_path / "child.html"
    assert main(["export", child, "--format", "html", "-o", str(out)]) == 0
    page = Page(out.read_text(encoding="utf-8"))
    assert list(page.by_id("section")) == [f"b-{child}"]  # it shares no message with the session that ran it
    assert "Subagent answer: two tests" in page.all_text()
    assert child not in export(tree, tmp_path)  # not in the tree of the person's branches
