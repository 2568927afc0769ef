"""Which model a session goes on with (Store.model_switch): its own last session.model event,
else the last one an ancestor made before the branch's fork point and before the branch was made."""

from __future__ import annotations

from pathlib import Path

import pytest

from scout_tui.core.bus import Event, ModelSwitch
from scout_tui.store.event_log import Store

OPUS, LLAMA, GPT = ModelSwitch("anthropic", "claude-opus-4-1"), ModelSwitch("local", "llama3.1"), ModelSwitch("openai", "gpt-4.1")


def say(role: str, text: str) -> Event:
    return Event.of(f"message.{role}", {"message": {"role": role, "content": [{"type": "text", "text": text}]}})


@pytest.fixture
def store(tmp_home: Path):
    with Store() as s:
        yield s


@pytest.fixture
def parent(store: Store, workdir: Path) -> str:
    """Messages 0-1, a switch to llama (its position: 2), messages 2-3."""
    sid = store.create_session(workdir)
    store.append(sid, say("user", "one"))
    store.append(sid, say("assistant", "two"))
    store.append(sid, LLAMA)
    store.append(sid, say("user", "three"))
    store.append(sid, say("assistant", "four"))
    return sid


def test_a_session_that_never_switched_has_none(store: Store, workdir: Path) -> None:
    sid = store.create_session(workdir)
    store.append(sid, say("user", "hi"))
    assert store.model_switch(sid) is None


def test_the_last_switch_of_the_session_wins(store: Store, parent: str) -> None:
    store.append(parent, GPT)
    assert store.model_switch(parent) == GPT


def test_the_switch_is_stored_but_leaves_the_projections_alone(store: Store, parent: str) -> None:
    before = store.projection_rows()
    store.append(parent, OPUS)
    assert store.projection_rows()[1] == before[1]
    store.rebuild()
    assert store.model_switch(parent) == OPUS


@pytest.mark.parametrize(("at", "inherited"), [(4, LLAMA), (3, LLAMA), (2, LLAMA), (1, None), (0, None)])
def test_a_branch_inherits_the_switches_made_before_its_fork_point(store: Store, parent: str, at: int,
                                                                    inherited: ModelSwitch | None) -> None:
    # Forking at 2 shares messages 0-1: the switch was made right after them, so it holds.
    assert store.model_switch(parent, at) == inherited  # asked before the branch exists
    assert store.model_switch(store.fork(parent, at).id) == inherited


def test_a_switch_in_the_parent_after_the_fork_does_not_reach_the_branch(store: Store, parent: str) -> None:
    branch = store.fork(parent).id
    store.append(parent, GPT)
    assert store.model_switch(branch) == LLAMA and store.model_switch(parent) == GPT


def test_the_branchs_own_switch_wins_over_its_parents(store: Store, parent: str) -> None:
    branch = store.fork(parent).id
    store.append(branch, OPUS)
    assert store.model_switch(branch) == OPUS and store.model_switch(parent) == LLAMA


@pytest.mark.parametrize(("at", "inherited"), [(6, GPT), (5, GPT), (4, LLAMA), (3, LLAMA), (1, None)])
def test_a_fork_of_a_fork_looks_through_both(store: Store, parent: str, at: int, inherited: ModelSwitch | None) -> None:
    middle = store.fork(parent, 4).id
    store.append(middle, say("user", "five"))
    store.append(middle, GPT)  # its position: 5
    store.append(middle, say("assistant", "six"))
    # At 4 the twig shares none of the middle's own messages: the grandparent's switch holds.
    assert store.model_switch(store.fork(middle, at).id) == inherited
