"""End to end for Claude on Amazon Bedrock: ``AutoLLMClient`` (anthropic-official with the base
URL ``bedrock://us-east-1``) over loopback HTTP against the simulator's Bedrock endpoint, under
asyncio and trio (08 D72, D19, D21, D61; spec 04 §3-§5; issue 23 items 3, 6, 7).

The client reaches the simulator as AWS's SDKs reach a local endpoint, through
``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``; the simulator answers in AWS's event stream and checks
each request's SigV4 signature against its test key (``mmsp_io.simulator.bedrock``), or its
Bedrock API key as a bearer token. Every test runs with no AWS variable but those it sets, the
instance metadata service disabled (``AWS_EC2_METADATA_DISABLED``) and botocore's files
pointed at nothing, so nothing outside the test is read or reached.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpfakes import clean_environment, mock_client
from test_security import shown_texts

from adapters.anthropic_messages.bedrock import exception_message
from adapters.clients import sigv4_sign
from mmsp_core.model import (
    Item,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniConfig,
    UniEvent,
    UniMessage,
)
from mmsp_core.testing import assert_stream_grammar
from mmsp_io import (
    AutoLLMClient,
    IncompleteStreamError,
    MalformedEventError,
    MMSPError,
    ProviderHTTPError,
    ProviderStreamError,
    Timeouts,
    UnsupportedOperationError,
)
from mmsp_io.simulator import Reply, Simulator
from mmsp_io.simulator.bedrock import TEST_ACCESS_KEY, TEST_SECRET_KEY, client_environment

__all__ = ["clean_environment"]

pytestmark = pytest.mark.anyio

BEDROCK = "bedrock://us-east-1"
MODEL = "global.anthropic.claude-sonnet-4-6"
PATH = f"/model/{MODEL}/invoke-with-response-stream"
KEYS = f"{TEST_ACCESS_KEY},{TEST_SECRET_KEY}"
RELAXED = Timeouts(connect=5, first_event=10, idle=10, total=None)
WEATHER = ToolSchema(
    name="get_weather",
    description="The current weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
QUESTION = UniMessage("user", (TextDone("What is the weather in Paris?"),))
#: Every AWS variable a test might inherit from the machine running it.
AWS_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_BEARER_TOKEN_BEDROCK", "AWS_ENDPOINT_URL",
                 "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
                 "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")


@pytest.fixture(autouse=True)
def no_aws_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No AWS variable, no credential file, no metadata-service probe (08 D72)."""
    for name in AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))


def point_at(monkeypatch: pytest.MonkeyPatch, sim: Simulator, **extra: str) -> None:
    """Point Bedrock clients at ``sim`` (item 6), with ``extra`` variables set too."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", sim.url)
    for name, value in extra.items():
        monkeypatch.setenv(name, value)


def bedrock_client(**options: Any) -> AutoLLMClient:
    options = {"max_retries": 0, "timeouts": RELAXED, **options}
    return AutoLLMClient(MODEL, client_type="anthropic-official", base_url=BEDROCK, **options)


async def collect(stream: AsyncIterator[UniEvent]) -> tuple[list[UniEvent], MMSPError | None]:
    events: list[UniEvent] = []
    try:
        async with aclosing(stream) as items:  # type: ignore[type-var]
            async for event in items:
                events.append(event)
    except MMSPError as exc:
        return events, exc
    return events, None


def done_items(events: list[UniEvent]) -> list[Item]:
    return [item for event in events if event.event_type == "delta"
            for item in event.content_items if item.type.endswith(".done")]


def assert_signed(sim: Simulator, *, token: str | None = None) -> None:
    """Every request went to Bedrock's path, signed with the test key for us-east-1/bedrock."""
    assert sim.requests
    for request in sim.requests:
        assert (request.method, request.path, request.protocol) == (
            "POST", PATH, "ant-messages-bedrock")
        authorization = request.header("authorization") or ""
        assert authorization.startswith(f"AWS4-HMAC-SHA256 Credential={TEST_ACCESS_KEY}/")
        assert "/us-east-1/bedrock/aws4_request" in authorization
        assert request.header("x-amz-security-token") == token
        assert request.header("x-api-key") is None


# -- an agent turn -----------------------------------------------------------------------------


