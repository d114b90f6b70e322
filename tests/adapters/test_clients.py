"""The client registry, routing, auth headers, key safety and model listing (spec 04 §1-§5).

Expected values are copied from the spec tables, not from the code.
"""

from __future__ import annotations

import attrs
import pytest

import adapters
from adapters.clients import (
    CLIENTS,
    AuthForm,
    ModelPage,
    auth_headers,
    canonical_client_type,
    check_endpoint,
    environment_key_allowed,
    join_url,
    list_models_path,
    needs_image_bytes,
    parse_model_page,
    route,
)
from mmsp_core.errors import (
    ApiKeyRequiredError,
    MalformedEventError,
    RoutingError,
    UnsupportedOperationError,
)
from mmsp_core.model import UniMessage

# Spec 04 §1: client_type, official, wire protocol, key env, base-URL env, default URL, open.
CLIENT_TABLE = [
    ("openai-official", True, "openai-responses", "OPENAI", "https://api.openai.com/v1", False),
    ("anthropic-official", True, "ant-messages", "ANTHROPIC", "https://api.anthropic.com", False),
    ("google-official", True, "google-interactions", "GEMINI",
     "https://generativelanguage.googleapis.com", False),
    ("zai-official", True, "openai-chat", "ZAI", "https://api.z.ai/api/paas/v4/", False),
    ("moonshot-official", True, "openai-chat", "MOONSHOT", "https://api.moonshot.cn/v1", False),
    ("deepseek-official", True, "openai-responses", "DEEPSEEK", "https://api.deepseek.com", False),
    ("minimax-official", True, "openai-responses", "MINIMAX", "https://api.minimax.io/v1", False),
    ("openai-responses", False, "openai-responses", "OPENAI", "https://api.openai.com/v1", False),
    ("openai-chat", False, "openai-chat", "OPENAI", "https://api.openai.com/v1", False),
    ("openai-chat-vllm-adapter", False, "openai-chat", "VLLM", "http://127.0.0.1:8000/v1", True),
    ("openai-embedding", False, "openai-embedding", "OPENAI", "https://api.openai.com/v1", False),
    ("ant-messages", False, "ant-messages", "ANTHROPIC", "https://api.anthropic.com", False),
    ("google-genai", False, "google-genai", "GEMINI",
     "https://generativelanguage.googleapis.com", False),
    ("mmsp", False, "mmsp", "MMSP", "http://127.0.0.1:25752/v1", True),
]

# Spec 04 §2 step 3, in table order.
PREFIX_TABLE = [
    ("gpt-", "openai-official"),
    ("text-embedding-", "openai-official"),
    ("claude-", "anthropic-official"),
    ("gemini-", "google-official"),
    ("glm-", "zai-official"),
    ("kimi-", "moonshot-official"),
    ("deepseek-", "deepseek-official"),
    ("minimax-", "minimax-official"),
]

KEY = "sk-test-0123456789"


# --- the registry -------------------------------------------------------------------------


def test_registry_holds_exactly_the_client_types_of_04_1() -> None:
    assert list(CLIENTS) == [row[0] for row in CLIENT_TABLE]


@pytest.mark.parametrize(
    ("client_type", "official", "protocol", "env", "default_url", "open_server"), CLIENT_TABLE
)
def test_client_spec_fields(
    client_type: str, official: bool, protocol: str, env: str, default_url: str, open_server: bool
) -> None:
    spec = CLIENTS[client_type]
    assert spec.client_type == client_type
    assert spec.official is official
    assert spec.protocol == protocol
    assert spec.api_key_env == f"{env}_API_KEY"
    assert spec.base_url_env == f"{env}_BASE_URL"
    assert spec.default_base_url == default_url
    assert spec.open_server is open_server


def test_protocol_names_are_the_seven_wire_protocols() -> None:
    assert {spec.protocol for spec in CLIENTS.values()} == {
        "openai-responses", "ant-messages", "google-interactions", "openai-chat",
        "openai-embedding", "google-genai", "mmsp",
    }


def test_auth_forms_follow_04_3() -> None:
    forms = {name: spec.auth for name, spec in CLIENTS.items()}
    assert forms.pop("anthropic-official") is AuthForm.X_API_KEY
    assert forms.pop("ant-messages") is AuthForm.X_API_KEY_AND_BEARER
    assert forms.pop("google-official") is AuthForm.GOOG_API_KEY
    assert forms.pop("google-genai") is AuthForm.GOOG_API_KEY
    assert set(forms.values()) == {AuthForm.BEARER}


