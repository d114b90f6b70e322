"""Azure OpenAI on openai-chat, openai-responses and openai-embedding (08 D72), pure.

Azure is a property of the base URL (``is_azure``): its host, or an ``api-version`` in its
query. The key order and the key-safety rule (04 §3 as it applies to Azure's variables), the
``api-key`` header, Azure's paths and ``api-version``, its error bodies read as typed fields,
and its content-filter annotations skipped by the Chat machine. The environment is a mapping
the test gives.
"""

from __future__ import annotations

import json

import pytest

import adapters
from adapters._openai import azure_error_body
from adapters.clients import (
    auth_headers,
    credentials,
    environment_key_allowed,
    is_azure,
    join_url,
)
from adapters.openai_chat.simulate import azure_annotations
from mmsp_core.errors import ApiKeyRequiredError, UnsupportedParameterError
from mmsp_core.model import (
    FinishReason,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    UsageMetadata,
)
from mmsp_core.testing import assert_stream_grammar

AZURE_CLIENTS = ["openai-chat", "openai-responses", "openai-embedding"]
RESOURCE = "https://contoso.openai.azure.com"
V1 = RESOURCE + "/openai/v1"
OPENAI = "https://api.openai.com/v1"
ENV = {
    "OPENAI_API_KEY": "sk-openai",
    "AZURE_OPENAI_API_KEY": "az-key",
    "AZURE_OPENAI_ENDPOINT": RESOURCE + "/",
}


# --- which base URL is Azure's ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("base_url", "azure"),
    [
        (RESOURCE, True),
        (V1, True),
        ("https://CONTOSO.OpenAI.Azure.com/openai/v1/", True),
        ("https://contoso.cognitiveservices.azure.com/openai/v1", True),
        # A private endpoint in front of Azure says so by its api-version (issue 23, item 6).
        ("https://llm.corp.example/openai/v1?api-version=preview", True),
        ("http://127.0.0.1:8080/azure/openai/v1?api-version=2025-04-01-preview", True),
        (OPENAI, False),
        ("https://llm.corp.example/openai/v1", False),
        ("https://llm.corp.example/v1?api-version=", False),  # no version given
        ("https://openai.azure.com.evil.example/openai/v1", False),
        ("https://contoso.openai.azure.com.evil.example/", False),
        ("https://openai.azure.com/openai/v1", False),  # no resource
        ("http://[::1", False),  # does not parse
        (None, False),
        ("", False),
    ],
)
def test_is_azure(base_url: str | None, azure: bool) -> None:
    assert is_azure(base_url) is azure


# --- credentials: key order, the key-safety rule, paths and api-version ------------------------


@pytest.mark.parametrize("client_type", AZURE_CLIENTS)
@pytest.mark.parametrize(
    ("api_key", "base_url", "environ", "expected"),
    [
        # The key in code goes first; a bare resource URL gets Azure's /openai/v1 path.
        ("sk-code", RESOURCE, ENV, ("sk-code", V1)),
        ("sk-code", RESOURCE + "/", {}, ("sk-code", V1)),
        ("sk-code", V1 + "/", {}, ("sk-code", V1 + "/")),
        # Any other path is Azure's own and is kept (the dated deployments API).
        ("sk-code", RESOURCE + "/openai/deployments/gpt?api-version=2024-10-21", {},
         ("sk-code", RESOURCE + "/openai/deployments/gpt?api-version=2024-10-21")),
        # Then AZURE_OPENAI_API_KEY, to the endpoint AZURE_OPENAI_ENDPOINT names.
        (None, RESOURCE, ENV, ("az-key", V1)),
        (None, "HTTPS://contoso.openai.azure.com/openai/v1/", ENV,
         ("az-key", "HTTPS://contoso.openai.azure.com/openai/v1/")),
        (None, V1, {**ENV, "AZURE_OPENAI_ENDPOINT": V1}, ("az-key", V1)),
        # api-version: the base URL's wins over AZURE_OPENAI_API_VERSION; either is sent.
        (None, V1, {**ENV, "AZURE_OPENAI_API_VERSION": "2025-04-01-preview"},
         ("az-key", V1 + "?api-version=2025-04-01-preview")),
        (None, V1 + "?api-version=preview", {**ENV, "AZURE_OPENAI_API_VERSION": "v9"},
         ("az-key", V1 + "?api-version=preview")),
        # base_url "azure" stands for AZURE_OPENAI_ENDPOINT: the caller opts in.
        (None, "azure", ENV, ("az-key", V1)),
        ("sk-code", "Azure", ENV, ("sk-code", V1)),
        (None, "azure", {**ENV, "AZURE_OPENAI_ENDPOINT": "https://llm.corp.example",
                         "AZURE_OPENAI_API_VERSION": "preview"},
         ("az-key", "https://llm.corp.example/openai/v1?api-version=preview")),
        # OPENAI_BASE_URL on Azure: AZURE_OPENAI_API_KEY when it is the named endpoint.
        (None, None, {**ENV, "OPENAI_BASE_URL": V1}, ("az-key", V1)),
        # AZURE_OPENAI_ENDPOINT alone never makes a client an Azure one.
        (None, None, ENV, ("sk-openai", OPENAI)),
    ],
)
def test_azure_credentials(
    client_type: str, api_key: str | None, base_url: str | None, environ: dict[str, str],
    expected: tuple[str, str],
) -> None:
    assert credentials(client_type, api_key, base_url, environ) == expected


