"""The markdown cutter (widgets/markdown_cut.py): plain strings in and out, no app, no Textual."""

from __future__ import annotations

import ast
import random
from pathlib import Path

from markdown_it import MarkdownIt

from scout_tui.widgets import markdown_cut
from scout_tui.widgets.markdown_cut import last_cut, split_markdown
from tests.chat_helpers import long_answer


def test_the_cutter_imports_only_the_standard_library():
    tree = ast.parse(Path(markdown_cut.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "no relative imports: the cutter stands alone"
            imported.add(str(node.module).split(".")[0])
    assert imported <= {"__future__", "re", "typing"}


def test_split_markdown_leaves_short_text_whole():
    assert split_markdown("short\n\ntext", size=100) == ([], "short\n\ntext")


def test_split_markdown_cuts_only_between_blocks_outside_fences():
    source = long_answer(40)
    chunks, rest = split_markdown(source, size=300)
    assert len(chunks) > 5
    assert "".join(chunks) + rest == source
    for chunk in chunks:
        assert chunk.count("```") % 2 == 0  # no chunk ends inside a code fence
        assert chunk.endswith("\n\n")  # each ends where a new top-level block starts


def test_split_markdown_closes_and_reopens_a_long_fence():
    code = "".join(f"x{i} = {i}\n" for i in range(2_000))
    chunks, rest = split_markdown(f"Intro.\n\n```python\n{code}```\n\nOutro.\n", size=4_000)
    pieces = [*chunks, rest]
    assert len(pieces) > 3
    assert all(p.count("```") % 2 == 0 for p in pieces[:-1])
    assert pieces[1].startswith("```python\n")


def test_split_markdown_cuts_a_tight_list_between_items():
    items = "".join(f"- item {i}\n" for i in range(100))
    chunks, rest = split_markdown(items, size=100)
    assert len(chunks) > 1
    assert "".join(chunks) + rest == items
    assert all(piece.startswith("- item ") for piece in [*chunks, rest])


def test_last_cut_keeps_the_unfinished_block_live():
    assert last_cut("# Title\n\nA paragraph.\n\nStill writ") == ("# Title\n\nA paragraph.\n\n", "Still writ")


def test_last_cut_finds_no_cut_in_a_single_block():
    assert last_cut("plain text, no cut") == ("", "plain text, no cut")


def test_last_cut_ignores_blank_lines_inside_a_fence():
    head, rest = last_cut("Text.\n\n```\ncode\n\nmore code")
    assert (head, rest) == ("Text.\n\n", "```\ncode\n\nmore code")


def test_last_cut_does_not_count_a_fence_line_still_being_written():
    assert last_cut("Text.\n\n```") == ("Text.\n\n", "```")


def test_last_cut_reads_tilde_fences_and_their_end():
    assert last_cut("Text.\n\n~~~\ncode\n~~~\n\nAfter") == ("Text.\n\n~~~\ncode\n~~~\n\n", "After")


def test_a_backtick_line_whose_info_string_has_backticks_opens_no_fence():
    # CommonMark 0.31 section 4.5: such a line is a paragraph, so the blank line after it ends a block.
    assert last_cut("Intro.\n\n``` a`b\nnot a fence\n\nNext") == ("Intro.\n\n``` a`b\nnot a fence\n\n", "Next")


def test_last_cut_closes_and_reopens_a_long_live_fence():
    code = "".join(f"x{i} = {i}\n" for i in range(50))
    head, rest = last_cut(f"Intro.\n\n```py\n{code}x = 5", limit=100)
    assert head == f"Intro.\n\n```py\n{code}```\n"
    assert rest == "```py\nx = 5"


def test_last_cut_cuts_a_long_tight_list_before_its_last_item():
    items = "".join(f"- item {i}\n" for i in range(50))
    head, rest = last_cut(f"Intro.\n\n{items}- last it", limit=100)
    assert (head, rest) == (f"Intro.\n\n{items}", "- last it")


def test_last_cut_cuts_a_long_paragraph_at_its_last_line_start():
    lines = "".join(f"line {i} of a paragraph\n" for i in range(30))
    assert last_cut(lines + "still", limit=100) == (lines, "still")


# -- ordered lists cut between items go on counting -----------------------------------------------

def test_last_cut_numbers_the_live_item_of_a_list_numbered_one_one_one():
    assert last_cut("1. one\n\n1. two\n\n1. thr") == ("1. one\n\n1. two\n\n", "3. thr")


def test_last_cut_numbers_the_last_item_of_a_long_tight_list_as_the_whole_does():
    items = "".join("1. step\n" for _ in range(30))
    assert last_cut(f"Intro.\n\n7. first\n{items}1. la", limit=100) == (f"Intro.\n\n7. first\n{items}", "38. la")


def test_split_markdown_numbers_each_chunk_of_a_list_from_where_the_last_stopped():
    items = "".join(f"1. item {i}\n\n" for i in range(12))
    chunks, rest = split_markdown(items, size=20)
    firsts = [piece.split(".")[0] for piece in [*chunks, rest]]
    assert firsts == ["1", "3", "5", "7", "9", "11"]


def test_a_cut_list_item_that_reads_its_own_number_is_left_as_written():
    assert last_cut("3. three\n\n4. four\n\n5. fi") == ("3. three\n\n4. four\n\n", "5. fi")


def test_a_list_after_a_heading_or_other_delimiter_counts_from_its_own_start():
    assert last_cut("1. a\n\n# Next\n\n1. b") == ("1. a\n\n# Next\n\n", "1. b")
    assert last_cut("1) a\n\n1. b\n\n1. c") == ("1) a\n\n1. b\n\n", "2. c")


def test_an_item_that_cannot_interrupt_a_paragraph_does_not_start_a_list():
    # CommonMark 0.31 section 5.2: only a list starting at 1 may interrupt a paragraph.
    assert last_cut("Text\n2. more text\n\n1. a\n\n1. b") == ("Text\n2. more text\n\n1. a\n\n", "2. b")


def test_an_item_numbered_past_nine_keeps_its_nested_lines_inside():
    items = "".join("1. step\n\n" for _ in range(9))
    head, rest = last_cut(items + "1. tenth\n   1. nested\n   ```\n   code\n   ```\n")
    assert head == items
    assert rest == "10. tenth\n    1. nested\n    ```\n    code\n    ```\n"


def test_cut_pieces_number_their_items_as_markdown_it_numbers_the_whole():
    parser = MarkdownIt()  # as Rich parses, for what matters here: CommonMark lists

    def numbers(source: str) -> dict[int, int]:
        """Source line -> number of each top-level ordered list item."""
        found, start = {}, 0
        for token in parser.parse(source):
            if token.type == "ordered_list_open" and token.level == 0:
                start = int(token.attrs.get("start", 1))
            elif token.type == "list_item_open" and token.level == 1 and token.markup in ".)":
                found[token.map[0]], start = start, start + 1
        return found

    lines = ["1. a\n", "2) b\n", "5. c\n", "10. d\n   1. sub\n", "1.\n", "\n", "\n", "Text\n", "lazy\n", "  indented\n",
             "   1. nested\n", "- bullet\n", "# Heading\n", "> quote\n", "---\n", "    code\n", "```\nx\n```\n",
             "1. e\n   ```\n   x\n   ```\n", "2.     code item\n", "1.\ttab\n"]
    rng = random.Random(14)
    for _ in range(800):
        source = "".join(rng.choice(lines) for _ in range(rng.randint(2, 14)))
        whole = numbers(source)
        for pieces in (split_markdown(source, size=8)[0] + [split_markdown(source, size=8)[1]],
                       list(last_cut(source, limit=1)), list(last_cut(source, limit=10_000))):
            line = 0
            for piece in pieces:
                if line in whole and piece[:1].isdigit():
                    assert numbers(piece).get(0) == whole[line], (source, piece)
                line += piece.count("\n")
