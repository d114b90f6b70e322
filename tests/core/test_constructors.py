"""The small constructors of the common messages: ordinary values, the same as written out."""

from __future__ import annotations

from mmsp_core import (
    ImageUrlDone,
    TextDone,
    ToolCallDone,
    ToolResultDone,
    UniMessage,
    message_from_wire,
    to_wire,
)

CALL = ToolCallDone("get_weather", "call_1", {"city": "Paris"})


def test_user_builds_a_user_text_message() -> None:
    assert UniMessage.user("Hi") == UniMessage("user", (TextDone("Hi"),))


def test_user_keeps_strings_and_items_in_order() -> None:
    image = ImageUrlDone("https://example.com/cat.png")
    assert UniMessage.user("What is this?", image, "Be brief.") == UniMessage(
        "user", (TextDone("What is this?"), image, TextDone("Be brief."))
    )


def test_assistant_builds_an_assistant_message() -> None:
    assert UniMessage.assistant("Hello", CALL) == UniMessage(
        "assistant", (TextDone("Hello"), CALL)
    )


def test_tool_result_answers_the_call_by_its_id() -> None:
    assert UniMessage.tool_result(CALL, "18 degrees") == UniMessage(
        "user", (ToolResultDone("18 degrees", "call_1"),)
    )


def test_tool_result_with_images() -> None:
    message = UniMessage.tool_result(CALL, "map", images=["https://example.com/map.png"])
    assert message.content_items == (
        ToolResultDone("map", "call_1", ("https://example.com/map.png",)),
    )


def test_the_built_values_round_trip_on_the_wire() -> None:
    for message in (UniMessage.user("Hi"), UniMessage.tool_result(CALL, "ok")):
        assert message_from_wire(to_wire(message)) == message
