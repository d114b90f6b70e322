"""Requests of google-official on the Gemini Interactions API (spec 04 §4, 05 §2.3, §3, §4.4,
§5, 08 D10, D17, D64, D67).

The thinking-level rules themselves are ``adapters._google.thinking``'s, tested with the
generateContent client; here every cell of the 05 §2.3 table is checked as the request key
google-official sends (``generation_config.thinking_level``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import adapters
from mmsp_core import (
    InvalidMessageError,
    MMSPError,
    UnsupportedContentError,
    UnsupportedOperationError,
    UnsupportedParameterError,
)
from mmsp_core.model import (
    ImageConfig,
    ImageUrlDone,
    InlineDataDone,
    InlineThinkingDone,
    Item,
    PromptCaching,
    SpeakerConfig,
    TextDone,
    ThinkingDone,
    ThinkingLevel,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniConfig,
    UniMessage,
)
from mmsp_core.testing.strategies import configs, messages

CLIENT = "google-official"
MODEL = "gemini-3.8-flash"
SKIP = "skip_thought_signature_validator"
PNG = b"\x89PNG\r\n\x1a\n-pixels"
PNG_URI = "data:image/png;base64," + base64.b64encode(PNG).decode()
WEATHER = ToolSchema("get_weather", "The weather.", {"type": "object"})


def user(*items: Item) -> UniMessage:
    return UniMessage("user", tuple(items))  # type: ignore[arg-type]


def assistant(*items: Item) -> UniMessage:
    return UniMessage("assistant", tuple(items))  # type: ignore[arg-type]


HELLO = user(TextDone("Hello"))


def build(
    config: UniConfig | dict[str, Any] | None = None,
    messages: Sequence[UniMessage] = (HELLO,),
    model: str = MODEL,
) -> dict[str, Any]:
    request = adapters.build_request(CLIENT, model, list(messages), config)
    body: dict[str, Any] = json.loads(request.body)
    return body


def steps(*messages: UniMessage) -> list[dict[str, Any]]:
    return build(messages=messages)["input"]  # type: ignore[no-any-return]


# -- the request -------------------------------------------------------------------------------


def test_the_request_line_headers_and_fixed_keys() -> None:
    request = adapters.build_request(CLIENT, MODEL, [HELLO], None)
    assert (request.method, request.path) == ("POST", "/v1/interactions")
    assert dict(request.headers) == {"content-type": "application/json",
                                     "accept": "text/event-stream"}
    body = json.loads(request.body)
    assert list(body) == ["model", "input", "stream", "store"]
    assert body["input"] == [{"type": "user_input", "content": [{"type": "text",
                                                                 "text": "Hello"}]}]
    assert (body["model"], body["stream"], body["store"]) == (MODEL, True, False)
    # The key travels in the x-goog-api-key header, never in the URL (08 D17).
    assert adapters.auth_headers(CLIENT, "AIza-k") == (("x-goog-api-key", "AIza-k"),)
    assert "key=" not in request.path


def test_the_model_id_is_sent_as_given() -> None:
    assert build(model="Gemini-3.8-Flash")["model"] == "Gemini-3.8-Flash"


def test_the_config_keys_in_body_order() -> None:
    body = build(UniConfig(
        max_tokens=100, thinking_level=ThinkingLevel.HIGH, thinking_summary=False,
        system_prompt="Be brief.", tools=(WEATHER,), tool_choice="auto", fast_mode=True,
        image_config=ImageConfig(aspect_ratio="16:9"), prompt_caching=PromptCaching.ENABLE,
        trace_id="ignored",
    ))
    assert list(body) == ["model", "input", "stream", "store", "system_instruction",
                          "generation_config", "tools", "response_format", "service_tier"]
    assert body["system_instruction"] == "Be brief."
    assert body["generation_config"] == {
        "max_output_tokens": 100, "thinking_level": "high", "thinking_summaries": "none",
        "tool_choice": "auto",
    }
    assert body["tools"] == [{"type": "function", "name": "get_weather",
                              "description": "The weather.", "parameters": {"type": "object"}}]
    assert body["response_format"] == [{"type": "text"}, {"type": "image", "aspect_ratio": "16:9"}]
    assert body["service_tier"] == "priority"


def test_a_tool_without_parameters_sends_none() -> None:
    body = build(UniConfig(tools=(ToolSchema("now", "The time."),)))
    assert body["tools"] == [{"type": "function", "name": "now", "description": "The time."}]


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "any"),
        (("get_weather", "now"), {"allowed_tools": {"mode": "any",
                                                    "tools": ["get_weather", "now"]}}),
    ],
)
def test_tool_choice(choice: Any, sent: Any) -> None:
    body = build(UniConfig(tools=(WEATHER,), tool_choice=choice))
    assert body["generation_config"]["tool_choice"] == sent


def test_tool_choice_is_sent_only_with_tools() -> None:
    assert "generation_config" not in build(UniConfig(tool_choice="required"))


@pytest.mark.parametrize(
    ("config", "parameter"),
    [
        ({"temperature": 1.0}, "temperature"),
        ({"temperature": 0.2}, "temperature"),
        # temperature is checked first, before any other refusal.
        ({"temperature": 0.5, "prompt_caching": "disable", "tool_choice": []}, "temperature"),
        ({"prompt_caching": "disable"}, "prompt_caching"),
        ({"prompt_caching": "enhance"}, "prompt_caching"),
        ({"tool_choice": []}, "tool_choice"),
        ({"tools": [{"name": "f", "description": ""}], "tool_choice": []}, "tool_choice"),
    ],
)
def test_refused_config(config: dict[str, Any], parameter: str) -> None:
    with pytest.raises(UnsupportedParameterError) as caught:
        build(config)
    assert caught.value.parameter == parameter
    with pytest.raises(UnsupportedParameterError):
        adapters.check_config(CLIENT, MODEL, config)


def test_config_errors_come_before_message_errors() -> None:
    with pytest.raises(UnsupportedParameterError):
        build({"temperature": 0.3}, messages=[user(ThinkingDone("only"))])


def test_an_embedding_id_is_not_an_interactions_model() -> None:
    """08 D64: the client row sends embedding ids to google-embedding; the Interactions
    builder itself refuses one (through the protocol name, which stands for the client)."""
    with pytest.raises(UnsupportedOperationError, match="google-embedding"):
        adapters.build_request("google-interactions", "gemini-embedding-2", [HELLO], None)
    spec = adapters.client_spec(CLIENT)
    assert spec.speaks("gemini-embedding-2")[0] == "google-embedding"
    assert spec.speaks(MODEL)[0] == "google-interactions"


# -- thinking levels (05 §2.3, every cell) and summaries (05 §3) ---------------------------

L = ThinkingLevel
LEVELS = (L.NONE, L.LOW, L.MEDIUM, L.HIGH, L.XHIGH, L.MAX)
#: (model ids of the row, what each of LEVELS sends), 05 §2.3.
THINKING_TABLE = [
    (("gemini-3.1-flash-image", "gemini-3.1-flash-lite-image", "gemini-3-pro-image"),
     ("minimal", "minimal", "high", "high", "high", "high")),
    (("gemini-3-pro-preview",), ("low", "low", "high", "high", "high", "high")),
    (("gemini-3.1-pro-preview", "gemini-4-pro"), ("low", "low", "medium", "high", "high", "high")),
    (("gemini-3.8-flash", "gemini-3.7-flash", "gemini-4-argon"),
     ("low", "low", "medium", "high", "high", "high")),
    (("gemini-3.6-flash", "gemini-3.5-flash", "gemini-3.5-flash-lite", "gemini-3-flash-preview",
      "gemini-9-flash"), ("minimal", "low", "medium", "high", "high", "high")),
]
THINKING_CASES = [
    (model, level, sent)
    for models, row in THINKING_TABLE
    for model in models
    for level, sent in zip(LEVELS, row, strict=True)
]


@pytest.mark.parametrize(("model", "level", "sent"), THINKING_CASES)
def test_thinking_level_table(model: str, level: ThinkingLevel, sent: str) -> None:
    body = build({"thinking_level": level.value}, model=model)
    assert body["generation_config"] == {"thinking_level": sent}


@pytest.mark.parametrize(
    ("model", "level", "sent"),
    [
        ("gemini-3.1-pro-preview", "none", "low"), ("gemini-3.1-pro-preview", "max", "high"),
        ("gemini-3-pro-preview", "none", "low"), ("gemini-3-pro-preview", "medium", "high"),
        ("gemini-3.1-flash-image", "none", "minimal"), ("gemini-3.1-flash-image", "low", "minimal"),
        ("gemini-3.1-flash-image", "medium", "high"), ("gemini-3-pro-image", "low", "minimal"),
        ("gemini-3-flash-preview", "none", "minimal"), ("gemini-3.5-flash", "medium", "medium"),
        ("gemini-4-pro", "none", "low"), ("gemini-9-flash", "none", "minimal"),
        ("gemini-3.8-flash", "none", "low"), ("gemini-3.8-flash", "max", "high"),
        ("gemini-3.7-flash", "none", "low"), ("gemini-3.7-flash", "xhigh", "high"),
        ("gemini-3.6-flash", "none", "minimal"), ("gemini-3.5-flash-lite", "none", "minimal"),
    ],
)
def test_pinned_cases_of_the_reference(model: str, level: str, sent: str) -> None:
    """05 §2.9, the Gemini cases, read from the full request as the reference test does."""
    assert build({"thinking_level": level}, model=model)["generation_config"]["thinking_level"] \
        == sent


@pytest.mark.parametrize(("summary", "sent"), [(True, "auto"), (False, "none")])
def test_thinking_summary(summary: bool, sent: str) -> None:
    body = build({"thinking_summary": summary})
    assert body["generation_config"] == {"thinking_summaries": sent}


def test_thinking_level_never_raises_and_an_unknown_level_is_a_wire_format_error() -> None:
    for level in LEVELS:
        adapters.check_config(CLIENT, "gemini-42-ultra", {"thinking_level": level.value})
    with pytest.raises(Exception) as caught:
        build({"thinking_level": "extreme"})
    assert type(caught.value).__name__ == "WireFormatError"


# -- speech models (05 §4.4, §5) ---------------------------------------------------------------

TTS = "gemini-3.8-flash-tts"


@pytest.mark.parametrize(
    "model", [TTS, "gemini-3.1-flash-tts-preview", "Gemini-3.8-Flash-Lite-TTS"]
)
def test_a_speech_model_takes_only_speech_settings(model: str) -> None:
    body = build({
        "max_tokens": 500, "thinking_level": "high", "thinking_summary": True,
        "system_prompt": "ignored", "tools": [{"name": "f", "description": ""}],
        "tool_choice": "auto", "image_config": {"aspect_ratio": "1:1"}, "fast_mode": True,
    }, model=model)
    assert list(body) == ["model", "input", "stream", "store", "generation_config",
                          "response_format", "service_tier"]
    assert body["generation_config"] == {"max_output_tokens": 500,
                                         "speech_config": [{"voice": "Kore"}]}
    assert body["response_format"] == {"type": "audio"}
    assert body["service_tier"] == "priority"


@pytest.mark.parametrize(
    ("speakers", "sent"),
    [
        (None, [{"voice": "Kore"}]),
        ((), [{"voice": "Kore"}]),
        ((SpeakerConfig("Puck"),), [{"voice": "Puck"}]),
        ((SpeakerConfig("Puck", "Ann"),), [{"voice": "Puck"}]),
        ((SpeakerConfig("Puck", "Ann"), SpeakerConfig("Kore", "Bob")),
         [{"speaker": "Ann", "voice": "Puck"}, {"speaker": "Bob", "voice": "Kore"}]),
    ],
)
def test_speech_config(speakers: tuple[SpeakerConfig, ...] | None, sent: Any) -> None:
    script = user(TextDone("Ann: Hi!\nBob: Hello."))
    body = build(UniConfig(tts_config=speakers), messages=[script], model=TTS)
    assert body["generation_config"]["speech_config"] == sent


@pytest.mark.parametrize(
    "speakers",
    [
        (SpeakerConfig("Puck", "Ann"), SpeakerConfig("Kore")),
        (SpeakerConfig("A", "a"), SpeakerConfig("B", "b"), SpeakerConfig("C", "c")),
    ],
)
def test_speech_config_refused(speakers: tuple[SpeakerConfig, ...]) -> None:
    with pytest.raises(UnsupportedParameterError) as caught:
        build(UniConfig(tts_config=speakers), model=TTS)
    assert caught.value.parameter == "tts_config"


def test_temperature_and_prompt_caching_are_refused_on_speech_models_too() -> None:
    for config, parameter in (({"temperature": 1}, "temperature"),
                              ({"prompt_caching": "disable"}, "prompt_caching")):
        with pytest.raises(UnsupportedParameterError) as caught:
            build(config, model=TTS)
        assert caught.value.parameter == parameter


def test_a_speech_model_gets_the_last_message_text_only() -> None:
    history = [user(TextDone("earlier"), ImageUrlDone(PNG_URI)),
               assistant(TextDone("fine")), user(TextDone("Say "), TextDone("cheese"))]
    assert build(messages=history, model=TTS)["input"] == [
        {"type": "user_input", "content": [{"type": "text", "text": "Say "},
                                           {"type": "text", "text": "cheese"}]},
    ]
    with pytest.raises(UnsupportedContentError) as caught:
        build(messages=[user(TextDone("Read this"), ImageUrlDone(PNG_URI))], model=TTS)
    assert caught.value.item_type == "image_url"


TWO = UniConfig(tts_config=(SpeakerConfig("Puck", "Ann"), SpeakerConfig("Kore", "Bob")))
SCRIPT = user(TextDone("Ann: Hi Bob!\n\n  Ann: How are you?\n"), TextDone("Bob: Fine: thanks."))


def said(speaker: str, text: str) -> dict[str, Any]:
    """A turn of a split script as the Interactions API takes it (05 §1)."""
    return {"type": "text", "text": text,
            "annotations": [{"type": "speech_metadata", "speaker": speaker}]}


@pytest.mark.parametrize("model", ["gemini-3.8-flash-tts", "gemini-3.8-flash-lite-tts"])
def test_a_gemini_3_8_speech_model_takes_a_two_speaker_script_split_into_turns(
    model: str,
) -> None:
    """05 §1: ``gemini-3.8`` + TTS + two speakers -> script split, one text per turn, its
    label removed and its speaker in a ``speech_metadata`` annotation; blank lines are no
    turns."""
    assert build(TWO, messages=[SCRIPT], model=model)["input"] == [
        {"type": "user_input", "content": [
            said("Ann", "Hi Bob!"), said("Ann", "How are you?"), said("Bob", "Fine: thanks."),
        ]},
    ]


def test_the_reference_example_of_two_speakers() -> None:
    two = UniConfig(tts_config=(SpeakerConfig("Puck", "Alice"), SpeakerConfig("Kore", "Bob")))
    script = user(TextDone("Alice: Hi\nBob: Hello"))
    assert build(two, messages=[script], model=TTS)["input"][0]["content"] == [
        said("Alice", "Hi"), said("Bob", "Hello")]


def test_other_speech_models_and_one_voice_keep_the_script_whole() -> None:
    whole = [{"type": "text", "text": "Ann: Hi Bob!\n\n  Ann: How are you?\n"},
             {"type": "text", "text": "Bob: Fine: thanks."}]
    assert build(TWO, messages=[SCRIPT], model="gemini-3.1-flash-tts-preview")["input"] == [
        {"type": "user_input", "content": whole},
    ]
    one = UniConfig(tts_config=(SpeakerConfig("Puck", "Ann"),))
    assert build(one, messages=[SCRIPT], model=TTS)["input"][0]["content"] == whole


@pytest.mark.parametrize("model", [TTS, "gemini-3.1-flash-tts-preview"])
@pytest.mark.parametrize(
    "text",
    ["Narrator: once upon a time", "Ann: Hi Bob!\nHow are you?", "no labels here",
     "Ann: Hi\nbob: hello", "\n\t\n"],
    ids=["other-speaker", "unlabeled-line", "no-label", "case", "blank"],
)
def test_a_two_speaker_script_line_without_a_speakers_label_is_refused(
    model: str, text: str
) -> None:
    with pytest.raises(InvalidMessageError) as caught:
        build(TWO, messages=[HELLO, user(TextDone(text))], model=model)
    assert (caught.value.item_type, caught.value.message_index) == ("text", 1)


def test_a_speech_request_needs_text() -> None:
    with pytest.raises(InvalidMessageError) as caught:
        build(messages=[HELLO, user(TextDone(""))], model=TTS)
    assert caught.value.message_index == 1


# -- messages (05 §5) --------------------------------------------------------------------------


def test_text_and_media_of_a_message_share_one_step() -> None:
    audio = InlineDataDone(b"\x00\x01", "audio/wav")
    result = steps(user(TextDone("Look"), TextDone(""), ImageUrlDone(PNG_URI), audio,
                        InlineDataDone(b"%PDF", "application/pdf"),
                        ImageUrlDone("https://example.com/cat.png")))
    assert result == [{"type": "user_input", "content": [
        {"type": "text", "text": "Look"},
        {"type": "image", "data": base64.b64encode(PNG).decode(), "mime_type": "image/png"},
        {"type": "audio", "data": "AAE=", "mime_type": "audio/wav"},
        {"type": "document", "data": "JVBERg==", "mime_type": "application/pdf"},
        {"type": "image", "uri": "https://example.com/cat.png"},
    ]}]


def test_a_malformed_data_uri_is_an_invalid_message() -> None:
    with pytest.raises(InvalidMessageError) as caught:
        steps(user(ImageUrlDone("data:image/png;base64,@@@")))
    assert caught.value.item_type == "image_url"


def test_consecutive_thoughts_share_a_step_that_ends_at_the_signed_one() -> None:
    image = InlineThinkingDone(PNG, "image/png")
    result = steps(HELLO, assistant(
        ThinkingDone("one"), ThinkingDone(" two", {"signature": "S1"}),
        ThinkingDone("three"), image, ThinkingDone("", {"signature": "S2"}),
        ThinkingDone(""),  # neither text nor signature: left out
        TextDone("answer"),
    ))
    assert result[1:] == [
        {"type": "thought", "summary": [{"type": "text", "text": "one"},
                                        {"type": "text", "text": " two"}], "signature": "S1"},
        {"type": "thought", "summary": [
            {"type": "text", "text": "three"},
            {"type": "image", "data": base64.b64encode(PNG).decode(), "mime_type": "image/png"},
        ], "signature": "S2"},
        {"type": "model_output", "content": [{"type": "text", "text": "answer"}]},
    ]


def test_calls_and_results() -> None:
    result = steps(
        HELLO,
        assistant(ThinkingDone("hm", {"signature": "S"}),
                  ToolCallDone("get_weather", "call_1", {"city": "Paris"}),
                  ToolCallDone("now", "now", {})),
        user(ToolResultDone("18 C", "call_1"), ToolResultDone("noon", "now"),
             ToolResultDone("seen", "call_9", images=(PNG_URI,))),
    )
    assert result[2:] == [
        {"type": "function_call", "name": "get_weather", "arguments": {"city": "Paris"},
         "id": "call_1"},
        {"type": "function_call", "name": "now", "arguments": {}},
        {"type": "function_result", "name": "get_weather", "result": "18 C", "call_id": "call_1"},
        {"type": "function_result", "name": "now", "result": "noon"},
        {"type": "function_result", "name": "call_9", "result": [
            {"type": "text", "text": "seen"},
            {"type": "image", "data": base64.b64encode(PNG).decode(), "mime_type": "image/png"},
        ]},
    ]


def test_a_tool_result_needs_its_call_id() -> None:
    with pytest.raises(InvalidMessageError) as caught:
        steps(user(ToolResultDone("x", "")))
    assert caught.value.item_type == "tool_result"


def test_a_signature_on_a_non_thinking_item_goes_to_the_opening_thought() -> None:
    """A generateContent history: the signature rides on the call, or on an empty text."""
    result = steps(HELLO, assistant(
        ThinkingDone("plan"), ToolCallDone("f", "f", {}, {"signature": "SIG"}),
    ))
    assert result[1:] == [
        {"type": "thought", "summary": [{"type": "text", "text": "plan"}], "signature": "SIG"},
        {"type": "function_call", "name": "f", "arguments": {}},
    ]
    result = steps(HELLO, assistant(TextDone("answer"), TextDone("", {"signature": "T"})))
    # No opening thought: the signature becomes a thought step of its own, in place; the
    # turn's thoughts then do not come first, so the placeholder opens it.
    assert result[1:] == [
        {"type": "thought", "signature": SKIP},
        {"type": "model_output", "content": [{"type": "text", "text": "answer"}]},
        {"type": "thought", "signature": "T"},
    ]


def test_a_second_signature_on_a_non_thinking_item_is_a_thought_step_of_its_own() -> None:
    result = steps(HELLO, assistant(
        ThinkingDone("plan"),
        ToolCallDone("f", "c1", {}, {"signature": "A"}),
        ToolCallDone("g", "c2", {}, {"signature": "B"}),
    ))
    assert result[1:] == [
        {"type": "thought", "summary": [{"type": "text", "text": "plan"}], "signature": "A"},
        {"type": "function_call", "name": "f", "arguments": {}, "id": "c1"},
        {"type": "thought", "signature": "B"},
        {"type": "function_call", "name": "g", "arguments": {}, "id": "c2"},
    ]


@pytest.mark.parametrize(
    ("items", "placeholder"),
    [
        ((TextDone("plain answer"),), True),
        ((ToolCallDone("f", "c", {}),), True),
        ((ThinkingDone("unsigned"), TextDone("a")), True),
        ((TextDone("a"), ThinkingDone("late", {"signature": "S"}), TextDone("b")), True),
        ((ThinkingDone("signed", {"signature": "S"}), TextDone("a")), False),
    ],
    ids=["text", "call", "unsigned-thought", "thought-not-first", "signed"],
)
def test_the_placeholder_signature_of_model_turns(items: tuple[Item, ...],
                                                  placeholder: bool) -> None:
    result = steps(HELLO, assistant(*items))
    assert (result[1] == {"type": "thought", "signature": SKIP}) is placeholder
    assert sum(step == {"type": "thought", "signature": SKIP} for step in result) == placeholder


def test_a_user_turn_gets_no_placeholder() -> None:
    assert steps(user(TextDone("hi"))) == [
        {"type": "user_input", "content": [{"type": "text", "text": "hi"}]},
    ]


@pytest.mark.parametrize(
    "message",
    [
        assistant(ThinkingDone("only", {"signature": "S"})),
        assistant(ThinkingDone("x"), TextDone("", {"signature": "S"})),
        user(TextDone("")),
    ],
    ids=["only-thinking", "empty-signed-text", "empty-text"],
)
def test_a_message_with_nothing_but_thoughts_is_refused(message: UniMessage) -> None:
    with pytest.raises(InvalidMessageError) as caught:
        steps(HELLO, message)
    assert caught.value.message_index == 1


def test_items_interactions_cannot_take() -> None:
    class Stranger:
        type = "hologram.done"

    with pytest.raises(InvalidMessageError):
        adapters.build_request(CLIENT, MODEL, [user(Stranger())], None)  # type: ignore[arg-type]


def test_extra_body_is_merged_last() -> None:
    body = build({"extra_body": {"generation_config": {"seed": 7}, "background": False},
                  "max_tokens": 9})
    assert body["generation_config"] == {"max_output_tokens": 9, "seed": 7}
    assert body["background"] is False


@given(
    history=st.lists(messages(), min_size=1, max_size=4),
    config=configs(),
    model=st.sampled_from([MODEL, TTS, "gemini-3-pro-image", "gemini-9-flash"]),
)
def test_any_messages_and_config_give_a_request_or_an_mmsp_error(
    history: list[UniMessage], config: UniConfig, model: str
) -> None:
    """08 D59: whatever the caller gives, only ``MMSPError`` leaves the builder, and what it
    builds is a JSON body of typed steps. (Unknown config keys are left out: they only warn.)"""
    try:
        request = adapters.build_request(CLIENT, model, history, attrs.evolve(config, extra={}))
    except MMSPError:
        return
    body = json.loads(request.body)
    assert body["model"] == model
    assert all(isinstance(step, dict) and "type" in step for step in body["input"])
