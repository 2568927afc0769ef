"""The built wheel, installed as a user installs it (not editable), works: it carries every module
of the checkout, the shipped themes and the entry point, and ``-p`` and ``acp`` run from it.

The wheel is built once per test session, from a clean copy of the checkout (a stale ``build/``
folder could otherwise add a module the sources no longer list). It is installed with
``--no-deps`` into a fresh venv that sees this venv's site-packages through a ``.pth`` line, for
the third-party dependencies only: such a line adds the folder to ``sys.path`` without running
the ``.pth`` files inside it, so the editable install of this checkout stays out of reach and a
module missing from the wheel is a ModuleNotFoundError, as it would be for a user.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.acp_helpers import RecordingClient, acp_process, text
from tests.headless_helpers import env, repo  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer, Reply, anthropic_stream

ROOT = Path(__file__).resolve().parent.parent
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", ".*cache",
                                     ".hypothesis", "tests", "benchmarks", "docs")


def without_pythonpath(env: dict[str, str]) -> dict[str, str]:
    """``env`` as a user's shell has it: no PYTHONPATH that could lead to the checkout (pip
    would find the checkout's own metadata there and install nothing)."""
    return {k: v for k, v in env.items() if k != "PYTHONPATH"}


def checkout_modules() -> list[str]:
    """Every module of the checkout's ``scout_tui`` package, by dotted name (``__main__`` aside:
    importing it runs the command)."""
    names = []
    for path in sorted((ROOT / "scout_tui").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts[-1] != "__main__":
            names.append(".".join(parts))
    return names


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """scout-tui's wheel, built by pip (with pip's cache) from a clean copy of the checkout."""
    where = tmp_path_factory.mktemp("wheel")
    source = where / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCES)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(where), str(source)],
                   check=True, capture_output=True, timeout=300, env=without_pythonpath(dict(os.environ)))
    [built] = where.glob("scout_tui-*.whl")
    return built


@pytest.fixture(scope="session")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed (not editable); returns its folder."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    new_site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                              check=True, capture_output=True, text=True).stdout.strip()
    ours = dict.fromkeys(site.getsitepackages())  # this venv's (and the system's, where this venv sees them)
    (Path(new_site) / "third_party_deps.pth").write_text("".join(f"{path}\n" for path in ours))
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True, timeout=300, env=without_pythonpath(dict(os.environ)))
    return venv


@pytest.fixture
def user_env(env: dict[str, str]) -> dict[str, str]:
    return without_pythonpath(env)


def test_wheel_includes_the_default_theme_and_the_console_script(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "scout_tui/shipped_themes/scout-dark.toml" in names
    assert "scout_tui/tui/main_screen.tcss" in names  # the main screen's CSS
    assert "scout_tui/__main__.py" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "scout-tui = scout_tui.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_every_module_of_the_checkout_imports_from_the_installed_wheel(installed, tmp_path):
    modules = checkout_modules()
    assert "scout_tui.mcp.client" in modules and "scout_tui.widgets.composer" in modules
    script = ("import importlib, sys\n"
              "for name in sys.argv[1:]:\n"
              "    print(importlib.import_module(name).__file__)\n"
              "from scout_tui.theming.themes import shipped_themes_dir\n"
              "print(shipped_themes_dir() / 'scout-dark.toml')\n")
    done = subprocess.run([installed / "bin" / "python", "-I", "-c", script, *modules], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    files = [Path(line) for line in done.stdout.splitlines()]
    assert len(files) == len(modules) + 1
    assert [f for f in files if not f.is_relative_to(installed)] == []  # none from the checkout
    assert files[-1].is_file()  # the shipped themes, read where the wheel put them


def test_print_mode_answers_from_the_installed_wheel(installed, repo, user_env):
    with LoopbackServer([Reply(anthropic_stream(["Installed ", "and answering."]))]) as server:
        done = subprocess.run([installed / "bin" / "scout-tui", "-p", "hello", "--base-url", server.url], cwd=repo,
                              env=user_env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Installed and answering.\n"


async def test_acp_initializes_and_answers_a_prompt_from_the_installed_wheel(installed, repo, user_env):
    client = RecordingClient()
    with LoopbackServer([Reply(anthropic_stream(["Installed ", "and answering."]))]) as server:
        async with acp_process(repo, user_env, client, "--base-url", server.url, python=str(installed / "bin" / "python")
                               ) as (conn, _, _):
            session = await conn.new_session(cwd=str(repo))
            done = await conn.prompt(session_id=session.session_id, prompt=text("hello"))
    assert done.stop_reason == "end_turn"
    chunks = [u.content.text for u in client.of(session.session_id) if u.session_update == "agent_message_chunk"]
    assert "".join(chunks) == "Installed and answering."


def test_search_and_an_html_export_work_from_the_installed_wheel(installed, repo, user_env):
    """The page's stylesheet and script are package data: a wheel without them fails here."""
    bin_ = installed / "bin" / "scout-tui"
    with LoopbackServer([Reply(anthropic_stream(["The wombat is ", "fine."]))]) as server:
        done = subprocess.run([bin_, "-p", "how is the wombat?", "--base-url", server.url], cwd=repo,
                              env=user_env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = subprocess.run([bin_, "search", "wombat", "--json"], cwd=repo, env=user_env, capture_output=True,
                           text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert {h["role"] for h in hits} == {"prompt", "answer"}
    page = repo / "page.html"
    exported = subprocess.run([bin_, "export", hits[0]["session"], "--format", "html", "-o", str(page)], cwd=repo,
                              env=user_env, capture_output=True, text=True, timeout=120)
    assert exported.returncode == 0, exported.stderr
    html = page.read_text()
    assert "The wombat is fine." in html and "<style" in html and "<script" in html
