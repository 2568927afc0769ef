"""The message shape helpers: one meaning of "the blocks", "the text" and "the text of a tool
result" for the prompt, the backends, the panes and the exports."""

from __future__ import annotations

from scout_tui.core.messages import blocks, has_text, message_text, result_text, tool_results, tool_uses, turn_of

IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}


def test_string_content_is_one_text_block() -> None:
    assert blocks({"role": "user", "content": "hi"}) == [{"type": "text", "text": "hi"}]


def test_empty_or_missing_content_has_no_blocks() -> None:
    assert blocks({"role": "user", "content": ""}) == []
    assert blocks({"role": "user", "content": None}) == []
    assert blocks({"role": "user"}) == []


def test_blocks_is_a_new_list_of_the_same_blocks() -> None:
    content = [{"type": "text", "text": "a"}]
    message = {"role": "user", "content": content}
    out = blocks(message)
    out.append({"type": "text", "text": "b"})
    assert message["content"] == [{"type": "text", "text": "a"}] and out[0] is content[0]


def test_tool_uses_and_results_keep_their_order() -> None:
    assistant = {"role": "assistant", "content": [
        {"type": "text", "text": "two calls"},
        {"type": "tool_use", "id": "a", "name": "read", "input": {}},
        {"type": "tool_use", "id": "b", "name": "bash", "input": {}},
    ]}
    user = {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "b", "content": "2"},
        {"type": "tool_result", "tool_use_id": "a", "content": "1"},
        {"type": "text", "text": "and then"},
    ]}
    assert [u["id"] for u in tool_uses(assistant)] == ["a", "b"]
    assert [r["tool_use_id"] for r in tool_results(user)] == ["b", "a"]
    assert tool_uses({"role": "assistant", "content": "plain"}) == []


def test_message_text_joins_text_blocks_and_leaves_out_the_rest() -> None:
    message = {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "hmm", "signature": "s"},
        {"type": "text", "text": "first"},
        {"type": "tool_use", "id": "a", "name": "read", "input": {"path": "x"}},
        {"type": "text", "text": "second"},
    ]}
    assert message_text(message) == "first\nsecond"
    assert message_text({"role": "user", "content": "typed"}) == "typed"
    assert message_text({"role": "user", "content": [IMAGE]}) == ""


def test_has_text_ignores_blank_text() -> None:
    assert has_text({"role": "assistant", "content": [{"type": "text", "text": "ok"}]})
    assert not has_text({"role": "assistant", "content": [{"type": "text", "text": " \n"}]})
    assert not has_text({"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x", "input": {}}]})


def test_result_text_of_a_string_is_the_string() -> None:
    assert result_text("line 1\nline 2") == "line 1\nline 2"


def test_result_text_of_none_is_empty() -> None:
    assert result_text(None) == ""


def test_result_text_of_blocks_joins_texts_and_names_an_image() -> None:
    content = [{"type": "text", "text": "before"}, IMAGE, {"type": "text", "text": "after"}]
    assert result_text(content) == "before\n[image block]\nafter"


def test_result_text_skips_what_is_not_a_block() -> None:
    assert result_text([{"type": "text", "text": "a"}, "stray", 3]) == "a"


def test_result_text_does_not_depend_on_is_error() -> None:
    """The error flag is the block's, not the content's: the text is the same either way (a
    backend that has no flag, like Chat Completions, adds its own "Error: " prefix)."""
    ok = {"type": "tool_result", "tool_use_id": "a", "content": "boom", "is_error": False}
    failed = {**ok, "is_error": True}
    assert result_text(ok["content"]) == result_text(failed["content"]) == "boom"


def test_a_call_s_turn_is_its_prompt_s_index_and_a_prompt_sent_with_results_begins_none() -> None:
    def call(id: str) -> dict:
        return {"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "bash", "input": {}}]}

    def results(id: str, *steered: str) -> dict:
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "ok"},
                                            *({"type": "text", "text": t} for t in steered)]}

    messages = [{"role": "user", "content": "first"}, call("a"), results("a", "and also this"), call("b"),
                results("b"), {"role": "assistant", "content": "done"}, {"role": "user", "content": "second"},
                call("c")]
    assert [turn_of(messages, id) for id in ("a", "b", "c", "unknown")] == [0, 0, 6, None]
    assert turn_of([None, *messages[1:]], "b") is None  # its prompt is not read yet
    assert turn_of([None, *messages[1:]], "c") == 6
