"""``AutoLLMClient`` makes one pure call per request (08 D79; spec 02 §8): the messages are
read once, stamped and checked by ``adapters.prepare``, for a stateless and a stateful call."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from httpfakes import Body, clean_environment, mock_client

import adapters
import adapters._preflight
from mmsp_core import TextDone, UniMessage, UpstreamError, UsageMetadata
from mmsp_io import AutoLLMClient

pytestmark = pytest.mark.anyio
__all__ = ["clean_environment"]

HELLO = adapters.render("openai-responses", [TextDone("Hello")], UsageMetadata(0, 5, None, 2),
                        "stop", fragment_size=4)
USER = {"role": "user", "content_items": [{"type": "text.done", "text": "Hi"}]}


def make() -> AutoLLMClient:
    return AutoLLMClient(
        "gpt-6", client_type="openai-responses", api_key="sk-test-0123",
        base_url="https://gateway.test/v1",
        http_client=mock_client(lambda request: httpx.Response(200, stream=Body(HELLO))),
    )


@pytest.mark.parametrize("stateful", [False, True])
async def test_one_stream_reads_its_messages_once(
    monkeypatch: pytest.MonkeyPatch, stateful: bool
) -> None:
    """Reading, stamping and checking the messages is one pass, ``adapters.prepare``'s: the
    client reads them no second time of its own (the stateful history included)."""
    reads: list[int] = []
    real = adapters._preflight.read_messages

    def counted(client: str, messages: Any, *, check_values: bool) -> list[UniMessage]:
        reads.append(len(messages))
        return real(client, messages, check_values=check_values)

    client = make()
    monkeypatch.setattr(adapters._preflight, "read_messages", counted)
    stream = (client.streaming_response_stateful(USER) if stateful
              else client.streaming_response([USER]))
    events = [event async for event in stream]
    assert events[-1].event_type == "stop"
    assert reads == [1]
    if stateful:
        user, _assistant = client.get_history()
        assert user.created_at is not None  # stamped by the one read


def test_a_gateways_refusal_is_its_error_object_read_by_the_mmsp_shape() -> None:
    """A gateway's non-2xx body is read where the mmsp record's ``ErrorShape`` reads the error
    type (spec 03 §5): the object whole, its type; anything else gets the stand-in."""
    body = b'{"error": {"type": "RateLimited", "message": "slow down", "status": 429}}'
    error = adapters.upstream_http_error("mmsp", 429, body)
    assert isinstance(error, UpstreamError)
    assert (error.status, error.error_type) == (429, "RateLimited")
    assert error.error == {"type": "RateLimited", "message": "slow down", "status": 429}
    stand_in = adapters.upstream_http_error("mmsp", 502, b"<html>bad gateway</html>")
    assert (stand_in.error_type, stand_in.error) == (
        "HTTPError", {"type": "HTTPError", "message": "HTTP 502: <html>bad gateway</html>"})
    deep = b'{"error": ' + b'{"a": ' * 300 + b"1" + b"}" * 301
    assert adapters.upstream_http_error("mmsp", 500, deep).error_type == "HTTPError"
