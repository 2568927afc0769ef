"""The `scout-tui` command: open the TUI, run one request headless with ``-p``, list or export sessions.

``sessions``, ``export``, ``search``, ``themes``, ``doctor``, ``trust``, ``diff``, ``restore`` and ``acp`` are subcommands only
as the very first argument, so ``scout-tui -p sessions`` still sends the prompt "sessions".
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Callable, TextIO

from scout_tui import __version__
from scout_tui.core.errors import ScoutError
from scout_tui.core.workdir import working_directory

if TYPE_CHECKING:
    from scout_tui.config.layers import Config

EPILOG = """\
other commands:
  scout-tui sessions [--all] [--json]        list sessions, forks nested under their parents
  scout-tui export ID [--format md|json|html] [-o PATH]
                                             write a session with its ancestry to stdout or PATH;
                                             html: one page of its whole branch tree
  scout-tui search QUERY [--all] [--json]    find words, "a phrase", prefix*, -exclusions in every
                                             session and branch (prompts, answers, tool output)
  scout-tui compare A B [--json]             two branches of one tree: where they diverge, then
                                             each one's messages, files changed and cost after it
  scout-tui themes                           list every theme and the file it comes from
  scout-tui doctor [FLAGS]                   what a run here with the same flags (--model,
                                             --base-url, …) would use: config files, provider,
                                             the API key's source (never the key), the sandbox
  scout-tui trust [--list] [--yes]           this project's plugins (./.agents/plugins): which are
                                             trusted to run; asks to trust the new and changed ones
  scout-tui diff ID [--stat]                 the files a session's turns changed, with their diffs
  scout-tui restore ID --to N [--dry-run]    the files as they were before the session's turn at
                                             message N (--force: over files changed since)
  scout-tui acp                              run as an Agent Client Protocol agent on stdin/stdout,
                                             for an editor (Zed, JetBrains, Toad); same sessions
"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scout-tui",
        description="A full-screen terminal coding assistant. Without -p it opens the TUI.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-p", "--print", dest="prompt", metavar="PROMPT", nargs="?", const="",
                        help="run one request headless: the answer goes to stdout, tool calls to stderr; "
                             "piped input is added to PROMPT (or is the prompt without one)")
    parser.add_argument("--output-format", choices=("text", "json", "stream-json"), default="text",
                        help="with -p: text (default), json (one object when done: session, text, is_error, "
                             "error, cost) or stream-json (one object per event as it happens, then that one)")
    parser.add_argument("-c", "--continue", dest="continue_", action="store_true",
                        help="continue the latest session of this directory")
    parser.add_argument("--resume", metavar="ID", help="resume session ID (a unique prefix is enough)")
    parser.add_argument("--fork", metavar="ID[:N]",
                        help="start a new branch of session ID sharing its first N messages (all if N is omitted)")
    add_run_flags(parser)
    parser.add_argument("--version", action="version", version=f"scout-tui {__version__}")
    return parser.parse_args(argv)


RUN_FLAGS = ("provider", "model", "base_url", "api_key", "max_turns", "theme", "permission_mode")
"""The settings a run takes as flags (``--base-url`` sets ``base_url``), above every other layer."""


def add_run_flags(parser: argparse.ArgumentParser) -> None:
    """The flags that set a run's settings (``RUN_FLAGS``), for the app, ``-p`` and ``doctor``."""
    from scout_tui.config.layers import PERMISSION_MODES

    parser.add_argument("--provider", help="a provider profile: anthropic (default), openai (any OpenAI-compatible "
                                           "server), or a [providers.NAME] of scout.toml")
    parser.add_argument("--model", help="model id, e.g. claude-sonnet-4-5, gpt-4.1, llama3.1")
    parser.add_argument("--base-url", help="API root, e.g. http://localhost:11434/v1 for Ollama")
    parser.add_argument("--api-key", help="API key (prefer ANTHROPIC_API_KEY / OPENAI_API_KEY)")
    parser.add_argument("--max-turns", type=int, help="model calls allowed per request")
    parser.add_argument("--theme", help="theme name for this run (`scout-tui themes` lists them)")
    parser.add_argument("--permission-mode", choices=PERMISSION_MODES,
                        help="ask (default: changes ask first), auto-edit (edits in this folder run; bash asks), "
                             "yolo (nothing asks), plan (read-only: the model proposes a plan to approve)")


