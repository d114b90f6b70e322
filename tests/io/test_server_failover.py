"""Failover before the first event (08 D77, issue 25 item 6).

The pure decision (``mmsp_io.server.failover``) on a moved clock and scripted draws: file
order, weighted picks, cooldowns, the row that failed longest ago when all cool down, which
errors fail over; the configuration of groups (``weight``, ``cooldown_s``).
"""

from __future__ import annotations

from typing import Any

import pytest

from mmsp_core.errors import (
    AbortedError,
    IncompleteStreamError,
    InvalidMessageError,
    ProviderConnectionError,
    ProviderHTTPError,
)
from mmsp_io.server import ConfigError, resolve_config
from mmsp_io.server.config import DEFAULT_COOLDOWN_S, ModelRow
from mmsp_io.server.failover import Group, fails_over, groups


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Draws:
    """The random draws a test scripts, in order."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def __call__(self) -> float:
        return self.values.pop(0)


def rows(*names: str, **columns: Any) -> list[ModelRow]:
    """One row of the group ``m`` per name (its model id), with the same other columns."""
    return [ModelRow(server_model_id="m", model_id=name, api_key="k", **columns)
            for name in names]


def ids(group: Group) -> list[str]:
    """The model ids one request would try, none failing."""
    return [row.model_id for row in group.attempts()]


def test_a_group_without_weights_is_tried_in_file_order() -> None:
    group = Group(rows("a", "b", "c"), clock=Clock(), draw=Draws())
    assert ids(group) == ["a", "b", "c"]
    assert ids(group) == ["a", "b", "c"]  # every request starts again at the first row


def test_a_row_that_failed_is_passed_over_until_its_cooldown_ends() -> None:
    clock = Clock()
    a, b, c = rows("a", "b", "c", cooldown_s=30)
    group = Group([a, b, c], clock=clock)
    group.failed(a)
    assert ids(group) == ["b", "c"]
    clock.now += 29.9
    assert group.cooling(a, clock.now) and ids(group) == ["b", "c"]
    clock.now += 0.1
    assert not group.cooling(a, clock.now) and ids(group) == ["a", "b", "c"]


def test_the_cooldown_defaults_to_30_seconds_and_may_be_0() -> None:
    clock = Clock()
    (default,) = rows("a")
    assert default.cooldown_s == DEFAULT_COOLDOWN_S == 30
    never, other = rows("never", "other", cooldown_s=0)
    group = Group([never, other], clock=clock)
    group.failed(never)
    assert ids(group) == ["never", "other"]


def test_the_next_row_is_chosen_when_asked_for() -> None:
    """A row another request failed over meanwhile is not tried."""
    clock = Clock()
    a, b, c = rows("a", "b", "c")
    group = Group([a, b, c], clock=clock)
    attempts = group.attempts()
    assert next(attempts) is a
    group.failed(a)
    group.failed(b)  # another request's failure
    assert list(attempts) == [c]


def test_when_every_row_cools_down_the_one_that_failed_longest_ago_is_tried_alone() -> None:
    clock = Clock()
    a, b, c = rows("a", "b", "c")
    group = Group([a, b, c], clock=clock)
    for row in (b, c, a):
        group.failed(row)
        clock.now += 1
    assert ids(group) == ["b"]
    group.failed(b)  # it failed again: now c failed longest ago
    assert ids(group) == ["c"]


def test_a_row_that_served_no_longer_cools_down() -> None:
    clock = Clock()
    a, b = rows("a", "b")
    group = Group([a, b], clock=clock)
    group.failed(a)
    group.failed(b)
    assert ids(group) == ["a"]
    group.served(a)
    assert ids(group) == ["a"]  # b still cools down, a is ready again
    clock.now += DEFAULT_COOLDOWN_S
    assert ids(group) == ["a", "b"]


def test_a_single_row_is_always_tried() -> None:
    (only,) = rows("only")
    group = Group([only], clock=Clock())
    group.failed(only)
    assert ids(group) == ["only"]


def test_weights_make_a_weighted_pick_among_the_rows_left() -> None:
    heavy, light = (ModelRow(server_model_id="m", model_id=name, api_key="k", weight=weight)
                    for name, weight in (("heavy", 3.0), ("light", 1.0)))
    # A draw in [0, 0.75) picks heavy first, [0.75, 1) light; the last row left needs none.
    assert ids(Group([heavy, light], clock=Clock(), draw=Draws(0.0))) == ["heavy", "light"]
    assert ids(Group([heavy, light], clock=Clock(), draw=Draws(0.7499))) == ["heavy", "light"]
    assert ids(Group([heavy, light], clock=Clock(), draw=Draws(0.75))) == ["light", "heavy"]


def test_a_row_without_a_weight_weighs_1_in_a_weighted_group() -> None:
    two = ModelRow(server_model_id="m", model_id="two", api_key="k", weight=2.0)
    one, other = rows("one", "other")
    # Weights 2, 1, 1: [0, 0.5) two, [0.5, 0.75) one, [0.75, 1) other.
    group = Group([two, one, other], clock=Clock(), draw=Draws(0.6, 0.99))
    assert ids(group) == ["one", "other", "two"]  # then 2 of 3: 0.99 picks other


def test_a_weighted_pick_skips_cooling_rows() -> None:
    clock = Clock()
    heavy = ModelRow(server_model_id="m", model_id="heavy", api_key="k", weight=9.0)
    light, spare = rows("light", "spare")
    group = Group([heavy, light, spare], clock=clock, draw=Draws(0.0))
    group.failed(heavy)
    assert ids(group) == ["light", "spare"]


@pytest.mark.parametrize(("error", "moves"), [
    (ProviderHTTPError("openai-chat", 529, "overloaded_error"), True),
    (ProviderHTTPError("openai-chat", 503), True),
    (ProviderHTTPError("openai-chat", 429), True),
    (ProviderConnectionError("openai-chat", "connection refused"), True),
    (IncompleteStreamError("openai-chat", ("usage",)), True),
    (ProviderHTTPError("openai-chat", 400), False),
    (InvalidMessageError("openai-chat", "empty message"), False),
    (AbortedError("openai-chat", "client disconnected"), False),
    (RuntimeError("a bug"), False),
])
def test_only_a_retryable_mmsp_error_fails_over(error: Exception, moves: bool) -> None:
    assert fails_over(error) is moves


def test_groups_gather_the_rows_of_each_served_id_in_file_order() -> None:
    table = [ModelRow(server_model_id=served, model_id=model, api_key="k")
             for served, model in (("x", "x1"), ("y", "y1"), ("x", "x2"))]
    found = groups(table, clock=Clock())
    assert list(found) == ["x", "y"]
    assert [row.model_id for row in found["x"].rows] == ["x1", "x2"]
    with pytest.raises(ValueError, match="at least one row"):
        Group([])


ROW = {"model_id": "gpt-5", "api_key": "sk-row", "server_model_id": "fast"}


def test_rows_sharing_a_server_model_id_form_a_group_with_their_columns() -> None:
    config = resolve_config({"models": [
        {**ROW, "weight": 3, "cooldown_s": 0},
        {**ROW, "model_id": "gpt-5-mini", "weight": 0.5, "cooldown_s": 12.5},
        {**ROW, "server_model_id": "other"},
    ], "keys": [{"name": "team", "key": "t", "models": ["fast"]}]})
    first, second, other = config.models
    assert (first.weight, first.cooldown_s) == (3.0, 0.0)
    assert (second.weight, second.cooldown_s) == (0.5, 12.5)
    assert (other.weight, other.cooldown_s) == (None, DEFAULT_COOLDOWN_S)
    nulls = resolve_config({"models": [{**ROW, "weight": None, "cooldown_s": None}]})
    assert nulls.models == (ModelRow("fast", "gpt-5", "sk-row"),)  # null is absent
    assert [row.model_id for row in groups(config.models)["fast"].rows] == ["gpt-5",
                                                                            "gpt-5-mini"]


@pytest.mark.parametrize(("column", "value", "message"), [
    ("weight", 0, "models[0].weight must be a number, above 0."),
    ("weight", -1, "models[0].weight must be a number, above 0."),
    ("weight", "2", "models[0].weight must be a number, above 0."),
    ("weight", True, "models[0].weight must be a number, above 0."),
    ("cooldown_s", -1, "models[0].cooldown_s must be a number, at least 0."),
    ("cooldown_s", float("inf"), "models[0].cooldown_s must be a number, at least 0."),
    ("cooldown_s", "5", "models[0].cooldown_s must be a number, at least 0."),
])
def test_a_bad_weight_or_cooldown_is_refused_naming_the_cell(
    column: str, value: Any, message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        resolve_config({"models": [{**ROW, column: value}]})
    assert str(raised.value) == message


def test_two_rows_of_a_group_the_same_in_every_column_are_refused() -> None:
    with pytest.raises(ConfigError) as raised:
        resolve_config({"models": [ROW, {**ROW, "server_model_id": "b"}, dict(ROW)]})
    assert str(raised.value) == ("models[2] repeats models[0] in every column; the rows of a "
                                 "group must differ.")
    # One column apart, they are a group of two.
    assert len(resolve_config({"models": [ROW, {**ROW, "cooldown_s": 5}]}).models) == 2
