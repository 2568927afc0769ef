"""The events behave as frozen, slotted dataclasses: equal by class and fields, hashable,
immutable (but ``session.before_compact``, which plugins answer on the event), shown by their
fields, read by ``dataclasses.fields`` and ``replace``, matched by position."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from scout_tui.core.bus import VOCABULARY, BeforeCompact, Event, MessageDelta, Named, SessionDelete, ToolEnd, ToolOutput


def test_events_of_one_class_with_the_same_fields_are_equal() -> None:
    assert MessageDelta("text", "hi") == MessageDelta(kind="text", text="hi")
    assert MessageDelta("text", "hi") != MessageDelta("text", "ho")
    assert SessionDelete() == SessionDelete()


def test_events_of_different_classes_differ_even_with_the_same_fields() -> None:
    assert MessageDelta("a", "b") != ToolOutput("a", "b")
    assert MessageDelta("a", "b") != ("a", "b")


def test_equal_events_hash_alike() -> None:
    assert hash(MessageDelta("text", "hi")) == hash(MessageDelta("text", "hi"))
    assert len({ToolEnd("1", "bash", "out", False, 0.5), ToolEnd("1", "bash", "out", False, 0.5)}) == 1


def test_an_event_is_immutable() -> None:
    event = MessageDelta("text", "hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.text = "ho"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del event.text  # type: ignore[misc]
    with pytest.raises((AttributeError, TypeError)):
        event.other = 1  # type: ignore[attr-defined]


def test_before_compact_is_live_and_so_unhashable() -> None:
    event = BeforeCompact(at=3, count=5, focus="", by="user")
    event.summary = "mine"
    assert event.answer() == ("mine", None)
    with pytest.raises(TypeError):
        hash(event)
    with pytest.raises(AttributeError):
        event.sumary = "a typo"  # type: ignore[attr-defined]
    # The live data dict is neither shown nor compared.
    assert "_live" not in repr(event)
    assert event == BeforeCompact(at=3, count=5, focus="", by="user", summary="mine")


def test_an_event_is_shown_by_its_fields() -> None:
    assert repr(MessageDelta("text", "hi")) == "MessageDelta(kind='text', text='hi')"
    assert repr(SessionDelete()) == "SessionDelete()"
    assert repr(Named("mine", {"a": 1})) == "Named(name='mine', payload={'a': 1})"


def test_events_are_dataclasses_matched_by_position() -> None:
    event = ToolEnd("1", "bash", "out", False, 0.5)
    assert [f.name for f in dataclasses.fields(event)][:5] == ["id", "name", "content", "is_error", "elapsed"]
    assert dataclasses.replace(event, content="new").content == "new"
    match MessageDelta("text", "hi"):
        case MessageDelta(kind, text):
            assert (kind, text) == ("text", "hi")
    assert not hasattr(event, "__dict__")


def test_every_event_class_is_in_the_vocabulary_and_round_trips_its_data() -> None:
    assert all(issubclass(cls, Event) and VOCABULARY[cls.type] is cls for cls in VOCABULARY.values())
    event = ToolEnd("1", "bash", "out", False, None, diff="d")
    assert Event.of(event.type, event.data) == event
    assert Event.of("tool.end", {"nope": 1}) == Named("tool.end", {"nope": 1})


def test_events_copy_and_pickle_to_equal_events() -> None:
    event = ToolEnd("1", "bash", {"out": [1]}, False, 0.5, diff="d")
    assert copy.deepcopy(event) == event and copy.copy(event) == event
    assert pickle.loads(pickle.dumps(event)) == event
    live = BeforeCompact(at=1, count=2, focus="", by="user", summary="s")
    assert pickle.loads(pickle.dumps(live)) == live
