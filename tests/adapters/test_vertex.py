"""Vertex AI on google-genai, the pure parts (08 D66, D72; spec 04 §3, §4; fixtures note 18).

The machine on Vertex's streamed function arguments (``partialArgs``, ``willContinue``): the
two recordings run through ``check_protocol`` with the other generateContent fixtures
(``test_google_genai``); here hand-written bodies, each decoded whole, byte by byte and in
random chunkings (``decode_every_way``), pin the JSON text the parts build and what is
malformed. Then Vertex's paths and bodies, the route's detection, its credential sources in
order, the reading of a credential's public fields and the project.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from harness import FIXTURES, decode_every_way
from hypothesis import given
from hypothesis import strategies as st

import adapters
from adapters.clients import (
    AuthorizedUser,
    ServiceAccountKey,
    VertexSource,
    VertexSourceKind,
    auth_headers,
    check_endpoint,
    credentials,
    is_vertex,
    on_vertex,
    read_vertex_credential,
    vertex_location,
    vertex_project,
    vertex_source,
)
from adapters.google_genai.partial_args import parse_json_path
from mmsp_core import MalformedEventError, MMSPError
from mmsp_core.errors import (
    ApiKeyRequiredError,
    RoutingError,
    UnsupportedOperationError,
    UnsupportedParameterError,
)
from mmsp_core.model import (
    EmbeddingDone,
    ToolCallDelta,
    ToolCallDone,
    UniMessage,
    UsageMetadata,
)

SOURCE = "google-genai"
QUESTION = UniMessage.user("What is the weather in Paris?")
#: A service-account key's public fields; the private key is never read by the pure layer.
KEY_INFO = {
    "type": "service_account",
    "project_id": "key-project",
    "private_key_id": "abc123",
    "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEsecretsecretsecret\n"
    "-----END PRIVATE KEY-----\n",
    "client_email": "runner@key-project.iam.gserviceaccount.com",
    "token_uri": "https://oauth2.googleapis.com/token",
}
KEY = json.dumps(KEY_INFO, indent=2)
USER_INFO = {
    "type": "authorized_user",
    "client_id": "client-1.apps.googleusercontent.com",
    "client_secret": "d-secret-client-secret-value",
    "refresh_token": "1//refresh-token-secret-value-0123456789",
    "quota_project_id": "quota-project",
}


# --------------------------------------------------------------------------------------------
# Streamed function arguments
# --------------------------------------------------------------------------------------------


def chunk(*parts: dict[str, Any], finish: str | None = None) -> bytes:
    """One ``data:`` event in Vertex's compact form, one candidate holding ``parts``; with a
    finish, the counts of the usage too (before it, Vertex sends only ``trafficType``)."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
    usage: dict[str, Any] = {"trafficType": "ON_DEMAND"}
    if finish is not None:
        candidate["finishReason"] = finish
        usage.update(promptTokenCount=5, candidatesTokenCount=3, thoughtsTokenCount=0)
    body: dict[str, Any] = {"candidates": [candidate], "usageMetadata": usage}
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def call(**fields: Any) -> dict[str, Any]:
    return {"functionCall": fields}


def partial(path: str, *, more: bool = False, **value: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"jsonPath": path, **value}
    if more:
        entry["willContinue"] = True
    return entry


def streamed(*partials: dict[str, Any], name: str = "f") -> list[bytes]:
    """A call named ``name`` whose arguments come one partial argument per part."""
    return [
        chunk(call(name=name, willContinue=True)),
        *(chunk(call(partialArgs=[p], willContinue=True)) for p in partials),
        chunk(call()),
    ]


def decoded(*events: bytes) -> tuple[list[Any], BaseException | None]:
    """The public events of a body made of ``events`` (every chunking agrees)."""
    return decode_every_way(SOURCE, b"".join([*events, chunk({"text": ""}, finish="STOP")]))


def call_fragments(events: list[Any]) -> list[ToolCallDelta]:
    return [item for event in events if event.event_type == "delta"
            for item in event.content_items if isinstance(item, ToolCallDelta)]


