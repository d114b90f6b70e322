"""Claude on Amazon Bedrock, the pure side (08 D72; spec 04 §3-§5, 05 §4.1, 06 §1).

anthropic-official with the base URL ``bedrock://<region>`` speaks ``ant-messages-bedrock``:
the Messages body less ``model`` and ``stream`` plus ``anthropic_version``, posted to
``/model/<id>/invoke-with-response-stream``, answered in AWS's event stream whose chunk
messages carry Anthropic's events. The recordings are the Anthropic ones wrapped in chunk
messages (tests/fixtures/anthropic-messages-bedrock/README.md), so each must decode exactly as
the recording it wraps. Expected values are written from the spec, not from the code.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from harness import FIXTURES

import adapters
from adapters.anthropic_messages import profiles
from adapters.anthropic_messages.bedrock import build_request as bedrock_request
from adapters.anthropic_messages.bedrock import chunk_message, exception_message
from adapters.clients import AwsSource, aws_credentials, bedrock_endpoint, credentials
from adapters.testing import ProtocolCheck, protocol_checks
from mmsp_core import (
    ApiKeyRequiredError,
    IncompleteStreamError,
    MalformedEventError,
    ProviderStreamError,
    UnsupportedParameterError,
)
from mmsp_core.eventstream import EventHeader, encode_message
from mmsp_core.model import TextDone, UniConfig, UniMessage
from mmsp_core.testing import outcome

BEDROCK = "bedrock://us-east-1"
PROTOCOL = "ant-messages-bedrock"
FOLDER = FIXTURES / "anthropic-messages-bedrock"
MODEL = "global.anthropic.claude-sonnet-4-6"
HELLO = [{"role": "user", "content_items": [{"type": "text.done", "text": "hi"}]}]

CHECKS: list[ProtocolCheck] = protocol_checks(PROTOCOL, FOLDER)


@pytest.mark.parametrize("check", CHECKS, ids=[check.id for check in CHECKS])
def test_protocol_check(check: ProtocolCheck) -> None:
    check.run()


@pytest.mark.parametrize("anthropic", sorted((FIXTURES / "anthropic-messages").glob("*.sse")),
                         ids=lambda path: path.stem)
def test_each_recording_decodes_as_the_anthropic_one_it_wraps(anthropic: Path) -> None:
    wrapped = FOLDER / f"{anthropic.stem}.eventstream"
    expected = outcome(*_decode("anthropic-official", anthropic.read_bytes()))
    # The route is a property of the base URL: the client type reads the event stream there.
    assert outcome(*_decode("anthropic-official", wrapped.read_bytes(),
                            base_url=BEDROCK)) == expected


def _decode(source: str, body: bytes, **options: Any) -> tuple[list[Any], Exception | None]:
    events: list[Any] = []
    try:
        for event in adapters.decode(source, [body], **options):
            events.append(event)
    except Exception as exc:
        return events, exc
    return events, None


# -- the request (08 D72, 05 §4.1) --------------------------------------------------------------


def request(config: dict[str, Any] | None = None, messages: Any = None,
            model: str = MODEL) -> Any:
    plan = adapters.prepare("anthropic-official", model, HELLO if messages is None else messages,
                            config, base_url=BEDROCK)
    return plan.request({})


def test_the_request_is_invoke_with_response_stream_without_model_and_stream() -> None:
    sent = request({"max_tokens": 100, "thinking_level": "high"},
                   model="global.anthropic.claude-sonnet-4-6:0")
    assert sent.method == "POST"
    # botocore sends the id percent-encoded in the path; ':' is %3A.
    assert sent.path == "/model/global.anthropic.claude-sonnet-4-6%3A0/invoke-with-response-stream"
    headers = dict(sent.headers)
    assert headers["accept"] == "application/vnd.amazon.eventstream"
    assert headers["content-type"] == "application/json"
    assert "anthropic-version" not in headers and "anthropic-beta" not in headers
    body = json.loads(sent.body)
    assert next(iter(body)) == "anthropic_version"
    assert body["anthropic_version"] == "bedrock-2023-05-31"  # on every model (D72)
    assert "model" not in body and "stream" not in body
    assert body["max_tokens"] == 100
    # Prompt caching is on by default: the last user block carries it (05 §4.1).
    assert body["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral", "ttl": "5m"}}]}]
    assert body["thinking"] == {"type": "adaptive"}  # 05 §2.1 row "Claude 4.6"
    assert body["output_config"] == {"effort": "high"}


@pytest.mark.parametrize("model", ["global.anthropic.claude-opus-5",
                                   "global.anthropic.claude-fable-5"])
def test_every_bedrock_body_carries_the_version(model: str) -> None:
    assert json.loads(request(model=model).body)["anthropic_version"] == "bedrock-2023-05-31"


@pytest.mark.parametrize(("caching", "cache_control"), [
    (None, {"type": "ephemeral", "ttl": "5m"}),
    ("enable", {"type": "ephemeral", "ttl": "5m"}),
    ("enhance", {"type": "ephemeral", "ttl": "1h"}),
    ("disable", None),
])
def test_prompt_caching_marks_the_last_block_of_the_last_user_message(
    caching: str | None, cache_control: dict[str, str] | None
) -> None:
    messages = [
        {"role": "user", "content_items": [{"type": "text.done", "text": "first"}]},
        {"role": "assistant", "content_items": [{"type": "text.done", "text": "answer"}]},
        {"role": "user", "content_items": [{"type": "text.done", "text": "one"},
                                           {"type": "text.done", "text": "two"}]},
        {"role": "assistant", "content_items": [{"type": "text.done", "text": "prefill"}]},
    ]
    config = {} if caching is None else {"prompt_caching": caching}
    body = json.loads(request(config, messages).body)
    assert "cache_control" not in body  # no top-level key on Bedrock (05 §4.1)
    blocks = [block for message in body["messages"] for block in message["content"]]
    marked = [block for block in blocks if "cache_control" in block]
    if cache_control is None:
        assert marked == []
    else:
        assert marked == [{"type": "text", "text": "two", "cache_control": cache_control}]


@pytest.mark.parametrize("model", ["global.anthropic.claude-opus-5",
                                   "global.anthropic.claude-sonnet-4-6"])
def test_fast_mode_is_refused_on_bedrock(model: str) -> None:
    # claude-opus-5 takes fast mode on Anthropic's API; Bedrock refuses it on every model.
    adapters.check_config("anthropic-official", "claude-opus-5", {"fast_mode": True})
    with pytest.raises(UnsupportedParameterError) as caught:
        request({"fast_mode": True}, model=model)
    assert caught.value.parameter == "fast_mode"


def test_betas_travel_in_the_body() -> None:
    # With a profile that takes fast mode, its beta goes in anthropic_beta, not a header.
    sent = bedrock_request("anthropic-official", profiles.OFFICIAL, "claude-opus-5",
                           [UniMessage("user", (TextDone("hi"),))], UniConfig(fast_mode=True))
    assert json.loads(sent.body)["anthropic_beta"] == ["fast-mode-2026-02-01"]
    assert all(name != "anthropic-beta" for name, _ in sent.headers)


def test_remote_images_are_fetched_for_bedrock_only() -> None:
    image = "https://example.test/cat.png"
    messages = [{"role": "user", "content_items": [{"type": "image_url.done",
                                                   "image_url": image}]}]
    on_bedrock = adapters.prepare("anthropic-official", MODEL, messages, None, base_url=BEDROCK)
    assert on_bedrock.image_urls == {image: 0}  # 05 §5: Bedrock takes images as bytes
    direct = adapters.prepare("anthropic-official", "claude-opus-5", messages, None)
    assert direct.image_urls == {}
    fetched = on_bedrock.request({image: "data:image/png;base64,iVBORw0KGgo="})
    block = json.loads(fetched.body)["messages"][0]["content"][0]
    assert block["source"] == {"type": "base64", "media_type": "image/png",
                               "data": "iVBORw0KGgo="}


def test_the_route_is_chosen_by_the_base_url() -> None:
    assert adapters.resolve("anthropic-official", MODEL, BEDROCK)[1].name == PROTOCOL
    assert adapters.resolve("anthropic-official", MODEL, "BEDROCK://eu-west-1")[1].name == PROTOCOL
    assert adapters.resolve("anthropic-official", MODEL)[1].name == "ant-messages"
    assert adapters.resolve("ant-messages", MODEL, BEDROCK)[1].name == "ant-messages"


# -- the answer (06 §1 inside AWS's event stream) ------------------------------------------------


def chunk(event: dict[str, Any]) -> bytes:
    return chunk_message(json.dumps(event).encode())


START = chunk({"type": "message_start", "message": {"usage": {"input_tokens": 7}}})
TEXT = (chunk({"type": "content_block_start", "index": 0, "content_block": {"type": "text"}})
        + chunk({"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": "Hi"}}))


@pytest.mark.parametrize(("exception", "retryable"), [
    ("throttlingException", True),
    ("serviceUnavailableException", True),
    ("modelNotReadyException", True),
    ("modelStreamErrorException", False),
    ("validationException", False),
])
def test_an_exception_message_is_a_provider_stream_error_with_its_type(
    exception: str, retryable: bool
) -> None:
    body = START + exception_message(exception, "please slow down")
    _, error = _decode(PROTOCOL, body)
    assert isinstance(error, ProviderStreamError)
    assert error.code == exception
    assert error.provider_message == "please slow down"
    assert error.usage_metadata is not None and error.usage_metadata.prompt_tokens == 7
    assert error.retryable is retryable  # 08 D72 names the three retryable ones


def test_an_error_message_is_a_provider_stream_error_too() -> None:
    headers = (EventHeader(":message-type", "error"), EventHeader(":error-code", "InternalFailure"),
               EventHeader(":error-message", "boom"))
    _, error = _decode(PROTOCOL, START + encode_message(headers))
    assert isinstance(error, ProviderStreamError)
    assert (error.code, error.provider_message) == ("InternalFailure", "boom")


def test_a_cut_stream_is_incomplete() -> None:
    body = START + TEXT
    for cut in (len(body), len(body) - 5):  # between messages, and inside the last one
        _, error = _decode(PROTOCOL, body[:cut])
        assert isinstance(error, IncompleteStreamError)


def test_a_bad_crc_is_malformed() -> None:
    body = bytearray(START + TEXT)
    body[-1] ^= 0xFF  # the last message's CRC
    _, error = _decode(PROTOCOL, bytes(body))
    assert isinstance(error, MalformedEventError)


@pytest.mark.parametrize("payload", [b"[]", b'{"bytes": 5}', b'{"bytes": "not base64!"}',
                                     b'{"bytes": "' + base64.b64encode(b"\xff\xfe") + b'"}',
                                     b'{"bytes": "' + base64.b64encode(b'{"no": "type"}') + b'"}'])
def test_a_chunk_that_is_not_an_event_is_malformed(payload: bytes) -> None:
    headers = (EventHeader(":event-type", "chunk"), EventHeader(":message-type", "event"))
    _, error = _decode(PROTOCOL, START + encode_message(headers, payload))
    assert isinstance(error, MalformedEventError)


# -- credentials and endpoint (08 D72, item 6) ----------------------------------------------------

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
TOKEN = "IQoJb3JpZ2luX2VjEXAMPLE/SESSION+TOKEN=="
AWS_KEYS = {"AWS_ACCESS_KEY_ID": "AKIAENVEXAMPLE", "AWS_SECRET_ACCESS_KEY": SECRET}


@pytest.mark.parametrize(("api_key", "environ", "source", "origin"), [
    ("AKIAX,secret-one", {}, AwsSource.ACCESS_KEYS, "api_key"),
    ("AKIAX,secret-one,token-one", AWS_KEYS, AwsSource.ACCESS_KEYS, "api_key"),
    ("ABSKbedrock-api-key", AWS_KEYS, AwsSource.API_KEY, "api_key"),
    (None, {"AWS_BEARER_TOKEN_BEDROCK": "ABSKfromenv", **AWS_KEYS}, AwsSource.API_KEY,
     "AWS_BEARER_TOKEN_BEDROCK"),
    (None, AWS_KEYS, AwsSource.ACCESS_KEYS, "AWS_ACCESS_KEY_ID"),
    (None, {"ANTHROPIC_API_KEY": "sk-ant-never-sent"}, AwsSource.CHAIN,
     "botocore's credential chain"),
])
def test_credential_sources_are_tried_in_order(
    api_key: str | None, environ: dict[str, str], source: AwsSource, origin: str
) -> None:
    found = aws_credentials("anthropic-official", api_key, environ)
    assert (found.source, found.origin) == (source, origin)


def test_access_keys_split_and_secrets_never_show() -> None:
    found = aws_credentials("anthropic-official", f"AKIAX,{SECRET},{TOKEN}", {})
    assert (found.key, found.secret_key, found.session_token) == ("AKIAX", SECRET, TOKEN)
    assert found.secrets == (SECRET, TOKEN)
    assert SECRET not in repr(found) and TOKEN not in repr(found)
    env = aws_credentials("anthropic-official", None, {**AWS_KEYS, "AWS_SESSION_TOKEN": TOKEN})
    assert (env.key, env.secret_key, env.session_token) == ("AKIAENVEXAMPLE", SECRET, TOKEN)


@pytest.mark.parametrize(("api_key", "environ"), [
    (f"AKIAX,{SECRET},{TOKEN},more", {}),
    (f",{SECRET}", {}),
    (f"AKIAX,{SECRET}\x00", {}),
    (None, {"AWS_ACCESS_KEY_ID": "AKIAX"}),
    (None, {"AWS_SECRET_ACCESS_KEY": SECRET}),
])
def test_unusable_credentials_are_refused_without_quoting_them(
    api_key: str | None, environ: dict[str, str]
) -> None:
    with pytest.raises(ApiKeyRequiredError) as caught:
        aws_credentials("anthropic-official", api_key, environ)
    assert SECRET not in f"{caught.value} {caught.value!r} {caught.value.detail}"


def test_bedrock_takes_the_clouds_credentials_never_the_anthropic_key() -> None:
    environ = {"ANTHROPIC_API_KEY": "sk-ant-never-sent"}
    # 04 §3 refuses the environment's key for a base URL given in code; on Bedrock the cloud's
    # own sources apply instead (D72), and ANTHROPIC_API_KEY is not one of them.
    assert credentials("anthropic-official", None, BEDROCK, environ) == (None, BEDROCK)
    assert credentials("anthropic-official", "a,b", BEDROCK, environ) == ("a,b", BEDROCK)
    from_env = {"ANTHROPIC_BASE_URL": BEDROCK, **environ}
    assert credentials("anthropic-official", None, None, from_env) == (None, BEDROCK)
    assert adapters.auth_headers("anthropic-official", None, BEDROCK) == ()


@pytest.mark.parametrize(("environ", "url"), [
    ({}, "https://bedrock-runtime.eu-west-3.amazonaws.com"),
    ({"AWS_ENDPOINT_URL": "http://127.0.0.1:9"}, "http://127.0.0.1:9"),
    ({"AWS_ENDPOINT_URL": "http://127.0.0.1:9",
      "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "https://vpce.example.test"}, "https://vpce.example.test"),
])
def test_the_endpoint_variables_override_the_host_and_keep_the_region(
    environ: dict[str, str], url: str
) -> None:
    endpoint = bedrock_endpoint("anthropic-official", "bedrock://eu-west-3", environ)
    assert (endpoint.url, endpoint.region) == (url, "eu-west-3")


@pytest.mark.parametrize(("base_url", "environ"), [
    ("bedrock://", {}),
    ("bedrock://us east 1", {}),
    ("bedrock://us-east-1/../x", {}),
    (BEDROCK, {"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "ftp://example.test"}),
])
def test_a_bad_region_or_endpoint_is_refused(base_url: str, environ: dict[str, str]) -> None:
    with pytest.raises(UnsupportedParameterError) as caught:
        bedrock_endpoint("anthropic-official", base_url, environ)
    assert caught.value.parameter == "base_url"


def test_an_aws_error_body_names_its_type_from_the_header() -> None:
    headers = {"x-amzn-errortype": "AccessDeniedException:http://internal.amazon.com/coral/",
               "x-amzn-requestid": "req-1"}
    error = adapters.provider_http_error("anthropic-official", 403, headers,
                                         b'{"message": "signature mismatch"}', now=0.0)
    assert (error.status, error.error_type, error.provider_message, error.request_id) == (
        403, "AccessDeniedException", "signature mismatch", "req-1")
