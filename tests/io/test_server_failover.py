"""Failover before the first event (08 D77, issue 25 item 6).

The pure decision (``mmsp_io.server.failover``) on a moved clock and scripted draws: file
order, weighted picks, cooldowns, the row that failed longest ago when all cool down, which
errors fail over; the configuration of groups (``weight``, ``cooldown_s``). Then the gateway,
on both front ends, over a group of two rows, each a simulator of its own: a 529 or 503 before
the first event is served by the second row (on ``/v1/stream`` and at a front door, streamed
and whole), a failure after the first event or a refusal is not, the row's own retries come
first, a failed row is passed over while it cools down, and when both cool down the one that
failed longest ago is tried; the metrics count each attempt, each failover and the serving
row's cost.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from serverkit import (
    AUTH,
    FRONTS,
    RELAXED,
    TOKEN,
    parse_sse,
    post_stream,
    row,
    running,
    stream_body,
)
from test_server_prometheus import samples, value

from mmsp_core.errors import (
    AbortedError,
    IncompleteStreamError,
    InvalidMessageError,
    ProviderConnectionError,
    ProviderHTTPError,
)
from mmsp_core.model import TextDone, UsageMetadata
from mmsp_io import Telemetry
from mmsp_io.server import ConfigError, Gateway, resolve_config
from mmsp_io.server.config import DEFAULT_COOLDOWN_S, ModelRow
from mmsp_io.server.failover import Group, fails_over, groups
from mmsp_io.simulator import Reply, Simulator, faults


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
    for failing in (b, c, a):
        group.failed(failing)
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


# -- the gateway over a group of two rows ----------------------------------------------------

MODEL = "openai-chat"
#: Every answer of the second row: 12 prompt and 8 response tokens, 2 USD at ``PRICING``.
USAGE = UsageMetadata(cached_tokens=0, prompt_tokens=12, response_tokens=8)
PRICING = {"prompt_tokens": 100_000, "response_tokens": 100_000}


@pytest.fixture(params=FRONTS)
def front(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def answer(text: str) -> Reply:
    return Reply(items=[TextDone(text=text)], usage=USAGE)


@asynccontextmanager
async def two_rows(
    tmp_path: Path, clock: Clock, *, max_retries: int = 0, telemetry: Telemetry | None = None
) -> AsyncIterator[tuple[Simulator, Simulator, Gateway]]:
    """Two simulators, each one row of the group ``openai-chat`` (the second priced, its
    model ``sim-second``), and a gateway over them whose cooldowns read ``clock``, its spans
    as ``telemetry`` says."""
    async with Simulator.running(answer("first row")) as first, \
            Simulator.running(answer("second row")) as second:
        document = {"models": [row(first, MODEL), {**row(second, MODEL, model="sim-second"),
                                                   "pricing": PRICING}],
                    "api_keys": [TOKEN]}
        config = attrs.evolve(resolve_config(document), telemetry=telemetry)
        gateway = Gateway(config, timeouts=RELAXED, max_retries=max_retries,
                          trace_dir=tmp_path / "traces")
        gateway.groups = groups(gateway.config.models, clock=clock)
        yield first, second, gateway


def texts(events: list[Any]) -> list[str]:
    """The texts of the done text items among a ``/v1/stream`` answer's events."""
    return [item["text"] for event in events if isinstance(event, dict)
            for item in event.get("content_items", ()) if item["type"] == "text.done"]


def errors(events: list[Any]) -> list[str]:
    """The error types among a ``/v1/stream`` answer's events."""
    return [event["error"]["type"] for event in events
            if isinstance(event, dict) and "error" in event]


async def ask(http: httpx.AsyncClient, origin: str, **extra: Any) -> list[Any]:
    """One ``/v1/stream`` call of the group; its events."""
    response, events = await post_stream(http, origin, stream_body(MODEL, **extra))
    assert response.status_code == 200
    assert events[-1] == "[DONE]"
    return events


