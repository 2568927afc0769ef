"""Make model and tool text safe to put on screen: strip terminal controls, cap its size.

Everything a model or a tool wrote passes through ``sanitize`` before a widget shows it, and
through ``clip`` when it may be large. Neither ever interprets markup.
"""

from __future__ import annotations

import re

# Terminal control sequences, per ECMA-48 (5th ed., 1991) §5.4 and xterm's ctlseqs: CSI
# (ESC [ or 8-bit 0x9b) params/intermediates/final; the string controls OSC, DCS, SOS, PM and
# APC (ESC ] P X ^ _, or 8-bit 0x9d 0x90 0x98 0x9e 0x9f) ended by BEL or ST (ESC \ or 0x9c);
# then any other ESC sequence (nF intermediates + final, or Fp/Fe/Fs single final).
# Every terminator is optional and string payloads stop at a newline, so an unterminated
# sequence is removed up to the end of its line and no pattern can backtrack quadratically.
_ESCAPES = re.compile(
    r"[\x1b][\[][0-?]*[ -/]*[@-~]?"
    r"|[\x9b][0-?]*[ -/]*[@-~]?"
    r"|[\x1b][\]PX^_][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|[\x1b][ -/]*[0-~]?"
)

# Bidi embedding/override (U+202A..U+202E) and isolate (U+2066..U+2069) controls: unpaired,
# they reorder everything after them on screen ("Trojan Source", CVE-2021-42574).
_BIDI = [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]

# C0 controls except \t and \n, DEL, C1 controls, and the bidi controls: deleted.
_DROP = {c: None for c in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), *_BIDI) if c not in (0x09, 0x0A)}

# Anything that needs work; most text has none, and returns untouched after one search.
_SPECIAL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def sanitize(text: str) -> str:
    """``text`` with nothing a terminal would act on: only printable characters, ``\\n``, ``\\t``.

    Removes ANSI/VT escape sequences (CSI, OSC including OSC 52 clipboard writes, DCS and the
    other string controls, two-byte ESC sequences), C0 controls other than newline and tab,
    DEL, C1 controls (U+0080..U+009F) and bidi embedding/override/isolate controls. ``\\r\\n``
    becomes ``\\n``; a line redrawn with ``\\r`` (a progress bar) keeps its last non-empty
    segment, as a terminal would end up showing it. Emoji ZWJ sequences, combining marks and
    CJK text are untouched. Linear time in ``len(text)``.
    """
    if not _SPECIAL.search(text):
        return text
    if "\x1b" in text or "\x9b" in text or "\x90" in text or "\x9d" in text or "\x98" in text or "\x9e" in text or "\x9f" in text:
        text = _ESCAPES.sub("", text)
    if "\r" in text:
        text = _last_segments(text.replace("\r\n", "\n"))
    return text.translate(_DROP)


_CONTROL_NAMES = {0x1B: "\\e", 0x0D: "\\r", 0x08: "\\b", 0x07: "\\a", 0x0B: "\\v", 0x0C: "\\f", 0x00: "\\0"}
_SHOWN = {c: _CONTROL_NAMES.get(c, f"\\x{c:02x}")
          for c in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)) if c not in (0x09, 0x0A)}
_SHOWN.update({c: f"\\u{c:04x}" for c in _BIDI})


def reveal(text: str) -> str:
    """``text`` with every control character written out (``\\e``, ``\\r``, ``\\x07``, ``\\u202e``…).

    For what a person must see exactly as it will run (a command awaiting approval, a tool
    call's summary): ``sanitize`` would drop what comes before a ``\\r``, and a terminal would
    act on an escape sequence; here nothing is hidden and nothing is acted on.
    """
    return text.translate(_SHOWN) if _SPECIAL.search(text) else text


# A control sequence that is complete (its final byte or terminator arrived); used to tell
# whether text ending in one can be cleaned now or must wait for the next piece.
_COMPLETE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c|\n)"
    r"|\x1b[ -/]*[0-OQ-WYZ\\`-~]"  # a two-byte sequence; not the introducers [ ] P X ^ _
)
_STARTS = "\x1b\x9b\x90\x98\x9d\x9e\x9f"


class StreamSanitizer:
    """``sanitize`` for text that arrives in pieces (a streamed answer on a terminal).

    A control sequence cut between two pieces is held back until it completes (or until
    ``HOLD`` characters pass), so no half of it leaks through as junk.
    """

    HOLD = 256

    def __init__(self) -> None:
        self._held = ""

    def feed(self, text: str) -> str:
        """The safe text of everything fed so far that can be shown now."""
        text = self._held + text
        self._held = ""
        cut = max(text.rfind(c) for c in _STARTS)
        if cut != -1 and len(text) - cut < self.HOLD and not _COMPLETE.match(text, cut):
            text, self._held = text[:cut], text[cut:]
        if text.endswith("\r"):  # may be half of \r\n, or a redraw: wait for what follows
            text, self._held = text[:-1], "\r" + self._held
        return sanitize(text)

    def flush(self) -> str:
        """Whatever is still held, cleaned: call at the end of the stream."""
        text, self._held = self._held, ""
        return sanitize(text)