def run_flags(args: argparse.Namespace) -> dict[str, object]:
    """``args``' run flags (``add_run_flags``) as ``load_config``'s ``flags``: setting -> value or None."""
    return {key: getattr(args, key) for key in RUN_FLAGS}


def parse_fork(spec: str) -> tuple[str, int | None]:
    """``"ID"`` or ``"ID:N"`` (``--fork``) as ``(ID, N)``; N None means all messages.

    Raises:
        ScoutError: N is not a whole number of messages, or ID is empty.
    """
    ref, sep, count = spec.rpartition(":") if ":" in spec else (spec, "", "")
    if not ref:
        raise ScoutError(f"--fork {spec!r}: expected ID or ID:N (a session id and a message count)")
    if sep and not re.fullmatch(r"[0-9]+", count):
        raise ScoutError(f"--fork {spec!r}: bad fork point {count!r}, expected a message count (0 or more)")
    return ref, int(count) if sep else None


def with_piped_input(prompt: str, stdin: TextIO | None) -> str:
    """The ``-p`` prompt with what was piped in (``echo x | scout-tui -p "summarise"``) after it,
    a blank line between; the piped text alone when ``prompt`` is empty. A terminal (or no
    stdin) adds nothing: nothing was piped.

    Raises:
        ScoutError: neither a prompt nor piped text.
    """
    piped = ""
    if stdin is not None and not stdin.isatty():
        piped = stdin.read().strip("\n")
    text = f"{prompt}\n\n{piped}" if prompt and piped.strip() else prompt or piped
    if not text.strip():
        raise ScoutError("-p needs a prompt: -p \"PROMPT\", or text piped in (echo PROMPT | scout-tui -p)")
    return text


def missing_terminal(stdin: TextIO | None, screen: TextIO | None) -> str | None:
    """Why the full-screen app cannot start here, or None when it can: it reads keys from
    ``stdin`` and draws on ``screen`` (Textual's driver writes to ``sys.__stderr__``), so both
    must be terminals. Without this check, a TUI started from a script or a service spins
    reading an empty stdin instead of ending.
    """
    def is_terminal(stream: TextIO | None) -> bool:
        try:
            return stream is not None and stream.isatty()
        except ValueError:  # closed
            return False

    if not is_terminal(stdin):
        return ("the app needs a terminal to read keys from, and stdin is not one. "
                'From a script, run a prompt with -p: scout-tui -p "PROMPT" (or echo PROMPT | scout-tui -p)')
    if not is_terminal(screen):
        return ("the app draws on stderr, and stderr is not a terminal: leave stderr on the terminal, "
                'or run a prompt with -p: scout-tui -p "PROMPT"')
    return None


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script and ``python -m scout_tui``; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in SUBCOMMANDS:
        return _run(lambda: SUBCOMMANDS[argv[0]](argv[1:]))
    args = parse_args(argv)
    if args.prompt is None:  # the TUI: keys typed while it starts must reach it as keys
        from scout_tui.tui.line_mode import leave_line_mode, restore_line_mode

        leave_line_mode()
        try:
            return _run(lambda: _main(args))
        finally:
            restore_line_mode()  # the app's driver restored it already, unless the app never ran
    return _run(lambda: _main(args))


def _main(args: argparse.Namespace) -> int:
    try:
        return _start(args)
    except ScoutError as e:
        if args.prompt is not None and args.output_format != "text":  # a script reads stdout: say it there too
            from scout_tui.config import keys
            from scout_tui.frontends.headless import result_json
            from scout_tui.core.redaction import redact

            print(result_json(None, redact(str(e), keys.secrets())), flush=True)
        raise


