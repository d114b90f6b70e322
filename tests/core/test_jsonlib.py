"""``mmsp_core.jsonlib``: orjson where it cannot differ from ``json``, and the standard library's
scanner called directly, the same outcome as ``json.loads`` always."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mmsp_core import jsonlib

#: Both backends' parsers; orjson's only where it is installed.
PARSERS = [jsonlib._loads_std] + (
    [jsonlib._loads_fast] if "orjson" in jsonlib.available() else []
)


def outcome(loads: Any, text: str) -> tuple[str, str]:
    """What parsing ``text`` gives: the value's repr, or the exception's type and message."""
    try:
        return "value", repr(loads(text))
    except (ValueError, RecursionError) as exc:
        return type(exc).__name__, str(exc)


STRICTER = [
    '"\\ud800"',  # a lone surrogate escape
    '{"k": "\\udc00\\ud800x"}',
    '"\ud800"',  # a lone surrogate in the text itself
    "123456789012345678901234567890",  # beyond 64 bits: orjson would give a float
    "18446744073709551616",
    "-9223372036854775809",
    "[0.12345678901234567890123456789]",  # a long mantissa
    "NaN",
    "[Infinity, -Infinity]",
    "1e400",
    "[" * 3000 + "]" * 3000,  # deeper than orjson's limit
    "[" * 100_000 + "]" * 100_000,  # deeper than json's
    "\ufeff{}",
    '{"a": 1, "b": 2, "a": 3}',
    '"\x01"',
    "",
    "{",
    "[1,]",
    "-0",
    "18446744073709551615",
]


#: Texts the scanner alone does not read to their end: whitespace around a value, two values.
SURROUNDED = [" {}", "{} ", "\n[1]\r\n", "\t0", "1 2", "{}{}", "[] x", " ", "\ufeff 1"]


@pytest.mark.parametrize("loads", PARSERS)
@pytest.mark.parametrize("text", STRICTER + SURROUNDED, ids=range(len(STRICTER + SURROUNDED)))
def test_the_parsers_give_the_standard_outcome(loads: Any, text: str) -> None:
    assert outcome(loads, text) == outcome(json.loads, text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


whitespace = st.text(alphabet=" \t\r\n", max_size=2)


@pytest.mark.parametrize("loads", PARSERS)
@given(value=json_values, before=whitespace, after=whitespace)
def test_any_json_value_parses_the_same(loads: Any, value: Any, before: str, after: str) -> None:
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False)):
        text = before + text + after
        assert outcome(loads, text) == outcome(json.loads, text)


@pytest.mark.parametrize("loads", PARSERS)
@given(st.text(alphabet='0123456789-+.eE[]{}",: \\ud\x00tfnrulsa\ud800\ufeff\t\n'))
def test_any_text_parses_the_same(loads: Any, text: str) -> None:
    assert outcome(loads, text) == outcome(json.loads, text)


@pytest.mark.parametrize("loads", PARSERS)
def test_nan_and_infinity_are_read_as_json_reads_them(loads: Any) -> None:
    assert math.isnan(loads("NaN"))
    assert loads("-Infinity") == -math.inf


def test_the_switch() -> None:
    pytest.importorskip("orjson")
    previous = jsonlib.backend()
    try:
        jsonlib.use_backend("json")
        assert (jsonlib.backend(), jsonlib.loads) == ("json", jsonlib._loads_std)
        jsonlib.use_backend("orjson")
        assert jsonlib.backend() == "orjson"
        assert jsonlib.loads('{"a": [1]}') == {"a": [1]}
        with pytest.raises(ValueError, match="not available"):
            jsonlib.use_backend("simdjson")
    finally:
        jsonlib.use_backend(previous)
    assert jsonlib.available() == ("json", "orjson")
