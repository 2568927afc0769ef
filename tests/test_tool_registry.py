"""The built-in registry: its six tools, their specs, and how Registry.call answers bad calls."""

from __future__ import annotations

from pathlib import Path

from scout_tui.tools import Registry, ToolContext, builtin_registry


def test_builtin_registry_has_the_six_tools_with_object_schemas() -> None:
    specs = builtin_registry().specs()
    assert [s["name"] for s in specs] == ["bash", "read", "write", "edit", "grep", "glob"]
    for spec in specs:
        schema = spec["input_schema"]
        assert spec["description"].strip()
        assert schema["type"] == "object"
        assert set(schema["required"]) <= set(schema["properties"])


def test_each_call_gets_a_fresh_registry() -> None:
    first, second = builtin_registry(), builtin_registry()
    first.tools.pop("bash")
    assert "bash" in second and isinstance(second, Registry)


async def test_unknown_tool_is_an_error_listing_the_tools(tmp_path: Path) -> None:
    result = await builtin_registry().call("cat", {"path": "x"}, ToolContext(tmp_path))
    assert result.is_error
    assert result.content == "Unknown tool 'cat'. Available tools: bash, edit, glob, grep, read, write."


async def test_non_object_arguments_are_an_error(tmp_path: Path) -> None:
    result = await builtin_registry().call("read", ["a.txt"], ToolContext(tmp_path))
    assert result.is_error and result.content.startswith("read: arguments must be a JSON object")


def test_only_the_tools_that_change_nothing_are_read_only():
    tools = builtin_registry().tools
    assert {name for name, tool in tools.items() if tool.read_only} == {"read", "grep", "glob"}
