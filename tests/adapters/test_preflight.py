"""What a caller gets wrong is refused before any request, with a message that says what was
wrong and what is accepted (08 D55, D57, D58, D68, D69). Values built directly get exactly the
checks the same data gets as dicts."""

from __future__ import annotations

import json
import math
import warnings
from typing import Any

import pytest

import adapters
from mmsp_core import (
    InvalidMessageError,
    RoutingError,
    UnsupportedParameterError,
    WireFormatError,
)
from mmsp_core.model import (
    ImageUrlDone,
    InlineDataDone,
    ThinkingDone,
    ThinkingLevel,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniConfig,
    UniMessage,
    UsageMetadata,
)
from mmsp_core.model import (
    TextDone as _TextDone,
)
from mmsp_core.wire import to_wire

CHAT = "openai-chat"
ANTHROPIC = "anthropic-official"
RESPONSES = "openai-responses"
BUILT = (CHAT, ANTHROPIC, RESPONSES)
MODELS = {CHAT: "gpt-4o", ANTHROPIC: "claude-sonnet-4-6", RESPONSES: "gpt-4o"}
HELLO = [{"role": "user", "content_items": [{"type": "text.done", "text": "hi"}]}]


def TextDone(text: Any) -> _TextDone:  # a value built with a wrong field type on purpose
    return _TextDone(text)


def build(client: str, messages: Any = None, config: Any = None, **kw: Any) -> Any:
    return adapters.build_request(
        client, MODELS[client], HELLO if messages is None else messages, config, **kw
    )


def body(client: str, config: Any = None, messages: Any = None) -> Any:
    return json.loads(build(client, messages, config).body)


def read_then_build(client: str, messages: Any, config: Any, *, strict: bool = False) -> Any:
    """What a client reading its values once does: ``prepare`` (read and check both), then
    build the plan's request."""
    return adapters.prepare(client, MODELS[client], messages, config, strict=strict).request({})


def checked(how: str, client: str, config: Any, **kw: Any) -> None:
    """Check ``config`` alone (``check_config``), with a request (``build_request``), or read
    once and then checked and built (``read_then_build``)."""
    if how == "check":
        adapters.check_config(client, MODELS[client], config, **kw)
    elif how == "read":
        read_then_build(client, HELLO, config, **kw)
    else:
        build(client, config=config, **kw)


HOW = pytest.mark.parametrize("how", ["check", "build", "read"])


@pytest.mark.parametrize("client", BUILT)
@pytest.mark.parametrize("config", [
    None,
    {"max_tokens": 100, "system_prompt": "be brief", "prompt_caching": "enable"},
    {"thinking_level": "high", "max_tokens": 20000},
    {"tools": [{"name": "get", "description": "d", "parameters": {"type": "object"}}],
     "tool_choice": "required"},
    {"extra_body": {"metadata": {"user_id": "u"}}},
], ids=["none", "plain", "thinking", "tools", "extra_body"])
def test_reading_once_builds_exactly_the_request_build_request_builds(
    client: str, config: Any
) -> None:
    messages = [*HELLO, UniMessage(role="assistant", content_items=(_TextDone("hello"),)),
                {"role": "user", "content_items": [{"type": "text.done", "text": "more"}]}]
    assert read_then_build(client, messages, config) == build(client, messages, config)


@pytest.mark.parametrize("client", BUILT)
def test_reading_once_still_refuses_an_empty_history(client: str) -> None:
    with pytest.raises(InvalidMessageError, match="messages is empty"):
        read_then_build(client, [], None)


# -- messages: the argument itself (D69) -------------------------------------------------------


@pytest.mark.parametrize("client", [*BUILT, "mmsp"])
@pytest.mark.parametrize(
    ("messages", "shown"), [(None, "NoneType"), ("hello", "str"), ({"role": "user"}, "dict"),
                            (b"hi", "bytes")]
)
def test_messages_that_are_not_a_list_are_an_invalid_message_error(
    client: str, messages: Any, shown: str
) -> None:
    with pytest.raises(InvalidMessageError) as caught:
        adapters.coerce_messages(client, messages)
    assert caught.value.message_index is None
    assert "messages must be a list of messages (UniMessage or dicts)" in str(caught.value)
    assert f"got {shown}" in str(caught.value)


@pytest.mark.parametrize("client", BUILT)
def test_a_message_that_is_neither_a_value_nor_a_dict_names_its_index(client: str) -> None:
    with pytest.raises(InvalidMessageError) as caught:
        adapters.coerce_messages(client, [HELLO[0], "hello"])
    assert caught.value.message_index == 1
    assert "UniMessage or a dict" in str(caught.value)


