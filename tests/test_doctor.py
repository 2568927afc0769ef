"""``scout-tui doctor``: the config files read, the provider and the key's source (never the
key), the sandbox in force and why it is not, the permission rules; a config error exits 1."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from scout_tui import __version__, cli
from scout_tui.tools import sandbox

KEY = "zq7Vx-DOCTOR-kEy-9f8e7d6c5b4a-WqJ0"
"""A key no line of the report could hold by chance, nor the start or end of it."""


def user_config(home: Path, text: str) -> Path:
    path = home / ".config" / "scout" / "scout.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def doctor(capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str, str]:
    code = cli.main(["doctor", *flags])
    out, err = capsys.readouterr()
    return code, out, err


def row(out: str, label: str) -> str:
    """The value of the report's one row labelled ``label``."""
    found = rows(out, label)
    assert len(found) == 1, f"{len(found)} rows labelled {label!r} in:\n{out}"
    return found[0]


def rows(out: str, label: str) -> list[str]:
    """The values of the rows labelled ``label``: a row is two spaces, the label in 10 columns,
    a space, the value."""
    return [line[13:] for line in out.splitlines() if line.startswith("  ") and line[2:12].rstrip() == label]


@pytest.fixture
def fresh_probe() -> Iterator[None]:
    """bwrap is probed again (after the test changes PATH or the platform), and again after."""
    sandbox.available.cache_clear()
    yield
    sandbox.available.cache_clear()


needs_bwrap = pytest.mark.skipif(not (sys.platform.startswith("linux") and sandbox.available()),
                                 reason="bwrap cannot run here: install the Debian/Ubuntu package bubblewrap, as .ci/run does")


def fake_bwrap(folder: Path, script: str) -> None:
    folder.mkdir()
    path = folder / "bwrap"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)


# -- versions and config files -------------------------------------------------------------------


def test_doctor_shows_versions_and_platform(tmp_home: Path, workdir: Path, capsys) -> None:
    code, out, _ = doctor(capsys)
    assert code == 0
    assert row(out, "scout-tui") == __version__
    assert row(out, "python").startswith(f"{sys.version_info.major}.{sys.version_info.minor}.")
    assert sys.platform in row(out, "platform")
    assert row(out, "directory") == str(workdir.resolve())


def test_doctor_lists_the_config_files_read_and_the_places_found_empty(tmp_home: Path, workdir: Path, capsys) -> None:
    user = user_config(tmp_home, 'model = "claude-opus-4-1"\n')
    code, out, _ = doctor(capsys)
    assert code == 0
    assert row(out, "read") == str(user)
    assert row(out, "not found") == str(workdir / "scout.toml")
    assert row(out, "model") == f"claude-opus-4-1 (from {user}:1)"

    project = workdir / "scout.toml"
    project.write_text('\nmax_turn = 3\n')
    _, out, _ = doctor(capsys)
    assert rows(out, "read") == [str(user), str(project)]
    assert "not found" not in out
    assert row(out, "note").startswith(f"{project}:2: unknown key 'max_turn' is ignored; did you mean 'max_turns'?")