@pytest.mark.anyio
@pytest.mark.parametrize("status", [529, 503])
async def test_an_overloaded_row_before_its_first_event_is_failed_over(
    front: str, tmp_path: Path, status: int
) -> None:
    async with two_rows(tmp_path, Clock()) as (first, second, gateway):
        first.script.append(Reply.error(status))
        async with running(gateway, front) as origin, httpx.AsyncClient() as http:
            events = await ask(http, origin)
            scraped = samples((await http.get(origin + "/metrics")).text)
    assert texts(events) == ["second row"] and errors(events) == []
    assert (len(first.requests), len(second.requests)) == (1, 1)
    assert value(scraped, "mmsp_gateway_upstream_attempts_total", gen_ai_request_model=MODEL,
                 row="models[0]") == 1
    assert value(scraped, "mmsp_gateway_upstream_attempts_total", gen_ai_request_model=MODEL,
                 row="models[1]") == 1
    assert value(scraped, "mmsp_gateway_failovers_total", gen_ai_request_model=MODEL,
                 row="models[0]") == 1
    assert value(scraped, "mmsp_gateway_requests_total", gen_ai_request_model=MODEL,
                 key="api_keys[0]", outcome="success") == 1
    # The tokens' cost is the serving row's: the first row has no price.
    assert value(scraped, "mmsp_gateway_cost_usd_total", gen_ai_request_model=MODEL,
                 key="api_keys[0]") == pytest.approx(2.0)


@pytest.mark.anyio
@pytest.mark.parametrize("streamed", [True, False])
async def test_a_front_door_fails_over_the_same_way(
    front: str, tmp_path: Path, streamed: bool
) -> None:
    async with two_rows(tmp_path, Clock()) as (first, second, gateway):
        first.script.append(Reply.error(529))
        async with running(gateway, front) as origin, httpx.AsyncClient() as http:
            response = await http.post(origin + "/v1/chat/completions", headers=AUTH, json={
                "model": MODEL, "stream": streamed,
                "messages": [{"role": "user", "content": "Weather in Paris?"}]})
    assert response.status_code == 200
    if streamed:
        chunks = [data for data in parse_sse(response.content) if data != "[DONE]"]
        text = "".join(chunk["choices"][0]["delta"].get("content") or ""
                       for chunk in chunks if chunk["choices"])
    else:
        text = response.json()["choices"][0]["message"]["content"]
    assert text == "second row"
    assert (len(first.requests), len(second.requests)) == (1, 1)


@pytest.mark.anyio
async def test_a_failure_after_the_first_event_is_not_failed_over(
    front: str, tmp_path: Path
) -> None:
    async with two_rows(tmp_path, Clock()) as (first, second, gateway):
        long_text = "A long answer, cut after its second event. " * 4
        first.script.append(Reply(items=[TextDone(text=long_text)], fragment_size=8,
                                  fault=faults.cut(after_events=2)))
        async with running(gateway, front) as origin, httpx.AsyncClient() as http:
            events = await ask(http, origin)
            scraped = samples((await http.get(origin + "/metrics")).text)
    assert errors(events) == ["IncompleteStreamError"]
    assert events[0]["content_items"][0]["text"].startswith("A long")  # the first row's
    assert (len(first.requests), second.requests) == (1, [])
    assert ("mmsp_gateway_failovers_total", (("gen_ai_request_model", MODEL),
                                             ("row", "models[0]"))) not in scraped


@pytest.mark.anyio
async def test_a_refusal_before_the_first_event_is_not_failed_over(
    front: str, tmp_path: Path
) -> None:
    async with two_rows(tmp_path, Clock()) as (first, second, gateway):
        first.script.append(Reply.error(400, message="bad request, simulated"))
        async with running(gateway, front) as origin, httpx.AsyncClient() as http:
            events = await ask(http, origin)
    assert errors(events) == ["ProviderHTTPError"]
    assert (len(first.requests), second.requests) == (1, [])


