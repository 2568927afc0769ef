"""The trust gate: a project's plugin runs only once the person trusted that content at that path
(``scout_tui.config.trust``, ``scout-tui trust``, ``/trust``); the user's own plugins always run."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scout_tui.cli import trust_command
from scout_tui.extensions.plugins import load_plugins, project_plugin_trust
from scout_tui.config.trust import UNTRUSTED, check_file, read_trusted, record_trust, trust_file
from scout_tui.widgets.dialogs import ConfirmScreen
from scout_tui.widgets.chat_view import Notice
from tests.app_helpers import SIZE, make_app, rendered, send, settle
from tests.conftest import wait_until
from tests.loopback import LoopbackServer, Reply, anthropic_stream

# At import it leaves a mark: the side effect a planted plugin would have.
MARKING = '''
import pathlib
with open(pathlib.Path({mark!r}), "a") as out:
    out.write("ran\\n")

def scout(api):
    api.command("marked", lambda args: "marked " + args)
'''


def plugin(root: Path, name: str, source: str) -> Path:
    path = root / ".agents" / "plugins" / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def marking(root: Path, name: str, mark: Path) -> Path:
    return plugin(root, name, MARKING.format(mark=str(mark)))


def not_loaded(path: Path) -> str:
    return f"{path}: plugin {path.stem} not loaded: {UNTRUSTED}"


@pytest.fixture
def mark(tmp_path: Path) -> Path:
    return tmp_path / "mark.txt"


class Terminal(io.StringIO):
    """Answers typed at a terminal, for ``trust_command``'s stdin."""

    def isatty(self) -> bool:
        return True


# -- load_plugins --------------------------------------------------------------------------


def test_an_untrusted_project_plugin_is_not_run(tmp_home, workdir, mark):
    path = marking(workdir, "planted", mark)
    plugins = load_plugins(workdir)
    assert not mark.exists()
    assert plugins.loaded == [] and plugins.commands == {}
    assert plugins.problems == [not_loaded(path)]
    assert plugins.problems[0].endswith("read it, then run `scout-tui trust` (or /trust) to load it")


def test_a_trusted_project_plugin_runs(tmp_home, workdir, mark):
    path = marking(workdir, "helper", mark)
    record_trust([check_file(path, {})])
    plugins = load_plugins(workdir)
    assert plugins.problems == [] and [name for name, _ in plugins.loaded] == ["helper"]
    assert mark.read_text() == "ran\n"


def test_a_changed_project_plugin_is_untrusted_again(tmp_home, workdir, mark):
    path = marking(workdir, "helper", mark)
    record_trust([check_file(path, {})])
    path.write_text(path.read_text() + "\nimport os  # one more line\n")
    plugins = load_plugins(workdir)
    assert not mark.exists() and plugins.loaded == []
    assert plugins.problems == [not_loaded(path)]
    assert check_file(path, read_trusted()[0]).state == "changed"


def test_trust_is_for_the_path_too_a_copy_elsewhere_is_new(tmp_home, workdir, mark):
    path = marking(workdir, "helper", mark)
    record_trust([check_file(path, {})])
    copy = workdir / "sub" / ".agents" / "plugins" / "helper.py"
    copy.parent.mkdir(parents=True)
    copy.write_bytes(path.read_bytes())
    plugins = load_plugins(workdir / "sub")  # a subfolder is a project of its own
    assert not mark.exists() and plugins.problems == [not_loaded(copy)]


def test_a_user_plugin_runs_without_being_trusted(tmp_home, workdir, mark):
    marking(tmp_home, "mine", mark)
    plugins = load_plugins(workdir)
    assert plugins.problems == [] and [name for name, _ in plugins.loaded] == ["mine"]
    assert mark.read_text() == "ran\n"
    assert not trust_file().exists()  # not even read: no project plugin asked for it


def test_plugins_in_home_are_the_users_when_scout_starts_in_home(tmp_home, monkeypatch, mark):
    monkeypatch.chdir(tmp_home)
    marking(tmp_home, "mine", mark)
    assert load_plugins(tmp_home).problems == [] and mark.exists()


