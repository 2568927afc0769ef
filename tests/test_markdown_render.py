"""How an answer's markdown reads on screen (``widgets/markdown_render.py``, ``LeftMarkdown``):
task lists as boxes, a link's address after its text, ordered lists numbered as the markdown
means them, in a finished answer, a streamed one, and one cut into chunks.

Update the snapshot after an intended visual change with
`pytest --snapshot-update tests/test_markdown_render.py`.
"""

from __future__ import annotations

from scout_tui.widgets.assistant_message import AssistantMessage
from scout_tui.widgets.chat_markdown import LiveBlock, MarkdownChunk
from scout_tui.widgets.markdown_cut import CHUNK_CHARS
from scout_tui.widgets.markdown_render import render_lines
from tests.chat_helpers import ChatApp, finished, loaded, rendered, text
from tests.conftest import wait_until


def shown(source: str, width: int = 70) -> list[str]:
    """The lines markdown ``source`` shows ``width`` cells wide, right spaces dropped."""
    return ["".join(segment.text for segment in line).rstrip() for line in render_lines(source, width, "monokai")]


def links(source: str) -> dict[str, str]:
    """Each piece of text shown with a hyperlink (OSC 8, Rich's link style), to its address."""
    return {segment.text: segment.style.link for line in render_lines(source, 70, "monokai") for segment in line
            if segment.style is not None and segment.style.link}


# -- task lists -------------------------------------------------------------------------------

def test_task_list_items_show_boxes_not_brackets():
    lines = shown("- [ ] write the test\n- [x] read the issue\n- [X] ship it\n")
    assert lines == [" • ☐ write the test", " • ☑ read the issue", " • ☑ ship it"]


def test_brackets_elsewhere_in_an_item_stay_literal():
    assert shown("- see [x] and [ ] in text\n- [y] is no task\n") == [" • see [x] and [ ] in text", " • [y] is no task"]


def test_an_ordered_task_list_keeps_its_numbers():
    assert shown("1. [x] first\n2. [ ] second\n") == [" 1 ☑ first", " 2 ☐ second"]


# -- links ------------------------------------------------------------------------------------

def test_a_link_shows_its_address_after_its_text():
    assert shown("Read [the docs](https://example.com/docs) first.") == [
        "Read the docs (https://example.com/docs) first."]


def test_a_links_text_and_its_address_both_open_it():
    assert links("Read [the docs](https://example.com/docs) first.") == {
        "the docs": "https://example.com/docs", "https://example.com/docs": "https://example.com/docs"}


def test_an_autolink_shows_its_address_once_and_opens_it():
    assert shown("See <https://example.org/a> now.") == ["See https://example.org/a now."]
    assert links("See <https://example.org/a> now.") == {"https://example.org/a": "https://example.org/a"}


def test_a_link_whose_text_is_its_address_shows_it_once():
    assert shown("[https://example.org](https://example.org) and [a@b.example](mailto:a@b.example)") == [
        "https://example.org and a@b.example"]


def test_a_bare_address_stays_as_written():
    assert shown("Open https://example.org/x in a browser.") == ["Open https://example.org/x in a browser."]


def test_a_link_with_styled_text_shows_its_address_once_after_it():
    assert shown("[**bold** `code`](https://example.com/%C3%BC)") == ["bold code (https://example.com/ü)"]


# -- ordered lists, in one piece ----------------------------------------------------------------

def test_an_ordered_list_counts_up_from_its_first_number():
    assert shown("3. three\n1. four\n1. five\n") == [" 3 three", " 4 four", " 5 five"]


def test_a_nested_ordered_list_keeps_its_own_numbering():
    lines = shown("1. one\n1. two\n   1. inner\n   1. inner too\n1. three\n")
    assert lines == [" 1 one", " 2 two", "    1 inner", "    2 inner too", " 3 three"]


# -- text that looks like HTML ------------------------------------------------------------------

HTML_LIKE = ["<<Files staged successfully>>", "<div>", "<script>alert(1)</script>", "a < b > c",
             "<!-- comment -->", "<br/>", "Use <kbd>Ctrl</kbd>+<kbd>T</kbd> here."]


