"""key_line: the line of a key in a TOML file, which every "<file>:<line>: ..." error names."""

from __future__ import annotations

from scout_tui.config.tomlpos import key_line

TEXT = """\
model = "claude"            # 1
"quoted-key" = 2            # 2
compaction.epoch_size = 5   # 3

[permissions]               # 5
allow = ["bash:ls *"]       # 6

[models."my-local"]         # 8
input = 3.0                 # 9

[theme]                     # 11
variables = { primary = "#ff0000", accent = "blue" }  # 12
"""


def test_a_top_level_key() -> None:
    assert key_line(TEXT, ("model",)) == 1


def test_a_quoted_key() -> None:
    assert key_line(TEXT, ("quoted-key",)) == 2


def test_a_dotted_key() -> None:
    assert key_line(TEXT, ("compaction", "epoch_size")) == 3


def test_a_key_in_a_table() -> None:
    assert key_line(TEXT, ("permissions", "allow")) == 6
    assert key_line(TEXT, ("models", "my-local", "input")) == 9


def test_a_table_is_found_on_its_header() -> None:
    assert key_line(TEXT, ("permissions",)) == 5
    assert key_line(TEXT, ("models", "my-local")) == 8


def test_a_key_of_an_inline_table_is_on_the_table_line() -> None:
    assert key_line(TEXT, ("theme", "variables", "accent")) == 12


def test_a_key_in_a_table_is_not_a_top_level_key() -> None:
    assert key_line(TEXT, ("allow",)) is None
    assert key_line(TEXT, ("input",)) is None


def test_a_key_the_text_does_not_set_is_none() -> None:
    assert key_line(TEXT, ("permissions", "deny")) is None
    assert key_line("", ("model",)) is None


def test_a_table_made_only_by_its_subtables_or_dotted_keys_is_found_on_the_first() -> None:
    assert key_line('model = "m"\n\n[providers.local]\nbase_url = "x"\n', ("providers",)) == 3
    assert key_line('model = "m"\nproviders.local.base_url = "x"\n', ("providers",)) == 2