@pytest.mark.parametrize("client_type", AZURE_CLIENTS)
@pytest.mark.parametrize(
    ("base_url", "environ", "given"),
    [
        # OPENAI_API_KEY never goes to Azure.
        (V1, {"OPENAI_API_KEY": "sk-openai"}, V1),
        (None, {"OPENAI_API_KEY": "sk-openai", "OPENAI_BASE_URL": V1}, None),
        # AZURE_OPENAI_API_KEY only goes to the endpoint AZURE_OPENAI_ENDPOINT names.
        ("https://fabrikam.openai.azure.com", ENV, "https://fabrikam.openai.azure.com"),
        (V1, {"AZURE_OPENAI_API_KEY": "az-key"}, V1),
        ("https://llm.corp.example/openai/v1?api-version=preview", ENV,
         "https://llm.corp.example/openai/v1?api-version=preview"),
        ("http://contoso.openai.azure.com", ENV, "http://contoso.openai.azure.com"),
        ("azure", {"AZURE_OPENAI_ENDPOINT": RESOURCE}, None),
    ],
)
def test_no_key_may_go_to_this_azure_endpoint(
    client_type: str, base_url: str | None, environ: dict[str, str], given: str | None
) -> None:
    with pytest.raises(ApiKeyRequiredError) as caught:
        credentials(client_type, None, base_url, environ)
    error = caught.value
    assert (error.api_key_env, error.base_url_env, error.base_url) == (
        "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", given)
    assert "OPENAI_API_KEY is never sent to Azure" in str(error)
    assert not {"sk-openai", "az-key"} & set(str(error).split())


@pytest.mark.parametrize(
    ("environ", "says"),
    [
        ({}, "AZURE_OPENAI_ENDPOINT, which is not set"),
        ({"AZURE_OPENAI_ENDPOINT": "https://llm.corp.example"}, "names no Azure OpenAI endpoint"),
    ],
)
def test_base_url_azure_needs_an_azure_endpoint(environ: dict[str, str], says: str) -> None:
    with pytest.raises(UnsupportedParameterError) as caught:
        credentials("openai-chat", "sk-code", "azure", environ)
    assert (caught.value.client, caught.value.parameter) == ("openai-chat", "base_url")
    assert says in str(caught.value)


def test_the_azure_key_never_goes_to_openai_nor_to_a_client_azure_does_not_serve() -> None:
    environ = {"AZURE_OPENAI_API_KEY": "az-key", "AZURE_OPENAI_ENDPOINT": RESOURCE}
    for client_type in AZURE_CLIENTS:
        with pytest.raises(ApiKeyRequiredError):
            credentials(client_type, None, None, environ)
        with pytest.raises(ApiKeyRequiredError):
            credentials(client_type, None, OPENAI, environ)
    # openai-official and zai-official are not Azure's: an Azure URL is any other URL there.
    for client_type in ("openai-official", "zai-official"):
        with pytest.raises(ApiKeyRequiredError) as caught:
            credentials(client_type, None, V1, {**environ, "OPENAI_API_KEY": "sk-openai"})
        assert caught.value.api_key_env != "AZURE_OPENAI_API_KEY"
        assert credentials(client_type, "k", RESOURCE, environ) == ("k", RESOURCE)


@pytest.mark.parametrize("client_type", AZURE_CLIENTS)
def test_the_openai_key_rule_still_holds_off_azure(client_type: str) -> None:
    assert credentials(client_type, None, None, ENV) == ("sk-openai", OPENAI)
    assert credentials(client_type, None, OPENAI + "/", ENV) == ("sk-openai", OPENAI + "/")
    with pytest.raises(ApiKeyRequiredError) as caught:
        credentials(client_type, None, "https://proxy.example/v1", ENV)
    assert caught.value.api_key_env == "OPENAI_API_KEY"


@pytest.mark.parametrize("client_type", AZURE_CLIENTS)
def test_the_environment_key_is_never_allowed_to_an_azure_url(client_type: str) -> None:
    assert environment_key_allowed(client_type, V1) is False
    assert environment_key_allowed(client_type, None) is True
    assert environment_key_allowed(client_type, OPENAI) is True


# --- how the key travels ---------------------------------------------------------------------


@pytest.mark.parametrize("client_type", AZURE_CLIENTS)
@pytest.mark.parametrize("base_url", [V1, "https://x.cognitiveservices.azure.com/openai/v1",
                                      "http://127.0.0.1:9/v1?api-version=preview"])
