"""Skills: discovery in ~/.agents/skills and ./.agents/skills, front matter, the skill tool, the prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from scout_tui.core.errors import ScoutError
from scout_tui.session.memory import MEMORY_BUDGET
from scout_tui.session.prompt import system_prompt
from scout_tui.extensions.skills import discover_skills, parse_front_matter, skill_tool
from scout_tui.tools import Registry, ToolContext


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def user_skills(home: Path) -> Path:
    return home / ".agents" / "skills"


def project_skills(repo: Path) -> Path:
    return repo / ".agents" / "skills"


def test_both_layouts_are_found_sorted_by_name_with_their_source(tmp_home, workdir):
    write(user_skills(tmp_home) / "release" / "SKILL.md", "---\ndescription: Cut a release\n---\nSteps…\n")
    write(project_skills(workdir) / "changelog.md", "# Update the changelog\n\nBody.\n")
    skills, problems = discover_skills(workdir)
    assert problems == []
    assert [(s.name, s.description, s.source) for s in skills] == [
        ("changelog", "Update the changelog", "project"),
        ("release", "Cut a release", "user"),
    ]
    assert skills[1].path == user_skills(tmp_home) / "release" / "SKILL.md"


def test_a_project_skill_replaces_a_user_skill_of_the_same_name(tmp_home, workdir):
    write(user_skills(tmp_home) / "deploy.md", "---\ndescription: user deploy\n---\n")
    write(project_skills(workdir) / "deploy" / "SKILL.md", "---\ndescription: project deploy\n---\n")
    skills, _ = discover_skills(workdir)
    assert [(s.name, s.description, s.source) for s in skills] == [("deploy", "project deploy", "project")]


def test_front_matter_name_and_quoted_values_win_over_the_file_name(tmp_home, workdir):
    write(project_skills(workdir) / "x.md",
          "---\n# a comment\nname: \"pdf-tools\"\ndescription: 'Fill PDF forms; it''s quick' \nlicense: MIT # trailing\n---\nBody\n")
    [skill], problems = discover_skills(workdir)
    assert problems == []
    assert (skill.name, skill.description) == ("pdf-tools", "Fill PDF forms; it's quick")


def test_folded_description_and_list_items_are_read_as_skill_files_write_them(tmp_path):
    fields, body = parse_front_matter(
        "---\nname: a\ndescription: >\n  Use this when\n  the tests fail.\nallowed-tools:\n- Bash\n- Read\n---\nThe body\n",
        tmp_path / "a.md")
    assert fields["description"] == "Use this when the tests fail."
    assert body == "The body\n"


def test_unterminated_front_matter_is_reported_with_file_and_line_and_the_others_load(tmp_home, workdir):
    broken = write(project_skills(workdir) / "broken.md", "---\nname: broken\ndescription: never closed\n\nBody\n")
    write(project_skills(workdir) / "good.md", "Good skill\n")
    skills, problems = discover_skills(workdir)
    assert [s.name for s in skills] == ["good"]
    assert len(problems) == 1 and problems[0].startswith(f"{broken}:1: ")
    assert "no closing '---'" in problems[0]


def test_a_line_that_is_not_key_value_is_reported_at_its_line(tmp_path):
    path = tmp_path / "s.md"
    with pytest.raises(ScoutError, match=rf"^{path}:3: front matter: expected 'key: value'"):
        parse_front_matter("---\nname: s\njust words\n---\n", path)


async def test_the_skill_tool_returns_the_body_read_when_called(tmp_home, workdir):
    path = write(project_skills(workdir) / "review.md", "---\ndescription: Review code\n---\nOld body\n")
    skills, _ = discover_skills(workdir)
    path.write_text("---\ndescription: Review code\n---\nCheck the tests first.\n", encoding="utf-8")
    registry = Registry()
    registry.add(skill_tool(skills))
    result = await registry.call("skill", {"name": "review"}, ToolContext(workdir))
    assert not result.is_error
    assert result.content == "Check the tests first."
    assert registry.tools["skill"].read_only


async def test_a_folder_skill_says_where_its_files_are(tmp_home, workdir):
    write(project_skills(workdir) / "lint" / "SKILL.md", "Run scripts/lint.sh\n")
    skills, _ = discover_skills(workdir)
    result = await skill_tool(skills).run({"name": "lint"}, ToolContext(workdir))
    assert result.startswith(f"Skill folder: {project_skills(workdir) / 'lint'}")
    assert result.endswith("Run scripts/lint.sh")


async def test_an_unknown_skill_is_an_error_listing_the_known_ones(tmp_home, workdir):
    write(project_skills(workdir) / "a.md", "A\n")
    write(project_skills(workdir) / "b.md", "B\n")
    registry = Registry()
    registry.add(skill_tool(discover_skills(workdir)[0]))
    result = await registry.call("skill", {"name": "zzz"}, ToolContext(workdir))
    assert result.is_error
    assert result.content == "skill: unknown skill 'zzz'. Known skills: a, b."


def test_only_names_and_descriptions_reach_the_system_prompt(tmp_home, workdir):
    write(project_skills(workdir) / "deploy.md", "---\ndescription: Ship to production\n---\nSECRET-STEPS-IN-BODY\n")
    skills, _ = discover_skills(workdir)
    prompt = system_prompt(workdir, ["read", "skill"], skills=skills, extra=["Plugin says hello."])
    assert "Skills (load one with the skill tool):\n- deploy: Ship to production" in prompt
    assert "SECRET-STEPS-IN-BODY" not in prompt
    assert "\n\nPlugin says hello." in prompt


def test_no_skills_means_no_skills_section(tmp_home, workdir):
    assert "Skills" not in system_prompt(workdir, ["read"])


def test_agents_md_of_the_working_directory_and_the_user_s_own_are_used_and_named(tmp_home, workdir):
    user_file = write(tmp_home / ".agents" / "AGENTS.md", "user rules")
    write(workdir / "AGENTS.md", "project rules")
    prompt = system_prompt(workdir, [])
    assert f'<memory path="{workdir / "AGENTS.md"}">\nproject rules' in prompt
    assert f'<memory path="{user_file}" scope="user">\nuser rules' in prompt


def test_the_user_s_own_agents_md_alone_is_used_and_clipped(tmp_home, workdir):
    user_file = write(tmp_home / ".agents" / "AGENTS.md", "always run the tests\n" + "x" * MEMORY_BUDGET)
    prompt = system_prompt(workdir, [])
    assert f'<memory path="{user_file}" scope="user">\nalways run the tests' in prompt
    assert f"[... clipped at {MEMORY_BUDGET:,} characters of {user_file}" in prompt
