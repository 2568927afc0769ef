"""What both providers' stream readers share (``backends.failures``): reading an event's JSON, the
error a 200 stream reports, and a finished tool call whose arguments are not an object."""

from __future__ import annotations

import pytest

from scout_tui.backends.failures import StreamError, event_payload, stream_error


def test_an_event_holding_a_json_object_is_that_object():
    assert event_payload('{"type": "ping"}') == {"type": "ping"}


def test_an_event_holding_other_json_is_nothing_to_read():
    assert event_payload("[1, 2]") is None


def test_an_event_that_is_not_json_is_a_bad_response_quoting_it():
    with pytest.raises(StreamError) as caught:
        event_payload("<html>busy</html>")
    assert caught.value.kind == "bad_response" and "'<html>busy</html>'" in caught.value.detail


def test_an_anthropic_error_event_names_its_type_and_is_classified():
    error = stream_error({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    assert (error.kind, error.retryable, error.detail) == ("overloaded", True, "Overloaded (overloaded_error)")


def test_an_error_chunk_with_an_http_code_is_classified_by_it():
    error = stream_error({"error": {"code": 429, "message": "slow down"}})
    assert (error.kind, error.retryable, error.detail) == ("rate_limited", True, "slow down (429)")


def test_an_error_without_message_or_type_says_the_stream_reported_one():
    error = stream_error({"error": {}})
    assert error.detail == "an error in the stream"
