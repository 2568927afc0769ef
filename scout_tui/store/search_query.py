"""What a person types into a search, as an SQLite FTS5 query and filters.

The syntax is the one search boxes share (Gmail, GitHub, SQLite's own FTS5 docs): words must
all appear, ``"a phrase"`` in that order, ``pre*`` a prefix (of three letters or more),
``-word`` / ``-"a phrase"`` leave out (``--flag`` and ``-1`` are words), ``a OR b`` either,
``a AND b`` both, ``a NOT b`` the first without the second;
``role:prompt|answer|tool|tool_input|tool_output|summary`` (``-role:`` every other),
``after:YYYY-MM-DD`` and ``before:YYYY-MM-DD`` (local dates) filter. Every word goes to FTS5
quoted, so text such as ``foo-bar``, ``NEAR`` or ``a:b`` (and ``AND``/``NOT`` not between two
words) is searched for, never read as an operator (FTS5 query syntax:
https://www.sqlite.org/fts5.html#full_text_query_syntax).
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field

from scout_tui.core.errors import ScoutError
from scout_tui.core.text import sanitize

ROLES = ("prompt", "answer", "tool_input", "tool_output", "summary")
"""What a search document is: what the person typed, what the model wrote, a tool call's input
(command, path, pattern), a tool's output, a compaction's summary."""

ROLE_NAMES = {"prompt": ("prompt",), "user": ("prompt",), "answer": ("answer",), "assistant": ("answer",),
              "tool": ("tool_input", "tool_output"), "tool_input": ("tool_input",), "input": ("tool_input",),
              "tool_output": ("tool_output",), "output": ("tool_output",), "summary": ("summary",)}
"""The names ``role:`` takes, and the roles each stands for."""

MIN_PREFIX = 3
"""Letters or digits a prefix needs, counted in its last word (``parse_c*`` ends in the word
``c``): FTS5 merges the list of every word under a prefix (without a prefix index, which would
triple the index's size), and a short prefix covers most of a store (``c*`` took 360 ms at
100,000 messages, ``conf*`` 30 ms)."""

CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
"""Kana, CJK ideographs and Hangul. FTS5's unicode61 tokenizer splits text at spaces and
punctuation only, so a run of Chinese or Japanese (``日本語のテキスト``) is one word: a bare word
ending in these is searched as a prefix, which finds it at the start of such a run (after a
space or punctuation such as ``。``, ``：``), not in its middle."""

TERM = re.compile(r'(-?)"([^"]*)"?|(\S+)')


@dataclass(frozen=True)
class ParsedQuery:
    """A search as SQLite runs it: ``match`` is an FTS5 query ("" when there is no word to look
    for), the filters as typed (roles from ``role:``, epoch seconds from ``after:``/``before:``)."""

    match: str
    roles: tuple[str, ...] = ()
    since: float | None = None
    until: float | None = None
    words: tuple[str, ...] = field(default=())
    """The words and phrases looked for (not the ones left out), as typed."""


def parse_query(text: str) -> ParsedQuery:
    """Read a search as typed (see the module docstring) into an FTS5 query and filters.

    Raises:
        ScoutError: an unknown ``role:``, a date that is not YYYY-MM-DD, or only exclusions
            (``-word`` alone finds nothing to leave out of).
    """
    text = sanitize(text)  # as the index holds text; a NUL would end FTS5's reading of the query
    groups: list[list[str]] = [[]]  # OR-separated groups of AND-ed terms
    excluded: list[str] = []
    roles: list[str] = []
    since = until = None
    words: list[str] = []
    terms = [m.groups() for m in TERM.finditer(text)]
    negate = False  # the term after NOT is left out
    for n, (minus, phrase, bare) in enumerate(terms):
        if phrase is not None:
            term, is_phrase = phrase, True
        else:
            term, is_phrase = bare, False
            if term == "OR":
                if groups[-1]:
                    groups.append([])
                continue
            if term in ("AND", "NOT") and groups[-1] and n + 1 < len(terms):  # between words: an operator
                negate = term == "NOT"
                continue
            key, _, value = term.partition(":")
            if value and key.lower() in ("role", "-role", "after", "since", "before", "until"):
                if key.lower() == "role":
                    roles.extend(_roles(value))
                elif key.lower() == "-role":  # every role but these
                    roles.extend(r for r in ROLES if r not in _roles(value))
                elif key.lower() in ("after", "since"):
                    since = _date(term, value)
                else:
                    until = _date(term, value)
                continue
            if re.match(r"-[^\d-]", term):  # not --flag or -1, which are words
                minus, term = "-", term[1:]
        fts = _fts_term(term, is_phrase)
        if fts is None:
            continue
        minus, negate = minus or ("-" if negate else ""), False
        if minus:
            excluded.append(fts)
        else:
            groups[-1].append(fts)
            words.append(term)
    wanted = [" ".join(g) for g in groups if g]
    if not wanted:
        if excluded:
            raise ScoutError("a search needs a word to find: -word only leaves matches out")
        return ParsedQuery("", tuple(dict.fromkeys(roles)), since, until)
    expression = wanted[0] if len(wanted) == 1 else " OR ".join(f"({w})" for w in wanted)
    if excluded:
        expression = f"({expression}) NOT ({' OR '.join(excluded)})"
    return ParsedQuery(expression, tuple(dict.fromkeys(roles)), since, until, tuple(words))


def _fts_term(term: str, is_phrase: bool) -> str | None:
    """One FTS5 string (``"..."``, quotes doubled), a prefix (``"..."*``) when a bare word ends
    in ``*`` and its last word has ``MIN_PREFIX`` letters or more (a shorter one is searched as
    a whole word), or when its last word, of two characters or more, ends in a ``CJK`` one; None
    for a term with no letter or digit, which FTS5's tokenizer would drop."""
    core = term.rstrip("*") if not is_phrase else term
    last = re.findall(r"[^\W_]+", core)
    cjk = bool(last) and len(last[-1]) >= 2 and bool(CJK.match(last[-1][-1]))
    prefix = not is_phrase and bool(last) and (core != term and len(last[-1]) >= MIN_PREFIX or cjk)
    if not any(ch.isalnum() for ch in core):
        return None
    quoted = '"' + core.replace('"', '""') + '"'
    return quoted + "*" if prefix else quoted


def _roles(value: str) -> tuple[str, ...]:
    """The roles ``role:value`` stands for (``role:tool,summary`` names several)."""
    out: list[str] = []
    for name in value.lower().split(","):
        if name not in ROLE_NAMES:
            raise ScoutError(f"unknown role {name!r} in a search: use prompt, answer, tool, tool_input, "
                             "tool_output or summary")
        out.extend(ROLE_NAMES[name])
    return tuple(out)


def _date(term: str, value: str) -> float:
    """Epoch seconds at local midnight of ``value`` (YYYY-MM-DD)."""
    try:
        day = datetime.date.fromisoformat(value)
    except ValueError:
        raise ScoutError(f"{term!r}: {value!r} is not a date; a date in a search is YYYY-MM-DD, e.g. "
                         "after:2026-11-01") from None
    return datetime.datetime.combine(day, datetime.time()).timestamp()
