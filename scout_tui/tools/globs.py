"""Globs as regexes: ``expand_braces`` and ``glob_regex``, which the ``glob`` and ``grep`` tools
and the permission rules (``edit:src/**``) share. Kept apart from the tools so that the
permission checks made at start-up do not import them."""

from __future__ import annotations

import re


def expand_braces(pattern: str) -> list[str]:
    """``"*.{ts,tsx}"`` → ``["*.ts", "*.tsx"]``; nested braces expand innermost first."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    out: list[str] = []
    for alt in m.group(1).split(","):
        out.extend(expand_braces(pattern[: m.start()] + alt + pattern[m.end() :]))
    return list(dict.fromkeys(out))  # nested braces can yield one pattern twice


def _translate(pattern: str) -> str:
    """One brace-free glob as a regex over ``/``-separated relative paths.

    ``*`` and ``?`` stay within one path segment, ``[...]``/``[!...]`` are character classes,
    and a whole ``**`` segment spans any number of folders (zero included), as in bash globstar.
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        at_segment_start = i == 0 or pattern[i - 1] == "/"
        if at_segment_start and pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
            continue
        if at_segment_start and pattern.startswith("**", i) and i + 2 == n:
            out.append(".*")
            i += 2
            continue
        c = pattern[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1  # a "]" first in the class is a literal
            j = pattern.find("]", j)
            if j == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : j].replace("\\", "\\\\")
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A compiled regex that fully matches the relative paths ``pattern`` (a glob) names."""
    alternatives = "|".join(_translate(p) for p in expand_braces(pattern))
    return re.compile(f"(?:{alternatives})\\Z", re.DOTALL)
