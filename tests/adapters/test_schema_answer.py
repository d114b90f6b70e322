"""The simulator's answer to a request for structured output (08 D74, issue 24): JSON valid for
the request's schema in the subset ``adapters._schema_answer`` follows, a JSON object for any
other schema, and the schema read back from the request each client builds.

The validator here implements the subset's meaning of JSON Schema on its own, so the generator
is checked against an independent reading of the schema.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import adapters
from adapters._schema_answer import MAX_SCHEMA_DEPTH, answer_for, value_for
from mmsp_core.testing.strategies import hostile_json

_TYPES = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


def valid(value: Any, schema: dict[str, Any]) -> bool:
    """Whether ``value`` is valid for ``schema`` of the subset (JSON Schema's meaning)."""
    if "const" in schema and value != schema["const"]:
        return False
    if "enum" in schema and value not in schema["enum"]:
        return False
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
    if kinds and not any(_TYPES[k](value) for k in kinds):
        return False
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        if any(name not in value for name in schema.get("required", [])):
            return False
        if schema.get("additionalProperties") is False and set(value) - set(properties):
            return False
        return all(valid(value[name], sub) for name, sub in properties.items() if name in value)
    if isinstance(value, list) and "items" in schema:
        return all(valid(item, schema["items"]) for item in value)
    return True


_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4)
_names = st.text(st.characters(codec="ascii", categories=["L"]), min_size=1, max_size=5)
_leaf = (
    st.sampled_from(["string", "number", "integer", "boolean", "null"]).map(lambda t: {"type": t})
    | st.lists(_scalars, min_size=1, max_size=3).map(lambda values: {"enum": values})
    | _scalars.map(lambda value: {"const": value})
    | st.sampled_from([["string", "null"], ["integer", "string"]]).map(lambda t: {"type": t})
)


def _extend(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    objects = st.dictionaries(_names, children, max_size=4).flatmap(
        lambda properties: st.builds(
            lambda required, closed, described: {
                "type": "object", "properties": properties, "required": required,
                **({"additionalProperties": False} if closed else {}),
                **({"description": "a thing"} if described else {}),
            },
            st.lists(st.sampled_from(sorted(properties)), unique=True) if properties
            else st.just([]),
            st.booleans(), st.booleans(),
        )
    )
    arrays = children.map(lambda items: {"type": "array", "items": items})
    return objects | arrays


schemas = st.recursive(_leaf, _extend, max_leaves=12)


@given(schemas)
def test_the_answer_is_valid_for_any_schema_of_the_subset(schema: dict[str, Any]) -> None:
    value = json.loads(answer_for(schema))
    assert valid(value, schema), (schema, value)


@pytest.mark.parametrize("schema", [
    {"anyOf": [{"type": "string"}]},
    {"$ref": "#/definitions/x"},
    {"type": "string", "pattern": "^a+$"},
    {"type": "array", "items": {"type": "string"}, "minItems": 2},
    {"type": "object", "properties": {"a": {"oneOf": []}}},
    {"type": "tuple"},
    {"enum": []},
    {"type": "object", "properties": [1]},
    {"type": "object", "required": ["a", 1]},
    [1, 2],
    "string",
    None,
])
def test_a_schema_outside_the_subset_gets_a_json_object(schema: Any) -> None:
    assert value_for(schema) == {}


def test_nesting_past_the_limit_gets_a_json_object() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(MAX_SCHEMA_DEPTH + 1):
        schema = {"type": "array", "items": schema}
    assert value_for(schema) == {}
    assert json.loads(answer_for({"type": "array", "items": {"type": "string"}})) == ["text"]


@given(hostile_json())
def test_any_json_as_the_schema_gives_an_answer(schema: Any) -> None:
    """What a request carries cannot make the simulator fail: any JSON gives JSON text."""
    json.loads(answer_for(schema))


def test_a_required_name_without_a_schema_is_answered() -> None:
    assert value_for({"type": "object", "required": ["x"]}) == {"x": None}


# -- each client's request read back by its simulator dialect ---------------------------------

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
MESSAGES = [{"role": "user", "content_items": [{"type": "text.done", "text": "Weather?"}]}]
#: A client of each generating protocol and a model that takes a JSON Schema format.
CLIENTS = [
    ("openai-chat", "gpt-5.5"), ("openai-responses", "gpt-5.6"),
    ("ant-messages", "claude-sonnet-5"), ("google-genai", "gemini-3.8-flash"),
    ("google-official", "gemini-3.8-flash"), ("mmsp", "gpt-5.5"),
]


def turn_of(client: str, model: str, config: dict[str, Any]) -> Any:
    protocol = adapters.CLIENTS[client].protocol
    dialect = adapters.PROTOCOLS[protocol].traits.dialect
    assert dialect is not None
    body = json.loads(adapters.build_request(client, model, MESSAGES, config).body)
    return dialect.read_turn(body)


@pytest.mark.parametrize(("client", "model"), CLIENTS)
def test_the_simulator_reads_the_schema_each_client_sends(client: str, model: str) -> None:
    schema_format = {"type": "json_schema", "name": "weather", "schema": SCHEMA}
    assert turn_of(client, model, {"response_format": schema_format}).answer_schema == SCHEMA
    assert turn_of(client, model, {}).answer_schema is None


@pytest.mark.parametrize(("client", "model"), [c for c in CLIENTS if c[0] != "ant-messages"])
def test_a_json_object_format_asks_for_any_object(client: str, model: str) -> None:
    turn = turn_of(client, model, {"response_format": {"type": "json_object"}})
    assert turn.answer_schema == {}


def test_interactions_reads_the_text_entry_beside_an_image() -> None:
    config = {"response_format": {"type": "json_schema", "name": "w", "schema": SCHEMA},
              "image_config": {"aspect_ratio": "1:1"}}
    assert turn_of("google-official", "gemini-3-pro-image", config).answer_schema == SCHEMA
