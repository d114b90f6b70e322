"""The error classes: names, bases, fields, messages, ``detail``, ``retryable``.

Expectations come from spec 03 §2-§3, 09 (the classes it adds) and 08 D46, D48.
``error_instances()`` builds any error class with random field values; the wire tests use it.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import strategies as st

import mmsp_core
import mmsp_core.errors
from mmsp_core import (
    ApiKeyRequiredError,
    EmptyResponseError,
    IncompleteStreamError,
    MMSPError,
    ProviderHTTPError,
    ProviderStreamError,
    StreamProtocolError,
    ToolCallArgumentParseError,
    UsageMetadata,
    to_wire,
)
from mmsp_core.testing.strategies import json_objects, usage

#: Every class of spec 03 §2 and 09 with its fields, as the spec lists them (``detail`` aside).
SPEC_FIELDS: dict[str, tuple[str, ...]] = {
    "UnsupportedParameterError": ("client", "parameter"),
    "UnsupportedOperationError": ("client", "operation"),
    "EmptyResponseError": ("client", "finish_reason", "usage_metadata"),
    "IncompleteStreamError": ("client", "missing", "finish_reason", "usage_metadata"),
    "StreamProtocolError": ("client",),
    "ToolCallArgumentParseError": (
        "client",
        "tool_name",
        "tool_call_id",
        "raw_arguments_length",
        "raw_arguments_preview",
    ),
    "ApiKeyRequiredError": ("client", "client_type", "api_key_env", "base_url_env", "base_url"),
    "RoutingError": ("model", "client_type"),
    "InvalidMessageError": ("client", "item_type", "message_index"),
    "UnsupportedContentError": ("client", "item_type"),
    "UnknownEventError": ("client", "event"),
    "ProviderStreamError": ("client", "code", "error_type", "provider_message", "usage_metadata"),
    "ConcurrentCallError": ("client",),
    "UpstreamError": ("client", "status", "error_type", "error"),
    "ProviderHTTPError": (
        "client",
        "status",
        "error_type",
        "provider_message",
        "request_id",
        "retry_after",
    ),
    "ProviderConnectionError": ("client", "reason"),
    "StreamTimeoutError": ("client", "which", "seconds"),
    "AbortedError": ("client", "reason"),
    "StreamLimitError": ("what", "limit", "size"),
    "MalformedEventError": ("client", "event"),
    "WireFormatError": ("path", "reason"),
}

ERROR_NAMES = sorted(SPEC_FIELDS)

_text = st.text(max_size=20)
_finite = st.floats(allow_nan=False, allow_infinity=False)
#: Values for a field, by its declared type.
_BY_TYPE: dict[str, st.SearchStrategy[Any]] = {
    "str": _text,
    "str | None": st.none() | _text,
    "int": st.integers(-(2**40), 2**40),
    "int | None": st.none() | st.integers(0, 2**40),
    "float": _finite,
    "float | None": st.none() | _finite,
    "int | str | None": st.none() | st.integers(-(2**31), 2**31) | _text,
    "tuple[str, ...]": st.lists(st.sampled_from(["usage_metadata", "finish_reason"]), unique=True)
    .map(tuple),
    "UsageMetadata | None": st.none() | usage(),
    "Mapping[str, Any]": json_objects(),
}


def error_instances(names: list[str] | None = None) -> st.SearchStrategy[MMSPError]:
    """Any MMSP error class, built with random values of each field's declared type."""

    def build(name: str) -> st.SearchStrategy[MMSPError]:
        cls = getattr(mmsp_core, name)
        fields = {f.name: _BY_TYPE[str(f.type)] for f in attrs.fields(cls)}
        return st.fixed_dictionaries(fields).map(lambda kwargs: cls(**kwargs))

    return st.sampled_from(names or ERROR_NAMES).flatmap(build)


def sample(name: str, **overrides: Any) -> MMSPError:
    """An instance of error class ``name`` with a plain value in every field."""
    values = {
        "str": "v",
        "str | None": "v",
        "int": 7,
        "int | None": 7,
        "float": 1.5,
        "float | None": 1.5,
        "int | str | None": 7,
        "tuple[str, ...]": ("usage_metadata",),
        "UsageMetadata | None": UsageMetadata(1, 2, 3, 4),
        "Mapping[str, Any]": {"message": "m"},
    }
    cls = getattr(mmsp_core, name)
    kwargs = {f.name: values[str(f.type)] for f in attrs.fields(cls) if f.name != "detail"}
    return cls(**{**kwargs, **overrides})