def test_registry_is_read_only() -> None:
    with pytest.raises(TypeError):
        CLIENTS["x"] = CLIENTS["mmsp"]  # type: ignore[index]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        CLIENTS["mmsp"].open_server = False  # type: ignore[misc]


def test_prefix_table_is_04_2_in_order() -> None:
    table = [(p, name) for name, spec in CLIENTS.items() for p in spec.model_prefixes]
    assert table == PREFIX_TABLE


# --- routing (04 §2) ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-5.5", "openai-official"),
        ("gpt-6.1-sol", "openai-official"),
        ("claude-opus-5", "anthropic-official"),
        ("gemini-3.8-flash", "google-official"),
        ("gemini-embedding-2", "google-official"),
        ("glm-5.3", "zai-official"),
        ("kimi-k3", "moonshot-official"),
        ("deepseek-v4-pro", "deepseek-official"),
        ("minimax-m3", "minimax-official"),
        # case-insensitive startswith
        ("GPT-5.6-Sol", "openai-official"),
        ("Claude-Sonnet-5", "anthropic-official"),
        ("MiniMax-M3", "minimax-official"),
        ("GLM-5.1", "zai-official"),
        # step 4: text-embedding-* deduced from the prefix goes to openai-embedding
        ("text-embedding-3-large", "openai-embedding"),
        ("Text-Embedding-3-Small", "openai-embedding"),
        # the prefix rule is literal: a SiliconFlow org name that starts like a family routes
        ("deepseek-ai/DeepSeek-V4-Flash", "deepseek-official"),
    ],
)
def test_route_by_prefix(model: str, expected: str) -> None:
    assert route(model) == expected


@pytest.mark.parametrize(("prefix", "expected"), PREFIX_TABLE)
def test_every_prefix_routes(prefix: str, expected: str) -> None:
    routed = route(prefix + "x")
    assert routed == ("openai-embedding" if prefix == "text-embedding-" else expected)


@pytest.mark.parametrize(
    ("named", "expected"),
    [
        ("openai-chat", "openai-chat"),
        ("OpenAI-Chat", "openai-chat"),
        ("openai", "openai-chat"),
        ("OPENAI", "openai-chat"),
        ("gemini-official", "google-official"),
        ("Gemini-Official", "google-official"),
        ("gemini-generate-content", "google-genai"),
        ("MMSP", "mmsp"),
        ("openai-chat-vllm-adapter", "openai-chat-vllm-adapter"),
    ],
)
def test_named_client_type_wins_over_the_prefix(named: str, expected: str) -> None:
    assert route("claude-opus-5", named) == expected


def test_every_client_type_routes_to_itself() -> None:
    for name in CLIENTS:
        assert route("any-model", name) == name
        assert route("any-model", name.upper()) == name


def test_text_embedding_on_named_openai_official_goes_to_openai_embedding() -> None:
    assert route("text-embedding-3-large", "openai-official") == "openai-embedding"
    assert route("TEXT-EMBEDDING-3-large", "OpenAI-Official") == "openai-embedding"
    # only openai-official is redirected
    assert route("text-embedding-3-large", "openai-chat") == "openai-chat"
    assert route("qwen3.7-text-embedding", "openai-official") == "openai-official"


def test_empty_client_type_counts_as_none() -> None:
    assert route("kimi-k3", "") == "moonshot-official"


def test_unknown_client_type() -> None:
    with pytest.raises(RoutingError) as caught:
        route("gpt-5.5", "openai-foo")
    assert caught.value.model == "gpt-5.5"
    assert caught.value.client_type == "openai-foo"
    assert caught.value.detail is not None
    assert "Unknown client type 'openai-foo'" in caught.value.detail
    assert "openai-chat" in caught.value.detail  # lists what is known


@pytest.mark.parametrize(
    "model",
    ["moonshotai/kimi-k3", "global.anthropic.claude-fable-5", "zai-org/GLM-5.3", "gpt5", "", "o3"],
)
def test_unknown_family_needs_a_client_type(model: str) -> None:
    with pytest.raises(RoutingError) as caught:
        route(model)
    assert caught.value.model == model
    assert caught.value.client_type is None
    assert "family is not known" in str(caught.value)