def arguments_of(*events: bytes) -> tuple[str, dict[str, Any]]:
    """The joined argument fragments of the one call and its ``tool_call.done`` arguments."""
    out, error = decoded(*events)
    assert error is None, error
    fragments = call_fragments(out)
    dones = [item for event in out for item in event.content_items
             if item.type == "tool_call.done"]
    assert len(dones) == 1
    return "".join(f.arguments for f in fragments), dict(dones[0].arguments)


def test_the_first_fragment_carries_name_and_id_the_others_only_text() -> None:
    out, error = decoded(*streamed(partial("$.city", stringValue="Paris"), name="weather"))
    assert error is None
    first, *rest = call_fragments(out)
    assert (first.name, first.tool_call_id, first.arguments) == ("weather", "weather", "")
    assert rest and all((f.name, f.tool_call_id) == ("", "") for f in rest)
    assert out[-1].finish_reason == "tool_call"


def test_a_string_continues_across_parts_and_is_escaped() -> None:
    text, args = arguments_of(*streamed(
        partial("$.q", more=True, stringValue='say "hi"\n'),
        partial("$.q", more=True, stringValue="caf\u00e9 "),
        partial("$.q", stringValue="\U0001f600"),
    ))
    assert text == '{"q": "say \\"hi\\"\\ncaf\u00e9 \U0001f600"}'
    assert args == {"q": 'say "hi"\ncaf\u00e9 \U0001f600'}


def test_nested_objects_arrays_and_every_value_kind() -> None:
    text, args = arguments_of(*streamed(
        partial("$.a.b", stringValue="x"),
        partial("$.a['c.d']", numberValue=2.5),
        partial("$.items[0]", boolValue=True),
        partial("$.items[1].k", nullValue="NULL_VALUE"),
        partial('$.items[1]["n"]', numberValue=3),
        partial("$.z", stringValue=""),
    ))
    assert args == {"a": {"b": "x", "c.d": 2.5}, "items": [True, {"k": None, "n": 3}], "z": ""}
    assert json.loads(text) == args


def test_a_streamed_call_without_arguments_is_an_empty_object() -> None:
    assert arguments_of(*streamed()) == ("{}", {})


def test_a_whole_call_between_streamed_ones_stays_whole() -> None:
    out, error = decoded(
        chunk(call(name="a", args={"x": 1})),
        *streamed(partial("$.y", stringValue="v"), name="b"),
    )
    assert error is None
    dones = [(i.name, dict(i.arguments)) for e in out for i in e.content_items
             if i.type == "tool_call.done"]
    assert dones == [("a", {"x": 1}), ("b", {"y": "v"})]


@pytest.mark.parametrize(
    "partials",
    [
        [partial("$.a", stringValue="1"), partial("$.a", stringValue="2")],  # a key twice
        [partial("$.a.x", stringValue="1"), partial("$.b", stringValue="2"),
         partial("$.a.y", stringValue="3")],  # back into a closed object
        [partial("$.l[1]", stringValue="1")],  # an index out of order
        [partial("$.l[0]", stringValue="1"), partial("$.l.k", stringValue="2")],  # key in array
        [partial("$", stringValue="1")],  # the root is no value
        [partial("a.b", stringValue="1")],  # no '$'
        [partial("$..a", stringValue="1")],  # unreadable
        [partial('$["\\x"]', stringValue="1")],  # an escape JSON does not have
        [partial("$.a")],  # no value
        [partial("$.a", numberValue="1")],  # a number of the wrong JSON type
        [partial("$.a", boolValue=1)],
        [{"stringValue": "1"}],  # no path
        ["$.a"],  # not an object
    ],
)
def test_malformed_partial_arguments_are_malformed_events(partials: list[Any]) -> None:
    _out, error = decoded(*streamed(*partials))
    assert isinstance(error, MalformedEventError)


def test_other_parts_inside_a_streamed_call_are_malformed() -> None:
    opened = chunk(call(name="f", willContinue=True))
    for inside in (chunk({"text": "hi"}), chunk(call(name="g")),
                   chunk(call(willContinue=True), {"thoughtSignature": "S", "text": ""})):
        _out, error = decoded(opened, inside, chunk(call()))
        assert isinstance(error, MalformedEventError), inside


