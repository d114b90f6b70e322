"""A misspelt config key through the client (08 D57): one warning, or an error when strict."""

from __future__ import annotations

import warnings
from contextlib import aclosing

import httpx
import pytest

import adapters
from mmsp_core import FinishReason, TextDone, UniMessage, UnsupportedParameterError, UsageMetadata
from mmsp_io import AutoLLMClient

pytestmark = pytest.mark.anyio

BODY = adapters.render("openai-chat", [TextDone("Hi")], UsageMetadata(0, 1, 0, 1),
                       FinishReason.STOP)


def client(requests: list[httpx.Request], *, strict: bool) -> AutoLLMClient:
    def answer(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(200, content=BODY, headers={"content-type": "text/event-stream"})

    http = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    return AutoLLMClient("gpt-x", api_key="sk-test-key", client_type="openai-chat",
                         base_url="http://127.0.0.1:9/v1", http_client=http, strict=strict)


async def test_a_misspelt_key_warns_once_and_the_call_goes_on() -> None:
    requests: list[httpx.Request] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with client(requests, strict=False) as llm, aclosing(
            llm.streaming_response([UniMessage.user("Hi")], {"temprature": 0.2})
        ) as stream:
            events = [event async for event in stream]
    ignored = [w for w in caught if "temprature" in str(w.message)]
    assert len(ignored) == 1 and "did you mean 'temperature'" in str(ignored[0].message)
    assert events[-1].event_type == "stop" and len(requests) == 1


async def test_a_misspelt_key_is_an_error_before_any_request_when_strict() -> None:
    requests: list[httpx.Request] = []
    async with client(requests, strict=True) as llm:
        with pytest.raises(UnsupportedParameterError) as error:
            async with aclosing(
                llm.streaming_response([UniMessage.user("Hi")], {"temprature": 0.2})
            ) as stream:
                [event async for event in stream]
    assert error.value.parameter == "temprature"
    assert requests == []