@pytest.mark.parametrize("client", BUILT)
def test_no_messages_at_all_is_refused_before_the_request(client: str) -> None:
    with pytest.raises(InvalidMessageError) as caught:
        build(client, messages=[])
    assert caught.value.message_index is None
    assert "at least one message" in str(caught.value)


def test_an_empty_history_is_still_a_list_of_messages() -> None:
    assert adapters.coerce_messages(CHAT, []) == []


@pytest.mark.parametrize("client", BUILT)
def test_an_item_type_given_as_a_list_is_an_invalid_message_error(client: str) -> None:
    message = {"role": "user", "content_items": [{"type": ["text.done"], "text": "hi"}]}
    with pytest.raises(InvalidMessageError) as caught:
        build(client, messages=[message])
    assert (caught.value.message_index, caught.value.item_type) == (0, None)
    assert isinstance(caught.value.__cause__, WireFormatError)


@pytest.mark.parametrize("client", BUILT)
def test_a_dict_item_error_names_the_bare_item_kind(client: str) -> None:
    message = {"role": "user", "content_items": [{"type": "text.done", "text": 5}]}
    with pytest.raises(InvalidMessageError) as caught:
        build(client, messages=[message])
    assert (caught.value.message_index, caught.value.item_type) == (0, "text")
    assert "expected a string, got int" in str(caught.value)


# -- messages built as values get the checks dicts get (D58) ----------------------------------

BAD_VALUES: list[tuple[str, UniMessage, int | None, str | None, str]] = [
    ("text-int", UniMessage("user", (TextDone(5),)), 0, "text", "expected a string"),
    ("role-robot", UniMessage("robot", (_TextDone("hi"),)),  # type: ignore[arg-type]
     0, None, "'user' or 'assistant'"),
    ("role-system", UniMessage("system", (_TextDone("hi"),)),  # type: ignore[arg-type]
     0, None, "system_prompt"),
    ("items-none", UniMessage("user", None),  # type: ignore[arg-type]
     0, None, "expected a list"),
    ("item-not-an-item", UniMessage("user", ("hi",)),  # type: ignore[arg-type]
     0, None, "expected an object"),
]


@pytest.mark.parametrize("client", BUILT)
@pytest.mark.parametrize(("message", "index", "item_type", "said"),
                         [case[1:] for case in BAD_VALUES],
                         ids=[case[0] for case in BAD_VALUES])
def test_values_built_directly_are_checked_like_dicts(
    client: str, message: UniMessage, index: int, item_type: str | None, said: str
) -> None:
    with pytest.raises(InvalidMessageError) as caught:
        build(client, messages=[message])
    assert (caught.value.message_index, caught.value.item_type) == (index, item_type)
    assert said in str(caught.value)
    assert isinstance(caught.value.__cause__, WireFormatError)


def test_a_system_role_value_on_anthropic_says_where_system_text_goes() -> None:
    # 01 §2: there is no system role; system text is UniConfig.system_prompt. The Anthropic
    # builder would have sent {"role": "system"}, which the API refuses.
    with pytest.raises(InvalidMessageError) as caught:
        build(ANTHROPIC, messages=[UniMessage("system", (_TextDone("be brief"),))])  # type: ignore[arg-type]
    assert "system_prompt" in str(caught.value)


def test_a_value_whose_bytes_field_holds_text_is_read_as_the_reader_reads_it() -> None:
    image = InlineDataDone("aGk=", "image/png")  # type: ignore[arg-type]
    [read] = adapters.coerce_messages(CHAT, [UniMessage("user", (image,))])
    assert read.content_items == (InlineDataDone(b"hi", "image/png"),)


def test_media_bytes_of_a_value_are_kept_as_given_yet_the_item_is_checked() -> None:
    data = b"\x89PNG" * 1000
    image = InlineDataDone(data, "image/png")
    [read] = adapters.coerce_messages(CHAT, [UniMessage("user", (image,))])
    assert read.content_items[0].data is data  # type: ignore[union-attr]
    with pytest.raises(InvalidMessageError) as caught:
        adapters.coerce_messages(CHAT, [UniMessage("user", (InlineDataDone(data, 5),))])  # type: ignore[arg-type]
    assert caught.value.item_type == "inline_data"
    assert "mime_type" in str(caught.value)


def test_values_given_as_lists_come_back_as_tuples() -> None:
    [read] = adapters.coerce_messages(CHAT, [UniMessage("user", [_TextDone("hi")])])  # type: ignore[arg-type]
    assert read == UniMessage("user", (_TextDone("hi"),))


