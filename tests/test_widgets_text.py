"""sanitize, clip and tool_summary: what model and tool text may put on screen."""

from __future__ import annotations

import threading

from hypothesis import given
from hypothesis import strategies as st

from scout_tui.core.text import clip, one_line, sanitize, tool_summary

ZWJ_FAMILY = "👩\u200d👩\u200d👧\u200d👦"
COMBINING = "e\u0301"  # e + combining acute
CJK = "日本語のテキスト"


def test_sanitize_strips_sgr_colour_sequences():
    assert sanitize("\x1b[1;31mred\x1b[0m plain") == "red plain"


def test_sanitize_strips_osc52_clipboard_writes_ended_by_bel_or_st():
    assert sanitize("a\x1b]52;c;cm0gLXJmIH4=\x07b") == "ab"
    assert sanitize("a\x1b]52;c;cm0gLXJmIH4=\x1b\\b") == "ab"


def test_sanitize_strips_window_title_and_8bit_csi():
    assert sanitize("\x1b]0;pwned\x07x\x9b2Jy") == "xy"


def test_sanitize_unterminated_osc_is_removed_only_to_the_end_of_its_line():
    assert sanitize("keep\x1b]52;c;AAAA\nnext line") == "keep\nnext line"


def test_sanitize_removes_bidi_overrides_and_isolates():
    text = "if x\u202e } \u2066 {\u2069 \u202a \u202c"
    assert sanitize(text) == "if x }  {  "


def test_sanitize_drops_c0_c1_and_del_but_keeps_tab_and_newline():
    assert sanitize("a\x00b\x07c\x7fd\x85e\tf\ng") == "abcde\tf\ng"


def test_sanitize_keeps_emoji_sequences_combining_marks_and_cjk():
    text = f"{ZWJ_FAMILY} caf{COMBINING} {CJK} ✓"
    assert sanitize(text) == text


def test_sanitize_turns_crlf_into_lf_and_keeps_the_last_redraw_of_a_progress_line():
    assert sanitize("a\r\nb\r\n") == "a\nb\n"
    assert sanitize("start\n 10%\r 50%\r100%\rdone\n") == "start\ndone\n"
    assert sanitize("trailing\r") == "trailing"


def test_sanitize_is_linear_on_hostile_input():
    hostile = "\x1b]" * 200_000 + "x" * 1_000_000 + "\x1b[" * 200_000
    # Quadratic work on 1.4 M characters would take hours; linear takes well under a second.
    done: list[str] = []
    worker = threading.Thread(target=lambda: done.append(sanitize(hostile)), daemon=True)
    worker.start()
    worker.join(60)  # a guard against a hang, not a timing
    assert done and "\x1b" not in done[0]


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_sanitize_output_has_no_controls_and_is_stable(text):
    out = sanitize(text)
    for ch in out:
        code = ord(ch)
        assert ch in "\n\t" or not (code < 0x20 or 0x7F <= code <= 0x9F or 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069)
    assert sanitize(out) == out


def test_clip_keeps_short_text_as_is():
    assert clip("a\nb", 10, 100) == "a\nb"


def test_clip_by_lines_keeps_the_head_and_counts_the_rest():
    text = "\n".join(f"line {i}" for i in range(10_000))
    out = clip(text, 3, 1_000_000)
    assert out.startswith("line 0\nline 1\nline 2\n… ")
    assert "9,997 more lines" in out


def test_clip_a_2mb_single_line_by_characters():
    text = "x" * 2_000_000
    out = clip(text, 2_000, 200_000)
    assert out.startswith("x" * 200_000 + "\n… ")
    assert "1,800,000 characters" in out
    assert len(out) < 200_100


def test_one_line_takes_the_first_non_blank_line_and_clips_it():
    assert one_line("\n\n  hello world  \nsecond", 80) == "hello world"
    assert one_line("a" * 100, 10) == "a" * 9 + "…"


def test_tool_summary_prefers_path_command_and_pattern():
    assert tool_summary({"path": "src/app.py", "content": "x"}) == "src/app.py"
    assert tool_summary({"command": "ls -la\nrm -rf /"}) == "ls -la"
    assert tool_summary({"pattern": "TODO", "path": ""}) == "TODO"


def test_tool_summary_survives_odd_input():
    assert tool_summary({"n": 3}) == "n=3"
    assert tool_summary("not a dict") == "not a dict"
    assert "\x1b" not in tool_summary({"command": "\x1b]52;c;AAAA\x07echo hi"})


def test_stream_sanitizer_removes_sequences_cut_between_pieces():
    from scout_tui.core.text import StreamSanitizer

    text = "ANSI \x1b[31mRED\x1b[0m title \x1b]0;PWNED\x07 done\r\nnext"
    for size in (1, 2, 3, 5, 7):
        cleaner = StreamSanitizer()
        out = "".join(cleaner.feed(text[i : i + size]) for i in range(0, len(text), size)) + cleaner.flush()
        assert out == sanitize(text) == "ANSI RED title  done\nnext", size


def test_stream_sanitizer_passes_plain_text_straight_through():
    from scout_tui.core.text import StreamSanitizer

    cleaner = StreamSanitizer()
    assert cleaner.feed("hello ") == "hello " and cleaner.feed("world") == "world" and cleaner.flush() == ""


def test_surrogate_halves_are_joined_and_lone_ones_replaced():
    from scout_tui.core.text import repair_surrogates

    assert repair_surrogates("a\ud83d\ude00b") == "a\U0001f600b"
    assert repair_surrogates("x\ud83dy\ude00") == "x\ufffdy\ufffd"
    plain = "no halves here é"
    assert repair_surrogates(plain) is plain


def test_a_high_half_at_the_end_of_a_piece_waits_for_the_next():
    from scout_tui.core.text import SurrogateJoiner

    joiner = SurrogateJoiner()
    assert joiner.feed("hi \ud83d") == "hi "
    assert joiner.feed("\ude00 there") == "\U0001f600 there"
    assert joiner.feed("end \ud83d") == "end "
    assert joiner.flush() == "\ufffd" and joiner.flush() == ""