@pytest.mark.anyio
async def test_the_rows_own_retries_come_first(front: str, tmp_path: Path) -> None:
    async with two_rows(tmp_path, Clock(), max_retries=1) as (first, second, gateway):
        first.script.append(Reply.error(529, retry_after=0))
        async with running(gateway, front) as origin, httpx.AsyncClient() as http:
            events = await ask(http, origin)
    assert texts(events) == ["first row"]
    assert (len(first.requests), second.requests) == (2, [])


@pytest.mark.anyio
async def test_a_failed_row_is_passed_over_until_its_cooldown_ends(
    front: str, tmp_path: Path
) -> None:
    clock = Clock()
    async with two_rows(tmp_path, clock) as (first, second, gateway):
        first.script.append(Reply.error(529))
        async with running(gateway, front) as origin, httpx.AsyncClient() as http:
            assert texts(await ask(http, origin)) == ["second row"]
            assert texts(await ask(http, origin)) == ["second row"]  # the first cools down
            assert len(first.requests) == 1
            clock.now += DEFAULT_COOLDOWN_S
            assert texts(await ask(http, origin)) == ["first row"]
    assert (len(first.requests), len(second.requests)) == (2, 2)


@pytest.mark.anyio
async def test_when_both_rows_cool_down_the_one_that_failed_longest_ago_is_tried(
    front: str, tmp_path: Path
) -> None:
    clock = Clock()
    async with two_rows(tmp_path, clock) as (first, second, gateway):
        first.script.append(Reply.error(529))
        second.script.extend([answer("second row"), Reply.error(503)])
        async with running(gateway, front) as origin, httpx.AsyncClient() as http:
            assert texts(await ask(http, origin)) == ["second row"]  # the first failed
            clock.now += 1
            # The second fails too, and the first still cools down: the caller has the error.
            assert errors(await ask(http, origin)) == ["ProviderHTTPError"]
            assert (len(first.requests), len(second.requests)) == (1, 2)
            clock.now += 1
            assert texts(await ask(http, origin)) == ["first row"]  # it failed longest ago
    assert (len(first.requests), len(second.requests)) == (2, 2)


@pytest.mark.anyio
async def test_the_trace_of_a_failed_over_call_names_the_serving_row(
    front: str, tmp_path: Path
) -> None:
    async with two_rows(tmp_path, Clock()) as (first, _, gateway):
        first.script.append(Reply.error(529))
        async with running(gateway, front) as origin, httpx.AsyncClient() as http:
            events = await ask(http, origin, config={"trace_id": "run-1"})
    assert texts(events) == ["second row"]
    trace = json.loads((tmp_path / "traces" / "run-1.json").read_text())
    assert trace["outcome"] == "stop" and trace["config"]["model"] == "sim-second"
    assert trace["history"][-1]["content_items"][0]["text"] == "second row"


@pytest.mark.anyio
async def test_the_gateway_span_names_the_serving_row_and_counts_the_attempts(
    front: str, tmp_path: Path
) -> None:
    """With telemetry, the request's SERVER span names the row that served it and the rows
    tried; each row's call is a CLIENT span of its own within it."""
    sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="pip install opentelemetry-sdk")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = Telemetry(tracer_provider=provider)
    try:
        async with two_rows(tmp_path, Clock(), telemetry=telemetry) as (first, _, gateway):
            first.script.append(Reply.error(529))
            async with running(gateway, front) as origin, httpx.AsyncClient() as http:
                assert texts(await ask(http, origin)) == ["second row"]
    finally:
        provider.shutdown()
    spans = exporter.get_finished_spans()
    (server,) = [span for span in spans if span.kind == SpanKind.SERVER]
    clients = [span for span in spans if span.kind == SpanKind.CLIENT]
    assert server.attributes is not None
    assert server.attributes["mmsp.gateway.row"] == "models[1]"
    assert server.attributes["mmsp.gateway.attempts"] == 2
    assert [span.attributes["gen_ai.request.model"] for span in clients
            if span.attributes is not None] == ["sim-model", "sim-second"]