def _start(args: argparse.Namespace) -> int:
    cwd = working_directory()
    fork = parse_fork(args.fork) if args.fork is not None else None
    if fork is not None and (args.resume or args.continue_):
        raise ScoutError("--fork starts a new branch: it cannot be combined with --resume or -c")
    from scout_tui.config.layers import load_config

    config = load_config(cwd, flags=run_flags(args))
    if args.prompt is not None:
        import asyncio

        from scout_tui.frontends.headless import run_headless

        prompt = with_piped_input(args.prompt, sys.stdin)
        if fork is not None or args.resume or args.continue_:
            config = _session_model(config, cwd, resume=args.resume, latest=args.continue_, fork=fork)
        return asyncio.run(run_headless(config, cwd, prompt, resume=args.resume, continue_=args.continue_, fork=fork,
                                        output_format=args.output_format))
    if args.output_format != "text":
        raise ScoutError("--output-format is for -p: the TUI has a screen, not an output")
    resume = args.resume
    if fork is not None or resume:
        from scout_tui.store.opening import resolve_session
        from scout_tui.store.event_log import Store

        # Resolve the session (or make the branch) before the screen opens, so a bad id is a
        # plain error; the app opens it by its full id.
        with Store() as store:
            named = resolve_session(store, cwd, resume=resume, fork=fork)  # not None: a session is named
            resume = named.id if named is not None else None
    if resume or args.continue_:
        config = _session_model(config, cwd, resume=resume, latest=args.continue_)
    gc.disable()  # from here to the first frame: see ScoutApp.run, which turns it back on then
    try:
        from scout_tui.tui.app import ScoutApp

        app = ScoutApp(config, cwd=cwd, resume=resume, continue_=args.continue_)
        if (missing := missing_terminal(sys.stdin, sys.__stderr__)) is not None:  # after every other error
            raise ScoutError(missing)
        app.run()
    finally:
        gc.enable()  # also when the app could not start (a bad config raises in ScoutApp())
    return app.return_code or 0


def _session_model(config: Config, cwd: Path, *, resume: str | None = None, latest: bool = False,
                   fork: tuple[str, int | None] | None = None) -> Config:
    """``config`` for the session a run reopens (``--resume``, ``-c``) or branches (``--fork``, the
    branch not made yet): with the profile and model it last switched to, unless ``--model``
    or ``--provider`` chose them for this run (``config.resumed_config``). Unchanged for a
    session that never switched, and for ``-c`` where this directory has no session yet.

    Raises:
        ScoutError: the id or prefix matches no session, or several.
    """
    from scout_tui.config.layers import resumed_config
    from scout_tui.store.event_log import Store

    with Store() as store:
        if fork is not None:
            switch = store.model_switch(store.find(fork[0]).id, fork[1])
        elif resume:
            switch = store.model_switch(store.find(resume).id)
        else:
            info = store.latest(cwd) if latest else None
            switch = store.model_switch(info.id) if info is not None else None
    return resumed_config(config, switch)


def _run(command: Callable[[], int]) -> int:
    """Run a command; a ScoutError becomes ``scout-tui: <message>`` on stderr and exit code 1."""
    try:
        return command()
    except ScoutError as e:
        from scout_tui.config import keys
        from scout_tui.core.redaction import redact

        print(f"scout-tui: {redact(str(e), keys.secrets())}", file=sys.stderr)  # a server may echo a key
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`scout-tui sessions | head`): stop quietly, and keep Python
        # from reporting the pipe again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


# -- scout-tui sessions -------------------------------------------------------------------


