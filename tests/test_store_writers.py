"""Two processes writing one store at once (two open TUIs): nothing lost, no "database is locked"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scout_tui.store.event_log import Store

APPENDS = 200

# One writer: opens the store and its own session, says "ready", waits for "go" on stdin so
# both writers start together, then appends to its session and to the shared one, forking
# the shared session every 50 appends.
WRITER = r"""
import sys
from scout_tui.core.bus import Event
from scout_tui.store.event_log import Store

path, shared, tag, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
store = Store(path)
own = store.create_session(".")
print(own, flush=True)
sys.stdin.readline()
for i in range(count):
    message = {"role": "user", "content": [{"type": "text", "text": f"{tag} {i} ✓"}]}
    store.append(own, Event.of("message.user", {"message": message}))
    store.append(shared, Event.of("message.user", {"message": message}))
    if i % 50 == 49:
        store.fork(shared)
store.close()
"""


def test_two_processes_appending_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    with Store(path) as store:
        shared = store.create_session(tmp_path)
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), shared, tag, str(APPENDS)], cwd=tmp_path,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for tag in ("A", "B")
    ]
    own = {tag: w.stdout.readline().strip() for tag, w in zip("AB", writers)}  # both are open
    for w in writers:
        w.stdin.write("go\n")
        w.stdin.close()
    for w in writers:
        assert w.wait(timeout=60) == 0, w.stderr.read()
        assert w.stderr.read() == ""

    with Store(path) as store:
        texts = [m["content"][0]["text"] for m in store.messages(shared)]
        assert len(texts) == 2 * APPENDS
        for tag in "AB":
            assert [t for t in texts if t.startswith(tag)] == [f"{tag} {i} ✓" for i in range(APPENDS)]
            assert len(store.messages(own[tag])) == APPENDS
        forks = [s for s in store.sessions() if s.parent == shared]
        assert len(forks) == 2 * APPENDS // 50
        assert all(len(store.messages(f.id)) == f.fork_at for f in forks)
        assert len(store.events()) == 1 + 2 + 4 * APPENDS + len(forks)
        live = store.projection_rows()
        store.rebuild()
        assert store.projection_rows() == live