def test_gateway_ids_route_with_a_client_type() -> None:
    assert route("moonshotai/kimi-k3", "moonshot-official") == "moonshot-official"
    assert route("global.anthropic.claude-fable-5", "anthropic-official") == "anthropic-official"


def test_canonical_client_type() -> None:
    assert canonical_client_type("Gemini-Generate-Content") == "google-genai"
    assert canonical_client_type("google-interactions") is None  # a protocol, not a client
    assert canonical_client_type("nope") is None


# --- auth headers (04 §3, §4; 08 D16, D17, D40) -----------------------------------------------

BEARER = (("Authorization", f"Bearer {KEY}"),)


@pytest.mark.parametrize(
    ("client_type", "expected"),
    [
        ("openai-official", BEARER),
        ("anthropic-official", (("x-api-key", KEY),)),
        ("google-official", (("x-goog-api-key", KEY),)),
        ("zai-official", BEARER),
        ("moonshot-official", BEARER),
        ("deepseek-official", BEARER),
        ("minimax-official", BEARER),
        ("openai-responses", BEARER),
        ("openai-chat", BEARER),
        ("openai-chat-vllm-adapter", BEARER),
        ("openai-embedding", BEARER),
        ("ant-messages", (("x-api-key", KEY), ("Authorization", f"Bearer {KEY}"))),
        ("google-genai", (("x-goog-api-key", KEY),)),
        ("mmsp", BEARER),
    ],
)
def test_auth_headers_with_a_key(client_type: str, expected: tuple[tuple[str, str], ...]) -> None:
    assert auth_headers(client_type, KEY) == expected


def test_auth_headers_accept_any_spelling() -> None:
    assert auth_headers("Gemini-Official", KEY) == (("x-goog-api-key", KEY),)


@pytest.mark.parametrize("client_type", ["mmsp", "openai-chat-vllm-adapter"])
@pytest.mark.parametrize("key", [None, ""])
def test_keyless_open_server_sends_no_credential(client_type: str, key: str | None) -> None:
    assert auth_headers(client_type, key) == ()


@pytest.mark.parametrize(
    "client_type", [name for name, spec in CLIENTS.items() if not spec.open_server]
)
def test_no_key_on_a_keyed_client(client_type: str) -> None:
    for key in (None, ""):
        with pytest.raises(ApiKeyRequiredError) as caught:
            auth_headers(client_type, key)
        assert caught.value.client_type == client_type
        assert caught.value.api_key_env == CLIENTS[client_type].api_key_env
        assert caught.value.base_url is None


@pytest.mark.parametrize("key", [KEY + "\r\nX-Injected: 1", KEY + "\x00", KEY + "é"])
def test_a_key_no_header_can_carry_is_refused_without_quoting_it(key: str) -> None:
    with pytest.raises(ApiKeyRequiredError) as caught:
        auth_headers("openai-chat", key)
    assert KEY not in str(caught.value)
    assert KEY not in repr(caught.value)


def test_auth_headers_unknown_client_type() -> None:
    with pytest.raises(RoutingError) as caught:
        auth_headers("nope", KEY)
    assert caught.value.client_type == "nope"
    assert KEY not in str(caught.value)


# --- the key-safety comparison (04 §3) --------------------------------------------------------


