"""The finalizer's cheap constructors build exactly the values attrs builds."""

from __future__ import annotations

import copy
import pickle

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mmsp_core import _construct
from mmsp_core.model import TextDelta, ThinkingDelta, ToolCallDelta, UniEvent


def same(fast: object, slow: object) -> None:
    """Equal, equally hashed and printed, as immutable, and the same through copy and pickle."""
    assert type(fast) is type(slow)
    assert fast == slow
    assert hash(fast) == hash(slow)
    assert repr(fast) == repr(slow)
    assert attrs.asdict(fast) == attrs.asdict(slow)  # type: ignore[arg-type]
    assert copy.deepcopy(fast) == slow
    assert pickle.loads(pickle.dumps(fast)) == slow
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        fast.fidelity = {}  # type: ignore[attr-defined]


def test_each_class_has_exactly_the_fields_the_constructors_set() -> None:
    assert tuple(f.name for f in attrs.fields(UniEvent)) == _construct.EVENT_FIELDS
    assert [f.name for f in attrs.fields(TextDelta)] == ["text", "fidelity"]
    assert [f.name for f in attrs.fields(ThinkingDelta)] == ["thinking", "fidelity"]
    assert [f.name for f in attrs.fields(ToolCallDelta)] == [
        "name", "tool_call_id", "arguments", "fidelity"
    ]


@given(st.text(max_size=8), st.none() | st.integers(0, 2**62))
def test_the_fragments_and_their_event_are_the_attrs_values(text: str, at: int | None) -> None:
    for fast, slow in (
        (_construct.text_fragment(text), TextDelta(text)),
        (_construct.thinking_fragment(text), ThinkingDelta(text)),
        (_construct.tool_call_fragment(text), ToolCallDelta("", "", text)),
    ):
        same(fast, slow)
        event = _construct.delta_event(fast, at)
        assert event == UniEvent("delta", (slow,), None, None, at)
        assert (hash(event), repr(event)) == (
            hash(UniEvent("delta", (slow,), created_at=at)),
            repr(UniEvent("delta", (slow,), created_at=at)),
        )
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            event.created_at = 0  # type: ignore[misc]
