"""Stream a long generated markdown answer into ChatView; print throughput and event-loop stalls.

Usage: ``python benchmarks/stream_markdown.py [--kb 200] [--delta 4] [--rate 2000]``

Runs a headless Textual app (``App.run_test``, 120x40) holding one ChatView, after
``gc.freeze()`` (what the app does after start-up). Feeds a generated answer (headings,
paragraphs, lists, code fences) in ``--delta``-character deltas, and prints for each run the
wall time until the chat shows the whole finished answer, deltas per second, and the longest
event-loop stall seen by a task that ticks every 10 ms. Runs: ``--kb`` KB and 30 KB as fast as
the event loop allows (a burst: 64 deltas per loop turn), then 30 KB at ``--rate`` deltas per
second, a fast model's pace (2,000 deltas/s of 4 characters is about 2,000 tokens/s).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual.app import App, ComposeResult  # noqa: E402

from scout_tui.widgets.chat_markdown import MarkdownChunk  # noqa: E402
from scout_tui.widgets.chat_view import ChatView  # noqa: E402

WORDS = (
    "the model streams tokens into a widget while tool calls run in a worker and the event loop "
    "must stay responsive so a person can scroll interrupt or type the next prompt"
).split()


def generate(kb: int, seed: int = 7) -> str:
    """A deterministic markdown answer of about ``kb`` KB: headings, paragraphs, lists, fences."""
    rnd = random.Random(seed)
    out: list[str] = []
    size = section = 0

    def sentence() -> str:
        words = rnd.choices(WORDS, k=rnd.randint(8, 18))
        if rnd.random() < 0.3:
            i = rnd.randrange(len(words))
            words[i] = f"`{words[i]}`"
        if rnd.random() < 0.2:
            i = rnd.randrange(len(words))
            words[i] = f"**{words[i]}**"
        return " ".join(words).capitalize() + "."

    while size < kb * 1024:
        section += 1
        part = [f"## {section}. {' '.join(rnd.choices(WORDS, k=4)).title()}\n"]
        for _ in range(rnd.randint(1, 3)):
            part.append(" ".join(sentence() for _ in range(rnd.randint(2, 5))) + "\n")
        if rnd.random() < 0.6:
            part.append("\n".join(f"- {sentence()}" for _ in range(rnd.randint(2, 6))) + "\n")
        if rnd.random() < 0.5:
            lines = [f"def step_{section}_{i}(x):\n    return x * {i}  # {rnd.choice(WORDS)}" for i in range(rnd.randint(2, 12))]
            part.append("```python\n" + "\n\n".join(lines) + "\n```\n")
        text = "\n".join(part) + "\n"
        out.append(text)
        size += len(text)
    return "".join(out)


class BenchApp(App):
    def get_theme_variable_defaults(self) -> dict[str, str]:
        return {
            "user-message-background": "#232a38",
            "assistant-message-background": "#1b1e24",
            "tool-running": "#ffd75f",
            "tool-ok": "#87d787",
            "tool-error": "#ff6b6b",
        }

    def compose(self) -> ComposeResult:
        yield ChatView(id="chat")


@dataclass
class Result:
    kb: float
    deltas: int
    fed_s: float  # until the last delta was handed to assistant_delta
    wall_s: float  # until the finished answer is on screen
    longest_stall_s: float
    stalls_over_100ms: int
    chunks: int

    def line(self, label: str) -> str:
        return (
            f"{label:<22} {self.kb:6.1f} KB {self.deltas:6d} deltas  fed {self.fed_s:5.2f} s  "
            f"shown {self.wall_s:5.2f} s  {self.deltas / self.wall_s:7.0f} deltas/s  "
            f"longest stall {self.longest_stall_s * 1000:4.0f} ms  "
            f"stalls>100ms {self.stalls_over_100ms}  ({self.chunks} chunks)"
        )


async def run_once(kb: int, delta: int = 4, rate: float = 0) -> Result:
    """Stream one generated answer of ``kb`` KB; ``rate`` deltas/s, 0 for as fast as possible."""
    answer = generate(kb)
    deltas = [answer[i : i + delta] for i in range(0, len(answer), delta)]
    app = BenchApp()
    async with app.run_test(size=(120, 40)) as pilot:
        gc.collect()
        gc.freeze()
        chat = app.query_one(ChatView)
        chat.user_message(0, {"role": "user", "content": "Explain the design, at length."})
        await pilot.pause()

        gaps: list[float] = []
        ticking = True

        async def ticker() -> None:
            last = time.perf_counter()
            while ticking:
                await asyncio.sleep(0.01)
                now = time.perf_counter()
                gaps.append(now - last - 0.01)
                last = now

        start = time.perf_counter()
        tick_task = asyncio.create_task(ticker())
        chat.assistant_delta("text", "")
        message = chat.current
        assert message is not None
        batch = 64 if rate <= 0 else max(1, int(rate / 100))
        for i in range(0, len(deltas), batch):
            for d in deltas[i : i + batch]:
                chat.assistant_delta("text", d)
            # Flood: yield once per batch. Paced: keep to the schedule, not to the sleeps.
            await asyncio.sleep(0 if rate <= 0 else max(0.0, start + (i + batch) / rate - time.perf_counter()))
        fed = time.perf_counter() - start
        chat.assistant_message(1, {"role": "assistant", "content": [{"type": "text", "text": answer}]})
        while not message.done:
            await asyncio.sleep(0.005)
        await pilot.pause()  # the last chunks laid out and painted
        wall = time.perf_counter() - start
        ticking = False
        await tick_task
        gc.unfreeze()
        chunks = list(message.query(MarkdownChunk))
        assert message.source == answer, "the chat's text differs from the streamed answer"
        assert all(chunk.size.height for chunk in chunks), "a chunk was never laid out"
        return Result(len(answer) / 1024, len(deltas), fed, wall, max(gaps), sum(g > 0.1 for g in gaps), len(chunks))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=int, default=200, help="size of the long answer in KB (default 200)")
    parser.add_argument("--delta", type=int, default=4, help="characters per delta (default 4)")
    parser.add_argument("--rate", type=float, default=2000, help="deltas per second of the paced run (default 2000)")
    args = parser.parse_args()
    for kb in dict.fromkeys((args.kb, 30)):
        print(asyncio.run(run_once(kb, args.delta)).line("burst"), flush=True)
    print(asyncio.run(run_once(30, args.delta, args.rate)).line(f"paced {args.rate:.0f}/s"), flush=True)


if __name__ == "__main__":
    main()