@pytest.mark.parametrize(
    ("client_type", "base_url", "allowed"),
    [
        ("openai-official", None, True),
        ("openai-official", "https://api.openai.com/v1", True),
        ("openai-official", "https://api.openai.com/v1/", True),
        ("openai-official", "https://api.openai.com/v1///", True),
        ("openai-official", "HTTPS://API.OpenAI.COM/v1", True),
        ("openai", "https://api.openai.com/v1", True),  # alias of openai-chat
        ("openai-official", "https://api.openai.com/V1", False),  # path is case-sensitive
        ("openai-official", "https://api.openai.com/v2", False),
        ("openai-official", "https://api.openai.com", False),
        ("openai-official", "https://api.openai.com/v1?x=1", False),
        ("openai-official", "https://api.openai.com/v1#frag", False),
        ("openai-official", "http://api.openai.com/v1", False),
        ("openai-official", "https://api.openai.com:443/v1", False),
        ("openai-official", "https://user@api.openai.com/v1", False),
        ("openai-official", "https://api.openai.com.evil.example/v1", False),
        ("openai-official", "https://openrouter.ai/api/v1", False),
        ("openai-official", "http://[::1", False),  # does not parse
        ("zai-official", "https://api.z.ai/api/paas/v4", True),  # default ends in '/'
        ("zai-official", "https://api.z.ai/api/paas/v4/", True),
        ("anthropic-official", "https://api.anthropic.com/", True),
        ("anthropic-official", "https://api.anthropic.com", True),
        ("anthropic-official", "bedrock://us-east-1", False),
        ("ant-messages", "https://tokendance.space/gateway", False),
        ("google-genai", "https://generativelanguage.googleapis.com", True),
        ("google-genai", "https://aiplatform.googleapis.com", False),
        ("deepseek-official", "https://api.deepseek.com/", True),
        ("moonshot-official", "https://api.moonshot.cn/v1", True),
        ("minimax-official", "https://api.minimax.io/v1", True),
        # open servers run keyless for any passed base URL, even their default (08 D40)
        ("mmsp", None, True),
        ("mmsp", "http://127.0.0.1:25752/v1", False),
        ("mmsp", "http://example.test/v1", False),
        ("openai-chat-vllm-adapter", None, True),
        ("openai-chat-vllm-adapter", "http://127.0.0.1:8000/v1", False),
    ],
)
def test_environment_key_allowed(client_type: str, base_url: str | None, allowed: bool) -> None:
    assert environment_key_allowed(client_type, base_url) is allowed


# --- join_url (08 D26) ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base_url", "path", "expected"),
    [
        ("https://api.z.ai/api/paas/v4/", "/chat/completions",
         "https://api.z.ai/api/paas/v4/chat/completions"),
        ("https://api.openai.com/v1", "/responses", "https://api.openai.com/v1/responses"),
        ("https://api.anthropic.com", "/v1/messages", "https://api.anthropic.com/v1/messages"),
        ("https://api.anthropic.com/", "/v1/messages", "https://api.anthropic.com/v1/messages"),
        ("https://x.test/v1//", "/models", "https://x.test/v1/models"),
        ("https://x.test/v1", "models", "https://x.test/v1/models"),
        ("https://generativelanguage.googleapis.com",
         "/v1/models/gemini-3.7-flash:streamGenerateContent?alt=sse",
         "https://generativelanguage.googleapis.com/v1/models/"
         "gemini-3.7-flash:streamGenerateContent?alt=sse"),
    ],
)
def test_join_url(base_url: str, path: str, expected: str) -> None:
    assert join_url(base_url, path) == expected


# --- out-of-scope endpoints and keys (08 D23, 04 §3) -----------------------------------------

SERVICE_ACCOUNT = '{"type": "service_account", "project_id": "p", "private_key": "SECRET-PK"}'


@pytest.mark.parametrize("base_url", ["bedrock://us-east-1", "BEDROCK://eu-west-1"])
def test_bedrock_is_reached_by_anthropic_official_only(base_url: str) -> None:
    check_endpoint("anthropic-official", "global.anthropic.claude-opus-5", base_url, "a,b")
    with pytest.raises(UnsupportedOperationError) as caught:
        check_endpoint("ant-messages", "global.anthropic.claude-opus-5", base_url, "a,b")
    assert caught.value.client == "ant-messages"
    assert "Bedrock" in caught.value.operation


def test_service_account_key_on_google_official_is_a_routing_error() -> None:
    with pytest.raises(RoutingError) as caught:
        check_endpoint("google-official", "gemini-3.8-flash", None, SERVICE_ACCOUNT)
    assert caught.value.model == "gemini-3.8-flash"
    assert caught.value.client_type == "google-official"
    assert "SECRET-PK" not in str(caught.value)
    assert "SECRET-PK" not in repr(caught.value)


def test_service_account_key_on_google_genai_selects_vertex() -> None:
    """08 D72 replaces D23: the key is Vertex AI's credential (tests/adapters/test_vertex.py)."""
    check_endpoint("google-genai", "gemini-3.8-flash", None, "  " + SERVICE_ACCOUNT)


@pytest.mark.parametrize(
    ("client_type", "base_url", "key"),
    [
        ("anthropic-official", None, KEY),
        ("anthropic-official", "https://api.anthropic.com", None),
        ("google-official", None, "AIza-key"),
        ("google-genai", "https://generativelanguage.googleapis.com", "AIza-key"),
        ("openai-chat", "https://api.siliconflow.cn/v1", KEY),
        ("mmsp", None, None),
    ],
)
def test_ordinary_endpoints_pass(client_type: str, base_url: str | None, key: str | None) -> None:
    check_endpoint(client_type, "m", base_url, key)