def sessions_command(argv: list[str]) -> int:
    """``scout-tui sessions [--all] [--json]``: the sessions of this directory as a tree."""
    parser = argparse.ArgumentParser(
        prog="scout-tui sessions",
        description="List the sessions of this directory, newest first, forks and subagents' sessions nested under "
                    "their parents.",
    )
    parser.add_argument("--all", action="store_true", help="sessions of every directory, grouped by directory")
    parser.add_argument("--json", action="store_true",
                        help="one JSON array: every session field (times in Unix seconds; kind \"subagent\" with its "
                             "parent, call and agent for a subagent's session) plus its depth in the tree")
    args = parser.parse_args(argv)
    from scout_tui.store.event_log import Store, tree_order

    store = Store()
    groups: list[tuple[str, list]] = []
    if store.path.exists():  # listing should not create a store
        with store:
            if args.all:
                by_cwd: dict[str, list] = {}
                for info in store.sessions():
                    by_cwd.setdefault(info.cwd or "", []).append(info)
                groups = [(cwd, tree_order(infos)) for cwd, infos in by_cwd.items()]
            else:
                here = working_directory("cd to a project's directory, or list them all with --all")
                groups = [(str(here), store.tree(here))]
    rows = [(info, depth) for _, tree in groups for info, depth in tree]
    if args.json:
        print(json.dumps([{**asdict(info), "depth": depth} for info, depth in rows], ensure_ascii=False, indent=2))
        return 0
    if not rows:
        where = "" if args.all else f" in {working_directory()}"
        print(f"no sessions{where}" + ("" if args.all else " (`scout-tui sessions --all` lists every directory)"),
              file=sys.stderr)
        return 0
    print(f"{'ID':<8}  {'PARENT':<8}  {'AT':>4}  {'MSGS':>5}  {'UPDATED':<16}  TITLE")
    for n, (cwd, tree) in enumerate(groups):
        if args.all:
            print(("\n" if n else "") + _one_line(cwd))
        for info, depth in tree:
            mark = info.subagent_mark  # a child where a subagent worked, not a branch: no fork point
            at = "-" if info.fork_at is None or mark else str(info.fork_at)
            mark += ": " if mark else ""
            title = ("  " * (depth - 1) + "└ " if depth else "") + mark + _one_line(info.shown_title)
            updated = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated))
            parent = (info.parent or "-")[:8]
            print(f"{info.id[:8]:<8}  {parent:<8}  {at:>4}  {info.message_count:>5}  {updated:<16}  {title}")
    return 0


def _one_line(text: str) -> str:
    """``text`` without terminal controls, its whitespace runs collapsed to one space."""
    from scout_tui.core.text import sanitize

    return " ".join(sanitize(text).split())


# -- scout-tui export ----------------------------------------------------------------------


def export_command(argv: list[str]) -> int:
    """``scout-tui export ID [--format md|json|html] [-o PATH]``: a session with its ancestry (md,
    json) or its whole tree as one page (html), to stdout or to PATH; html meant for a terminal
    goes to ``./scout-<id>.html`` instead. Known keys are redacted (``exporting.export_text``)."""
    parser = argparse.ArgumentParser(
        prog="scout-tui export",
        description="Write a session to stdout (or a file), with the messages it shares with the sessions it was "
                    "forked from; html: one self-contained page of the session's whole branch tree.",
    )
    parser.add_argument("id", metavar="ID", help="a session id, or a unique prefix of at least 4 characters")
    parser.add_argument("--format", choices=("md", "json", "html"), default="md",
                        help="md: a readable transcript (default); json: {session, messages}; html: a page with "
                             "every branch, tool calls and diffs, in your theme's colours, to open in a browser")
    parser.add_argument("-o", "--output", metavar="PATH", type=Path,
                        help="write to PATH instead of stdout (html to a terminal: ./scout-<id>.html)")
    args = parser.parse_args(argv)
    from scout_tui.config import keys
    from scout_tui.session.exporting import export_text, write_export
    from scout_tui.store.event_log import Store

    cwd = working_directory()
    try:
        from scout_tui.config.layers import load_config

        config: Config | None = load_config(cwd)
    except ScoutError:  # a broken scout.toml does not stop an export: the default theme, env keys
        config = None
    secrets = keys.secrets([config.api_key] if config is not None else [])
    colours = None
    if args.format == "html":
        from scout_tui.theming.export_colours import configured_theme, page_colours

        wanted, origin = (config.theme, config.sources.get("theme")) if config is not None else ("", None)
        colours = page_colours(configured_theme(cwd, wanted, origin))
    with Store() as store:
        output = args.output
        if output is None and args.format == "html" and sys.stdout.isatty():
            output = Path(f"scout-{store.find(args.id).id[:8]}.html")
        if output is not None:
            written = write_export(store, args.id, args.format, cwd / output, colours, secrets)
            print(f"scout-tui: wrote {written}", file=sys.stderr)
            return 0
        text = export_text(store, args.id, args.format, colours, secrets)
    if sys.stdout.isatty():  # a terminal would act on escape sequences in model or tool text
        from scout_tui.core.text import sanitize

        text = sanitize(text)
    sys.stdout.write(text)
    sys.stdout.flush()
    return 0