def repair_surrogates(text: str) -> str:
    """``text`` with UTF-16 surrogate halves made whole: a high and a low half next to each
    other become the one character they encode; a half left alone becomes U+FFFD. JSON's
    ``\\uXXXX`` escapes (RFC 8259 §7) carry characters outside the BMP as such pairs, and a
    proxy that slices a stream by UTF-16 code units can split a pair across two events; a lone
    half cannot be encoded as UTF-8 and would crash whatever writes it."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class SurrogateJoiner:
    """``repair_surrogates`` for text that arrives in pieces: a high half at the end of a piece
    is held until the next piece says whether its low half follows."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, text: str) -> str:
        """The repaired text of everything fed so far that can be passed on now."""
        text, self._held = self._held + text, ""
        if text and "\ud800" <= text[-1] <= "\udbff":
            text, self._held = text[:-1], text[-1]
        return repair_surrogates(text)

    def flush(self) -> str:
        """A high half still held, as U+FFFD ("" when none): call at the end of the stream."""
        text, self._held = self._held, ""
        return repair_surrogates(text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _last_segments(text: str) -> str:
    """Each line of ``text`` reduced to what follows its last ``\\r`` (ignoring trailing ones)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if "\r" in line:
            lines[i] = line.rstrip("\r").rpartition("\r")[2]
    return "\n".join(lines)


def clip(text: str, max_lines: int, max_chars: int) -> str:
    """The head of ``text``: at most ``max_lines`` lines and ``max_chars`` characters.

    When anything is cut, a last line says how much, e.g. ``"… 1,234 more lines (56,789
    characters) hidden"``. A 2 MB single line is cut after ``max_chars`` characters like
    200,000 short lines are cut after ``max_lines``; the work is a few C-speed scans.
    """
    cut = min(len(text), max_chars)
    pos = -1
    for _ in range(max_lines):
        pos = text.find("\n", pos + 1, cut)
        if pos < 0:
            break
    else:
        cut = pos  # max_lines whole lines fit: cut at the newline that ends the last one
    if cut >= len(text):
        return text
    head, rest = text[:cut], text[cut:]
    if rest.startswith("\n"):
        rest = rest[1:]
        if not rest:
            return head
    lines = rest.count("\n") + 1
    return f"{head}\n… {lines:,} more line{'s' if lines != 1 else ''} ({len(rest):,} characters) hidden"


# Input keys that say most about a tool call, in order of preference (the built-in tools'
# schemas: read/write/edit take ``path``, bash ``command``, grep/glob ``pattern``).
_SUMMARY_KEYS = ("path", "file_path", "command", "pattern", "query", "url", "name", "skill")


def one_line(text: str, width: int) -> str:
    """The first non-blank line of ``text`` (sanitized), cut to ``width`` characters with "…"."""
    text = sanitize(text[: width * 4 + 4096])
    line = next((part.strip() for part in text.split("\n") if part.strip()), "")
    line = line.replace("\t", " ")
    return line if len(line) <= width else line[: width - 1] + "…"


def tool_summary(input: object, width: int = 80) -> str:
    """A one-line summary of a tool call's ``input`` dict: its path, command or pattern.

    Falls back to the first string value, then to ``key=value`` pairs; control characters
    written out (``reveal``), cut to ``width`` characters. Never raises on odd input (the model writes it).
    """
    if not isinstance(input, dict):
        return one_line(str(input), width)
    for key in _SUMMARY_KEYS:
        value = input.get(key)
        if isinstance(value, str) and value.strip():
            return one_line(reveal(value), width)
    for value in input.values():
        if isinstance(value, str) and value.strip():
            return one_line(reveal(value), width)
    return one_line(" ".join(f"{k}={v!r}" for k, v in list(input.items())[:4]), width)


def code_blocks(markdown: str) -> list[tuple[str, str]]:
    """The fenced and indented code blocks of ``markdown``, in order, as ``(language, code)``
    (language "" when the fence names none), parsed as CommonMark by markdown-it-py (Rich's
    and Textual's parser)."""
    from markdown_it import MarkdownIt

    return [((token.info or "").split(maxsplit=1)[0] if token.info.strip() else "", token.content)
            for token in MarkdownIt("commonmark").parse(markdown) if token.type in ("fence", "code_block")]