# --- remote image bytes (05 §5, 08 D37) ------------------------------------------------------


@pytest.mark.parametrize(
    ("client_type", "model", "needed"),
    [
        ("openai-chat", "qwen/qwen3.8-27b", True),
        ("openai-chat", "gpt-5.6-sol", True),
        ("moonshot-official", "kimi-k3", True),
        ("OpenAI", "anything", True),
        ("openai-chat-vllm-adapter", "gpt-5.6-terra", True),
        ("openai-chat-vllm-adapter", "org/GPT-5.6-Luna", True),
        ("openai-chat-vllm-adapter", "qwen3.8-27b", False),
        ("openai-chat-vllm-adapter", "gpt-5.5", False),
        # Responses measures data URIs only: "http URLs are passed through unmeasured"
        ("openai-official", "gpt-5.6-sol", False),
        ("openai-responses", "openai/gpt-5.6-sol", False),
        ("zai-official", "glm-5.3-flash", False),
        ("anthropic-official", "claude-opus-5", False),
        ("ant-messages", "x", False),
        # Gemini takes no arbitrary image URLs: both Google clients send them inline (issue 10)
        ("google-official", "gemini-3.8-flash", True),
        ("google-genai", "gemini-3.8-flash", True),
        ("deepseek-official", "deepseek-flash", False),
        ("minimax-official", "MiniMax-M3", False),
        ("openai-embedding", "x", False),
        ("mmsp", "gpt-5.6-sol", False),
    ],
)
def test_needs_image_bytes(client_type: str, model: str, needed: bool) -> None:
    assert needs_image_bytes(client_type, model) is needed


# --- list_models (04 §5) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client_type", "path"),
    [(name, "/v1/models") for name in ("anthropic-official", "ant-messages", "google-official",
                                       "google-genai")]
    + [(name, "/models") for name in ("openai-official", "openai-responses", "openai-chat",
                                      "openai-chat-vllm-adapter", "openai-embedding",
                                      "zai-official", "moonshot-official", "deepseek-official",
                                      "minimax-official", "mmsp")],
)
def test_list_models_first_page_path(client_type: str, path: str) -> None:
    assert list_models_path(client_type) == path


def test_list_models_next_page_paths() -> None:
    assert list_models_path("anthropic-official", "claude-opus-5") == (
        "/v1/models?after_id=claude-opus-5"
    )
    assert list_models_path("google-genai", "a/b=c&d") == "/v1/models?pageToken=a%2Fb%3Dc%26d"


def test_a_page_token_on_a_single_page_listing_is_refused() -> None:
    with pytest.raises(UnsupportedOperationError):
        list_models_path("openai-chat", "t")


def test_parse_openai_model_list_keeps_endpoint_order() -> None:
    body = (b'{"object":"list","data":[{"id":"gpt-5.5","object":"model","created":1,'
            b'"owned_by":"openai"},{"id":"text-embedding-3-large","object":"model"},'
            b'{"id":"gpt-6-astra","object":"model"}]}')
    for client_type in ("openai-official", "zai-official", "mmsp", "openai-chat-vllm-adapter"):
        assert parse_model_page(client_type, body) == ModelPage(
            ("gpt-5.5", "text-embedding-3-large", "gpt-6-astra"), None
        )


def test_parse_openai_model_list_ignores_paging_fields() -> None:
    body = b'{"data":[{"id":"a"}],"has_more":true,"last_id":"a"}'
    assert parse_model_page("openai-chat", body) == ModelPage(("a",), None)


def test_parse_anthropic_model_pages() -> None:
    first = (b'{"data":[{"type":"model","id":"claude-opus-5","display_name":"Claude Opus 5",'
             b'"created_at":"2026-01-01T00:00:00Z"},{"type":"model","id":"claude-sonnet-5"}],'
             b'"has_more":true,"first_id":"claude-opus-5","last_id":"claude-sonnet-5"}')
    last = b'{"data":[{"type":"model","id":"claude-sonnet-4-6"}],"has_more":false,' \
           b'"first_id":"claude-sonnet-4-6","last_id":"claude-sonnet-4-6"}'
    assert parse_model_page("anthropic-official", first) == ModelPage(
        ("claude-opus-5", "claude-sonnet-5"), "claude-sonnet-5"
    )
    assert parse_model_page("ant-messages", last) == ModelPage(("claude-sonnet-4-6",), None)


