"""A trace directory for the trace page's tests, written by the real tracer.

``write_sample(root)`` writes one agent conversation (text, an image, thinking, a tool call
and its result with an image, a generated image, usage and finish reason on both turns) as the
trace ``SAMPLE_ID``, the way a traced call writes it.
"""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path
from typing import Final

from mmsp_core import (
    FinishReason,
    ImageUrlDone,
    InlineDataDone,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniConfig,
    UniMessage,
    UsageMetadata,
)
from mmsp_io.tracer import write_trace

__all__ = ["ANSWER", "CALL_ARGUMENTS", "PNG", "QUESTION", "SAMPLE_HISTORY", "SAMPLE_ID",
           "THINKING", "TOOL_RESULT", "png_data_uri", "write_sample"]


def _png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A real PNG of one colour, so a browser decodes it to ``width`` x ``height`` pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\0" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(row * height)) + chunk(b"IEND", b""))


PNG: Final = _png(48, 32, (200, 30, 30))


def png_data_uri(data: bytes = PNG) -> str:
    """``data`` as a ``data:image/png;base64,...`` URI."""
    return "data:image/png;base64," + base64.b64encode(data).decode()


SAMPLE_ID: Final = "agents/weather run.1"
QUESTION: Final = "What is the weather in Paris? <b>not bold</b>"
THINKING: Final = "The user wants the weather in Paris; the get_weather tool answers that."
CALL_ARGUMENTS: Final = {"city": "Paris", "unit": "celsius"}
TOOL_RESULT: Final = "18 degrees C, light rain"
ANSWER: Final = "It is 18 °C with light rain in Paris. Here is a picture of the sky."
WEATHER_TOOL: Final = ToolSchema(
    name="get_weather",
    description="The current weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)

SAMPLE_HISTORY: Final = (
    UniMessage("user", (TextDone(QUESTION), ImageUrlDone(png_data_uri(_png(40, 40, (0, 0, 255)))))),
    UniMessage(
        "assistant",
        (ThinkingDone(THINKING), ToolCallDone("get_weather", "call_1", CALL_ARGUMENTS)),
        UsageMetadata(cached_tokens=None, prompt_tokens=31, thoughts_tokens=12,
                      response_tokens=9),
        FinishReason.TOOL_CALL,
        1760000000100,
    ),
    UniMessage("user", (ToolResultDone(TOOL_RESULT, "call_1", (png_data_uri(),)),)),
    UniMessage(
        "assistant",
        (TextDone(ANSWER), InlineDataDone(PNG, "image/png")),
        UsageMetadata(cached_tokens=16, prompt_tokens=30, thoughts_tokens=None,
                      response_tokens=17),
        FinishReason.STOP,
        1760000000200,
    ),
)


def write_sample(root: Path, trace_id: str = SAMPLE_ID) -> tuple[Path, Path]:
    """Write the sample conversation as trace ``trace_id`` under ``root``; return its files."""
    config = UniConfig(temperature=0.2, tools=(WEATHER_TOOL,), trace_id=trace_id)
    write_trace(root, trace_id, "openai-chat", "gpt-test", SAMPLE_HISTORY, config)
    return root / f"{trace_id}.json", root / f"{trace_id}.txt"