def test_a_second_signature_on_one_streamed_call_is_malformed() -> None:
    _out, error = decoded(
        chunk({**call(name="f", willContinue=True), "thoughtSignature": "S1"}),
        chunk({**call(), "thoughtSignature": "S2"}),
    )
    assert isinstance(error, MalformedEventError)


def test_a_call_left_open_at_the_finish_is_not_a_call() -> None:
    out, error = decode_every_way(SOURCE, chunk(call(name="f", willContinue=True)) + chunk(
        call(partialArgs=[partial("$.a", more=True, stringValue="x")], willContinue=True),
        finish="MAX_TOKENS"))
    assert isinstance(error, MMSPError) and not isinstance(error, MalformedEventError)
    assert not [i for e in out for i in e.content_items if i.type == "tool_call.done"]


_LEAVES = (st.text(max_size=12) | st.integers(-10**6, 10**6) | st.booleans() | st.none()
           | st.floats(allow_nan=False, allow_infinity=False, width=32))
_KEYS = st.text(min_size=1, max_size=6)
#: JSON values without empty containers (a partial argument names a leaf, so an empty object
#: or array has no partial argument to open it).
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.lists(inner, min_size=1, max_size=3)
    | st.dictionaries(_KEYS, inner, min_size=1, max_size=3),
    max_leaves=8,
)


def _partials(value: Any, path: str, cuts: st.DataObject) -> list[dict[str, Any]]:
    """The partial arguments that stream ``value`` at ``path``, in document order, each
    string cut where ``cuts`` draws."""
    if isinstance(value, dict):
        return [p for key, item in value.items()
                for p in _partials(item, f"{path}[{json.dumps(key)}]", cuts)]
    if isinstance(value, list):
        return [p for index, item in enumerate(value)
                for p in _partials(item, f"{path}[{index}]", cuts)]
    if isinstance(value, str):
        points = sorted(cuts.draw(st.lists(st.integers(0, len(value)), max_size=3)))
        pieces = [value[a:b] for a, b in zip([0, *points], [*points, len(value)], strict=True)]
        return [partial(path, more=i < len(pieces) - 1, stringValue=piece)
                for i, piece in enumerate(pieces)]
    if value is None:
        return [partial(path, nullValue="NULL_VALUE")]
    if isinstance(value, bool):
        return [partial(path, boolValue=value)]
    return [partial(path, numberValue=value)]


@given(st.dictionaries(_KEYS, _VALUES, max_size=4), st.data())
def test_any_arguments_streamed_in_parts_come_back_whole(
    arguments: dict[str, Any], cuts: st.DataObject
) -> None:
    """Whatever JSON object Vertex streams as partial arguments, in document order and with
    its strings cut anywhere, the fragments join into JSON text of that object, whole and byte
    by byte."""
    body = b"".join([*streamed(*_partials(arguments, "$", cuts)),
                     chunk({"text": ""}, finish="STOP")])
    whole = list(adapters.decode(SOURCE, [body]))
    assert list(adapters.decode(SOURCE, [body[i : i + 1] for i in range(len(body))])) == whole
    text = "".join(f.arguments for f in call_fragments(whole))
    [done] = [i for e in whole for i in e.content_items if isinstance(i, ToolCallDone)]
    assert json.loads(text) == arguments == done.arguments


@pytest.mark.parametrize(
    ("path", "segments"),
    [("$.a", ("a",)), ("$.a.b[2]", ("a", "b", 2)), ("$['x y'][0]", ("x y", 0)),
     ('$["a.b"].c', ("a.b", "c")), ('$["a\\"b\\u001f"]', ('a"b\x1f',)),
     ("$['x\\'y\"z']", ("x'y\"z",))],
)
def test_json_paths(path: str, segments: tuple[object, ...]) -> None:
    assert parse_json_path(path) == segments