def test_what_runs_is_the_content_that_was_checked(tmp_home, workdir, mark, monkeypatch):
    """No window between the hash and the import: the file is read once (swapping it in
    between would otherwise run unchecked code)."""
    path = marking(workdir, "helper", mark)
    record_trust([check_file(path, {})])
    reads = []
    read_bytes = Path.read_bytes

    def counted(self: Path) -> bytes:
        reads.append(self)
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", counted)
    assert load_plugins(workdir).problems == []
    assert reads == [path] and not (path.parent / "__pycache__").exists()


def test_a_corrupt_trust_file_trusts_nothing_and_says_so(tmp_home, workdir, mark):
    path = marking(workdir, "helper", mark)
    record_trust([check_file(path, {})])
    trust_file().write_text('{"half": ')
    plugins = load_plugins(workdir)
    assert not mark.exists()
    assert plugins.problems == [
        f"{trust_file()}: cannot read the trusted plugins (not JSON: Expecting value at line 1): no project plugin "
        "is trusted until `scout-tui trust` writes it again",
        not_loaded(path),
    ]


@pytest.mark.parametrize("text", ['["a list"]', '{"/x.py": 1}', "\xff\xfe"])
def test_a_trust_file_of_the_wrong_shape_is_empty(tmp_home, text):
    trust_file().parent.mkdir(parents=True)
    trust_file().write_bytes(text.encode("latin-1"))
    table, problem = read_trusted()
    assert table == {} and problem.startswith(f"{trust_file()}: cannot read the trusted plugins (")


def test_trust_is_recorded_atomically_as_path_to_sha256(tmp_home, workdir):
    first, second = plugin(workdir, "a", "def scout(api): pass\n"), plugin(workdir, "b", "def scout(api): pass\n")
    record_trust([check_file(first, {})])
    record_trust([check_file(second, {})])  # adds to what is there
    table = json.loads(trust_file().read_text())
    import hashlib

    digest = hashlib.sha256(b"def scout(api): pass\n").hexdigest()
    assert table == {str(first): digest, str(second): digest}
    assert os.listdir(trust_file().parent) == ["trusted.json"]  # no temporary file left
    assert trust_file().stat().st_mode & 0o777 == 0o600


def test_recording_over_a_corrupt_trust_file_replaces_it(tmp_home, workdir):
    path = plugin(workdir, "a", "def scout(api): pass\n")
    trust_file().parent.mkdir(parents=True)
    trust_file().write_text("not json")
    record_trust([check_file(path, {})])
    assert read_trusted() == ({str(path): check_file(path, {}).sha256}, None)


def test_a_plugin_is_shown_with_its_control_characters_written_out(tmp_home, workdir):
    path = plugin(workdir, "sly", "x = 1\x1b[8m\rimport os  # hidden\n" + "y = 2" + " " * 200 + "; run()\n")
    checked = check_file(path, {})
    assert checked.head(5, width=40) == ["x = 1\\e[8m\\rimport os  # hidden", "y = 2" + " " * 34 + "…"]
    assert checked.summary() == f"2 lines, {len(path.read_bytes())} bytes"


# -- scout-tui trust -----------------------------------------------------------------------