def test_doctor_shows_each_model_setting_with_its_source(tmp_home: Path, workdir: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("SCOUT_PROVIDER", "openai")
    (workdir / "scout.toml").write_text('# local server\nbase_url = "http://user:hunter2hunter2@localhost:11434/v1"\n')
    _, out, _ = doctor(capsys)
    assert row(out, "provider") == "openai (from env SCOUT_PROVIDER)"
    assert row(out, "model") == "gpt-4.1 (default: the provider's)"
    assert row(out, "base_url") == f"http://user:***@localhost:11434/v1 (from {workdir / 'scout.toml'}:2)"
    assert "hunter2" not in out


def test_doctor_describes_the_run_its_flags_make(tmp_home: Path, workdir: Path, capsys) -> None:
    code, out, err = doctor(capsys, "--provider", "openai", "--model", "llama3.1", "--base-url",
                            "http://localhost:11434/v1", "--api-key", KEY, "--permission-mode", "yolo")
    assert code == 0, err
    assert row(out, "provider") == "openai (from flag --provider)"
    assert row(out, "model") == "llama3.1 (from flag --model)"
    assert row(out, "base_url") == "http://localhost:11434/v1 (from flag --base-url)"
    assert row(out, "api_key") == "set, from flag --api-key (the key itself is never shown)"
    assert row(out, "mode").startswith("yolo (from flag --permission-mode)")
    assert_no_part_of_the_key(out + err)


# -- the API key: its source, never the key ------------------------------------------------------


def assert_no_part_of_the_key(text: str) -> None:
    for n in range(4, len(KEY) + 1):
        assert KEY[:n] not in text and KEY[-n:] not in text, f"a part of the key is shown: {KEY[:n]!r} or {KEY[-n:]!r}"


def test_a_key_from_the_environment_is_named_by_its_variable_only(tmp_home: Path, workdir: Path, capsys,
                                                                  monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    code, out, err = doctor(capsys)
    assert code == 0
    assert row(out, "api_key") == "set, from env ANTHROPIC_API_KEY (the key itself is never shown)"
    assert_no_part_of_the_key(out + err)


def test_a_key_from_a_config_file_is_named_by_its_file_and_line_only(tmp_home: Path, workdir: Path, capsys) -> None:
    user = user_config(tmp_home, f'provider = "openai"\napi_key = "{KEY}"\n')
    code, out, err = doctor(capsys)
    assert code == 0
    assert row(out, "api_key") == f"set, from {user}:2 (the key itself is never shown)"
    assert_no_part_of_the_key(out + err)


def test_without_a_key_the_doctor_says_how_to_set_one(tmp_home: Path, workdir: Path, capsys) -> None:
    _, out, _ = doctor(capsys)
    assert row(out, "api_key").startswith("none: export ANTHROPIC_API_KEY=…, or set api_key in ")


# -- the sandbox ----------------------------------------------------------------------------------


@needs_bwrap
def test_the_sandbox_in_force_is_workspace_write_where_bwrap_works(tmp_home: Path, workdir: Path, capsys) -> None:
    _, out, _ = doctor(capsys)
    assert row(out, "bwrap").endswith(": can create a sandbox here")
    assert row(out, "requested") == "workspace-write (default)"
    assert row(out, "in force") == "workspace-write"
    assert row(out, "writable") == f"{workdir.resolve()} (the workspace), /tmp (private to each command)"
    assert row(out, "network") == "on (default)"


@needs_bwrap
def test_mode_off_names_the_config_file_that_set_it(tmp_home: Path, workdir: Path, capsys) -> None:
    user = user_config(tmp_home, '[sandbox]\nmode = "off"\nnetwork = false\n')
    _, out, _ = doctor(capsys)
    assert row(out, "requested") == f"off (from {user}:2)"
    assert row(out, "in force") == f'off: sandbox.mode = "off" in {user}:2; commands run unsandboxed'
    assert row(out, "network").startswith("off (a network namespace alone") and row(out, "network").endswith(
        f"(from {user}:3)")  # where bwrap runs, network = false holds without the rest of the sandbox
    assert not rows(out, "read-only") and not rows(out, "hidden")  # nothing is, without a sandbox


@needs_bwrap
def test_network_off_in_force_cuts_even_loopback(tmp_home: Path, workdir: Path, capsys) -> None:
    user = user_config(tmp_home, '[sandbox]\nnetwork = false\n')
    _, out, _ = doctor(capsys)
    assert row(out, "network") == f"off (no network, loopback included) (from {user}:2)"


@needs_bwrap
def test_the_doctor_lists_what_the_sandbox_makes_read_only_and_what_it_hides(
        tmp_home: Path, workdir: Path, capsys, monkeypatch) -> None:
    (workdir / ".git" / "hooks").mkdir(parents=True)
    (workdir / ".git" / "config").write_text("")
    (workdir / ".agents").mkdir()
    runtime = Path(tempfile.mkdtemp(prefix="scout-doctor-", dir="/var/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    try:
        _, out, _ = doctor(capsys)
    finally:
        runtime.rmdir()
    ws = workdir.resolve()
    assert row(out, "read-only") == (f"{ws}/.git/config, {ws}/.git/hooks, {ws}/.agents "
                                     "(what runs outside the sandbox later)")
    assert row(out, "moved").startswith(".scout, scout.toml, .git/commondir, .git/modules aside if a sandboxed command creates them")
    assert "unguarded" not in out  # .git/hooks is there
    assert f"{runtime} (emptied)" in row(out, "hidden")


def test_network_off_without_bwrap_is_not_enforced(tmp_home: Path, workdir: Path, tmp_path: Path, capsys,
                                                   monkeypatch, fresh_probe) -> None:
    user = user_config(tmp_home, '[sandbox]\nnetwork = false\n')
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    _, out, _ = doctor(capsys)
    assert row(out, "network") == f"off requested, but not enforced: commands run unsandboxed (from {user}:2)"


def test_a_project_cannot_turn_the_sandbox_off_and_the_doctor_says_so(tmp_home: Path, workdir: Path, capsys) -> None:
    project = workdir / "scout.toml"
    project.write_text('[sandbox]\nmode = "off"\n')
    _, out, _ = doctor(capsys)
    assert row(out, "requested") == "workspace-write (default)"
    assert row(out, "note").startswith(f"{project}:2: sandbox.mode = 'off' is not used from a project's scout.toml")


def test_without_bwrap_on_path_commands_run_unsandboxed_and_it_says_what_to_install(
        tmp_home: Path, workdir: Path, tmp_path: Path, capsys, monkeypatch, fresh_probe) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    _, out, _ = doctor(capsys)
    assert row(out, "bwrap").startswith("not available: bwrap is not installed: install the bubblewrap package")
    assert row(out, "requested") == "workspace-write (default)"
    assert row(out, "in force").startswith("off: bwrap is not installed: install the bubblewrap package")
    assert row(out, "in force").endswith("; commands run unsandboxed")
    assert row(out, "writable") == "whatever your user can write (no sandbox)"


def test_bwrap_that_cannot_make_a_sandbox_here_gives_the_first_line_it_printed(
        tmp_home: Path, workdir: Path, tmp_path: Path, capsys, monkeypatch, fresh_probe) -> None:
    bin_ = tmp_path / "bin"
    fake_bwrap(bin_, 'if [ "$1" = --version ]; then echo "bubblewrap 0.0.1"; exit 0; fi\n'
                     'echo "bwrap: No permissions to create a new namespace" >&2\necho "second line" >&2\nexit 1\n')
    monkeypatch.setenv("PATH", f"{bin_}:/usr/bin:/bin")
    _, out, _ = doctor(capsys)
    reason = f"{bin_ / 'bwrap'} is installed but cannot create a sandbox here: bwrap: No permissions to create a new namespace"
    assert row(out, "bwrap") == f"{bin_ / 'bwrap'} (bubblewrap 0.0.1): not available: {reason}"
    assert row(out, "in force") == f"off: {reason}; commands run unsandboxed"
    assert "second line" not in out


def test_on_macos_the_doctor_says_there_is_no_sandbox(tmp_home: Path, workdir: Path, capsys, monkeypatch,
                                                      fresh_probe) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    _, out, _ = doctor(capsys)
    assert row(out, "in force").startswith("off: macOS has no bubblewrap")
    assert row(out, "in force").endswith("; commands run unsandboxed")


# -- permissions and errors ---------------------------------------------------------------------


def test_the_permission_rules_in_force_are_listed_with_their_origins(tmp_home: Path, workdir: Path, capsys) -> None:
    user = user_config(tmp_home, 'permission_mode = "auto-edit"\n[permissions]\nallow = ["bash:git status *"]\n'
                                 'deny = [\n  "bash:rm *",\n]\n')
    _, out, _ = doctor(capsys)
    assert row(out, "mode") == f"auto-edit (from {user}:1)"
    assert row(out, "allow") == f"bash:git status * (from {user}:3)"
    assert row(out, "deny") == f"bash:rm * (from {user}:5)"


def test_a_project_cannot_set_yolo_and_the_doctor_shows_the_mode_in_force(tmp_home: Path, workdir: Path,
                                                                          capsys) -> None:
    (workdir / "scout.toml").write_text('permission_mode = "yolo"\n')
    _, out, _ = doctor(capsys)
    assert row(out, "mode") == "ask (default: the project's setting is not used, see the note)"
    assert 'permission_mode = "yolo" is not used from a project' in row(out, "note")


def test_a_config_error_exits_1_with_its_file_and_line_after_what_could_be_shown(
        tmp_home: Path, workdir: Path, capsys) -> None:
    project = workdir / "scout.toml"
    project.write_text('model = "m"\n[sandbox]\nmode = "of"\n')
    code, out, err = doctor(capsys)
    assert code == 1
    assert err.startswith(f"scout-tui: {project}:3: sandbox.mode must be one of workspace-write, read-only, off")
    assert row(out, "scout-tui") == __version__
    assert row(out, "found") == str(project)
    assert "\nmodel\n" not in out  # nothing made from the config it could not read


def test_the_doctor_imports_no_textual() -> None:
    code = "import sys, scout_tui.frontends.doctor; print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_doctor_shows_the_window_the_server_gives_on_the_anthropic_route_and_the_calibration(
        tmp_home: Path, workdir: Path, capsys) -> None:
    from llama_server import LlamaServer

    from scout_tui.config.calibration import remember, server_key

    with LlamaServer(n_ctx=8192).serve() as server:
        (workdir / "scout.toml").write_text(f'provider = "anthropic"\nbase_url = "{server.url}"\nmodel = "small"\n')
        _, out, _ = doctor(capsys)
        assert row(out, "window") == (f"8,192 tokens (server {server.url}/props); token estimates not calibrated "
                                      "yet (characters / 4 until the first answer)")
        remember(server_key("anthropic", server.url, "small"), 1.31, 12)
        _, out, _ = doctor(capsys)
    assert row(out, "window").endswith("; token estimates ×1.31, calibrated by 12 requests")