def test_the_mmsp_client_sends_values_as_given() -> None:
    odd = UniMessage("user", (TextDone(5),))
    assert adapters.coerce_messages("mmsp", [odd]) == [odd]


# -- JSON inside messages and tools ------------------------------------------------------------


def cycle() -> dict[str, Any]:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    return loop


NOT_JSON = [
    ("set", {"a": {1, 2}}, "set is not a JSON value"),
    ("object", {"a": object()}, "object is not a JSON value"),
    ("cycle", cycle(), "contains itself"),
    ("nan", {"a": math.nan}, "not a finite number"),
    ("key", {1: "a"}, "keys must be strings"),
    ("deep", json.loads("[" * 600 + "]" * 600), "nested deeper"),
]


@pytest.mark.parametrize("client", BUILT)
@pytest.mark.parametrize(("value", "said"), [c[1:] for c in NOT_JSON], ids=[c[0] for c in NOT_JSON])
def test_tool_parameters_that_are_not_json_are_refused(client: str, value: Any, said: str) -> None:
    parameters = {"type": "object", "properties": value}
    for config in (
        {"tools": [{"name": "f", "description": "", "parameters": parameters}]},
        UniConfig(tools=(ToolSchema("f", "", parameters),)),
    ):
        with pytest.raises(UnsupportedParameterError) as caught:
            build(client, config=config)
        assert caught.value.parameter == "tools"
        assert "config.tools[0].parameters.properties" in str(caught.value)
        assert said in str(caught.value)


@pytest.mark.parametrize("client", [*BUILT, "mmsp"])
@pytest.mark.parametrize(("value", "said"), [c[1:] for c in NOT_JSON], ids=[c[0] for c in NOT_JSON])
def test_tool_call_arguments_that_are_not_json_are_refused(
    client: str, value: Any, said: str
) -> None:
    call = ToolCallDone("f", "c1", {"x": value})
    with pytest.raises(InvalidMessageError) as caught:
        adapters.coerce_messages(client, [HELLO[0], UniMessage("assistant", (call,))])
    assert (caught.value.message_index, caught.value.item_type) == (1, "tool_call")
    assert said in str(caught.value)


def test_tools_given_as_dicts_inside_a_value_are_read_like_dicts() -> None:
    config = UniConfig(tools=({"name": "f"},))  # type: ignore[arg-type]
    assert body(CHAT, config)["tools"][0]["function"]["name"] == "f"


# -- lone surrogates in caller text (D55) ------------------------------------------------------

SURROGATE = "a\ud83d"
SURROGATE_ITEMS = [
    ("text", _TextDone(SURROGATE), "user"),
    ("thinking", ThinkingDone(SURROGATE, {"signature": "s"}), "assistant"),
    ("tool_call", ToolCallDone("f", "c1", {"q": SURROGATE}), "assistant"),
    ("tool_result", ToolResultDone(SURROGATE, "c1"), "user"),
    ("image_url", ImageUrlDone("https://x/\udc00.png"), "user"),
]


@pytest.mark.parametrize("client", [*BUILT, "mmsp"])
@pytest.mark.parametrize(("kind", "item", "role"), SURROGATE_ITEMS,
                         ids=[c[0] for c in SURROGATE_ITEMS])
def test_caller_text_with_a_lone_surrogate_is_refused_on_every_client(
    client: str, kind: str, item: Any, role: str
) -> None:
    messages = [HELLO[0], UniMessage(role, (item,))]  # type: ignore[arg-type]
    for given in (messages, [HELLO[0], to_wire(messages[1])]):
        with pytest.raises(InvalidMessageError) as caught:
            adapters.coerce_messages(client, given)
        assert (caught.value.message_index, caught.value.item_type) == (1, kind)
        assert "UTF-8" in str(caught.value)


def test_a_surrogate_in_the_system_prompt_is_refused() -> None:
    with pytest.raises(UnsupportedParameterError) as caught:
        build(CHAT, config={"system_prompt": "\udc00"})
    assert caught.value.parameter == "system_prompt"


def test_a_whole_character_outside_the_bmp_is_sent() -> None:
    text = "smile \U0001f600"
    sent = body(CHAT, messages=[UniMessage("user", (_TextDone(text),))])
    assert text in json.dumps(sent, ensure_ascii=False)


# -- config values (D58, D68) ------------------------------------------------------------------


@pytest.mark.parametrize("client", BUILT)
@pytest.mark.parametrize("given", [{"thinking_level": "extreme"}, {"thinking_level": 5},
                                   UniConfig(thinking_level="extreme")],  # type: ignore[arg-type]
                         ids=["dict", "dict-int", "value"])