async def test_an_agent_turn_runs_on_bedrock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thinking, a tool call, its result and the answer, signed with the AWS variables."""
    async with Simulator.running() as sim:
        point_at(monkeypatch, sim, **client_environment(sim.url))
        async with bedrock_client() as client:
            config = UniConfig(tools=(WEATHER,))
            first, error = await collect(client.streaming_response_stateful(QUESTION, config))
            assert error is None
            thinking, call = done_items(first)
            assert isinstance(thinking, ThinkingDone) and isinstance(call, ToolCallDone)
            assert (call.name, call.arguments) == ("get_weather", {"city": "Paris"})
            assert first[-1].finish_reason == "tool_call"
            result = UniMessage("user", (ToolResultDone("18 degrees C", call.tool_call_id),))
            second, error = await collect(client.streaming_response_stateful(result, config))
    assert error is None
    for events in (first, second):
        assert_stream_grammar(events)
    assert done_items(second) == [TextDone("Here is what I found: 18 degrees C")]
    assert second[-1].finish_reason == "stop"
    assert_signed(sim)
    body = sim.requests[1].json
    assert body["anthropic_version"] == "bedrock-2023-05-31"
    assert "model" not in body and "stream" not in body
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"][-1]["type"] == "tool_use"


async def test_a_session_token_from_the_api_key_is_sent_and_signed(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Simulator.running(Reply(items=[TextDone("Hi")])) as sim:
        point_at(monkeypatch, sim)
        async with bedrock_client(api_key=f"{KEYS},session-token-from-code") as client:
            events, error = await collect(client.streaming_response([QUESTION]))
    assert error is None and done_items(events) == [TextDone("Hi")]
    assert_signed(sim, token="session-token-from-code")


@pytest.mark.parametrize("source", ["api_key", "AWS_BEARER_TOKEN_BEDROCK"])
async def test_a_bedrock_api_key_is_a_bearer_token(
    monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    async with Simulator.running(Reply(items=[TextDone("Hi")]), api_key="ABSKsim-key") as sim:
        # The access keys of the environment come after a Bedrock API key (08 D72).
        point_at(monkeypatch, sim, **client_environment(sim.url))
        options: dict[str, Any] = {}
        if source == "api_key":
            options["api_key"] = sim.api_key
        else:
            monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", sim.api_key)
        async with bedrock_client(**options) as client:
            events, error = await collect(client.streaming_response([QUESTION]))
    assert error is None and done_items(events) == [TextDone("Hi")]
    (request,) = sim.requests
    assert request.header("authorization") == f"Bearer {sim.api_key}"
    assert request.header("x-amz-date") is None  # not signed


async def test_botocores_chain_finds_a_profile(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No key given or in the environment: botocore's chain, here a credentials file."""
    pytest.importorskip("botocore")
    profile = tmp_path / "credentials"
    profile.write_text(f"[default]\naws_access_key_id = {TEST_ACCESS_KEY}\n"
                       f"aws_secret_access_key = {TEST_SECRET_KEY}\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(profile))
    async with Simulator.running(Reply(items=[TextDone("Hi")])) as sim:
        point_at(monkeypatch, sim)
        async with bedrock_client() as client:
            for _ in range(2):  # the chain is loaded once
                events, error = await collect(client.streaming_response([QUESTION]))
                assert error is None and done_items(events) == [TextDone("Hi")]
    assert_signed(sim)


async def test_without_credentials_or_botocore_the_client_is_refused(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "botocore", None)  # as if the extra were not installed
    with pytest.raises(UnsupportedOperationError) as caught:
        bedrock_client()
    assert "pip install 'mmsp-sansio[aws]'" in str(caught.value)
    bedrock_client(api_key=KEYS)  # keys need no botocore


async def test_an_empty_chain_is_an_api_key_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("botocore")
    async with Simulator.running() as sim:
        point_at(monkeypatch, sim)
        async with bedrock_client() as client:
            _, error = await collect(client.streaming_response([QUESTION]))
    assert type(error).__name__ == "ApiKeyRequiredError"
    assert sim.requests == []


async def test_list_models_is_unsupported_on_bedrock(monkeypatch: pytest.MonkeyPatch) -> None:
    async with bedrock_client(api_key=KEYS) as client:
        with pytest.raises(UnsupportedOperationError) as caught:
            await client.list_models()
    assert caught.value.operation == "list_models"


# -- errors ----------------------------------------------------------------------------------


async def test_a_wrong_secret_is_a_403_and_no_secret_shows(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "wrong/Secret/Key/that/must/never/show/anywhere"
    async with Simulator.running() as sim:
        point_at(monkeypatch, sim)
        async with bedrock_client(api_key=f"{TEST_ACCESS_KEY},{wrong},token-never-shown"
                                  ) as client:
            _, error = await collect(client.streaming_response([QUESTION]))
    assert isinstance(error, ProviderHTTPError)
    assert error.status == 403  # D72: the cloud's message
    assert error.provider_message is not None and "signature" in error.provider_message
    assert error.request_id == "req_sim_1"
    texts = [*shown_texts(error), caplog.text, repr(client)]
    for secret in (wrong, "token-never-shown"):
        assert not any(secret in text for text in texts)


def echo_token(request: httpx.Request) -> httpx.Response:
    """A Bedrock that quotes the session token it was sent inside longer text (08 D61)."""
    token = request.headers.get("x-amz-security-token", "none")
    return httpx.Response(403, json={"message": f"The security token {token} is expired"},
                          headers={"x-amzn-ErrorType": "ExpiredTokenException:http://aws/"})


@pytest.mark.parametrize("source", ["api_key", "environment"])
async def test_an_echoed_session_token_is_redacted(
    monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    token = "IQoJb3JpZ2luX2VjEXAMPLE-session-token-0123456789"
    options: dict[str, Any] = {"http_client": mock_client(echo_token)}
    if source == "api_key":
        options["api_key"] = f"{KEYS},{token}"
    else:
        for name, value in (("AWS_ACCESS_KEY_ID", TEST_ACCESS_KEY),
                            ("AWS_SECRET_ACCESS_KEY", TEST_SECRET_KEY),
                            ("AWS_SESSION_TOKEN", token)):
            monkeypatch.setenv(name, value)
    async with bedrock_client(**options) as client:
        _, error = await collect(client.streaming_response([QUESTION]))
    assert isinstance(error, ProviderHTTPError)
    assert (error.status, error.error_type) == (403, "ExpiredTokenException")
    texts = shown_texts(error)
    assert any("[redacted]" in text for text in texts)
    tail = token[8:]
    assert not any(tail[i : i + 12] in text for text in texts for i in range(len(tail) - 11))


async def test_a_tampered_body_is_a_403() -> None:
    """A request signed for one body and sent with another: AWS's signature refusal."""
    async with Simulator.running() as sim, httpx.AsyncClient() as http:
        body = json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 10,
                           "messages": [{"role": "user", "content": "hi"}]}).encode()
        url = sim.url + PATH
        headers = [("content-type", "application/json")]
        signed = sigv4_sign("POST", url, headers, body, access_key=TEST_ACCESS_KEY,
                            secret_key=TEST_SECRET_KEY, region="us-east-1", service="bedrock",
                            now=time.time())
        honest = await http.post(url, content=body, headers=[*headers, *signed])
        tampered = await http.post(url, content=body.replace(b"hi", b"ho"),
                                   headers=[*headers, *signed])
    assert honest.status_code == 200
    assert honest.headers["content-type"] == "application/vnd.amazon.eventstream"
    assert tampered.status_code == 403
    assert "signature" in tampered.json()["message"]


async def test_a_cut_stream_is_incomplete(monkeypatch: pytest.MonkeyPatch) -> None:
    async with Simulator.running(Reply(items=[TextDone("Hello there, a long answer")],
                                       fragment_size=2, cut_after=2000)) as sim:
        point_at(monkeypatch, sim)
        async with bedrock_client(api_key=KEYS) as client:
            events, error = await collect(client.streaming_response([QUESTION]))
    assert isinstance(error, IncompleteStreamError)
    assert events  # some text came before the cut


async def test_a_bad_crc_is_malformed(monkeypatch: pytest.MonkeyPatch) -> None:
    async with Simulator.running() as sim:
        point_at(monkeypatch, sim)
        from adapters import render  # the body the simulator would send, then broken
        body = bytearray(render("ant-messages-bedrock", [TextDone("Hi")],
                                Reply().usage, "stop"))
        body[-1] ^= 0xFF
        sim.script.append(Reply(body=bytes(body)))
        async with bedrock_client(api_key=KEYS) as client:
            _, error = await collect(client.streaming_response([QUESTION]))
    assert isinstance(error, MalformedEventError)


async def test_an_exception_mid_stream_is_a_provider_stream_error(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    # message_start, ping, the block's start and two text deltas, then the exception.
    reply = Reply(items=[TextDone("Hello there")], fragment_size=2, error_after=5)
    async with Simulator.running(reply) as sim:
        point_at(monkeypatch, sim)
        async with bedrock_client(api_key=KEYS, max_retries=2) as client:
            events, error = await collect(client.streaming_response([QUESTION]))
    assert isinstance(error, ProviderStreamError)
    assert error.code == "serviceUnavailableException"
    assert events  # the text had begun: nothing is retried after an event (08 D21)
    assert len(sim.requests) == 1


async def test_a_throttling_exception_before_the_first_event_is_retried(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    throttled = Reply(body=exception_message("throttlingException", "Too many requests"))
    async with Simulator.running(Reply(items=[TextDone("Hi")])) as sim:
        point_at(monkeypatch, sim)
        sim.script.append(throttled)
        async with bedrock_client(api_key=KEYS, max_retries=1) as client:
            events, error = await collect(client.streaming_response([QUESTION]))
    assert error is None and done_items(events) == [TextDone("Hi")]
    assert len(sim.requests) == 2
    assert_signed(sim)  # each attempt signed again
