"""generateContent requests: config mapping, the thinking table, messages (spec 04 §4, 05).

Every expected value below is written from spec 05 (the row it comes from is named), not from
the builder's output.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

import adapters
from adapters._google.thinking import Mode, model_mode, thinking_level_for
from mmsp_core import (
    InvalidMessageError,
    RoutingError,
    UnsupportedContentError,
    UnsupportedOperationError,
    UnsupportedParameterError,
)
from mmsp_core.model import (
    ImageUrlDone,
    InlineDataDone,
    InlineThinkingDone,
    TextDone,
    ThinkingDone,
    ThinkingLevel,
    ToolCallDone,
    ToolResultDone,
    UniConfig,
    UniMessage,
)
from mmsp_core.request import HTTPRequest

CLIENT = "google-genai"
LEVELS = ["none", "low", "medium", "high", "xhigh", "max"]
HELLO = [UniMessage("user", (TextDone("Hello"),))]
PNG = b"\x89PNG\r\n\x1a\n"
PNG_URI = "data:image/png;base64," + base64.b64encode(PNG).decode()


def request(model: str, config: Any = None, messages: Any = None) -> HTTPRequest:
    return adapters.build_request(CLIENT, model, HELLO if messages is None else messages, config)


def body(model: str, config: Any = None, messages: Any = None) -> Any:
    return json.loads(request(model, config, messages).body)


def sent_level(model: str, level: str) -> Any:
    thinking = body(model, {"thinking_level": level}).get("generationConfig", {}).get(
        "thinkingConfig", {}
    )
    return thinking.get("thinkingLevel")


# --------------------------------------------------------------------------------------------
# The thinking table (05 §2.3): one case per row x level, every example id of each row
# --------------------------------------------------------------------------------------------

# row -> (example ids, levels none..max), google-genai's upper-case values.
TABLE: dict[str, tuple[tuple[str, ...], list[str | None]]] = {
    "image models (-image)": (
        ("gemini-3.1-flash-image", "gemini-3.1-flash-lite-image", "gemini-3-pro-image"),
        ["MINIMAL", "MINIMAL", "HIGH", "HIGH", "HIGH", "HIGH"],
    ),
    "Gemini 3 Pro (gemini-3-pro)": (
        ("gemini-3-pro-preview",),
        ["LOW", "LOW", "HIGH", "HIGH", "HIGH", "HIGH"],
    ),
    "other Pro (-pro)": (
        ("gemini-3.1-pro-preview", "gemini-4-pro"),
        ["LOW", "LOW", "MEDIUM", "HIGH", "HIGH", "HIGH"],
    ),
    "3.7 / 3.8 / 4 Argon": (
        ("gemini-3.8-flash", "gemini-3.7-flash", "gemini-4-argon"),
        ["LOW", "LOW", "MEDIUM", "HIGH", "HIGH", "HIGH"],
    ),
    "everything else": (
        ("gemini-3.6-flash", "gemini-3.5-flash", "gemini-3.5-flash-lite",
         "gemini-3-flash-preview", "gemini-9-flash"),
        ["MINIMAL", "LOW", "MEDIUM", "HIGH", "HIGH", "HIGH"],
    ),
    "TTS (tts; nothing sent)": (
        ("gemini-3.8-flash-tts", "gemini-3.1-flash-tts-preview"),
        [None] * 6,
    ),
}
ROWS = [
    pytest.param(model, level, expected, id=f"{row}: {model} {level}")
    for row, (models, values) in TABLE.items()
    for model in models
    for level, expected in zip(LEVELS, values, strict=True)
]


@pytest.mark.parametrize(("model", "level", "expected"), ROWS)
def test_thinking_level_table(model: str, level: str, expected: str | None) -> None:
    assert sent_level(model, level) == expected
    # The shared rule google-official reads gives the same level in lower case.
    assert thinking_level_for(model, level) == (expected and expected.lower())


@pytest.mark.parametrize("level", LEVELS)
def test_embedding_ids_take_no_thinking_level(level: str) -> None:
    # Modes first (05 §2.3): an embedding id never reaches the generation rows.
    assert model_mode("gemini-embedding-2") is Mode.EMBEDDING
    assert thinking_level_for("gemini-embedding-2", level) is None


def test_embedding_ids_belong_to_the_embedding_protocol() -> None:
    from adapters.google_genai.profiles import GEMINI_API
    from adapters.google_genai.request import build_request

    with pytest.raises(UnsupportedOperationError):
        build_request(CLIENT, GEMINI_API, "gemini-embedding-2", HELLO, UniConfig())


def test_tts_is_decided_before_the_generation_rows() -> None:
    # gemini-3.8-flash-tts must not match the gemini-3.8 row: TTS rejects a thinking key.
    assert model_mode("gemini-3.8-flash-tts") is Mode.TTS
    generation = body("gemini-3.8-flash-tts", {"thinking_level": "high"})["generationConfig"]
    assert "thinkingConfig" not in generation


def test_rows_match_the_lower_cased_id_and_the_id_is_sent_as_given() -> None:
    assert sent_level("Gemini-3-Pro-Preview", "medium") == "HIGH"
    assert request("Gemini-3-Pro-Preview").path.startswith("/v1/models/Gemini-3-Pro-Preview:")


# 05 §2.9, the Gemini cases pinned by the reference tests (google-genai: upper case).
PINNED = [
    ("gemini-3.1-pro-preview", "none", "LOW"),
    ("gemini-3.1-pro-preview", "low", "LOW"),
    ("gemini-3.1-pro-preview", "medium", "MEDIUM"),
    ("gemini-3.1-pro-preview", "high", "HIGH"),
    ("gemini-3.1-pro-preview", "xhigh", "HIGH"),
    ("gemini-3.1-pro-preview", "max", "HIGH"),
    ("gemini-3-pro-preview", "none", "LOW"),
    ("gemini-3-pro-preview", "medium", "HIGH"),
    ("gemini-3.1-flash-image", "none", "MINIMAL"),
    ("gemini-3.1-flash-image", "low", "MINIMAL"),
    ("gemini-3.1-flash-image", "medium", "HIGH"),
    ("gemini-3-pro-image", "low", "MINIMAL"),
    ("gemini-3-flash-preview", "none", "MINIMAL"),
    ("gemini-3.5-flash", "medium", "MEDIUM"),
    ("gemini-4-pro", "none", "LOW"),
    ("gemini-9-flash", "none", "MINIMAL"),
    ("gemini-3.8-flash", "none", "LOW"),
    ("gemini-3.8-flash", "max", "HIGH"),
    ("gemini-3.7-flash", "none", "LOW"),
    ("gemini-3.7-flash", "low", "LOW"),
    ("gemini-3.7-flash", "medium", "MEDIUM"),
    ("gemini-3.7-flash", "high", "HIGH"),
    ("gemini-3.7-flash", "xhigh", "HIGH"),
    ("gemini-3.7-flash", "max", "HIGH"),
    ("gemini-3.6-flash", "none", "MINIMAL"),
    ("gemini-3.5-flash-lite", "none", "MINIMAL"),
]


@pytest.mark.parametrize(("model", "level", "expected"), PINNED)
def test_pinned_cases(model: str, level: str, expected: str) -> None:
    assert sent_level(model, level) == expected


def test_pinned_full_request_nests_the_level_in_generation_config() -> None:
    sent = body("gemini-3.1-pro-preview", {"thinking_level": "none"})
    assert sent["generationConfig"]["thinkingConfig"] == {"thinkingLevel": "LOW"}
    assert "thinkingConfig" not in sent


@pytest.mark.parametrize("level", list(ThinkingLevel))
@pytest.mark.parametrize("model", ["gemini-3.8-flash", "gemini-3.8-flash-tts", "x", "tts-image"])
def test_no_level_ever_raises(model: str, level: ThinkingLevel) -> None:
    request(model, UniConfig(thinking_level=level))


# --------------------------------------------------------------------------------------------
# Config mapping (05 §3, §4.4)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "thinking"),
    [
        ({"thinking_summary": True}, {"includeThoughts": True}),
        ({"thinking_summary": False}, {"includeThoughts": False}),
        ({"thinking_summary": True, "thinking_level": "high"},
         {"thinkingLevel": "HIGH", "includeThoughts": True}),
        ({}, None),
    ],
)
def test_thinking_summary_is_include_thoughts(config: Any, thinking: Any) -> None:
    assert body("gemini-3.8-flash", config).get("generationConfig", {}).get(
        "thinkingConfig"
    ) == thinking


REJECTED = [
    ("gemini-3.8-flash", {"temperature": 0.5}, "temperature"),
    ("gemini-3.8-flash", {"temperature": 1.0}, "temperature"),
    # Temperature is checked first (05 §4.4).
    ("gemini-3.8-flash", {"temperature": 1.0, "fast_mode": True}, "temperature"),
    ("gemini-3.8-flash", {"prompt_caching": "disable"}, "prompt_caching"),
    ("gemini-3.8-flash", {"prompt_caching": "enhance"}, "prompt_caching"),
    ("gemini-3.8-flash", {"fast_mode": True}, "fast_mode"),
    ("gemini-3.8-flash", {"tool_choice": []}, "tool_choice"),
    ("gemini-3.8-flash-tts", {"temperature": 0.2}, "temperature"),
    ("gemini-3.8-flash-tts", {"fast_mode": True}, "fast_mode"),
    ("gemini-3.8-flash-tts", {"prompt_caching": "disable"}, "prompt_caching"),
    ("gemini-3.8-flash-tts", {"tts_config": [{"voice": "A"}, {"voice": "B"}]}, "tts_config"),
    ("gemini-3.8-flash-tts",
     {"tts_config": [{"voice": "A", "speaker": "x"}, {"voice": "B"}]}, "tts_config"),
    ("gemini-3.8-flash-tts",
     {"tts_config": [{"voice": v, "speaker": v} for v in "ABC"]}, "tts_config"),
]


@pytest.mark.parametrize(("model", "config", "parameter"), REJECTED)
def test_unsupported_parameters(model: str, config: Any, parameter: str) -> None:
    with pytest.raises(UnsupportedParameterError) as caught:
        request(model, config)
    assert caught.value.parameter == parameter
    with pytest.raises(UnsupportedParameterError):
        adapters.check_config(CLIENT, model, config)


def test_config_errors_come_before_message_errors() -> None:
    with pytest.raises(UnsupportedParameterError):
        request("gemini-3.8-flash", {"fast_mode": True}, [UniMessage("user", (ImageUrlDone("x"),))])


def test_minimal_request() -> None:
    sent = request("gemini-3.8-flash")
    assert sent.method == "POST"
    assert sent.path == "/v1/models/gemini-3.8-flash:streamGenerateContent?alt=sse"
    # The key is added by the I/O layer, in x-goog-api-key and never in the URL (08 D17).
    assert all(name.lower() != "x-goog-api-key" for name, _ in sent.headers)
    assert "key=" not in sent.path
    assert json.loads(sent.body) == {"contents": [{"role": "user", "parts": [{"text": "Hello"}]}]}
    assert adapters.auth_headers(CLIENT, "k") == (("x-goog-api-key", "k"),)


def test_generation_settings_nest_in_generation_config() -> None:
    sent = body(
        "gemini-3.1-flash-image",
        {
            "max_tokens": 100,
            "prompt_caching": "enable",
            "fast_mode": False,
            "system_prompt": "Be brief.",
            "image_config": {"aspect_ratio": "16:9", "image_size": "2K"},
            "thinking_level": "high",
        },
    )
    assert sent["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert sent["generationConfig"] == {
        "maxOutputTokens": 100,
        "thinkingConfig": {"thinkingLevel": "HIGH"},
        "imageConfig": {"aspectRatio": "16:9", "imageSize": "2K"},
    }
    assert set(sent) == {"contents", "systemInstruction", "generationConfig"}


TOOL = {"name": "get_weather", "description": "Weather", "parameters": {"type": "object"}}


@pytest.mark.parametrize(
    ("choice", "calling"),
    [
        ("auto", {"mode": "AUTO"}),
        ("none", {"mode": "NONE"}),
        ("required", {"mode": "ANY"}),
        (["get_weather"], {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}),
    ],
)
def test_tools_and_tool_choice(choice: Any, calling: Any) -> None:
    sent = body("gemini-3.8-flash", {"tools": [TOOL], "tool_choice": choice})
    assert sent["tools"] == [{"functionDeclarations": [TOOL]}]
    assert sent["toolConfig"] == {"functionCallingConfig": calling}


def test_tool_choice_without_tools_is_not_sent() -> None:
    assert "toolConfig" not in body("gemini-3.8-flash", {"tool_choice": "required"})


@pytest.mark.parametrize(
    ("tts", "speech"),
    [
        (None, {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}}),
        ([], {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}}),
        ([{"voice": "Puck"}], {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Puck"}}}),
        (
            [{"voice": "Puck", "speaker": "Joe"}, {"voice": "Kore", "speaker": "Jane"}],
            {"multiSpeakerVoiceConfig": {"speakerVoiceConfigs": [
                {"speaker": "Joe", "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Puck"}}},
                {"speaker": "Jane", "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}},
            ]}},
        ),
    ],
)
def test_tts_requests_carry_only_speech_settings(tts: Any, speech: Any) -> None:
    config = {
        "tts_config": tts, "max_tokens": 50, "thinking_level": "high", "system_prompt": "S",
        "tools": [TOOL], "tool_choice": "auto", "image_config": {"aspect_ratio": "1:1"},
    }
    sent = body("gemini-3.1-flash-tts-preview", config, [UniMessage.user("Joe: Hello")])
    assert sent == {
        "contents": [{"role": "user", "parts": [{"text": "Joe: Hello"}]}],
        "generationConfig": {
            "responseModalities": ["AUDIO"], "speechConfig": speech, "maxOutputTokens": 50,
        },
    }


def test_tts_sends_the_text_of_the_last_message_only() -> None:
    messages = [
        UniMessage("user", (TextDone("earlier"), ImageUrlDone(PNG_URI))),
        UniMessage("user", (TextDone("Say "), TextDone("hi"))),
    ]
    assert body("gemini-3.8-flash-tts", None, messages)["contents"] == [
        {"role": "user", "parts": [{"text": "Say hi"}]}
    ]
    with pytest.raises(UnsupportedContentError) as caught:
        request("gemini-3.8-flash-tts", None, [UniMessage("user", (ImageUrlDone(PNG_URI),))])
    assert caught.value.item_type == "image_url"


TWO_SPEAKERS = {"tts_config": [{"voice": "Puck", "speaker": "Alice"},
                               {"voice": "Kore", "speaker": "Bob"}]}


@pytest.mark.parametrize("model", ["gemini-3.8-flash-tts", "Gemini-3.8-Flash-Lite-TTS"])
def test_a_gemini_3_8_speech_model_takes_a_two_speaker_script_split_without_labels(
    model: str,
) -> None:
    """05 §1: ``gemini-3.8`` + TTS + two speakers -> one part per turn, its label removed and
    its speaker in ``speechMetadata`` (the 3.8 speech models read no labels)."""
    script = [UniMessage.user("Alice: Hi\nBob: Hello")]
    assert body(model, TWO_SPEAKERS, script)["contents"] == [{"role": "user", "parts": [
        {"text": "Hi", "speechMetadata": {"speaker": "Alice"}},
        {"text": "Hello", "speechMetadata": {"speaker": "Bob"}},
    ]}]


def test_blank_lines_of_a_script_are_passed_over() -> None:
    # A blank line (spaces included) is no turn: scripts often separate turns so.
    script = [UniMessage.user("\n  Alice: Hi, Bob: how are you? \n \n\nBob:Fine.\n",
                              TextDone("Alice:\nBob: Good."))]
    assert body("gemini-3.8-flash-tts", TWO_SPEAKERS, script)["contents"][0]["parts"] == [
        {"text": "Hi, Bob: how are you?", "speechMetadata": {"speaker": "Alice"}},
        {"text": "Fine.", "speechMetadata": {"speaker": "Bob"}},
        {"text": "Good.", "speechMetadata": {"speaker": "Bob"}},
    ]


def test_other_speech_models_read_the_labelled_script_whole() -> None:
    script = [UniMessage.user("Alice: Hi\n\nBob: Hello")]
    assert body("gemini-3.1-flash-tts-preview", TWO_SPEAKERS, script)["contents"] == [
        {"role": "user", "parts": [{"text": "Alice: Hi\n\nBob: Hello"}]}]
    one = {"tts_config": [{"voice": "Puck", "speaker": "Alice"}]}
    assert body("gemini-3.8-flash-tts", one, script)["contents"] == [
        {"role": "user", "parts": [{"text": "Alice: Hi\n\nBob: Hello"}]}]


@pytest.mark.parametrize("model", ["gemini-3.8-flash-tts", "gemini-3.1-flash-tts-preview"])
@pytest.mark.parametrize(
    "text",
    ["Alice: Hi\nand then she left", "Narrator: once\nAlice: Hi", "no labels at all",
     "Alice: Hi\nCarol: Hello", "alice: Hi", "\n \n", "Alice:\nBob:  "],
    ids=["unlabeled-line", "other-speaker-first", "no-label", "unknown-speaker", "case",
         "blank", "nothing-said"],
)
def test_a_two_speaker_script_line_without_a_speakers_label_is_refused_before_the_request(
    model: str, text: str
) -> None:
    with pytest.raises(InvalidMessageError) as caught:
        request(model, TWO_SPEAKERS, [*HELLO, UniMessage.user(text)])
    assert (caught.value.item_type, caught.value.message_index) == ("text", 1)


def test_only_generate_content_rows_are_served_here() -> None:
    from adapters.google_genai.request import build_request

    with pytest.raises(RoutingError):
        build_request("x", object(), "gemini-3.8-flash", HELLO, UniConfig())


# --------------------------------------------------------------------------------------------
# Messages (05 §5)
# --------------------------------------------------------------------------------------------


def contents(messages: list[UniMessage]) -> Any:
    return body("gemini-3.8-flash", None, messages)["contents"]


def test_user_media_is_inline_data() -> None:
    sent = contents([UniMessage("user", (
        TextDone("Look"), ImageUrlDone(PNG_URI), InlineDataDone(b"RIFF", "audio/wav"),
    ))])
    encoded = base64.b64encode(PNG).decode()
    assert sent == [{"role": "user", "parts": [
        {"text": "Look"},
        {"inlineData": {"mimeType": "image/png", "data": encoded}},
        {"inlineData": {"mimeType": "audio/wav", "data": base64.b64encode(b"RIFF").decode()}},
    ]}]


@pytest.mark.parametrize("url", ["https://example.com/cat.png", "data:image/png,notbase64",
                                 "data:image/png;base64,@@"])
def test_an_image_that_is_no_data_uri_is_refused(url: str) -> None:
    with pytest.raises(InvalidMessageError) as caught:
        contents([UniMessage("user", (TextDone("x"), ImageUrlDone(url)))])
    assert (caught.value.item_type, caught.value.message_index) == ("image_url", 0)


def test_model_turns_replay_signatures_on_their_parts() -> None:
    sent = contents([
        UniMessage("user", (TextDone("Draw"),)),
        UniMessage("assistant", (
            InlineThinkingDone(b"draft", "image/png", {"signature": "S1"}),
            InlineDataDone(b"final", "image/png"),
            TextDone("", {"signature": "S2"}),
        )),
        UniMessage("user", (TextDone("Again"),)),
    ])
    assert sent[1] == {"role": "model", "parts": [
        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(b"draft").decode()},
         "thought": True, "thoughtSignature": "S1"},
        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(b"final").decode()}},
        {"text": "", "thoughtSignature": "S2"},
    ]}


def test_a_thought_signature_moves_to_the_first_call_and_empty_thoughts_go() -> None:
    sent = contents([
        UniMessage("user", (TextDone("Weather?"),)),
        UniMessage("assistant", (
            ThinkingDone("Let me check", {"signature": "T"}),
            ThinkingDone(""),
            TextDone("Checking."),
            ToolCallDone("get_weather", "get_weather", {"city": "Paris"}),
            ToolCallDone("get_time", "call_2", {}),
        )),
        UniMessage("user", (
            ToolResultDone("Sunny", "get_weather"), ToolResultDone("noon", "call_2"),
        )),
    ])
    assert sent[1] == {"role": "model", "parts": [
        {"text": "Let me check", "thought": True},
        {"text": "Checking."},
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
         "thoughtSignature": "T"},
        {"functionCall": {"name": "get_time", "args": {}, "id": "call_2"}},
    ]}
    assert sent[2] == {"role": "user", "parts": [
        {"functionResponse": {"name": "get_weather", "response": {"result": "Sunny"}}},
        {"functionResponse": {"name": "get_time", "response": {"result": "noon"}, "id": "call_2"}},
    ]}


def test_without_a_call_a_thought_signature_moves_to_the_next_unsigned_part() -> None:
    sent = contents([
        UniMessage("user", (TextDone("Hi"),)),
        UniMessage("assistant", (ThinkingDone("hm", {"signature": "T"}), TextDone("Hello"))),
        UniMessage("user", (TextDone("Bye"),)),
    ])
    assert sent[1]["parts"] == [{"text": "hm", "thought": True},
                                {"text": "Hello", "thoughtSignature": "T"}]


def test_an_unsigned_first_call_gets_the_placeholder_signature() -> None:
    sent = contents([
        UniMessage("user", (TextDone("Go"),)),
        UniMessage("assistant", (ToolCallDone("f", "f", {}), ToolCallDone("g", "g", {}))),
        UniMessage("user", (ToolResultDone("1", "f"), ToolResultDone("2", "g"))),
    ])
    assert sent[1]["parts"] == [
        {"functionCall": {"name": "f", "args": {}},
         "thoughtSignature": "skip_thought_signature_validator"},
        {"functionCall": {"name": "g", "args": {}}},
    ]


def test_tool_result_images_go_with_the_function_response() -> None:
    sent = contents([
        UniMessage("user", (TextDone("Shot?"),)),
        UniMessage("assistant", (ToolCallDone("shot", "s1", {}, {"signature": "S"}),)),
        UniMessage("user", (ToolResultDone("done", "s1", (PNG_URI,)),)),
    ])
    assert sent[2]["parts"] == [{"functionResponse": {
        "name": "shot", "response": {"result": "done"}, "id": "s1",
        "parts": [{"inlineData": {"mimeType": "image/png",
                                  "data": base64.b64encode(PNG).decode()}}],
    }}]


def test_a_tool_result_without_its_id_is_refused() -> None:
    with pytest.raises(InvalidMessageError) as caught:
        contents([UniMessage("user", (ToolResultDone("x", ""),))])
    assert caught.value.item_type == "tool_result"


def test_a_message_of_only_thinking_is_refused() -> None:
    with pytest.raises(InvalidMessageError) as caught:
        contents([
            UniMessage("user", (TextDone("Hi"),)),
            UniMessage("assistant", (ThinkingDone("hm", {"signature": "T"}),)),
        ])
    assert caught.value.message_index == 1
