"""Structured output end to end (08 D74, issue 24): ``AutoLLMClient`` asks the simulator's
canned turn (``demo_script``) for an answer following a JSON Schema, over loopback HTTP, on
every generating protocol the simulator serves, under asyncio and trio; the answer is an
ordinary ``text.done`` holding JSON valid for the schema."""

from __future__ import annotations

import json
from typing import Any

import pytest
from httpfakes import clean_environment
from test_simulator_faults import client_for, done_items
from test_simulator_scripts import GENERATING, RELAXED, WEATHER, collect

from mmsp_core.model import ResponseFormat, TextDone, ToolResultDone, UniConfig, UniMessage
from mmsp_io.simulator import Simulator

__all__ = ["clean_environment"]

pytestmark = pytest.mark.anyio

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "degrees": {"type": "integer"},
        "sky": {"enum": ["clear", "rain"]},
        "hours": {"type": "array", "items": {"type": "number"}},
    },
    "required": ["city", "degrees", "sky"],
    "additionalProperties": False,
}
EXPECTED = {"city": "text", "degrees": 1, "sky": "clear", "hours": [1]}
FORMAT = ResponseFormat("json_schema", "weather", SCHEMA)


def answer_text(events: list[Any]) -> str:
    texts = [item.text for item in done_items(events) if isinstance(item, TextDone)]
    assert len(texts) == 1, texts
    return texts[0]


@pytest.mark.parametrize("protocol", GENERATING)
async def test_the_answer_follows_the_schema(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Simulator.running() as sim, client_for(sim, protocol, monkeypatch,
                                                      RELAXED) as client:
        events, error = await collect(client.streaming_response(
            [UniMessage.user("Weather in Paris?")], UniConfig(response_format=FORMAT)
        ))
    assert error is None, error
    assert json.loads(answer_text(events)) == EXPECTED


@pytest.mark.parametrize("protocol", GENERATING)
async def test_after_a_tool_result_the_answer_follows_the_schema(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent turn: the tool is called first, and the answer after its result is JSON."""
    config = UniConfig(tools=(WEATHER,), response_format=FORMAT)
    async with Simulator.running() as sim, client_for(sim, protocol, monkeypatch,
                                                      RELAXED) as client:
        events, error = await collect(client.streaming_response_stateful(
            UniMessage.user("Weather in Paris?"), config
        ))
        assert error is None, error
        call = next(item for item in done_items(events) if item.type == "tool_call.done")
        result = UniMessage("user", (ToolResultDone("18 degrees", call.tool_call_id),))
        events, error = await collect(client.streaming_response_stateful(result, config))
    assert error is None, error
    assert json.loads(answer_text(events)) == EXPECTED