def test_the_recordings_are_fixtures_with_their_expected_output() -> None:
    for case in ("vertex-partial-args-streaming", "vertex-partial-args-no-args-call"):
        assert (FIXTURES / "google-genai" / f"{case}.sse").is_file()
        expected = json.loads((FIXTURES / "google-genai" / f"{case}.expected.json").read_text())
        assert expected["stop"]["finish_reason"] == "tool_call"
    streaming = json.loads(
        (FIXTURES / "google-genai" / "vertex-partial-args-streaming.expected.json").read_text())
    assert [item["arguments"] for item in streaming["items"]] == [
        {"location": "Boston"}, {"location": "San Francisco"}]


# --------------------------------------------------------------------------------------------
# Paths and bodies
# --------------------------------------------------------------------------------------------


def vertex_plan(model: str, messages: list[UniMessage], config: Any = None) -> Any:
    return on_vertex(adapters.prepare("google-genai", model, messages, config), "my proj")


def test_generate_content_goes_to_vertex_v1beta1_under_the_project() -> None:
    request = vertex_plan("gemini-3.8-flash", [QUESTION]).request({})
    assert request.path == ("/v1beta1/projects/my%20proj/locations/global/publishers/google/"
                            "models/gemini-3.8-flash:streamGenerateContent?alt=sse")
    gemini = adapters.prepare("google-genai", "gemini-3.8-flash", [QUESTION], None).request({})
    assert request.body == gemini.body and request.headers == gemini.headers


def test_an_embedding_is_one_embed_content_call_of_one_content() -> None:
    request = vertex_plan("gemini-embedding-2", [QUESTION],
                          {"embedding_config": {"dimensions": 8}}).request({})
    assert request.path == ("/v1beta1/projects/my%20proj/locations/global/publishers/google/"
                            "models/gemini-embedding-2:embedContent")
    assert json.loads(request.body) == {
        "content": {"role": "user", "parts": [{"text": "What is the weather in Paris?"}]},
        "outputDimensionality": 8,
    }


@pytest.mark.parametrize(
    ("base_url", "location"),
    [("https://aiplatform.googleapis.com", "global"),
     ("https://europe-west4-aiplatform.googleapis.com", "europe-west4"),
     ("HTTPS://US-CENTRAL1-AIPLATFORM.GOOGLEAPIS.COM:443", "us-central1"),
     ("http://127.0.0.1:9", "global"), (None, "global")],
)
def test_a_regional_host_calls_its_own_region(base_url: str | None, location: str) -> None:
    assert vertex_location(base_url) == location
    for model in ("gemini-3.8-flash", "gemini-embedding-2"):
        plan = on_vertex(adapters.prepare("google-genai", model, [QUESTION], None), "p",
                         vertex_location(base_url))
        assert f"/projects/p/locations/{location}/publishers/google/models/" in (
            plan.request({}).path)


def test_two_messages_to_vertex_embeddings_are_refused_before_the_request() -> None:
    plan = vertex_plan("gemini-embedding-2", [QUESTION, UniMessage.user("Rain?")])
    with pytest.raises(UnsupportedParameterError) as caught:
        plan.request({})
    assert caught.value.parameter == "messages"
    assert "one content per call" in str(caught.value)


@pytest.mark.parametrize(
    ("body", "prompt_tokens"),
    [
        ({"embedding": {"values": [0.5, -1], "statistics": {"tokenCount": 13.0,
                                                             "truncated": False}}}, 13),
        ({"embedding": {"values": [0.5, -1], "statistics": {"tokenCount": 4}}}, 4),
        ({"embedding": {"values": [0.5, -1]}, "usageMetadata": {"promptTokenCount": 9}}, 9),
        ({"embedding": {"values": [0.5, -1]}}, None),
    ],
)
def test_vertex_embedding_answers_are_read(body: dict[str, Any], prompt_tokens: int | None) -> None:
    out, error = decode_every_way("google-embedding", json.dumps(body).encode())
    assert error is None
    assert [i for e in out for i in e.content_items if isinstance(i, EmbeddingDone)] == [
        EmbeddingDone((0.5, -1.0))]
    assert out[-1].usage_metadata == UsageMetadata(prompt_tokens=prompt_tokens)


