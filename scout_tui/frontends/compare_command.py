"""``scout-tui compare A B``: two branches of one session tree from a shell: where they
diverge, then each side's messages, files changed and cost after that point."""

from __future__ import annotations

import argparse
import json
import sys

from scout_tui.session.compare import Comparison, Side, comparison_json, file_line, first_line, spend_line


def compare_command(argv: list[str]) -> int:
    """``scout-tui compare A B [--json]``: the report of ``comparison_report``, or
    ``comparison_json`` with ``--json``.

    Raises:
        ScoutError: as ``compare.compare_branches``.
    """
    parser = argparse.ArgumentParser(
        prog="scout-tui compare",
        description="Compare two branches of one session tree: where they diverge, then the messages, the files "
                    "changed and the cost of each after that point.")
    parser.add_argument("a", metavar="A", help="a branch: a session id or a unique prefix of at least 4 characters")
    parser.add_argument("b", metavar="B", help="another branch of the same tree")
    parser.add_argument("--json", action="store_true", help="one JSON object (see README, 'Compare branches')")
    args = parser.parse_args(argv)
    from scout_tui.session.compare import compare_branches, with_files
    from scout_tui.store.event_log import Store

    with Store() as store:
        comparison = with_files(compare_branches(store, args.a, args.b))
    if args.json:
        print(json.dumps(comparison_json(comparison), ensure_ascii=False, indent=2))
        return 0
    text = comparison_report(comparison)
    if sys.stdout.isatty():  # a terminal would act on escape sequences in model or tool text
        from scout_tui.core.text import sanitize

        text = sanitize(text)
    sys.stdout.write(text)
    return 0


def comparison_report(comparison: Comparison) -> str:
    """The plain-text report: the divergence point, then for A and B each its prompts, last
    answer, files changed with line counts, and cost and tokens after that point."""
    common = comparison.common
    out = [f"Both share {comparison.shared} message{'s' * (comparison.shared != 1)} "
           f"(stored in {common.id[:8]} {common.shown_title!r})"]
    if comparison.last_shared is not None:
        out.append(f"  last shared, #{comparison.shared} {comparison.last_shared.get('role')}: "
                   f"{first_line(comparison.last_shared)}")
    for label, side in (("A", comparison.a), ("B", comparison.b)):
        out += ["", *_side_lines(label, side, comparison.shared)]
    return "\n".join(out) + "\n"


def _side_lines(label: str, side: Side, shared: int) -> list[str]:
    info = side.session
    fork = f", fork of {info.parent[:8]} at {info.fork_at}" if info.parent and info.kind is None else ""
    out = [f"{label}  {info.id[:8]}  {info.shown_title!r}{fork}",
           f"   {len(side.messages)} message{'s' * (len(side.messages) != 1)} after #{shared}"]
    out += [f"   > {first_line({'role': 'user', 'content': [{'type': 'text', 'text': p}]})}" for p in side.prompts]
    if side.answer:
        out.append(f"   < {first_line({'role': 'assistant', 'content': [{'type': 'text', 'text': side.answer}]})}")
    out += [f"   {file_line(f)}" for f in side.files] or ["   no file changed"]
    out.append(f"   {spend_line(side.usage)}")
    return out