@pytest.mark.parametrize("name", ERROR_NAMES)
def test_every_class_exists_in_both_modules_and_derives_from_mmsp_error(name: str) -> None:
    cls = getattr(mmsp_core.errors, name)
    assert getattr(mmsp_core, name) is cls
    assert name in mmsp_core.__all__
    assert issubclass(cls, MMSPError)
    # Each class is a direct MMSPError subclass (spec 03 §3: none subclass each other).
    assert cls.__bases__[0] is MMSPError


def test_the_base_is_a_value_error_and_provider_stream_error_a_runtime_error() -> None:
    assert issubclass(MMSPError, ValueError)
    assert issubclass(ProviderStreamError, RuntimeError)
    assert isinstance(sample("ProviderStreamError"), RuntimeError)
    others = [getattr(mmsp_core, n) for n in ERROR_NAMES if n != "ProviderStreamError"]
    assert not any(issubclass(cls, RuntimeError) for cls in others)


@pytest.mark.parametrize("name", ERROR_NAMES)
def test_every_class_declares_the_fields_of_the_spec(name: str) -> None:
    error = sample(name)
    for field in SPEC_FIELDS[name]:
        assert hasattr(error, field), field
    assert error.detail is None
    declared = {f.name for f in attrs.fields(type(error))}
    assert declared == {*SPEC_FIELDS[name], "detail"}


@pytest.mark.parametrize("name", ERROR_NAMES)
def test_detail_is_part_of_the_message_and_of_the_wire_form(name: str) -> None:
    plain = sample(name)
    detailed = sample(name, detail="the-rule-that-broke")
    assert "the-rule-that-broke" not in str(plain)
    assert "the-rule-that-broke" in str(detailed)
    assert str(detailed).startswith(str(plain))
    wire = to_wire(detailed)["error"]
    assert wire["detail"] == "the-rule-that-broke"
    assert wire["message"] == str(detailed)
    assert to_wire(plain)["error"]["detail"] is None


def test_incomplete_stream_message() -> None:
    both = IncompleteStreamError("openai-chat", ("usage_metadata", "finish_reason"), None, None)
    assert str(both) == "openai-chat's stream ended without usage_metadata and finish_reason."
    one = IncompleteStreamError("mmsp", ("finish_reason",), None, UsageMetadata(1, 2, 3, 4))
    assert str(one) == "mmsp's stream ended without finish_reason."


def test_api_key_required_message_without_base_url() -> None:
    error = ApiKeyRequiredError(
        "deepseek-official", "deepseek-official", "DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", None
    )
    assert str(error) == (
        "DEEPSEEK_API_KEY is required for deepseek-official: pass api_key or set DEEPSEEK_API_KEY."
    )


def test_api_key_required_message_with_base_url_names_the_endpoint_rule() -> None:
    error = ApiKeyRequiredError(
        "deepseek-official",
        "deepseek-official",
        "DEEPSEEK_API_KEY",
        "DEEPSEEK_BASE_URL",
        "https://proxy.example/v1",
    )
    assert "DEEPSEEK_API_KEY" in str(error)
    assert "is required for deepseek-official: pass api_key" not in str(error)


def test_stream_protocol_error_message() -> None:
    error = StreamProtocolError("ant-messages", detail="a client yields deltas, not text.done")
    assert str(error) == (
        "ant-messages broke the streaming protocol: a client yields deltas, not text.done"
    )
    assert str(StreamProtocolError("x")).startswith("x broke the streaming protocol")


def test_empty_response_message() -> None:
    error = EmptyResponseError("openai-chat", "length", UsageMetadata(1, 2, 3, 0))
    assert "no content other than thinking" in str(error)
    assert "openai-chat" in str(error)


def test_tool_call_argument_parse_error_message_names_the_call() -> None:
    error = ToolCallArgumentParseError("c", "get_weather", "call_9", 8, '{"a": 1')
    text = str(error)
    assert "get_weather" in text
    assert "call_9" in text
    assert '{"a": 1' in text


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529, 599])
def test_http_errors_worth_retrying(status: int) -> None:
    assert ProviderHTTPError("c", status).retryable


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_http_errors_not_worth_retrying(status: int) -> None:
    assert not ProviderHTTPError("c", status).retryable