@pytest.mark.parametrize("how", ["coerce", "check", "build"])
def test_a_thinking_level_that_is_no_level_is_a_wire_format_error(
    how: str, client: str, given: Any
) -> None:
    with pytest.raises(WireFormatError) as caught:
        if how == "coerce":
            adapters.coerce_config(client, given)
        else:
            checked(how, client, given)
    assert caught.value.path == "config.thinking_level"
    assert all(level.value in caught.value.reason for level in ThinkingLevel)


BAD_CONFIG: list[tuple[str, str, Any, str]] = [
    ("max_tokens-str", "max_tokens", "100", "an integer from 1 to 2147483647, got '100'"),
    ("max_tokens-neg", "max_tokens", -1, "from 1 to 2147483647, got -1"),
    ("max_tokens-zero", "max_tokens", 0, "from 1 to 2147483647, got 0"),
    ("max_tokens-huge", "max_tokens", 2**70, "from 1 to 2147483647"),
    ("max_tokens-bool", "max_tokens", True, "from 1 to 2147483647, got True"),
    ("temperature-nan", "temperature", math.nan, "a finite number"),
    ("temperature-inf", "temperature", math.inf, "a finite number"),
    ("temperature-str", "temperature", "hot", "a finite number, got 'hot'"),
    ("prompt_caching", "prompt_caching", "x", "enable, disable, enhance"),
    ("tools-str", "tools", "f", "expected a list"),
]


@HOW
@pytest.mark.parametrize("client", BUILT)
@pytest.mark.parametrize(("key", "value", "said"), [c[1:] for c in BAD_CONFIG],
                         ids=[c[0] for c in BAD_CONFIG])
def test_config_values_are_checked_as_dicts_and_as_values(
    how: str, client: str, key: str, value: Any, said: str
) -> None:
    for given in ({key: value}, UniConfig(**{key: value})):
        with pytest.raises(UnsupportedParameterError) as caught:
            checked(how, client, given)
        assert caught.value.parameter == key
        assert f"config.{key}" in str(caught.value)
        assert said in str(caught.value)
        assert isinstance(caught.value.__cause__, WireFormatError)


def test_the_largest_max_tokens_is_sent() -> None:
    assert body(CHAT, {"max_tokens": 2**31 - 1})["max_completion_tokens"] == 2**31 - 1


@pytest.mark.parametrize("config", ["x", 5, ["max_tokens"]])
def test_a_config_that_is_not_a_mapping_is_a_wire_format_error(config: Any) -> None:
    with pytest.raises(WireFormatError) as caught:
        build(CHAT, config=config)
    assert caught.value.path == "config"
    assert "a UniConfig, a dict or None" in caught.value.reason


# -- unknown config keys (D57) -----------------------------------------------------------------


@HOW
@pytest.mark.parametrize("client", BUILT)
@pytest.mark.parametrize(("key", "match"), [("max_token", "max_tokens"),
                                            ("temprature", "temperature")])
def test_an_unknown_key_warns_naming_its_close_match(
    how: str, client: str, key: str, match: str
) -> None:
    with pytest.warns(UserWarning) as caught:
        checked(how, client, {key: 1})
    [warning] = [w for w in caught if key in str(w.message)]
    assert f"did you mean {match!r}?" in str(warning.message)
    assert warning.filename == __file__  # the caller's line, so the filter shows it once there


@HOW
@pytest.mark.parametrize("client", BUILT)
def test_an_unknown_key_is_an_error_in_strict_mode(how: str, client: str) -> None:
    for config in ({"max_token": 100}, UniConfig(extra={"max_token": 100})):
        with pytest.raises(UnsupportedParameterError) as caught:
            checked(how, client, config, strict=True)
        assert caught.value.parameter == "max_token"
        assert "did you mean 'max_tokens'?" in str(caught.value)


def test_a_known_config_warns_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build(CHAT, config={"max_tokens": 10}, strict=True)


def test_an_unknown_key_with_no_close_match_warns_without_a_guess() -> None:
    with pytest.warns(UserWarning, match="'zzz'") as caught:
        build(CHAT, config={"zzz": 1})
    assert "did you mean" not in str(caught[0].message)


# -- extra_body (D57) --------------------------------------------------------------------------


def test_extra_body_is_merged_after_the_mapping_objects_recursively() -> None:
    plain = body(RESPONSES, {"max_tokens": 10})
    sent = body(RESPONSES, {"max_tokens": 10, "extra_body": {
        "service_tier": "flex", "text": {"verbosity": "low"}}})
    assert sent == {**plain, "service_tier": "flex", "text": {"verbosity": "low"}}
    assert list(sent)[-2:] == ["service_tier", "text"]