def test_parse_google_model_pages() -> None:
    first = (b'{"models":[{"name":"models/gemini-3.7-flash","displayName":"Gemini 3.7 Flash"},'
             b'{"displayName":"no name"},{"name":""},{"name":"gemini-embedding-2"},'
             b'{"name":"tunedModels/x/y"}],"nextPageToken":"CgR0b2tlbg=="}')
    assert parse_model_page("google-official", first) == ModelPage(
        ("gemini-3.7-flash", "gemini-embedding-2", "y"), "CgR0b2tlbg=="
    )
    assert parse_model_page("google-genai", b'{"models":[{"name":"models/a"}]}') == ModelPage(
        ("a",), None
    )
    assert parse_model_page("google-genai", b'{"nextPageToken":""}') == ModelPage((), None)
    assert parse_model_page("google-genai", b"{}") == ModelPage((), None)


@pytest.mark.parametrize(
    ("client_type", "body"),
    [
        ("openai-chat", b"<html>bad gateway</html>"),
        ("openai-chat", b"\xff\xfe\x00garbage"),
        ("openai-chat", b"[]"),
        ("openai-chat", b"{}"),
        ("openai-chat", b'{"data":{"id":"a"}}'),
        ("openai-chat", b'{"data":[{"object":"model"}]}'),
        ("openai-chat", b'{"data":[{"id":7}]}'),
        ("mmsp", b'{"data":["a"]}'),
        ("anthropic-official", b'{"data":[{"id":"a"}],"has_more":true}'),
        ("anthropic-official", b'{"data":[{"id":"a"}],"has_more":true,"last_id":""}'),
        ("google-official", b'{"models":{"name":"a"}}'),
        ("google-official", b'{"models":["models/a"]}'),
        ("google-official", b'{"models":[],"nextPageToken":5}'),
    ],
)
def test_malformed_model_lists(client_type: str, body: bytes) -> None:
    with pytest.raises(MalformedEventError) as caught:
        parse_model_page(client_type, body)
    assert caught.value.client == client_type
    assert caught.value.detail is not None
    assert caught.value.detail.startswith("list_models: ")


# -- an embedding id on the pure openai-official entries (04 §2) ----------------------------------


def _redirected_ids() -> list[tuple[str, str, str]]:
    """``(client, model, protocol)`` for every catalog model a client redirects to another
    protocol (openai-official's ``text-embedding-*``), and ids of the same families the catalog
    may not list."""
    cases = {(client, model, target)
             for client, spec in CLIENTS.items() for prefix, target in spec.redirects
             for model in [*(m.model for m in adapters.list_supported_models()
                             if m.client == client and m.model.lower().startswith(prefix)),
                           f"{prefix}3-small", f"{prefix.title()}Ada-002"]}
    return sorted(cases)


REDIRECTED = _redirected_ids()
#: Every pure entry that builds or checks for a client type and a model.
ENTRIES = {
    "build_request": lambda c, m: adapters.build_request(c, m, [UniMessage.user("Hi")], {}),
    "check_config": lambda c, m: adapters.check_config(c, m, {}),
    "prepare": lambda c, m: adapters.prepare(c, m, [UniMessage.user("Hi")], {}).request({}),
}


def test_the_catalog_has_an_embedding_id_on_openai_official() -> None:
    assert ("openai-official", "text-embedding-3-large", "openai-embedding") in REDIRECTED


@pytest.mark.parametrize("entry", list(ENTRIES))
@pytest.mark.parametrize(("client", "model", "protocol"), REDIRECTED)
def test_an_embedding_id_on_the_pure_entries_names_the_protocol_that_serves_it(
    entry: str, client: str, model: str, protocol: str
) -> None:
    with pytest.raises(UnsupportedOperationError) as caught:
        ENTRIES[entry](client, model)
    message = str(caught.value)
    assert caught.value.client == client
    assert "not built yet" not in message
    assert f"{model!r} is an embedding model, served by the {protocol} protocol" in message
    assert f"client type {protocol!r}" in message
    # What the message advises is true: that client type builds it, and the client routes there.
    assert route(model, client) == protocol
    ENTRIES[entry](protocol, model)