def test_trust_list_shows_each_state_and_trusts_nothing(tmp_home, workdir, capsys):
    trusted, changed = plugin(workdir, "a", "def scout(api): pass\n"), plugin(workdir, "b", "def scout(api): pass\n")
    record_trust([check_file(trusted, {}), check_file(changed, {})])
    changed.write_text("def scout(api):\n    pass\n")
    new = plugin(workdir, "c", "def scout(api): pass\n")
    assert trust_command(["--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["STATE", "SIZE", "FILE"]
    assert [line.split()[0] + " " + line.split()[-1] for line in out[1:]] == [
        f"trusted {trusted}", f"changed {changed}", f"new {new}"]
    assert [f.state for f in project_plugin_trust(workdir)[0]] == ["trusted", "changed", "new"]


def test_trust_asks_per_file_on_a_terminal(tmp_home, workdir, capsys):
    first = plugin(workdir, "a", "def scout(api):\n    api.command('a', lambda args: 'a')\n")
    second = plugin(workdir, "b", "def scout(api): pass\n")
    assert trust_command([], stdin=Terminal("y\nn\n")) == 0
    out = capsys.readouterr().out
    assert f"--- {first} (new, 2 lines, " in out and "   2      api.command('a', lambda args: 'a')" in out
    assert out.count("[y/N]") == 2 and "trusted a.py" in out
    assert [f.state for f in project_plugin_trust(workdir)[0]] == ["trusted", "new"]
    assert load_plugins(workdir).problems == [not_loaded(second)]


def test_trust_without_a_terminal_or_yes_trusts_nothing_and_says_how(tmp_home, workdir, capsys):
    plugin(workdir, "a", "def scout(api): pass\n")
    assert trust_command([], stdin=io.StringIO("y\n")) == 1
    err = capsys.readouterr().err
    assert "stdin is not a terminal, so nothing was asked" in err and "`scout-tui trust --yes`" in err
    assert not trust_file().exists()


def test_trust_with_no_project_plugins_says_so(tmp_home, workdir, capsys):
    assert trust_command([]) == 0
    assert capsys.readouterr().out == f"no project plugins in {workdir / '.agents' / 'plugins'}\n"


def test_scout_tui_trust_yes_then_the_plugin_loads(tmp_home, workdir, mark):
    path = marking(workdir, "helper", mark)
    trust_file().parent.mkdir(parents=True)
    trust_file().write_text("{corrupt")  # replaced, not a crash
    done = subprocess.run([sys.executable, "-m", "scout_tui", "trust", "--yes"], cwd=workdir,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert "cannot read the trusted plugins" in done.stderr
    assert f"new       {check_file(path, {}).summary():<20}  {path}" in done.stdout
    assert not mark.exists()  # trusting does not run it
    plugins = load_plugins(workdir)
    assert plugins.problems == [] and mark.read_text() == "ran\n"


def test_headless_skips_an_untrusted_project_plugin_with_a_line_on_stderr(tmp_path, mark):
    home, repo = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    repo.mkdir()
    path = marking(repo, "planted", mark)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SCOUT_", "ANTHROPIC_", "OPENAI_"))}
    env = {**clean, "HOME": str(home), "SCOUT_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config"),
           "ANTHROPIC_API_KEY": "sk-test-key-123"}
    with LoopbackServer([Reply(anthropic_stream(["ok"]))]) as server:
        done = subprocess.run([sys.executable, "-m", "scout_tui", "-p", "hi", "--base-url", server.url],
                              cwd=repo, env=env, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n" and not mark.exists()
    assert f"scout-tui: {not_loaded(path)}" in done.stderr.splitlines()


# -- /trust in the TUI ---------------------------------------------------------------------


async def test_slash_trust_lists_the_untrusted_plugins_and_yes_loads_them(tmp_home, workdir, mark):
    path = marking(workdir, "helper", mark)
    app = make_app(workdir, None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert not mark.exists() and any("not loaded" in n.message for n in app._notifications)
        await send(app, pilot, "/trust")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the trust dialog")
        question = rendered(app.screen.query_one("#question"))
        assert "Trust 1 project plugin?" in question and "outside the sandbox" in question
        assert not list(app._notifications)  # the "not loaded" toast no longer covers the dialog's keys
        assert "new:" in question and "helper.py" in question and "import pathlib" in question
        await pilot.press("y")
        await settle(app, pilot)
        assert mark.read_text() == "ran\n" and "marked" in app.plugins.commands
        await send(app, pilot, "/marked it")
        await settle(app, pilot)
        notices = " ".join(n.text for n in app.query(Notice))
        assert "Trusted `helper.py`: loading the plugins." in notices and "marked it" in notices
    assert check_file(path, read_trusted()[0]).trusted


async def test_slash_trust_cancelled_trusts_nothing(tmp_home, workdir, mark):
    marking(workdir, "helper", mark)
    app = make_app(workdir, None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await send(app, pilot, "/trust")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the trust dialog")
        await pilot.press("n")
        await settle(app, pilot)
    assert not mark.exists() and not trust_file().exists()


async def test_slash_trust_with_every_plugin_trusted_says_so(tmp_home, workdir, mark):
    path = marking(workdir, "helper", mark)
    record_trust([check_file(path, {})])
    app = make_app(workdir, None)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await send(app, pilot, "/trust")
        await settle(app, pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert "Every project plugin here is trusted (1)." in " ".join(n.text for n in app.query(Notice))
