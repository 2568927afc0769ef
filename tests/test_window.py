"""The context window against a small llama.cpp server (issue 28, items 7 to 9).

``llama_server.LlamaServer`` stands in for ``llama-server -c N``: its token count is about a third
above scout-tui's estimate, and it refuses a prompt past its window with llama.cpp's error body.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from llama_server import LlamaServer

from tests.headless_helpers import env, repo  # noqa: F401 — fixtures


def flags(url: str, route: str) -> list[str]:
    return ["--provider", route, "--base-url", url + ("/v1" if route == "openai" else ""), "--model", "small-model",
            "--api-key", "sk-local"]


# -- item 9: -p and a thinking model ---------------------------------------------------------------


@pytest.mark.parametrize("route", ["openai", "anthropic"])
def test_p_prints_a_thinking_models_answer(repo, env, route):
    llama = LlamaServer(n_ctx=8192, answer="The answer is 42.", thinking=True)
    with llama.serve() as server:
        done = subprocess.run([sys.executable, "-m", "scout_tui", *flags(server.url, route), "-p", "the answer?"],
                              cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "The answer is 42."