def test_text_that_looks_like_html_shows_as_written():
    for source in HTML_LIKE:
        assert shown(source) == [source], source


def test_an_html_block_shows_as_written_between_paragraphs():
    assert shown("Before.\n\n<details>\n<summary>more</summary>\n</details>\n\nAfter.") == [
        "Before.", "", "<details> <summary>more</summary> </details>", "", "After."]


async def test_html_like_text_shows_while_streaming_and_once_finished():
    source = "Done: <<Files staged successfully>>\n\n<script>alert(1)</script> and <!-- note -->"
    app = ChatApp()
    async with app.run_test(size=(70, 20)) as pilot:
        chat = app.query_one("#chat")
        chat.assistant_delta("text", source)
        answer = chat.current
        await wait_until(pilot, lambda: any(live.source.endswith("-->") for live in answer.query(LiveBlock)),
                         what="the whole answer in the live block")
        await pilot.pause()
        streaming = rendered(answer)
        chat.assistant_message(None, text("assistant", source))
        await finished(pilot, answer)
        for shown_text in (streaming, rendered(answer)):
            assert "Done: <<Files staged successfully>>" in shown_text
            assert "<script>alert(1)</script> and <!-- note -->" in shown_text


async def test_html_like_text_in_a_stored_answer_shows_as_written():
    app = ChatApp()
    async with app.run_test(size=(70, 20)) as pilot:
        chat = await loaded(app, pilot, [text("user", "stage it"), text("assistant", "<<Files staged successfully>>")])
        assert "<<Files staged successfully>>" in rendered(chat.query_one(AssistantMessage))


# -- ordered lists, streamed and cut into chunks -------------------------------------------------

async def test_a_streamed_list_numbered_one_one_one_counts_up_while_it_streams():
    app = ChatApp()
    async with app.run_test(size=(60, 30)) as pilot:
        chat = app.query_one("#chat")
        chat.assistant_delta("text", "1. one\n\n1. two\n\n1. three")
        answer = chat.current
        await wait_until(pilot, lambda: any(live.source.endswith("three") for live in answer.query(LiveBlock)),
                         what="the last item in the live block")
        await pilot.pause()
        assert [line.strip() for line in rendered(answer).splitlines() if line.strip()] == ["1 one", "2 two", "3 three"]


async def test_a_streamed_list_reads_the_same_once_finished():
    source = "Steps:\n\n3. three\n\n1. four\n\n1. five"
    app = ChatApp()
    async with app.run_test(size=(60, 30)) as pilot:
        chat = app.query_one("#chat")
        chat.assistant_delta("text", source)
        answer = chat.current
        chat.assistant_message(None, text("assistant", source))
        await finished(pilot, answer)
        assert [line.strip() for line in rendered(answer).splitlines() if line.strip()] == [
            "Steps:", "3 three", "4 four", "5 five"]


async def test_a_long_list_cut_into_chunks_counts_on_across_them():
    item = "1. " + "a step worth its own line. " * 4 + "\n\n"
    count = 3 * CHUNK_CHARS // len(item)
    app = ChatApp()
    async with app.run_test(size=(140, 40)) as pilot:
        chat = await loaded(app, pilot, [text("user", "steps?"), text("assistant", item * count)])
        chunks = list(chat.query_one(AssistantMessage).query(MarkdownChunk))
        assert len(chunks) > 1
        numbers = [int(line.split()[0]) for chunk in chunks for line in shown(chunk.source, 140) if line.strip()]
        assert numbers == list(range(1, count + 1))


# -- the look -----------------------------------------------------------------------------------

ALL_THREE = """Plan for the fix:

- [x] read the issue
- [ ] write the tests
- [ ] see [the Rich docs](https://rich.readthedocs.io/en/stable/markdown.html) or <https://spec.commonmark.org/>

3. find the renderer
1. keep one fact in one place
   1. parse once
   1. draw once
1. commit
"""


def test_an_answer_with_a_task_list_links_and_numbered_lists(snap_compare) -> None:
    app = ChatApp()

    async def run_before(pilot) -> None:
        await loaded(app, pilot, [text("user", "what is the plan?"), text("assistant", ALL_THREE)])

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