@pytest.mark.parametrize(
    ("code", "error_type"),
    [
        (None, "overloaded_error"),
        (None, "rate_limit_error"),
        ("rate_limit_exceeded", None),
        (None, "server_error"),
        (429, None),
        (500, None),
        (503, None),
        ("RESOURCE_EXHAUSTED", None),
    ],
)
def test_provider_stream_errors_that_say_overloaded_rate_limited_or_server_error(
    code: Any, error_type: str | None
) -> None:
    assert ProviderStreamError("c", code, error_type).retryable


@pytest.mark.parametrize(
    ("code", "error_type"),
    [(None, None), (400, "invalid_request_error"), ("invalid_prompt", None), (None, "refusal")],
)
def test_other_provider_stream_errors_are_not_retryable(code: Any, error_type: str | None) -> None:
    assert not ProviderStreamError("c", code, error_type).retryable


@pytest.mark.parametrize(
    "name",
    ["IncompleteStreamError", "ProviderConnectionError", "StreamTimeoutError"],
)
def test_always_retryable(name: str) -> None:
    assert sample(name).retryable


@pytest.mark.parametrize(
    "name",
    [
        n
        for n in ERROR_NAMES
        if n
        not in (
            "IncompleteStreamError",
            "ProviderConnectionError",
            "StreamTimeoutError",
            "ProviderHTTPError",
            "ProviderStreamError",
        )
    ],
)
def test_never_retryable(name: str) -> None:
    assert sample(name).retryable is False
    assert MMSPError().retryable is False


# -- redaction (08 D61) -------------------------------------------------------------------------

CANARY_KEY = "sk-ant-api03-Zq7Xw2Vb9Nm4Lk8Jh3Gf6Ds1Ap0Oi5Uy"


def leaks(text: str, secret: str = CANARY_KEY) -> bool:
    """Whether ``text`` holds a run of 12 characters of ``secret`` after its first 8."""
    tail = secret[8:]
    return any(tail[i : i + 12] in text for i in range(len(tail) - 11))


def test_redact_removes_the_whole_key_and_any_long_run_of_it() -> None:
    text = f"a {CANARY_KEY} b {CANARY_KEY[10:30]} c {CANARY_KEY[:19]} d"
    redacted = mmsp_core.errors.redact(text, CANARY_KEY)
    assert not leaks(redacted)
    assert redacted == "a [redacted] b [redacted] c sk-ant-api03-Zq7Xw2 d"  # 8 + 11 shown


def test_redact_after_preview_leaves_no_part_of_a_key_the_preview_cut() -> None:
    """The reproducer of issue 8: 36 characters, the key, more text. The head that ``preview``
    keeps ends inside the key; redacting the whole key alone left 36 of its characters."""
    shortened = mmsp_core.errors.preview("x" * 36 + CANARY_KEY + "y" * 200)
    assert leaks(shortened)
    assert not leaks(mmsp_core.errors.redact(shortened, CANARY_KEY))


def test_redact_keeps_text_without_the_key_and_short_keys() -> None:
    assert mmsp_core.errors.redact("nothing here", CANARY_KEY) == "nothing here"
    assert mmsp_core.errors.redact("key abc123456 here", "abc123456") == "key [redacted] here"
    # A key of 8 characters or fewer is all prefix (08 D61): ordinary text stays whole.
    assert mmsp_core.errors.redact("the tokens", "k") == "the tokens"
    assert mmsp_core.errors.redact("text", "") == "text"


@pytest.mark.parametrize("name", ERROR_NAMES)
def test_redact_error_cleans_every_field_args_and_the_chain(name: str) -> None:
    echoed = "x" * 36 + CANARY_KEY + "y" * 200
    cls = getattr(mmsp_core, name)
    overrides: dict[str, Any] = {
        f.name: echoed for f in attrs.fields(cls) if str(f.type) in ("str", "str | None")
    }
    if "error" in overrides or name == "UpstreamError":
        overrides["error"] = {"message": echoed, "nested": [echoed]}
    error = sample(name, **overrides)
    cause = OSError(f"could not reach https://h/?key={CANARY_KEY}")
    error.__cause__ = cause
    mmsp_core.errors.redact_error(error, CANARY_KEY)
    shown = [str(error), repr(error), repr(error.args), repr(to_wire(error)), str(cause),
             repr(cause)]
    shown += [repr(getattr(error, f.name)) for f in attrs.fields(cls)]
    assert not any(leaks(text) for text in shown), shown
