"""Keys as rows through the gateway, on both front ends (08 D75): a key names only its models
(404 as an unknown model), and over its rpm, tpm or budget a request is answered 429 with
``Retry-After`` before any upstream call; ``api_keys`` still work beside ``keys``.

The gateways' limiters read a clock the test holds, so a minute never ends mid-test.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from serverkit import FRONTS, RELAXED, TOKEN, config, post_stream, running, stream_body

from mmsp_core.model import TextDone, UsageMetadata
from mmsp_io.server import Gateway, banner
from mmsp_io.server.limits import limiter_for
from mmsp_io.simulator import Reply, Simulator

pytestmark = pytest.mark.anyio

#: 2027-01-15 10:00:10 UTC: ten seconds into a minute.
T0 = datetime(2027, 1, 15, 10, 0, 10, tzinfo=UTC).timestamp()
#: Every answer: 12 prompt and 8 response tokens, 20 in all.
REPLY = Reply(items=[TextDone(text="Hi")],
              usage=UsageMetadata(cached_tokens=0, prompt_tokens=12, response_tokens=8))
TOKENS_PER_STREAM = 20


@pytest.fixture(params=FRONTS)
def front(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def keyed_gateway(sim: Simulator, tmp_path: Path, *keys: dict[str, Any],
                  pricing: dict[str, float] | None = None) -> Gateway:
    """A gateway over the simulator's openai-chat and ant-messages rows (``pricing``
    their price column) with ``keys`` beside ``api_keys``, its limiter reading the fixed clock
    ``T0``."""
    document = {**config(sim, ["openai-chat", "ant-messages"]), "keys": list(keys)}
    for row in document["models"]:
        row["pricing"] = pricing
    gateway = Gateway(document, timeouts=RELAXED, max_retries=0, trace_dir=tmp_path / "traces")
    base_urls = {row: sim.base_url(row.server_model_id) for row in gateway.config.models}
    gateway.limits = limiter_for(gateway.config, base_urls, clock=lambda: T0)
    return gateway


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def test_a_key_names_only_its_models(front: str, tmp_path: Path) -> None:
    narrow = {"name": "narrow", "key": "narrow-key", "models": ["openai-chat"]}
    async with Simulator.running(REPLY) as sim:
        async with running(keyed_gateway(sim, tmp_path, narrow), front) as origin, \
                httpx.AsyncClient() as http:
            refused, _ = await post_stream(http, origin, stream_body("ant-messages"),
                                           bearer("narrow-key"))
            served, events = await post_stream(http, origin, stream_body("openai-chat"),
                                               bearer("narrow-key"))
            other, _ = await post_stream(http, origin, stream_body("ant-messages"))
        assert len(sim.requests) == 2  # the refused request reached no provider
    assert refused.status_code == 404
    assert refused.json() == {"error": {
        "type": "NotFoundError",
        "message": "The model 'ant-messages' does not exist; GET /v1/models lists the "
                   "models this server serves."}}
    assert served.status_code == 200 and events[-1] == "[DONE]"
    assert other.status_code == 200  # an api_keys token names every model


async def test_over_rpm_is_429_with_retry_after_before_any_upstream_call(
    front: str, tmp_path: Path
) -> None:
    team = {"name": "team", "key": "team-key", "rpm": 2}
    async with Simulator.running(REPLY) as sim:
        async with running(keyed_gateway(sim, tmp_path, team), front) as origin, \
                httpx.AsyncClient() as http:
            answers = [await post_stream(http, origin, stream_body("openai-chat"),
                                         bearer("team-key")) for _ in range(3)]
        assert len(sim.requests) == 2
    assert [response.status_code for response, _ in answers] == [200, 200, 429]
    refused = answers[2][0]
    assert refused.headers["retry-after"] == "50"
    assert refused.json() == {"error": {
        "type": "RateLimitError",
        "message": "Key 'team' is over 2 requests per minute; retry in 50 s."}}


async def test_tpm_lets_the_crossing_stream_complete_then_refuses(
    front: str, tmp_path: Path
) -> None:
    team = {"name": "team", "key": "team-key", "tpm": TOKENS_PER_STREAM + 10}
    async with Simulator.running(REPLY) as sim, \
            running(keyed_gateway(sim, tmp_path, team), front) as origin, \
            httpx.AsyncClient() as http:
        answers = [await post_stream(http, origin, stream_body("openai-chat"),
                                     bearer("team-key")) for _ in range(3)]
    assert [response.status_code for response, _ in answers] == [200, 200, 429]
    assert answers[1][1][-2]["event_type"] == "stop"  # the stream that crossed completed
    assert answers[2][0].json()["error"]["type"] == "RateLimitError"
    assert answers[2][0].headers["retry-after"] == "50"


async def test_a_budget_counts_each_stream_cost_until_the_utc_day_ends(
    front: str, tmp_path: Path
) -> None:
    # 20 tokens at 100,000 USD per million: 2 USD a stream
    team = {"name": "team", "key": "team-key", "models": ["openai-chat"],
            "budget": {"usd": 3, "period": "day"}}
    pricing = {"prompt_tokens": 100_000, "response_tokens": 100_000}
    async with Simulator.running(REPLY) as sim:
        gateway = keyed_gateway(sim, tmp_path, team, pricing=pricing)
        async with running(gateway, front) as origin, httpx.AsyncClient() as http:
            answers = [await post_stream(http, origin, stream_body("openai-chat"),
                                         bearer("team-key")) for _ in range(3)]
    assert [response.status_code for response, _ in answers] == [200, 200, 429]
    midnight = datetime(2027, 1, 16, tzinfo=UTC).timestamp()
    assert answers[2][0].headers["retry-after"] == str(int(midnight - T0))
    assert "budget of 3 USD per day" in answers[2][0].json()["error"]["message"]


async def test_keys_alone_close_the_server(front: str, tmp_path: Path) -> None:
    async with Simulator.running(REPLY) as sim:
        document = {**config(sim, ["openai-chat"], keys=False),
                    "keys": [{"name": "team", "key": "team-key"}]}
        gateway = Gateway(document, timeouts=RELAXED, max_retries=0,
                          trace_dir=tmp_path / "traces")
        async with running(gateway, front) as origin, httpx.AsyncClient() as http:
            anonymous, _ = await post_stream(http, origin, stream_body("openai-chat"), {})
            stranger, _ = await post_stream(http, origin, stream_body("openai-chat"),
                                            bearer(TOKEN))
            member, _ = await post_stream(http, origin, stream_body("openai-chat"),
                                          bearer("team-key"))
    assert anonymous.status_code == stranger.status_code == 401
    assert member.status_code == 200


async def test_a_front_door_refuses_over_a_limit_in_its_protocol_body(
    front: str, tmp_path: Path
) -> None:
    team = {"name": "team", "key": "team-key", "rpm": 1}
    body = {"model": "openai-chat", "messages": [{"role": "user", "content": "Hi"}]}
    async with Simulator.running(REPLY) as sim, \
            running(keyed_gateway(sim, tmp_path, team), front) as origin, \
            httpx.AsyncClient() as http:
        answers = [await http.post(origin + "/v1/chat/completions", json=body,
                                   headers=bearer("team-key")) for _ in range(2)]
    assert [answer.status_code for answer in answers] == [200, 429]
    assert answers[1].headers["retry-after"] == "50"
    assert answers[1].json()["error"]["message"] == (
        "Key 'team' is over 1 request per minute; retry in 50 s.")


def test_the_banner_says_where_limits_are_counted() -> None:
    row = {"server_model_id": "m", "model_id": "sim-model", "api_key": "k",
           "base_url": "http://127.0.0.1:9/v1", "client_type": "openai-chat"}
    limited = [{"name": "team", "key": "team-key", "rpm": 5}]
    alone = Gateway({"models": [row], "keys": limited})
    shared = Gateway({"models": [row], "keys": limited,
                      "store": {"redis_url": "redis://127.0.0.1:9/0"}})
    unlimited = Gateway({"models": [row], "keys": [{"name": "team", "key": "team-key"}]})
    assert banner(alone, "http://h")[2:] == [
        "Key limits: counted by this process alone (no store configured)"]
    assert banner(shared, "http://h")[2:] == ["Key limits: shared through Redis"]
    assert banner(unlimited, "http://h")[2:] == []
