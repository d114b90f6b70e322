"""Keys go only where they belong and never show (spec 04 §3, 08 D16, D17, D24, D25, D61, D72).

A canary key is followed through exception messages, ``repr``s, log lines (every logger, at
DEBUG, over real loopback sockets) and trace files.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from httpfakes import Body, clean_environment, mock_client

import adapters
from mmsp_core import (
    ApiKeyRequiredError,
    MalformedEventError,
    MMSPError,
    ProviderConnectionError,
    ProviderHTTPError,
    ProviderStreamError,
    TextDone,
    ToolCallArgumentParseError,
    UnknownEventError,
    UnsupportedParameterError,
    UpstreamError,
    UsageMetadata,
    to_wire,
)
from mmsp_io import AutoLLMClient
from mmsp_io.simulator import RecordedRequest, Reply, Simulator

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
async def test_connection_errors_and_key_errors_do_not_show_the_key(refusing_port: int) -> None:
    client = AutoLLMClient("gpt-6", api_key=CANARY, base_url=f"http://127.0.0.1:{refusing_port}/v1",
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


# -- no part of the key shows (08 D61) -------------------------------------------------------------

LONG_KEY = "sk-ant-api03-Zq7Xw2Vb9Nm4Lk8Jh3Gf6Ds1Ap0Oi5UyTr2Ee4Ww"
#: Issue 8's reproducer: ``preview`` keeps 72 characters, which cuts the key after 36.
ECHO = "x" * 36 + LONG_KEY + "y" * 200


def leaks(text: str) -> bool:
    """Whether ``text`` holds a run of 12 characters of the key after its first 8 (08 D61)."""
    tail = LONG_KEY[8:]
    return any(tail[i : i + 12] in text for i in range(len(tail) - 11))


def shown_texts(error: BaseException) -> list[str]:
    """Every text an error shows: str, repr, args, wire form, each field, and its chain."""
    texts: list[str] = []
    current: BaseException | None = error
    while current is not None:
        texts += [str(current), repr(current), repr(current.args)]
        if isinstance(current, MMSPError):
            texts.append(repr(to_wire(current)))
            texts += [repr(getattr(current, f.name)) for f in attrs.fields(type(current))]
        current = current.__cause__ or current.__context__
    return texts


def _chat_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk: dict[str, Any] = {"id": "c1", "object": "chat.completion.chunk", "model": "m",
                             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if finish:
        chunk["usage"] = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    return f"data: {json.dumps(chunk)}\n\n".encode()


def _stream(body: bytes) -> httpx.Response:
    return httpx.Response(200, stream=Body(body), headers={"content-type": "text/event-stream"})


#: (client type, strict, reply, the error expected): every error that carries provider text.
ECHOES: dict[str, tuple[str, bool, Any, type[MMSPError]]] = {
    "http-html": ("openai-chat", False, lambda: httpx.Response(
        500, text=ECHO, headers={"content-type": "text/html"}), ProviderHTTPError),
    "http-json": ("ant-messages", False, lambda: httpx.Response(
        400, json={"type": "error", "error": {"type": "invalid_request_error",
                                              "message": ECHO}}), ProviderHTTPError),
    "in-stream": ("openai-responses", False, lambda: _stream(
        b"event: error\ndata: " + json.dumps({"type": "error", "code": "invalid_request",
                                               "message": ECHO}).encode() + b"\n\n"),
        ProviderStreamError),
    "malformed": ("openai-chat", False, lambda: _stream(b"data: {" + ECHO.encode() + b"\n\n"),
                  MalformedEventError),
    "unknown": ("openai-responses", True, lambda: _stream(
        b'data: {"type":"' + ECHO.encode() + b'"}\n\n'), UnknownEventError),
    "arguments": ("openai-chat", False, lambda: _stream(
        _chat_chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                     "function": {"name": "f", "arguments": ECHO}}]})
        + _chat_chunk({}, "tool_calls") + b"data: [DONE]\n\n"), ToolCallArgumentParseError),
    "upstream": ("mmsp", False, lambda: httpx.Response(
        400, json={"error": {"type": "InvalidMessageError", "message": ECHO,
                             "detail": [ECHO]}}), UpstreamError),
    "connection": ("openai-chat", False, httpx.ConnectError(f"refused: {ECHO}"),
                   ProviderConnectionError),
}


@pytest.mark.anyio
@pytest.mark.parametrize("case", list(ECHOES))
async def test_no_run_of_the_key_shows_in_any_error_the_client_raises(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    """08 D61: a provider that echoes the key inside longer text (which the error shortens)
    leaves no run of 12 characters of it in any field, text, chain or log record."""
    client_type, strict, reply, expected = ECHOES[case]
    caplog.set_level(logging.DEBUG)

    def handler(request: httpx.Request) -> httpx.Response:
        if isinstance(reply, Exception):
            raise reply
        return reply()  # type: ignore[no-any-return]

    async with AutoLLMClient("m-1", client_type=client_type, api_key=LONG_KEY,
                             base_url="https://provider.test/v1", strict=strict, max_retries=0,
                             http_client=mock_client(handler)) as client:
        errors = [await first_error(client)]
        if case in ("http-html", "http-json", "upstream", "connection"):
            with pytest.raises(MMSPError) as listing:
                await client.list_models()
            errors.append(listing.value)
    assert all(isinstance(error, expected) for error in errors)
    texts = [text for error in errors for text in shown_texts(error)]
    assert not any(leaks(text) for text in texts), texts
    assert not leaks(caplog.text)


@pytest.mark.anyio
@pytest.mark.parametrize("where", ["http", "in-stream"])
async def test_no_run_of_a_vertex_private_key_or_token_shows(
    where: str, caplog: pytest.LogCaptureFixture
) -> None:
    """08 D61 on Vertex AI (D72): an endpoint that echoes the request's OAuth token and a
    piece of the service-account key's private key inside longer text, in an HTTP error or in
    the stream, leaves no run of 12 characters of either in any error text or log record."""
    from vertexkit import key_text, private_key_pem, trust

    piece = private_key_pem()[64:160]
    seen: list[str] = []

    def echo(request: RecordedRequest) -> Reply:
        token = (request.header("authorization") or "").removeprefix("Bearer ")
        seen.append(token)
        text = "x" * 36 + token + " " + piece + "y" * 200
        if where == "http":
            return Reply(status=400, message=text)
        body = b"data: " + json.dumps({"error": {"code": 500, "message": text}}).encode()
        return Reply(body=body + b"\n\n")

    caplog.set_level(logging.DEBUG)
    async with Simulator.running(echo) as sim:
        trust(sim)
        async with AutoLLMClient("gemini-3.8-flash", client_type="google-genai",
                                 api_key=key_text(sim), base_url=sim.url,
                                 max_retries=0) as client:
            error = await first_error(client)
    assert isinstance(error, ProviderHTTPError if where == "http" else ProviderStreamError)
    texts = [*shown_texts(error), caplog.text]
    for secret in (seen[0], piece):
        tail = secret[8:]
        runs = [tail[i : i + 12] for i in range(len(tail) - 11)]
        assert not any(run in text for text in texts for run in runs), secret[:10]


@pytest.mark.anyio
async def test_a_trace_quoting_part_of_the_key_holds_no_run_of_it(tmp_path: Path) -> None:
    reply = Reply(items=[TextDone(f"echo {LONG_KEY[10:40]}")])
    message = {"role": "user", "content_items": [{"type": "text.done", "text": ECHO}]}
    async with (
        Simulator.running(reply, api_key=LONG_KEY) as sim,
        AutoLLMClient("sim-model", client_type="openai-responses", api_key=LONG_KEY,
                      base_url=sim.base_url("openai-responses"), trace_dir=tmp_path) as client,
    ):
        events = [e async for e in client.streaming_response([message], {"trace_id": "t"})]
    assert events[-1].event_type == "stop"
    for path in tmp_path.iterdir():
        assert not leaks(path.read_text("utf-8"))


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