def test_extra_body_extends_an_object_the_mapping_wrote() -> None:
    plain = body(ANTHROPIC, {"thinking_level": "low"})
    sent = body(ANTHROPIC, {"thinking_level": "low",
                            "extra_body": {"output_config": {"format": {"type": "json"}}}})
    assert sent["output_config"] == {**plain["output_config"], "format": {"type": "json"}}


def test_extra_body_given_as_a_value() -> None:
    sent = body(CHAT, UniConfig(extra_body={"seed": 7}))
    assert sent["seed"] == 7


@pytest.mark.parametrize(("client", "extra"), [
    (CHAT, {"model": "other"}),
    (CHAT, {"messages": []}),
    (ANTHROPIC, {"max_tokens": 5}),
    (ANTHROPIC, {"thinking": {"type": "enabled"}}),
])
def test_extra_body_cannot_overwrite_a_leaf_the_mapping_wrote(
    client: str, extra: dict[str, Any]
) -> None:
    with pytest.raises(UnsupportedParameterError) as caught:
        build(client, config={"thinking_level": "low", "extra_body": extra})
    assert caught.value.parameter == "extra_body"
    assert "already" in str(caught.value)


@HOW
def test_extra_body_cannot_send_what_the_model_refuses(how: str) -> None:
    # Claude models only run at temperature 1.0 on anthropic-official (05 §4.1).
    with pytest.raises(UnsupportedParameterError) as caught:
        checked(how, ANTHROPIC, {"extra_body": {"temperature": 0.2}})
    assert caught.value.parameter == "extra_body"
    assert "extra_body.temperature" in str(caught.value)
    assert isinstance(caught.value.__cause__, UnsupportedParameterError)


def test_extra_body_may_send_what_the_model_takes() -> None:
    assert body(CHAT, {"extra_body": {"temperature": 0.2}})["temperature"] == 0.2


@pytest.mark.parametrize("extra", [[1], "x", {"a": {1}}], ids=["list", "str", "set"])
def test_extra_body_must_be_a_json_object(extra: Any) -> None:
    with pytest.raises(UnsupportedParameterError) as caught:
        build(CHAT, config={"extra_body": extra})
    assert caught.value.parameter == "extra_body"


# -- model ids and names (D69) -----------------------------------------------------------------


@pytest.mark.parametrize("model", ["", None, 5, b"gpt-4o"])
def test_a_model_id_that_is_no_non_empty_string_is_a_routing_error(model: Any) -> None:
    with pytest.raises(RoutingError) as caught:
        adapters.route(model)
    assert "a non-empty string" in str(caught.value)
    with pytest.raises(RoutingError):
        adapters.route(model, CHAT)


@pytest.mark.parametrize("model", [None, 5, b"gpt-4o"])
def test_the_builders_take_only_a_string_model_id(model: Any) -> None:
    # Given a client type, the builders send the id as given (08 D9), so "" is only refused
    # by routing; a value that is no string at all is refused everywhere.
    with pytest.raises(RoutingError, match="must be a string"):
        adapters.build_request(CHAT, model, HELLO, None)
    with pytest.raises(RoutingError, match="must be a string"):
        adapters.check_config(CHAT, model, None)


def test_an_unknown_source_lists_what_is_accepted() -> None:
    with pytest.raises(RoutingError) as caught:
        adapters.new_pipeline("anthropic", clock=None)
    text = str(caught.value)
    assert "anthropic-official" in text and "ant-messages" in text
    assert "not a client type or wire protocol name" in text


def test_decode_refuses_a_bare_bytes_body_saying_how_to_pass_it() -> None:
    with pytest.raises(TypeError, match=r"decode\(source, \[body\]\)"):
        list(adapters.decode(CHAT, b"data: [DONE]\n\n"))


def test_the_other_pure_entry_points_refuse_bad_arguments_with_typed_errors() -> None:
    """08 D59: a model id that is no string, a finish reason that is none, a client type that
    is no string give MMSP errors, never ``AttributeError`` or a bare ``ValueError``."""
    with pytest.raises(RoutingError):
        adapters.new_pipeline("google-official", clock=None, model=5)  # type: ignore[arg-type]
    with pytest.raises(WireFormatError) as caught:
        adapters.render("openai-chat", [], UsageMetadata(), "bogus")
    assert caught.value.path == "finish_reason" and "tool_call" in caught.value.reason
    with pytest.raises(RoutingError):
        adapters.coerce_messages(5, [])  # type: ignore[arg-type]
    with pytest.raises(RoutingError):
        adapters.coerce_config(None, {})  # type: ignore[arg-type]