# -- scout-tui themes ----------------------------------------------------------------------


def themes_command(argv: list[str]) -> int:
    """``scout-tui themes``: every available theme with its source file; skipped files on stderr."""
    parser = argparse.ArgumentParser(
        prog="scout-tui themes",
        description="List every theme: shipped, yours (<config dir>/themes/*.toml), this project's "
                    "(.scout/themes/*.toml) and Textual's built-ins. * marks the one a run starts with.",
    )
    parser.parse_args(argv)
    from textual.theme import BUILTIN_THEMES

    from scout_tui.config.layers import load_config
    from scout_tui.theming.themes import discover_themes, pick_theme, saved_theme

    cwd = working_directory()
    sources, problems = discover_themes(cwd)
    for problem in problems:
        print(f"scout-tui: skipped {problem}", file=sys.stderr)
    available = {**dict.fromkeys(BUILTIN_THEMES), **dict.fromkeys(sources)}
    try:
        config = load_config(cwd)
        start, warnings = pick_theme(config.theme, config.sources.get("theme"), saved_theme(), available)
    except ScoutError as e:  # still list the themes
        start, warnings = None, [str(e)]
    for warning in warnings:
        print(f"scout-tui: {warning}", file=sys.stderr)
    rows = [(name, s.kind, str(s.path) + (" (replaces Textual's built-in)" if name in BUILTIN_THEMES else ""))
            for name, s in sorted(sources.items())]
    rows += [(name, "built-in", "Textual") for name in sorted(BUILTIN_THEMES) if name not in sources]
    width = max(len(name) for name, _, _ in rows)
    print(f"   {'NAME':<{width}}  {'SOURCE':<8}  FILE")
    for name, kind, where in rows:
        print(f"{'*' if name == start else ' '}  {name:<{width}}  {kind:<8}  {where}")
    return 0


# -- scout-tui doctor ----------------------------------------------------------------------


def doctor_command(argv: list[str]) -> int:
    """``scout-tui doctor [RUN FLAGS]``: what a run in this directory with those flags would use
    (``doctor.report``), to stdout.
    A config error ends it as any other: ``scout-tui: <error>`` on stderr, exit code 1."""
    parser = argparse.ArgumentParser(
        prog="scout-tui doctor",
        description="Show what a run in this directory would use: versions, the config files read, provider, "
                    "model and where the API key comes from (never the key), the sandbox in force (and why "
                    "not), the permission rules. Plain lines to paste into a bug report. It takes the flags a "
                    "run takes, to describe that run.",
    )
    add_run_flags(parser)
    args = parser.parse_args(argv)
    from scout_tui.frontends.doctor import report

    for line in report(working_directory(), flags=run_flags(args)):
        print(line, flush=True)  # each line out before a config error reaches stderr
    return 0


# -- scout-tui trust -----------------------------------------------------------------------

TRUST_HEAD_LINES = 20
"""Lines of a plugin shown before ``scout-tui trust`` asks about it."""


