"""key_line and where: the line of a key in a TOML file, which every "<file>:<line>: ..." error names."""

from __future__ import annotations

from pathlib import Path

from scout_tui.config.tomlpos import key_line, where

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


# What a value spanning lines holds is text, not keys: each shape below once fooled the line finder
# (a key under a multi-line string was reported on the string's line that looked like it).
SPANNING = """\
[agent]                     # 1
prompt = \"\"\"              # 2
Be brief.
model = "inside"
[sandbox]
\"\"\"                         # 6
model = "claude"            # 7
notes = \'\'\'
network = true
\'\'\'                         # 10
rules = [                   # 11
  "a",
]
network = false             # 14
# mode = "comment"          # 15
mode = "ask"                # 16
tricky = \"\"\"two "quotes""\"\"\"   # 17
after = 1                   # 18
"""


def test_a_key_under_a_multi_line_basic_string_is_on_its_own_line() -> None:
    assert key_line(SPANNING, ("agent", "model")) == 7


def test_a_header_inside_a_multi_line_string_opens_no_table() -> None:
    assert key_line(SPANNING, ("sandbox",)) is None
    assert key_line(SPANNING, ("sandbox", "model")) is None


def test_a_key_under_a_multi_line_literal_string_or_array_is_on_its_own_line() -> None:
    assert key_line(SPANNING, ("agent", "network")) == 14


def test_a_key_in_a_comment_is_not_a_key() -> None:
    assert key_line(SPANNING, ("agent", "mode")) == 16


def test_a_string_closing_on_extra_quotes_ends_where_toml_ends_it() -> None:
    assert key_line(SPANNING, ("agent", "after")) == 18


def test_where_names_the_file_and_the_line() -> None:
    assert where(Path("/p/config.toml"), TEXT, ("permissions", "allow")) == "/p/config.toml:6"
    assert where("/p/config.toml", SPANNING, ("agent", "model")) == "/p/config.toml:7"


def test_where_falls_back_to_the_enclosing_table_then_a_line_then_the_file() -> None:
    assert where("f.toml", TEXT, ("permissions", "deny"), table=("permissions",)) == "f.toml:5"
    assert where("f.toml", TEXT, ("permissions", "deny"), table=("nothing",), line=1) == "f.toml:1"
    assert where("f.toml", TEXT, ("permissions", "deny")) == "f.toml"