@pytest.mark.parametrize("statistics", [{"tokenCount": 1.5}, {"tokenCount": "3"}, [1]])
def test_a_token_count_that_is_no_whole_number_is_malformed(statistics: Any) -> None:
    body = {"embedding": {"values": [1], "statistics": statistics}}
    _out, error = decode_every_way("google-embedding", json.dumps(body).encode())
    assert isinstance(error, MalformedEventError)


def test_a_protocol_vertex_does_not_serve_is_refused() -> None:
    plan = adapters.prepare("openai-chat", "gpt-x", [QUESTION], None)
    with pytest.raises(UnsupportedOperationError):
        on_vertex(plan, "p")


# --------------------------------------------------------------------------------------------
# The route and its credentials
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client_type", "base_url", "api_key", "vertex"),
    [
        ("google-genai", "https://aiplatform.googleapis.com", None, True),
        ("google-genai", "https://europe-west4-aiplatform.googleapis.com", None, True),
        ("google-genai", "HTTPS://AIPLATFORM.GOOGLEAPIS.COM:443", None, True),
        ("google-genai", "http://127.0.0.1:9", KEY, True),  # an origin with a key: Vertex
        ("google-genai", None, KEY, True),
        ("google-genai", "https://generativelanguage.googleapis.com", "AIza-key", False),
        ("google-genai", "https://notaiplatform.googleapis.com", None, False),
        ("google-official", "https://aiplatform.googleapis.com", None, False),
        ("openai-chat", "https://aiplatform.googleapis.com", KEY, False),
    ],
)
def test_vertex_detection(client_type: str, base_url: str | None, api_key: str | None,
                          vertex: bool) -> None:
    assert is_vertex(client_type, base_url, api_key) is vertex


def test_vertex_routes_use_the_clouds_credentials_never_the_gemini_key() -> None:
    environ = {"GEMINI_API_KEY": "AIza-env-key", "GEMINI_BASE_URL": "http://elsewhere"}
    assert credentials("google-genai", KEY, None, environ) == (
        KEY, "https://aiplatform.googleapis.com")
    assert credentials("google-genai", None, "https://aiplatform.googleapis.com", environ) == (
        None, "https://aiplatform.googleapis.com")
    assert credentials("google-genai", KEY, "http://127.0.0.1:9", environ) == (
        KEY, "http://127.0.0.1:9")
    assert auth_headers("google-genai", KEY, "http://127.0.0.1:9") == ()
    assert auth_headers("google-genai", None, "https://aiplatform.googleapis.com") == ()


def test_vertex_hosts_and_keys_are_no_longer_refused_on_google_genai() -> None:
    check_endpoint("google-genai", "gemini-3.8-flash", "https://aiplatform.googleapis.com", KEY)
    check_endpoint("google-genai", "gemini-3.8-flash", "http://127.0.0.1:9", KEY)
    with pytest.raises(UnsupportedOperationError):
        check_endpoint("google-official", "gemini-3.8-flash",
                       "https://aiplatform.googleapis.com", None)
    with pytest.raises(RoutingError) as caught:
        check_endpoint("google-official", "gemini-3.8-flash", None, KEY)
    assert "private" not in str(caught.value)


def test_credential_sources_in_order() -> None:
    environ = {"GOOGLE_APPLICATION_CREDENTIALS": "/keys/sa.json", "HOME": "/home/u",
               "GOOGLE_CLOUD_PROJECT": "env-project"}
    assert vertex_source("google-genai", KEY, environ) == VertexSource(
        VertexSourceKind.KEY, key=KEY, project="env-project")
    assert vertex_source("google-genai", None, environ) == VertexSource(
        VertexSourceKind.KEY_FILE, path="/keys/sa.json", project="env-project")
    assert vertex_source("google-genai", None, {"HOME": "/home/u"}) == VertexSource(
        VertexSourceKind.DEFAULT,
        path="/home/u/.config/gcloud/application_default_credentials.json")
    assert vertex_source("google-genai", None, {"HOME": "/h", "CLOUDSDK_CONFIG": "/cfg"}).path == (
        "/cfg/application_default_credentials.json")
    assert vertex_source("google-genai", None, {"APPDATA": "C:\\Users\\u\\AppData"}).path == (
        "C:\\Users\\u\\AppData\\gcloud/application_default_credentials.json")
    with pytest.raises(ApiKeyRequiredError) as caught:
        vertex_source("google-genai", None, {})
    assert "GOOGLE_APPLICATION_CREDENTIALS" in str(caught.value)