def trust_command(argv: list[str], stdin: TextIO | None = None) -> int:
    """``scout-tui trust [--list] [--yes]``: this directory's project plugins with their state
    (trusted, new, changed); then, for each new or changed one, its first lines and "[y/N]" on
    the terminal (``--yes``: trust every one listed without asking). What was answered y is
    recorded (``trust.record_trust``) and loads at the next start here.

    Returns 0; 1 when untrusted plugins remain because ``stdin`` (default ``sys.stdin``) is not
    a terminal and ``--yes`` was not given (nothing is trusted then, and stderr says how).
    """
    parser = argparse.ArgumentParser(
        prog="scout-tui trust",
        description="Project plugins (./.agents/plugins/*.py) are Python that runs with your rights, outside the "
                    "sandbox, when scout-tui starts here; they run only once you trust their exact content. This "
                    "lists them (trusted, new, changed) and asks about each new or changed one, with the project's "
                    "MCP servers, agent files (.agents/agents, .claude/agents) and hooks (scout.toml [hooks], "
                    ".claude/settings.json), which load or run only once trusted too. "
                    "Your own plugins and agents (~/.agents) are always trusted.",
    )
    parser.add_argument("--list", action="store_true", help="only list the plugins and their state; trust nothing")
    parser.add_argument("--yes", action="store_true", help="trust every new or changed plugin listed, without asking")
    args = parser.parse_args(argv)
    from scout_tui.extensions.plugins import PLUGINS_DIR
    from scout_tui.extensions.project_trust import project_trust
    from scout_tui.config.trust import record_trust

    stdin = sys.stdin if stdin is None else stdin
    cwd = working_directory()
    files, problems = project_trust(cwd)
    for problem in problems:
        print(f"scout-tui: {problem}", file=sys.stderr)
    if not files:
        if not problems:
            print(f"no project plugins in {cwd / PLUGINS_DIR}")
        return 0
    print(f"{'STATE':<8}  {'SIZE':<20}  FILE")
    for f in files:
        print(f"{f.state:<8}  {f.summary():<20}  {_one_line(f.shown)}")
    pending = [f for f in files if not f.trusted]
    if args.list or not pending:
        return 0
    if args.yes:
        chosen = pending
    elif not stdin.isatty():
        print(f"scout-tui: {len(pending)} plugin{'s' * (len(pending) != 1)} not trusted: stdin is not a terminal, so "
              "nothing was asked; read them, then run `scout-tui trust` in a terminal, or `scout-tui trust --yes` "
              "to trust every one listed", file=sys.stderr)
        return 1
    else:
        chosen = []
        for f in pending:
            print(f"\n--- {_one_line(f.shown)} ({f.state}, {f.summary()}, sha256 {f.sha256[:12]}) ---")
            head = f.head(TRUST_HEAD_LINES)
            for n, line in enumerate(head, 1):
                print(f"{n:>4}  {line}")
            if f.lines > len(head):
                print("      … (read the whole file before trusting it)")
            print("Trust it, to run it at every start of scout-tui here? [y/N] ", end="", flush=True)
            answer = stdin.readline()
            if not answer:
                print()
            if answer.strip().lower() in ("y", "yes"):
                chosen.append(f)
    if not chosen:
        print("nothing trusted")
        return 0
    where = record_trust(chosen)
    names = ", ".join(f.label.split(" (")[0] if f.label else f.path.name for f in chosen)
    print(f"trusted {names} (recorded in {where}): loaded at the next start of scout-tui here")
    return 0


def _checkpoint_command(name: str) -> Callable[[list[str]], int]:
    def run(argv: list[str]) -> int:
        from scout_tui.frontends import checkpoint_commands

        return getattr(checkpoint_commands, f"{name}_command")(argv)

    return run


def compare_command(argv: list[str]) -> int:
    """``scout-tui compare A B``: two branches side by side (``compare_command``)."""
    from scout_tui.frontends.compare_command import compare_command as run

    return run(argv)


def search_command(argv: list[str]) -> int:
    """``scout-tui search QUERY``: full-text search of every session (``search_command``)."""
    from scout_tui.frontends.search_command import search_command as run

    return run(argv)


def acp_command(argv: list[str]) -> int:
    """``scout-tui acp``: scout-tui as an ACP agent on stdio (``acp_agent.acp_command``)."""
    from scout_tui.frontends.acp_agent import acp_command as run

    return run(argv)


SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {
    "sessions": sessions_command, "export": export_command, "themes": themes_command, "doctor": doctor_command,
    "trust": trust_command, "diff": _checkpoint_command("diff"), "restore": _checkpoint_command("restore"),
    "acp": acp_command, "search": search_command, "compare": compare_command,
}
