"""Memory files (``session/memory.py``): the person's own AGENTS.md, then every AGENTS.md from the
repository root down to the working directory (CLAUDE.md where a folder has none), ``@path``
imports inlined (cycles, escapes and depth refused and said), one budget with the cut said; all of
it in the system prompt, which a ``-p`` run sends to the model."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from scout_tui.session.memory import IMPORT_DEPTH, MEMORY_BUDGET, load_memory, memory_files, nearest_file, with_memory
from scout_tui.session.prompt import system_prompt
from tests.headless_helpers import env, repo, scout  # noqa: F401 — fixtures
from tests.loopback import LoopbackServer, Reply, anthropic_stream


def git_init(folder: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def project(tmp_home: Path, tmp_path: Path) -> Path:
    """A git repository beside the fresh HOME, with a subfolder ``sub/deep``."""
    root = git_init(tmp_path / "project")
    (root / "sub" / "deep").mkdir(parents=True)
    return root


def test_from_a_subfolder_the_root_s_and_the_subfolder_s_agents_md_are_both_in_the_prompt_root_first(project):
    write(project / "AGENTS.md", "ROOT-RULES")
    write(project / "sub" / "AGENTS.md", "SUB-RULES")
    prompt = system_prompt(project / "sub" / "deep", ["read"])
    assert 0 < prompt.index("ROOT-RULES") < prompt.index("SUB-RULES")
    assert f'<memory path="{project / "AGENTS.md"}">' in prompt
    assert f'<memory path="{project / "sub" / "AGENTS.md"}">' in prompt


def test_the_person_s_own_file_comes_first(project, tmp_home):
    write(tmp_home / ".agents" / "AGENTS.md", "USER-RULES")
    write(project / "AGENTS.md", "ROOT-RULES")
    files = memory_files(project / "sub")
    assert [(f.path, f.user) for f in files] == [(tmp_home / ".agents" / "AGENTS.md", True),
                                                 (project / "AGENTS.md", False)]
    prompt = system_prompt(project / "sub", [])
    assert prompt.index("USER-RULES") < prompt.index("ROOT-RULES")


def test_a_repository_with_only_claude_md_has_it_in_the_prompt(project):
    write(project / "CLAUDE.md", "CLAUDE-RULES")
    assert "CLAUDE-RULES" in system_prompt(project / "sub", [])
    assert [f.path for f in memory_files(project / "sub")] == [project / "CLAUDE.md"]


def test_in_one_folder_agents_md_wins_over_claude_md(project):
    write(project / "AGENTS.md", "AGENTS-RULES")
    write(project / "CLAUDE.md", "CLAUDE-RULES")
    prompt = system_prompt(project, [])
    assert "AGENTS-RULES" in prompt and "CLAUDE-RULES" not in prompt


def test_outside_a_repository_only_the_working_directory_s_file_is_read(tmp_home, tmp_path):
    write(tmp_path / "AGENTS.md", "PARENT-RULES")
    write(tmp_path / "here" / "AGENTS.md", "HERE-RULES")
    assert [f.path for f in memory_files(tmp_path / "here")] == [tmp_path / "here" / "AGENTS.md"]


def test_an_import_is_inlined_after_its_paragraph_and_not_from_code(project):
    write(project / "docs" / "style.md", "STYLE: tabs, not spaces")
    write(project / "AGENTS.md", "Read @docs/style.md first, with @types/node.\n\nNot `@docs/code.md` nor:\n\n```\n@docs/fenced.md\n```\n")
    write(project / "docs" / "code.md", "CODE-SPAN-TEXT")
    write(project / "docs" / "fenced.md", "FENCED-TEXT")
    [file] = memory_files(project)
    assert file.text.startswith(f'Read @docs/style.md first, with @types/node.\n<import path="{project / "docs" / "style.md"}">\n'
                                "STYLE: tabs, not spaces\n</import>\n\nNot `@docs/code.md`")
    assert "CODE-SPAN-TEXT" not in file.text and "FENCED-TEXT" not in file.text
    assert file.imports == (project / "docs" / "style.md",) and not file.problems


def test_an_import_cycle_is_stopped_and_said(project):
    write(project / "AGENTS.md", "A @a.md")
    write(project / "a.md", "IN-A @b.md")
    write(project / "b.md", "IN-B @a.md")
    [file] = memory_files(project)
    assert file.text.count("IN-A") == 1 and file.text.count("IN-B") == 1
    assert f"[import of {project / 'a.md'} refused: a cycle (AGENTS.md -> a.md -> b.md -> a.md)]" in file.text
    assert file.problems == (f"{project / 'b.md'}:1: import of {project / 'a.md'} refused: a cycle "
                             "(AGENTS.md -> a.md -> b.md -> a.md)",)


def test_an_import_escaping_the_repository_is_refused_and_said(project, tmp_path):
    write(tmp_path / "secret.md", "OUTSIDE-TEXT")
    write(project / "AGENTS.md", "See @../secret.md")
    prompt = system_prompt(project, [])
    assert "OUTSIDE-TEXT" not in prompt
    assert f"[import of {tmp_path / 'secret.md'} refused: outside {project}]" in prompt


def test_an_import_through_a_link_leading_out_of_the_repository_is_refused(project, tmp_path):
    write(tmp_path / "secret.md", "OUTSIDE-TEXT")
    (project / "notes.md").symlink_to(tmp_path / "secret.md")
    write(project / "AGENTS.md", "See @notes.md")
    [file] = memory_files(project)
    assert "OUTSIDE-TEXT" not in file.text and f"import of {tmp_path / 'secret.md'} refused: outside" in file.text


def test_the_person_s_own_file_may_import_from_home(project, tmp_home):
    write(tmp_home / "notes" / "mine.md", "MY-NOTES")
    write(tmp_home / ".agents" / "AGENTS.md", "@~/notes/mine.md")
    assert "MY-NOTES" in memory_files(project)[0].text


def test_imports_nest_at_most_five_deep(project):
    write(project / "AGENTS.md", "@n1.md")
    for n in range(1, IMPORT_DEPTH + 2):
        write(project / f"n{n}.md", f"LEVEL-{n} @n{n + 1}.md")
    [file] = memory_files(project)
    assert f"LEVEL-{IMPORT_DEPTH}" in file.text and f"LEVEL-{IMPORT_DEPTH + 1}" not in file.text
    assert f"not followed: imports nest at most {IMPORT_DEPTH} deep" in file.text


def test_the_budget_cuts_the_most_general_file_and_the_prompt_says_so(project, tmp_home):
    user = write(tmp_home / ".agents" / "AGENTS.md", "USER-HEAD " + "u" * MEMORY_BUDGET + " USER-TAIL")
    write(project / "AGENTS.md", "ROOT-RULES")
    files = memory_files(project)
    assert [f.clipped for f in files] == [True, False]
    assert len(files[0].text) + len(files[1].text) == MEMORY_BUDGET
    prompt = system_prompt(project, [])
    assert "USER-HEAD" in prompt and "USER-TAIL" not in prompt and "ROOT-RULES" in prompt
    assert (f"[... clipped at {MEMORY_BUDGET - len('ROOT-RULES'):,} characters of {user} "
            f"({files[0].length:,}): memory files get {MEMORY_BUDGET:,}") in prompt


def test_a_written_memory_file_is_seen_and_replaces_the_prompt_s_section(project):
    write(project / "AGENTS.md", "OLD-RULES")
    old = load_memory(project / "sub")
    system = "preamble\n\n" + system_prompt(project / "sub", ["read"], memory=old)
    assert not old.changed()
    write(project / "sub" / "AGENTS.md", "NEW-SUB-RULES")  # a file where there was none counts too
    assert old.changed()
    new = load_memory(project / "sub")
    updated = with_memory(system, old, new)
    assert updated.startswith("preamble\n\n") and updated.endswith(new.prompt_text)
    assert "OLD-RULES" in updated and "NEW-SUB-RULES" in updated and updated.count("Memory files:") == 1
    assert nearest_file(new) == project / "sub" / "AGENTS.md"
    assert nearest_file(load_memory(project / "sub" / "deep")) == project / "sub" / "AGENTS.md"


def test_with_no_memory_file_the_nearest_is_the_working_directory_s_agents_md(project):
    memory = load_memory(project / "sub")
    assert memory.prompt_text == "" and nearest_file(memory) == project / "sub" / "AGENTS.md"


def test_print_mode_sends_the_root_s_and_the_subfolder_s_memory_files(repo, env):
    git_init(repo)
    write(repo / "AGENTS.md", "ROOT-RULES: run make test")
    write(repo / "pkg" / "CLAUDE.md", "PKG-RULES: tabs")
    write(Path(env["HOME"]) / ".agents" / "AGENTS.md", "USER-RULES: be brief")
    with LoopbackServer([Reply(anthropic_stream(["Done."]))]) as server:
        done = scout(["-p", "hello", "--base-url", server.url], repo / "pkg", env)
    assert done.returncode == 0, done.stderr
    system = json.dumps(server.requests[0].json()["system"])
    assert 0 < system.index("USER-RULES") < system.index("ROOT-RULES") < system.index("PKG-RULES")
    assert json.dumps(f'<memory path="{repo / "pkg" / "CLAUDE.md"}">')[1:-1] in system


def test_print_mode_says_an_import_refused_on_stderr(repo, env, tmp_path):
    git_init(repo)
    write(tmp_path / "secret.md", "OUTSIDE-TEXT")
    write(repo / "AGENTS.md", "Rules.\n\nSee @../secret.md\n")
    with LoopbackServer([Reply(anthropic_stream(["Done."]))]) as server:
        done = scout(["-p", "hello", "--base-url", server.url], repo, env)
    assert done.returncode == 0, done.stderr
    assert f"{repo / 'AGENTS.md'}:3: import of {tmp_path / 'secret.md'} refused: outside {repo}" in done.stderr
    assert "OUTSIDE-TEXT" not in json.dumps(server.requests[0].json())
