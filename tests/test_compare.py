"""Branch compare: where two branches of one tree diverge, what each did after (messages, the
files their real checkpoints recorded, cost), through the store, ``scout-tui compare`` and the
TUI's ``/compare``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scout_tui.checkpoints.snapshots import Checkpoints
from scout_tui.config.layers import load_config
from scout_tui.core.bus import Checkpoint, Event, SessionCompacted
from scout_tui.core.errors import ScoutError
from scout_tui.session.compare import compare_branches, comparison_json, file_line, spend_line, with_files
from scout_tui.store.event_log import Store
from scout_tui.tui.app import ScoutApp
from scout_tui.widgets.branch_compare import BranchCompare, SideColumn
from scout_tui.widgets.branch_picker import BranchPicker
from tests.app_helpers import SIZE, rendered, send, settle, steady, text_block
from tests.conftest import wait_until
from tests.headless_helpers import scout


def say(store: Store, sid: str, role: str, text: str, cost: float = 0.0) -> None:
    data: dict = {"message": {"role": role, "content": [text_block(text)]}}
    if role == "assistant":
        data.update(usage={"input_tokens": 100, "output_tokens": 10}, cost=cost, model="claude-test")
    store.append(sid, Event.of("message.user" if role == "user" else "message.assistant", data))


@pytest.fixture
def tree(tmp_home: Path, workdir: Path) -> dict[str, str]:
    """root: 4 messages; a: fork of root at 2 (+2 own); b: fork of root at 2 (+4 own); c: fork of
    a at 3 (+2 own); other: a root of its own. Each assistant message costs $0.01."""
    with Store() as store:
        ids = {"root": store.create_session(workdir)}
        for text in ("fix the parser", "Which parser?", "the JSON one", "Done: trailing commas."):
            say(store, ids["root"], "user" if text[0].islower() else "assistant", text, 0.01)
        ids["a"] = store.fork(ids["root"], 2).id
        say(store, ids["a"], "user", "the TOML one instead")
        say(store, ids["a"], "assistant", "Done: TOML arrays.", 0.01)
        ids["b"] = store.fork(ids["root"], 2).id
        for text in ("the YAML one", "Anchors or tags?", "anchors", "Done: YAML anchors."):
            say(store, ids["b"], "user" if text[0].islower() else "assistant", text, 0.01)
        ids["c"] = store.fork(ids["a"], 3).id
        say(store, ids["c"], "assistant", "Actually, TOML tables.", 0.01)
        say(store, ids["c"], "user", "ok")
        ids["other"] = store.create_session(workdir)
        say(store, ids["other"], "user", "unrelated")
    return ids


@pytest.mark.parametrize("a, b, shared", [("a", "b", 2), ("b", "a", 2), ("root", "a", 2), ("a", "c", 3),
                                          ("c", "b", 2), ("root", "c", 2)])
def test_two_branches_diverge_after_the_messages_they_share(tree, a, b, shared):
    with Store() as store:
        comparison = compare_branches(store, tree[a], tree[b][:8])
        assert comparison.shared == shared
        assert len(comparison.a.messages) == len(store.messages(tree[a])) - shared
        assert len(comparison.b.messages) == len(store.messages(tree[b])) - shared


def test_each_side_counts_only_what_it_spent_after_the_divergence(tree):
    with Store() as store:
        comparison = compare_branches(store, tree["a"], tree["b"])
    assert comparison.common.id == tree["root"] and comparison.last_shared["content"][0]["text"] == "Which parser?"
    a, b = comparison.a, comparison.b
    assert (a.prompts, a.answer) == (["the TOML one instead"], "Done: TOML arrays.")
    assert (b.prompts, b.answer) == (["the YAML one", "anchors"], "Done: YAML anchors.")
    assert (a.usage["requests"], b.usage["requests"]) == (1, 2)  # the shared "Which parser?" counts on neither
    assert (a.usage["cost"], b.usage["output_tokens"]) == (pytest.approx(0.01), 20)


def test_a_nested_fork_counts_its_parents_messages_after_the_divergence(tree):
    with Store() as store:
        comparison = compare_branches(store, tree["c"], tree["b"])
    assert [m["content"][0]["text"] for m in comparison.a.messages] == [
        "the TOML one instead", "Actually, TOML tables.", "ok"]
    assert comparison.a.usage["requests"] == 1  # "Done: TOML arrays." is a's, after c's fork point
    assert comparison_json(comparison)["a"]["messages"][0] == {"number": 3, "role": "user", "text": "the TOML one instead"}


def test_branches_of_different_trees_or_the_same_branch_are_refused(tree):
    with Store() as store:
        with pytest.raises(ScoutError, match="different session trees"):
            compare_branches(store, tree["a"], tree["other"])
        with pytest.raises(ScoutError, match="the same branch"):
            compare_branches(store, tree["a"], tree["a"][:6])


def test_the_files_each_side_changed_come_from_its_checkpoints(tree, workdir):
    snapshots = Checkpoints(workdir)
    (workdir / "parser.py").write_text("def parse():\n    pass\n")
    start = snapshots.snapshot().tree
    (workdir / "parser.py").write_text("def parse():\n    return toml()\n\n# arrays\n")
    toml = snapshots.snapshot().tree
    (workdir / "parser.py").write_text("def parse():\n    pass\n")
    (workdir / "yaml.py").write_text("anchors = True\n")
    yaml = snapshots.snapshot().tree
    with Store() as store:
        store.append(tree["root"], Checkpoint(0, start, start, []))  # shared: counted on neither side
        store.append(tree["a"], Checkpoint(2, start, toml, [{"status": "modified", "path": "parser.py"}]))
        store.append(tree["b"], Checkpoint(2, start, yaml, [{"status": "added", "path": "yaml.py"}]))
        comparison = with_files(compare_branches(store, tree["a"], tree["b"]))
    assert [(f.path, f.status, f.added, f.removed) for f in comparison.a.files] == [("parser.py", "modified", 3, 1)]
    assert [(f.path, f.status, f.added, f.removed) for f in comparison.b.files] == [("yaml.py", "added", 1, 0)]


def test_scout_tui_compare_prints_both_sides_and_json(tree, workdir, tmp_home):
    import os

    env = {k: v for k, v in os.environ.items()}
    text = scout(["compare", tree["a"][:8], tree["b"][:8]], workdir, env)
    assert text.returncode == 0, text.stderr
    assert "Both share 2 messages" in text.stdout and "last shared, #2 assistant: Which parser?" in text.stdout
    assert "   > the TOML one instead" in text.stdout and "   < Done: YAML anchors." in text.stdout
    doc = json.loads(scout(["compare", tree["a"], tree["b"], "--json"], workdir, env).stdout)
    assert (doc["shared"], doc["common"], doc["a"]["requests"], doc["b"]["prompts"]) == (
        2, tree["root"], 1, ["the YAML one", "anchors"])
    refused = scout(["compare", tree["a"], tree["other"]], workdir, env)
    assert refused.returncode == 1 and "different session trees" in refused.stderr


def app_on(workdir: Path, sid: str) -> ScoutApp:
    return ScoutApp(load_config(workdir, flags={"api_key": "sk-test"}), cwd=workdir, resume=sid)


async def test_slash_compare_shows_both_sides_and_o_opens_the_other_branch(tree, workdir):
    app = app_on(workdir, tree["a"])
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await send(app, pilot, f"/compare {tree['b'][:8]}")
        await wait_until(pilot, lambda: isinstance(app.screen, BranchCompare), what="the compare screen")
        screen = app.screen
        a, b = screen.query_one("#side-a", SideColumn), screen.query_one("#side-b", SideColumn)
        assert "#3 › the TOML one instead" in rendered(a) and "#6 ‹ Done: YAML anchors." in rendered(b)
        assert "Both share 2 messages" in rendered(screen.query_one("#where"))
        await pilot.press("tab")
        assert screen.focused is b
        await pilot.press("o")
        await wait_until(pilot, lambda: app.session.id == tree["b"], what="branch b opened")


async def test_slash_compare_alone_offers_the_other_branches_of_this_tree(tree, workdir):
    app = app_on(workdir, tree["a"])
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await send(app, pilot, "/compare")
        await wait_until(pilot, lambda: isinstance(app.screen, BranchPicker), what="the branch picker")
        offered = {info.id for info, _ in app.screen.branches}
        assert offered == {tree["root"], tree["b"], tree["c"]}  # not itself, not another tree
        await pilot.press("enter")  # the first: the root
        await wait_until(pilot, lambda: isinstance(app.screen, BranchCompare), what="the compare screen")
        assert app.screen.comparison.b.session.id == tree["root"]
        await pilot.press("escape")
        assert not isinstance(app.screen, BranchCompare) and app.session.id == tree["a"]
        await send(app, pilot, f"/compare {tree['other'][:8]}")
        await wait_until(pilot, lambda: "Cannot compare" in rendered(app.chat), what="the refusal")


def test_snapshot_of_the_compare_screen(snap_compare, home_project, fixed_ids, fixed_clock):
    with Store() as store:
        root = store.create_session(home_project)
        say(store, root, "user", "fix the parser")
        say(store, root, "assistant", "Which parser?", 0.01)
        a = store.fork(root, 2).id
        say(store, a, "user", "the TOML one")
        say(store, a, "assistant", "Done: TOML arrays.", 0.01)
        b = store.fork(root, 2).id
        say(store, b, "user", "the YAML one")
        say(store, b, "assistant", "Done: YAML anchors.", 0.02)
    app = app_on(home_project, a)

    async def run_before(pilot) -> None:
        await settle(app, pilot)
        await send(app, pilot, f"/compare {b}")
        await wait_until(pilot, lambda: isinstance(app.screen, BranchCompare), what="the compare screen")
        await steady(app, pilot)

    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)


def test_a_file_a_side_created_then_changed_is_added_and_one_it_undid_says_so(tree, workdir):
    snapshots = Checkpoints(workdir)
    start = snapshots.snapshot().tree
    (workdir / "toml.py").write_text("arrays = 1\n")
    (workdir / "notes.txt").write_text("draft\n")
    made = snapshots.snapshot().tree
    (workdir / "toml.py").write_text("arrays = 2\ntables = 1\n")
    changed = snapshots.snapshot().tree
    (workdir / "scratch.txt").write_text("a\nb\n")
    scratch = snapshots.snapshot().tree
    with Store() as store:
        store.append(tree["b"], Checkpoint(2, start, made, [{"status": "added", "path": "toml.py"},
                                                            {"status": "added", "path": "notes.txt"}]))
        store.append(tree["b"], Checkpoint(4, made, changed, [{"status": "modified", "path": "toml.py"}]))
        store.append(tree["b"], Checkpoint(6, changed, scratch, [{"status": "added", "path": "scratch.txt"}]))
        store.append(tree["b"], Event.of("checkpoint.restore", {"turn": 6, "tree": changed, "paths": ["scratch.txt"]}))
        comparison = with_files(compare_branches(store, tree["a"], tree["b"]))
    files = {f.path: f for f in comparison.b.files}
    # toml.py did not exist where the branches diverge: the branch added it (then changed it again)
    assert (files["toml.py"].status, files["toml.py"].added, files["toml.py"].removed) == ("added", 3, 1)
    assert (files["notes.txt"].status, files["notes.txt"].undone) == ("added", False)
    assert (files["scratch.txt"].status, files["scratch.txt"].undone) == ("added", True)  # taken back by /undo
    assert file_line(files["scratch.txt"]) == "added scratch.txt (+2 −0, undone)"
    assert comparison_json(comparison)["b"]["files"][1] == {
        "path": "scratch.txt", "status": "added", "added": 2, "removed": 0, "undone": True}


async def test_enter_on_a_column_opens_its_branch_and_esc_stays(tree, workdir):
    app = app_on(workdir, tree["c"])
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await send(app, pilot, f"/compare {tree['root'][:8]} {tree['b'][:8]}")
        await wait_until(pilot, lambda: isinstance(app.screen, BranchCompare), what="the compare screen")
        assert "#3 › the JSON one" in rendered(app.screen.query_one("#side-a", SideColumn))
        await pilot.press("escape")
        assert not isinstance(app.screen, BranchCompare) and app.session.id == tree["c"]
        await send(app, pilot, f"/compare {tree['root'][:8]} {tree['b'][:8]}")
        await wait_until(pilot, lambda: isinstance(app.screen, BranchCompare), what="the compare screen again")
        await pilot.press("tab", "enter")
        await wait_until(pilot, lambda: app.session.id == tree["b"], what="branch b opened")


def compacted(store: Store, sid: str, at: int, cost: float) -> None:
    store.append(sid, SessionCompacted(at=at, count=at, summary="so far", model="claude-test", tokens_before=900,
                                       tokens_after=50, usage={"input_tokens": 900, "output_tokens": 50}, cost=cost,
                                       focus="", by="person"))


def test_a_summary_request_counts_on_the_side_that_made_it_after_the_divergence(tree):
    with Store() as store:
        compacted(store, tree["b"], 2, 0.05)  # b's own, after the divergence
        compacted(store, tree["root"], 4, 0.5)  # root's, after the fork point of a and b: on neither side
        comparison = compare_branches(store, tree["a"], tree["b"])
        nested = compare_branches(store, tree["c"], tree["b"])
        compacted(store, tree["a"], 4, 0.25)
        with_a = compare_branches(store, tree["root"], tree["a"])
    assert (comparison.b.usage["requests"], comparison.b.usage["cost"]) == (3, pytest.approx(0.07))
    assert comparison.b.usage["input_tokens"] == 1100 and comparison.b.usage["output_tokens"] == 70
    assert (comparison.a.usage["requests"], comparison.a.usage["cost"]) == (1, pytest.approx(0.01))
    assert nested.b.usage["cost"] == pytest.approx(0.07)
    # root's summary was made after its message 4: after where a (a fork at 2) left it
    assert (with_a.a.usage["cost"], with_a.b.usage["cost"]) == (pytest.approx(0.51), pytest.approx(0.26))


def test_the_subagents_a_side_started_after_the_divergence_count_in_its_cost(tree):
    with Store() as store:
        call = {"type": "tool_use", "id": "toolu_task1", "name": "task", "input": {"description": "look"}}
        store.append(tree["b"], Event.of("message.assistant", {"message": {"role": "assistant", "content": [call]},
                                                              "usage": {"input_tokens": 5}, "cost": 0.001}))
        helper = store.create_subagent(tree["b"], call="toolu_task1", agent="general", description="look")
        say(store, helper, "user", "look")
        say(store, helper, "assistant", "Found it.", 0.3)
        early = store.create_subagent(tree["root"], call="toolu_before", agent="general", description="shared")
        say(store, early, "assistant", "Shared work.", 0.7)  # root's call is not on either side
        comparison = compare_branches(store, tree["a"], tree["b"])
    assert comparison.b.usage["subagent_cost"] == pytest.approx(0.3)
    assert comparison.b.usage["cost"] == pytest.approx(0.321) and comparison.a.usage["subagent_cost"] == 0
    assert spend_line(comparison.b.usage) == "$0.32 · 3 requests · 205 in / 20 out tokens · subagents $0.30"


async def test_a_branch_of_thousands_of_messages_draws_only_the_lines_in_view(tmp_home, workdir):
    with Store() as store:
        root = store.create_session(workdir)
        say(store, root, "user", "start")
        a = store.fork(root, 1).id
        for n in range(1500):
            say(store, a, "user", f"step {n}")
            say(store, a, "assistant", f"did {n}", 0.001)
    app = app_on(workdir, root)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await send(app, pilot, f"/compare {a[:8]}")
        await wait_until(pilot, lambda: isinstance(app.screen, BranchCompare), what="the compare screen")
        column = app.screen.query_one("#side-b", SideColumn)
        assert len(column.query("*")) < 10  # not a widget per message (3,000 took seconds to mount)
        column.focus()
        await pilot.press("end")
        await pilot.pause()
        await wait_until(pilot, lambda: "#3001 ‹ did 1499" in rendered(column), what="the last message in view")
        assert "#2 › step 0" not in rendered(column)


async def test_a_side_that_changed_many_files_names_a_few_and_counts_the_rest(tree, workdir):
    snapshots = Checkpoints(workdir)
    start = snapshots.snapshot().tree
    for n in range(30):
        (workdir / f"gen_{n:02}.py").write_text(f"n = {n}\n")
    after = snapshots.snapshot().tree
    with Store() as store:
        store.append(tree["b"], Checkpoint(2, start, after, [{"status": "added", "path": f"gen_{n:02}.py"}
                                                             for n in range(30)]))
    app = app_on(workdir, tree["a"])
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await send(app, pilot, f"/compare {tree['b'][:8]}")
        await wait_until(pilot, lambda: isinstance(app.screen, BranchCompare), what="the compare screen")
        files = rendered(app.screen.query(".files").last())
        assert "added gen_00.py (+1 −0)" in files and "gen_29.py" not in files
        assert "… and 25 more files (scout-tui compare lists them all)" in files
        assert app.screen.query_one("#side-b", SideColumn).size.height >= 10  # the messages keep their room
