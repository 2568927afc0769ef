"""``scout-tui search QUERY``: find a word, a phrase or a name in every session and branch from a
shell, through the store's full-text index (``store/search.py``).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from typing import Any, TextIO

from scout_tui.store.search import SearchHit

BATCH = 5_000
"""Messages of an old store indexed per write transaction while the command waits."""


def hit_json(hit: SearchHit) -> dict[str, Any]:
    """The ``--json`` shape of one hit: ``session`` (id of the branch that stores the message, or
    of a live fork sharing it when that one is deleted),
    ``title`` (that branch's title as lists show it), ``parent`` and ``fork_at`` (None for a
    root), ``root`` (the id of its tree's root), ``kind`` ("subagent" or None), ``cwd``,
    ``message`` (1-based number, as ``--fork ID:N`` and exports count; for a summary the
    messages it was made after), ``role`` (``search.ROLES``), ``created`` (Unix seconds),
    ``snippet`` (plain text), ``matches`` (``[start, end)`` character offsets of the matched
    words in ``snippet``) and ``score`` (bm25: lower is better)."""
    matches, at = [], 0
    for text, is_match in hit.snippet:
        if is_match:
            matches.append([at, at + len(text)])
        at += len(text)
    info = hit.session
    return {"session": info.id, "title": info.shown_title, "parent": info.parent, "fork_at": info.fork_at,
            "root": hit.root_id, "kind": info.kind, "cwd": info.cwd, "message": hit.seq + 1, "role": hit.role,
            "created": hit.created, "snippet": hit.snippet_text, "matches": matches, "score": hit.score}


def search_command(argv: list[str], err: TextIO | None = None) -> int:
    """``scout-tui search QUERY [--all] [--json] [--limit N]``: the best hits, best first.

    Exit status 0 when something matched, 1 when nothing did (as grep does). An old store's
    index is completed first, with progress on stderr.

    Raises:
        ScoutError: the query cannot be read (see ``search_query.parse_query``).
    """
    err = err or sys.stderr
    parser = argparse.ArgumentParser(
        prog="scout-tui search",
        description="Search every session and branch of this directory (--all: of every directory): prompts, "
                    "answers, tool calls and their output, summaries, subagents' transcripts. Words must all "
                    'appear; "a phrase"; prefix*; -word leaves out; a OR b; role:prompt|answer|tool|summary '
                    "(-role: not those); after:YYYY-MM-DD, before:YYYY-MM-DD.",
    )
    parser.add_argument("query", nargs="*", metavar="QUERY", help="what to find (quote a phrase for the shell: "
                                                                  "'\"key error\"'; -word needs no --)")
    parser.add_argument("--all", action="store_true", help="every directory's sessions, not only this one's")
    parser.add_argument("--json", action="store_true", help="a JSON array of hits (see README, 'Search')")
    parser.add_argument("--limit", type=int, default=20, metavar="N", help="at most N hits (default 20)")
    args, _ = parser.parse_known_args(argv)
    text = " ".join(_query_terms(argv))
    if not text.strip():
        parser.error("what should it find? e.g. scout-tui search 'KeyError' -test")
    if args.limit < 1:
        parser.error(f"--limit {args.limit}: at least 1 hit")
    from scout_tui.core.errors import ScoutError
    from scout_tui.store.event_log import Store
    from scout_tui.store.search import SearchQuery
    from scout_tui.store.search_query import parse_query

    if not parse_query(text).match:
        raise ScoutError(f"nothing to search for in {text!r}: a search finds words of letters or digits (emoji and "
                         "punctuation alone are not indexed); role:, after: and before: only narrow one")

    from scout_tui.core.workdir import working_directory

    cwd = None if args.all else str(working_directory("search from a project's directory, or with --all"))
    store = Store()
    hits: list[SearchHit] = []
    if store.path.exists():  # searching should not create a store
        with store:
            _complete_index(store, err)
            hits = store.search(SearchQuery(text, cwd=cwd, limit=args.limit))
            done, total = store.index_backlog()
            if done < total:  # another process held the write lock
                left = f"{total - done:,} message" + ("s were" if total - done > 1 else " was")
                print(f"the newest {left} not searched: the store could not be written to index it", file=err,
                      flush=True)
    if args.json:
        print(json.dumps([hit_json(h) for h in hits], ensure_ascii=False, indent=2))
        return 0 if hits else 1
    if not hits:
        where = "" if args.all else " in this directory's sessions (--all searches every directory)"
        print(f"no matches for {text!r}{where}", file=err)
        return 1
    _print_hits(hits, show_cwd=args.all)
    return 0


def _query_terms(argv: list[str]) -> list[str]:
    """The words of ``argv`` that are the query, in order: all but the command's own flags, so
    ``-word`` (an exclusion) needs no ``--`` before it."""
    terms, skip = [], False
    for n, arg in enumerate(argv):
        if skip:
            skip = False
        elif arg in ("--all", "--json") or arg.startswith("--limit="):
            continue
        elif arg == "--limit":
            skip = True
        elif arg == "--":
            terms.extend(argv[n + 1:])
            break
        else:
            terms.append(arg)
    return terms


def _complete_index(store: Any, err: TextIO) -> None:
    """Index what the store has not indexed yet (an old store's messages), saying how far it
    got on ``err`` when that is more than one batch; a few left by another process are caught
    up by the search itself."""
    done, total = store.index_backlog()
    if total - done <= BATCH:
        return
    print(f"indexing {total - done:,} messages for search (once)…", file=err, flush=True)
    while done < total:
        try:
            done, total = store.index_some(BATCH)
        except sqlite3.OperationalError as exc:  # locked by another process past busy_timeout
            print(f"\ncannot index more now ({exc})", file=err, flush=True)
            return
        if err.isatty():
            print(f"\r  {done:,} of {total:,}", end="", file=err, flush=True)
    print(("\n" if err.isatty() else "") + f"indexed {total:,} messages", file=err, flush=True)


def _print_hits(hits: list[SearchHit], *, show_cwd: bool) -> None:
    """Each hit as two lines: where (branch, message, role, when, title) and the snippet, the
    matched words bold on a terminal."""
    from rich.console import Console
    from rich.text import Text

    from scout_tui.core.text import sanitize

    class PipeConsole(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError  # `| head`: cli._run stops quietly with status 0 (Rich would exit 1, "no match")

    console = PipeConsole(highlight=False, soft_wrap=True)
    for hit in hits:
        info = hit.session
        where = info.id[:8] if hit.root_id == info.id else f"{hit.root_id[:8]} › {info.id[:8]}"
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(hit.created))
        head = Text(f"{where}  #{hit.seq + 1} {hit.role:<11} {when}  ", style="bold")
        head.append(" ".join(sanitize(info.shown_title).split()))
        if show_cwd and info.cwd:
            head.append(f"  ({info.cwd})", style="dim")
        line = Text("    ")
        for part, is_match in hit.snippet:
            line.append(sanitize(part), style="bold reverse" if is_match else "")
        console.print(head)
        console.print(line)
