"""A provider profile's headers: sent with every model request, replacing a backend header of
the same name whatever its case, and blotted out of error messages like the key."""

from __future__ import annotations

import httpx
import pytest

from scout_tui.core.errors import ModelError
from tests.backend_wire import backend, collect, mock_transport, request
from tests.loopback import anthropic_stream, openai_stream


async def test_profile_headers_go_with_the_request_and_replace_the_backends_own() -> None:
    seen: list[httpx.Request] = []
    b = backend("openai", model="m", transport=mock_transport(openai_stream(["ok"]), 64, seen=seen))
    b.extra_headers = {"authorization": "Bearer gateway-token-123", "x-title": "scout-tui"}
    await collect(b, request())
    (sent,) = seen
    assert sent.headers.get_list("authorization") == ["Bearer gateway-token-123"]  # not the key's as well
    assert sent.headers["x-title"] == "scout-tui" and sent.headers["content-type"] == "application/json"


async def test_anthropic_requests_carry_them_too() -> None:
    seen: list[httpx.Request] = []
    b = backend("anthropic", model="m", transport=mock_transport(anthropic_stream(["ok"]), 64, seen=seen))
    b.extra_headers = {"X-Gateway-Key": "gw-0123456789"}
    await collect(b, request())
    assert seen[0].headers["x-gateway-key"] == "gw-0123456789" and seen[0].headers["x-api-key"]


async def test_an_error_echoing_a_header_value_never_shows_it() -> None:
    body = b'{"error": {"type": "authentication_error", "message": "bad gateway key gw-0123456789"}}'
    b = backend("anthropic", model="m",
                transport=mock_transport(body, 64, status=401, headers={"content-type": "application/json"}))
    b.extra_headers = {"x-gateway-key": "gw-0123456789"}
    with pytest.raises(ModelError) as caught:
        await collect(b, request())
    assert "gw-0123456789" not in str(caught.value) and "[redacted]" in str(caught.value)