def test_an_api_key_on_vertex_is_refused_without_quoting_it() -> None:
    with pytest.raises(UnsupportedOperationError) as caught:
        vertex_source("google-genai", "AIza-not-a-service-account-key", {})
    assert "AIza" not in str(caught.value) and "service-account" in str(caught.value)


def test_the_source_never_shows_the_key_in_its_repr() -> None:
    assert "PRIVATE" not in repr(vertex_source("google-genai", KEY, {}))


def test_a_service_account_keys_public_fields() -> None:
    key = read_vertex_credential("google-genai", KEY, VertexSourceKind.KEY)
    assert isinstance(key, ServiceAccountKey)
    assert (key.client_email, key.token_uri, key.project_id) == (
        KEY_INFO["client_email"], KEY_INFO["token_uri"], "key-project")
    assert "PRIVATE" not in repr(key)


def test_user_credentials_public_fields_and_googles_token_uri_by_default() -> None:
    user = read_vertex_credential("google-genai", json.dumps(USER_INFO).encode(),
                                  VertexSourceKind.DEFAULT)
    assert isinstance(user, AuthorizedUser)
    assert (user.client_id, user.token_uri, user.quota_project_id) == (
        USER_INFO["client_id"], "https://oauth2.googleapis.com/token", "quota-project")
    assert "refresh-token-secret" not in repr(user)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("not json " + KEY_INFO["private_key"], ApiKeyRequiredError),
        ("[1]", ApiKeyRequiredError),
        (json.dumps({**KEY_INFO, "client_email": None}), ApiKeyRequiredError),
        (json.dumps({k: v for k, v in KEY_INFO.items() if k != "private_key"}),
         ApiKeyRequiredError),
        (json.dumps({**KEY_INFO, "token_uri": "file:///etc/passwd"}), ApiKeyRequiredError),
        (json.dumps({**USER_INFO, "refresh_token": 5}), ApiKeyRequiredError),
        (json.dumps({**KEY_INFO, "type": "external_account"}), UnsupportedOperationError),
        ("[" * 100_000, ApiKeyRequiredError),
    ],
)
def test_unusable_credentials_are_typed_errors_that_quote_nothing(
    text: str, error: type[Exception]
) -> None:
    with pytest.raises(error) as caught:
        read_vertex_credential("google-genai", text, VertexSourceKind.KEY_FILE)
    assert "MIIE" not in str(caught.value) and "GOOGLE_APPLICATION_CREDENTIALS" in str(
        caught.value) + repr(caught.value)


def test_the_project_comes_from_the_key_then_the_environment_then_the_quota_project() -> None:
    key = read_vertex_credential("google-genai", KEY, VertexSourceKind.KEY)
    keyless = read_vertex_credential(
        "google-genai", json.dumps({**KEY_INFO, "project_id": None}), VertexSourceKind.KEY)
    user = read_vertex_credential("google-genai", json.dumps(USER_INFO), VertexSourceKind.DEFAULT)
    env = VertexSource(VertexSourceKind.KEY, key=KEY, project="env-project")
    bare = VertexSource(VertexSourceKind.KEY, key=KEY)
    assert vertex_project("google-genai", key, env) == "key-project"
    assert vertex_project("google-genai", keyless, env) == "env-project"
    assert vertex_project("google-genai", user, env) == "env-project"
    assert vertex_project("google-genai", user, bare) == "quota-project"
    with pytest.raises(ApiKeyRequiredError) as caught:
        vertex_project("google-genai", keyless, bare)
    assert caught.value.api_key_env == "GOOGLE_CLOUD_PROJECT"


def test_a_vertex_request_carries_no_key_header() -> None:
    request = vertex_plan("gemini-3.8-flash", [QUESTION]).request({})
    assert all(name.lower() not in ("x-goog-api-key", "authorization")
               for name, _value in request.headers)
