"""Keys go only where they belong and never show (spec 04 §3, 08 D16, D17, D24, D25).

A canary key is followed through exception messages, ``repr``s, log lines (every logger, at
DEBUG, over real loopback sockets) and trace files.
"""

from __future__ import annotations

import logging
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpfakes import Body, clean_environment, mock_client

import adapters
from mmsp_core import (
    ApiKeyRequiredError,
    MMSPError,
    ProviderConnectionError,
    ProviderHTTPError,
    ProviderStreamError,
    TextDone,
    UnsupportedParameterError,
    UsageMetadata,
    to_wire,
)
from mmsp_io import AutoLLMClient
from mmsp_io.simulator import Reply, Simulator

__all__ = ["clean_environment"]

CANARY = "sk-canary-7f3a9c0d1e2b"
HELLO = adapters.render("openai-responses", [TextDone("Hello world")],
                        UsageMetadata(0, 5, None, 2), "stop")
USER = {"role": "user", "content_items": [{"type": "text.done", "text": "Hi"}]}


def assert_hidden(value: Any) -> None:
    """The canary shows in none of the ways an error or object can be printed."""
    shown = [str(value), repr(value)]
    if isinstance(value, BaseException):
        shown.append(repr(value.args))
    if isinstance(value, MMSPError):
        shown.append(repr(to_wire(value)))
    for text in shown:
        assert CANARY not in text


async def first_error(client: AutoLLMClient, config: Any = None) -> BaseException:
    with pytest.raises(MMSPError) as caught:
        async for _event in client.streaming_response([USER], config):
            pass
    return caught.value


# -- the canary never shows ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_provider_echoing_the_key_in_an_http_error_is_redacted() -> None:
    def echo(request: httpx.Request) -> httpx.Response:
        key = request.headers["authorization"].removeprefix("Bearer ")
        return httpx.Response(401, json={"error": {"type": "invalid_api_key",
                                                   "message": f"Incorrect API key: {key}"}})

    client = AutoLLMClient("gpt-6", api_key=CANARY, http_client=mock_client(echo))
    error = await first_error(client)
    assert isinstance(error, ProviderHTTPError)
    assert error.provider_message == "Incorrect API key: [redacted]"
    assert_hidden(error)
    assert_hidden(client)


@pytest.mark.anyio
async def test_a_provider_echoing_the_key_inside_the_stream_is_redacted() -> None:
    def echo(request: httpx.Request) -> httpx.Response:
        key = request.headers["authorization"].removeprefix("Bearer ")
        body = ('event: error\ndata: {"type":"error","code":"invalid_request",'
                f'"message":"key {key} is not allowed"}}\n\n').encode()
        return httpx.Response(200, stream=Body(body))

    client = AutoLLMClient("gpt-6", api_key=CANARY, http_client=mock_client(echo))
    error = await first_error(client)
    assert isinstance(error, ProviderStreamError)
    assert_hidden(error)


@pytest.mark.anyio
async def test_connection_errors_and_key_errors_do_not_show_the_key() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = AutoLLMClient("gpt-6", api_key=CANARY, base_url=f"http://127.0.0.1:{port}/v1",
                           max_retries=0)
    error = await first_error(client)
    assert isinstance(error, ProviderConnectionError)
    assert_hidden(error)
    await client.aclose()
    with pytest.raises(ApiKeyRequiredError) as caught:
        AutoLLMClient("gpt-6", api_key=CANARY + "\n")
    assert_hidden(caught.value)


@pytest.mark.anyio
async def test_no_log_line_and_no_trace_file_holds_the_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with Simulator.running(Reply(items=[TextDone("Hi there")]), api_key=CANARY) as sim:
        async with AutoLLMClient("sim-model", client_type="openai-responses", api_key=CANARY,
                                 base_url=sim.base_url("openai-responses"),
                                 trace_dir=tmp_path) as client:
            events = [e async for e in client.streaming_response([USER], {"trace_id": "t"})]
            assert events[-1].event_type == "stop"
            assert await client.list_models() == ["sim-model"]
        async with AutoLLMClient("sim-model", client_type="openai-responses",
                                 api_key=CANARY + "-wrong",
                                 base_url=sim.base_url("openai-responses")) as wrong:
            error = await first_error(wrong)
    assert sim.requests[0].header("authorization") == f"Bearer {CANARY}"
    assert isinstance(error, ProviderHTTPError) and error.status == 401
    assert_hidden(error)
    assert caplog.records, "the DEBUG logs of httpx/httpcore were expected"
    assert CANARY not in caplog.text
    assert {p.name for p in tmp_path.iterdir()} == {"t.json", "t.txt"}
    for path in tmp_path.iterdir():
        assert CANARY not in path.read_text("utf-8")


