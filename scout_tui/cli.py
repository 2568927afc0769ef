"""The `scout-tui` command: open the TUI, or run one request headless with ``-p``."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from scout_tui import __version__
from scout_tui.errors import ScoutError


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="scout-tui",
        description="A full-screen terminal coding assistant. Without -p it opens the TUI.",
    )
    parser.add_argument("-p", "--print", dest="prompt", metavar="PROMPT",
                        help="run one request headless: the answer goes to stdout, tool calls to stderr")
    parser.add_argument("-c", "--continue", dest="continue_", action="store_true",
                        help="continue the latest session of this directory")
    parser.add_argument("--resume", metavar="ID", help="resume session ID (a unique prefix is enough)")
    parser.add_argument("--provider", help="anthropic (default) or openai (any OpenAI-compatible server)")
    parser.add_argument("--model", help="model id, e.g. claude-sonnet-4-5, gpt-4.1, llama3.1")
    parser.add_argument("--base-url", help="API root, e.g. http://localhost:11434/v1 for Ollama")
    parser.add_argument("--api-key", help="API key (prefer ANTHROPIC_API_KEY / OPENAI_API_KEY)")
    parser.add_argument("--max-turns", type=int, help="model calls allowed per request")
    parser.add_argument("--theme", help="theme name")
    parser.add_argument("--version", action="version", version=f"scout-tui {__version__}")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script and ``python -m scout_tui``; returns the exit code."""
    args = parse_args(argv)
    cwd = Path.cwd()
    try:
        from scout_tui.config import load_config

        config = load_config(
            cwd,
            flags={
                "provider": args.provider,
                "model": args.model,
                "base_url": args.base_url,
                "api_key": args.api_key,
                "max_turns": args.max_turns,
                "theme": args.theme,
            },
        )
        if args.prompt is not None:
            from scout_tui.headless import run_headless

            return asyncio.run(run_headless(config, cwd, args.prompt, resume=args.resume, continue_=args.continue_))
        from scout_tui.app import ScoutApp

        app = ScoutApp(config, cwd=cwd, resume=args.resume, continue_=args.continue_)
        app.run()
        return app.return_code or 0
    except ScoutError as e:
        print(f"scout-tui: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