def test_an_azure_base_url_sends_the_key_as_api_key_only(client_type: str, base_url: str) -> None:
    assert auth_headers(client_type, "az-key", base_url) == (("api-key", "az-key"),)


@pytest.mark.parametrize("client_type", AZURE_CLIENTS)
def test_any_other_base_url_sends_a_bearer_token(client_type: str) -> None:
    for base_url in (None, OPENAI, "https://proxy.example/v1"):
        assert auth_headers(client_type, "k", base_url) == (("Authorization", "Bearer k"),)


def test_a_client_azure_does_not_serve_keeps_its_own_header_on_an_azure_url() -> None:
    assert auth_headers("openai-official", "k", V1) == (("Authorization", "Bearer k"),)
    assert auth_headers("anthropic-official", "k", V1) == (("x-api-key", "k"),)


@pytest.mark.parametrize("key", [None, "", "az\r\nX-Injected: 1"])
def test_no_usable_key_on_azure_names_azures_variables(key: str | None) -> None:
    with pytest.raises(ApiKeyRequiredError) as caught:
        auth_headers("openai-chat", key, V1)
    assert (caught.value.api_key_env, caught.value.base_url_env) == (
        "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT")
    assert "X-Injected" not in str(caught.value)


# --- paths: the api-version query follows the path --------------------------------------------


@pytest.mark.parametrize(
    ("base_url", "path", "expected"),
    [
        (V1 + "?api-version=preview", "/chat/completions",
         V1 + "/chat/completions?api-version=preview"),
        (V1 + "/?api-version=preview", "/responses", V1 + "/responses?api-version=preview"),
        (V1 + "?api-version=preview", "/models?after=m1",
         V1 + "/models?after=m1&api-version=preview"),
        (V1 + "?", "/embeddings", V1 + "/embeddings"),
        (V1, "/embeddings", V1 + "/embeddings"),
    ],
)
def test_join_url_keeps_the_base_urls_query_after_the_path(
    base_url: str, path: str, expected: str
) -> None:
    assert join_url(base_url, path) == expected


# --- Azure's error bodies read as typed fields (08 D19) ---------------------------------------


@pytest.mark.parametrize("client_type", AZURE_CLIENTS)
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"error": {"code": "401", "message": "Access denied due to invalid subscription '
         b'key or wrong API endpoint."}}',
         ("401", "Access denied due to invalid subscription key or wrong API endpoint.", None)),
        (b'{"error": {"code": "429", "message": "Requests have exceeded the token rate limit. '
         b'Please retry after 6 seconds."}}',
         ("429", "Requests have exceeded the token rate limit. Please retry after 6 seconds.",
          None)),
        # The API Management front's own refusal.
        (b'{"statusCode": 401, "message": "Unauthorized. Access token is missing."}',
         (None, "Unauthorized. Access token is missing.", None)),
        # OpenAI's own body reads as before.
        (b'{"error": {"message": "Bad key", "type": "invalid_request_error", "param": null, '
         b'"code": "invalid_api_key"}}', ("invalid_request_error", "Bad key", None)),
    ],
)
def test_azure_error_bodies_are_read(
    client_type: str, body: bytes, expected: tuple[str | None, str | None, str | None]
) -> None:
    assert adapters.read_error_body(client_type, body) == expected


def test_the_content_filter_refusal_is_read_by_its_code_not_its_status() -> None:
    body = json.dumps(azure_error_body(400, "The prompt was filtered.")).encode()
    error = adapters.provider_http_error("openai-chat", 400, {}, body, now=0.0)
    assert (error.status, error.error_type, error.provider_message) == (
        400, "content_filter", "The prompt was filtered.")


# --- Azure's content-filter annotations are skipped (unknown fields) --------------------------

TURN = (
    ThinkingDone(thinking="Weather first.", fidelity={"reasoning_field": "reasoning_content"}),
    TextDone(text="Let me look."),
    ToolCallDone(name="get_weather", tool_call_id="call_1", arguments={"city": "Paris"}),
)
USAGE = UsageMetadata(cached_tokens=0, prompt_tokens=10, response_tokens=5)


@pytest.mark.parametrize("strict", [False, True])
def test_chat_chunks_with_azures_filter_results_decode_as_without_them(strict: bool) -> None:
    body = adapters.render("openai-chat", TURN, USAGE, FinishReason.TOOL_CALL)
    annotated = azure_annotations(body)
    assert annotated.startswith(b'data: {"choices": [], ')
    assert annotated.count(b'"content_filter_results"') == body.count(b'"choices":[{') + 1
    plain = list(adapters.decode("openai-chat", [body], strict=strict, clock=lambda: 0))
    azure = list(adapters.decode("openai-chat", [annotated], strict=strict, clock=lambda: 0))
    assert_stream_grammar(azure)
    assert azure == plain