# -- the key goes only where it belongs (04 §3, 08 D25) -----------------------------------------


def test_the_environment_key_is_not_sent_to_a_base_url_given_in_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    with pytest.raises(ApiKeyRequiredError) as caught:
        AutoLLMClient("gpt-6", base_url="https://gateway.example/v1")
    error = caught.value
    assert (error.client_type, error.api_key_env, error.base_url_env, error.base_url) == (
        "openai-official", "OPENAI_API_KEY", "OPENAI_BASE_URL", "https://gateway.example/v1")
    assert_hidden(error)


@pytest.mark.anyio
async def test_the_environment_key_goes_to_the_vendor_default_and_the_environment_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[httpx.Request] = []

    def serve(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, stream=Body(HELLO))

    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    default = AutoLLMClient("gpt-6", base_url="HTTPS://API.OPENAI.COM/v1/",
                            http_client=mock_client(serve))
    monkeypatch.setenv("OPENAI_BASE_URL", "https://proxy.example/openai")
    from_environment = AutoLLMClient("gpt-6", http_client=mock_client(serve))
    for client in (default, from_environment):
        async for _event in client.streaming_response([USER], None):
            pass
    assert [(r.url.host, r.headers["authorization"]) for r in seen] == [
        ("api.openai.com", f"Bearer {CANARY}"), ("proxy.example", f"Bearer {CANARY}")
    ]


def test_a_client_without_any_key_is_refused_at_construction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", CANARY)  # not a variable MMSP reads (08 D25)
    with pytest.raises(ApiKeyRequiredError) as caught:
        AutoLLMClient("gemini-3.8-flash")
    assert (caught.value.api_key_env, caught.value.base_url) == ("GEMINI_API_KEY", None)
    assert "GEMINI_API_KEY is required" in str(caught.value)


@pytest.mark.anyio
async def test_an_open_server_given_a_base_url_runs_keyless(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[httpx.Request] = []
    body = adapters.render("openai-chat", [TextDone("Hi")], UsageMetadata(0, 1, None, 1), "stop")

    def serve(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, stream=Body(body))

    monkeypatch.setenv("VLLM_API_KEY", CANARY)
    client = AutoLLMClient("qwen", client_type="openai-chat-vllm-adapter",
                           base_url="http://10.0.0.5:8000/v1", http_client=mock_client(serve))
    async for _event in client.streaming_response([USER], None):
        pass
    assert "authorization" not in seen[0].headers


@pytest.mark.anyio
async def test_keys_travel_in_headers_never_in_the_url() -> None:
    seen: list[httpx.Request] = []

    def serve(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"models": [{"name": "models/gemini-x"},
                                                    {"name": "models/gpt-y"}]})

    client = AutoLLMClient("gemini-3.8-flash", api_key=CANARY, http_client=mock_client(serve))
    assert await client.list_models() == ["gemini-x"]
    assert seen[0].headers["x-goog-api-key"] == CANARY
    assert CANARY not in str(seen[0].url)


# -- no redirects, no escaping traces (08 D16, D24) ---------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("call", ["stream", "list_models"])
async def test_authenticated_requests_do_not_follow_redirects(call: str) -> None:
    hosts: list[str] = []

    def redirect(request: httpx.Request) -> httpx.Response:
        hosts.append(request.url.host)
        return httpx.Response(302, headers={"location": "https://attacker.example/collect"})

    caller_client = mock_client(redirect, follow_redirects=True)
    client = AutoLLMClient("gpt-6", api_key=CANARY, http_client=caller_client, max_retries=0)
    with pytest.raises(ProviderHTTPError) as caught:
        if call == "stream":
            async for _event in client.streaming_response([USER], None):
                pass
        else:
            await client.list_models()
    assert caught.value.status == 302
    assert hosts == ["api.openai.com"]


@pytest.mark.anyio
@pytest.mark.parametrize("trace_id", ["/tmp/escaped", "../escaped", "a/../../escaped"])
async def test_a_trace_id_that_escapes_the_trace_dir_is_refused(
    tmp_path: Path, trace_id: str
) -> None:
    seen: list[httpx.Request] = []
    client = AutoLLMClient("gpt-6", api_key=CANARY, trace_dir=tmp_path / "cache",
                           http_client=mock_client(lambda r: seen.append(r)))  # type: ignore
    error = await first_error(client, {"trace_id": trace_id})
    assert isinstance(error, UnsupportedParameterError)
    assert error.parameter == "trace_id"
    assert seen == []
