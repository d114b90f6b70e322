"""The assistant message of a stream (spec 02 §9) and legacy item types (spec 01 §9, 08 D39)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mmsp_core import (
    FinishReason,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ToolCallDelta,
    ToolCallDone,
    UniEvent,
    UniMessage,
    UsageMetadata,
    concat_uni_events_to_uni_message,
    normalize_legacy_messages,
)

# The one FutureWarning of this process may come from any test here; it is checked in a
# subprocess of its own below.
pytestmark = pytest.mark.filterwarnings("ignore:content item types:FutureWarning")

USAGE = UsageMetadata(0, 12, 40, 7)


def _delta(item: Any, at: int) -> UniEvent:
    return UniEvent("delta", (item,), None, None, at)


def test_the_message_holds_every_done_item_in_order_and_the_stop_fields() -> None:
    events = [
        _delta(ThinkingDelta("a"), 1),
        _delta(ThinkingDone("a", {"signature": "s"}), 2),
        _delta(ToolCallDelta("f", "c", "{}"), 3),
        _delta(ToolCallDone("f", "c", {}), 4),
        _delta(TextDelta("x"), 5),
        _delta(TextDone("x"), 6),
        UniEvent("stop", (), USAGE, FinishReason.TOOL_CALL, 7),
    ]
    assert concat_uni_events_to_uni_message(events) == UniMessage(
        "assistant",
        (ThinkingDone("a", {"signature": "s"}), ToolCallDone("f", "c", {}), TextDone("x")),
        USAGE,
        FinishReason.TOOL_CALL,
        7,
    )


def test_without_a_stop_event_usage_finish_and_created_at_are_none() -> None:
    message = concat_uni_events_to_uni_message(iter([_delta(TextDone("x"), 1)]))
    assert message == UniMessage("assistant", (TextDone("x"),), None, None, None)
    assert concat_uni_events_to_uni_message([]) == UniMessage("assistant", ())


# -- legacy item types (spec 01 §9) ---------------------------------------------------------------

LEGACY = ["text", "image_url", "inline_data", "thinking", "inline_thinking", "tool_call",
          "tool_result", "embedding"]


def test_a_message_without_legacy_items_is_returned_as_the_same_object() -> None:
    current = {"role": "user", "content_items": [{"type": "text.done", "text": "a"}]}
    value = UniMessage("user", (TextDone("a"),))
    empty = {"role": "user", "content_items": []}
    result = normalize_legacy_messages([current, value, empty])
    assert isinstance(result, list)
    assert all(a is b for a, b in zip(result, [current, value, empty], strict=True))


@pytest.mark.parametrize("legacy_type", LEGACY)
def test_each_legacy_type_gets_the_done_suffix_and_keeps_its_fields(legacy_type: str) -> None:
    item = {"type": legacy_type, "text": "a", "fidelity": {"signature": "s"}, "extra": [1]}
    message = {"role": "assistant", "content_items": [item], "created_at": 5}
    [result] = normalize_legacy_messages([message])
    assert result == {
        "role": "assistant",
        "content_items": [
            {"type": f"{legacy_type}.done", "text": "a", "fidelity": {"signature": "s"},
             "extra": [1]}
        ],
        "created_at": 5,
    }


def test_conversion_copies_drops_partial_tool_calls_and_leaves_the_callers_data_alone() -> None:
    messages = [
        {"role": "user", "content_items": [{"type": "text.done", "text": "q"}]},
        {
            "role": "assistant",
            "content_items": [
                {"type": "thinking", "thinking": "t"},
                {"type": "partial_tool_call", "name": "f", "arguments": "{"},
                {"type": "tool_call.done", "name": "f", "tool_call_id": "c", "arguments": {}},
            ],
            "usage_metadata": {"prompt_tokens": 1},
        },
        {"role": "assistant", "content_items": [{"type": "partial_tool_call"}]},
    ]
    before = copy.deepcopy(messages)
    result = normalize_legacy_messages(messages)
    assert messages == before
    assert result[0] is messages[0]
    assert result[1] is not messages[1]
    assert result[1] == {
        "role": "assistant",
        "content_items": [
            {"type": "thinking.done", "thinking": "t"},
            {"type": "tool_call.done", "name": "f", "tool_call_id": "c", "arguments": {}},
        ],
        "usage_metadata": {"prompt_tokens": 1},
    }
    # A message whose only items were partial tool calls comes back empty (02 §8 step 3).
    assert result[2] == {"role": "assistant", "content_items": []}


_WARNINGS_SCRIPT = """
import json, warnings
from mmsp_core import normalize_legacy_messages

current = [{"role": "user", "content_items": [{"type": "text.done", "text": "a"}]}]
legacy = [{"role": "user", "content_items": [{"type": "text", "text": "a"}]}]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    normalize_legacy_messages(current)
    after_current = len(caught)
    normalize_legacy_messages(legacy)
    normalize_legacy_messages(legacy)
    normalize_legacy_messages([{"role": "user", "content_items": [{"type": "thinking"}]}])
print(json.dumps({
    "after_current": after_current,
    "warnings": [[w.category.__name__, w.filename, str(w.message)] for w in caught],
}))
"""


def test_exactly_one_future_warning_per_process(tmp_path: Path) -> None:
    script = tmp_path / "legacy_caller.py"
    script.write_text(_WARNINGS_SCRIPT)
    root = Path(__file__).resolve().parents[2]  # this checkout's mmsp_core, not an installed one
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    report = json.loads(done.stdout)
    assert report["after_current"] == 0
    [[category, filename, message]] = report["warnings"]
    assert category == "FutureWarning"
    assert "0.6.0" in message
    # The warning points at the caller's line, not into mmsp_core.
    assert Path(filename) == script


@pytest.mark.parametrize("item_type", [["text"], {"a": 1}, None, 5])
def test_an_item_type_that_is_not_a_string_is_left_for_the_reader(item_type: Any) -> None:
    # A list or an object is unhashable: it must not crash the legacy check (08 D69).
    messages = [{"role": "user", "content_items": [{"type": item_type, "text": "hi"}]}]
    assert normalize_legacy_messages(messages)[0] is messages[0]
