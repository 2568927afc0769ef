"""The built-in tools' JSON Schemas, and the helpers in ``tools.base`` that write them.

The expected dicts are the literals the tools carried before the helpers existed; the wire
form (``json.dumps``, key order included) must not change, since providers cache the tool list
by its bytes.
"""

from __future__ import annotations

import json

import pytest

from scout_tui.extensions.skills import skill_tool
from scout_tui.tools import BUILTIN_TOOLS
from scout_tui.tools.base import boolean, integer, number, object_schema, string
from scout_tui.tools.bash import DEFAULT_TIMEOUT, MAX_TIMEOUT
from scout_tui.tools.files import DEFAULT_READ_LINES, MAX_LINE_CHARS

PATH = {"type": "string", "description": "File path, relative to the working directory or absolute."}

SCHEMAS_BEFORE = {
    "bash": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command to run, as you would type it in bash."},
            "timeout": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": MAX_TIMEOUT,
                "description": f"Seconds before the command is killed (default {DEFAULT_TIMEOUT:g}).",
            },
            # Added with the sandbox (issue 12): the model's way to ask for one unsandboxed run.
            "outside_sandbox": {
                "type": "boolean",
                "description": "Run this command outside the sandbox. Only after the sandbox blocked it and it must "
                               "write outside the workspace; the user is always asked first.",
            },
        },
        "required": ["command"],
    },
    "read": {
        "type": "object",
        "properties": {
            "path": PATH,
            "offset": {"type": "integer", "minimum": 1, "description": "1-based line number to start reading at."},
            "limit": {"type": "integer", "minimum": 1, "description": f"Maximum lines to return (default {DEFAULT_READ_LINES})."},
            # Added for issue 14, item 9: the way to page along one long line (minified code).
            "column": {
                "type": "integer",
                "minimum": 1,
                "description": "1-based character in the line at offset to start at (default 1): pages along a long "
                               f"line, {MAX_LINE_CHARS} characters a call; later lines start at their first.",
            },
        },
        "required": ["path"],
    },
    "write": {
        "type": "object",
        "properties": {
            "path": PATH,
            "content": {"type": "string", "description": "The complete new content of the file."},
        },
        "required": ["path", "content"],
    },
    "edit": {
        "type": "object",
        "properties": {
            "path": PATH,
            "old_string": {"type": "string", "description": "The exact text to replace."},
            "new_string": {"type": "string", "description": "The text to put in its place (must differ)."},
            "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."},
        },
        "required": ["path", "old_string", "new_string"],
    },
    "grep": {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression (Python re) to search for."},
            "path": {"type": "string", "description": "Folder or file to search (default: the working directory)."},
            "include": {"type": "string", "description": "Only search files whose name matches this glob, e.g. *.py."},
            "ignore_case": {"type": "boolean", "description": "Match without regard to case (default false)."},
        },
        "required": ["pattern"],
    },
    "glob": {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Glob such as **/*.py, relative to path."},
            "path": {"type": "string", "description": "Folder to search in (default: the working directory)."},
        },
        "required": ["pattern"],
    },
    "skill": {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "The skill's name, as listed."}},
        "required": ["name"],
    },
}


@pytest.mark.parametrize("tool", [*BUILTIN_TOOLS, skill_tool([])], ids=lambda tool: tool.name)
def test_each_built_in_tool_sends_the_schema_it_always_had(tool) -> None:
    assert tool.input_schema == SCHEMAS_BEFORE[tool.name]
    assert json.dumps(tool.input_schema) == json.dumps(SCHEMAS_BEFORE[tool.name])


def test_object_schema_keeps_the_properties_in_the_order_given() -> None:
    schema = object_schema(b=string("B."), a=boolean("A."), required=["b"])
    assert schema == {
        "type": "object",
        "properties": {"b": {"type": "string", "description": "B."}, "a": {"type": "boolean", "description": "A."}},
        "required": ["b"],
    }
    assert list(schema["properties"]) == ["b", "a"]


def test_an_object_schema_with_nothing_required_has_no_required_list() -> None:
    assert object_schema(flag=boolean("A flag.")) == {
        "type": "object",
        "properties": {"flag": {"type": "boolean", "description": "A flag."}},
    }


def test_a_required_name_that_is_no_property_is_refused() -> None:
    with pytest.raises(ValueError, match="'path'"):
        object_schema(required=["path"], pattern=string("A glob."))


def test_numbers_carry_only_the_bounds_given() -> None:
    assert number("Seconds.", exclusive_minimum=0, maximum=60) == {
        "type": "number", "exclusiveMinimum": 0, "maximum": 60, "description": "Seconds."
    }
    assert integer("Lines.", minimum=1) == {"type": "integer", "minimum": 1, "description": "Lines."}
