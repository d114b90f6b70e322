"""``GET /metrics``, the gateway's Prometheus exposition (issue 25 item 2), on both front ends:
what a few streams and a refusal leave in it, parsed with ``prometheus-client``'s own parser;
label values that come only from the configuration, whatever callers send; the token rule
(none on loopback, ``metrics.token`` elsewhere); 501 without the package; and two real
gateway processes sharing ``PROMETHEUS_MULTIPROC_DIR``, one scrape counting both.
"""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from serverkit import (
    AUTH,
    FRONTS,
    RELAXED,
    TOKEN,
    config,
    post_stream,
    row,
    running,
    stream_body,
)
from test_server_cli import ROOT, environment, simulator_in_a_thread

from mmsp_core.model import TextDone, UsageMetadata
from mmsp_io.server import ASGIApp, ConfigError, Gateway, resolve_config
from mmsp_io.server.limits import limiter_for
from mmsp_io.simulator import Reply, Simulator

#: 2027-01-15 10:00:10 UTC: ten seconds into a minute, so the rpm window never ends mid-test.
T0 = datetime(2027, 1, 15, 10, 0, 10, tzinfo=UTC).timestamp()
#: Every answer: 12 prompt, none cached, 8 response tokens; at 100,000 USD per million for
#: both, 2 USD a stream.
REPLY = Reply(items=[TextDone(text="Hi")],
              usage=UsageMetadata(cached_tokens=0, prompt_tokens=12, response_tokens=8))
PRICING = {"prompt_tokens": 100_000, "response_tokens": 100_000}
TEAM = {"authorization": "Bearer team-key"}
#: What a scrape's samples are: name and sorted labels to value.
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
#: What bounds a test that would otherwise hang (never a measured figure).
HANG_GUARD = 30


@pytest.fixture(params=FRONTS)
def front(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def samples(text: str) -> Samples:
    """Every sample of an exposition, by name and labels (the test skips without the parser,
    the gateway extra's)."""
    parser = pytest.importorskip("prometheus_client.parser",
                                 reason="pip install 'mmsp-sansio[gateway]'")
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in parser.text_string_to_metric_families(text)
            for sample in family.samples}


def value(scraped: Samples, name: str, **labels: str) -> float:
    return scraped[(name, tuple(sorted(labels.items())))]


def keyed_gateway(sim: Simulator, tmp_path: Path, **settings: Any) -> Gateway:
    """A gateway over the simulator's priced openai-chat row, the key ``team`` (3 requests a
    minute, on a clock fixed at ``T0``) beside ``api_keys``, and more top-level settings."""
    document = {**config(sim, ["openai-chat"]), **settings,
                "keys": [{"name": "team", "key": "team-key", "rpm": 3}]}
    document["models"][0]["pricing"] = PRICING
    gateway = Gateway(document, timeouts=RELAXED, max_retries=0, trace_dir=tmp_path / "traces")
    base_urls = {row: sim.base_url(row.server_model_id) for row in gateway.config.models}
    gateway.limits = limiter_for(gateway.config, base_urls, clock=lambda: T0)
    return gateway


@pytest.mark.anyio
async def test_metrics_count_requests_times_tokens_cost_and_refusals(
    front: str, tmp_path: Path
) -> None:
    """Three streams of ``team`` (one at a front door), a fourth refused over its rpm, one
    failing call of an ``api_keys`` token, and requests naming models, keys and routes of the
    caller's choosing, which count nowhere."""
    empty = {"role": "user", "content_items": []}  # InvalidMessageError, no upstream call
    door = {"model": "openai-chat", "stream": True,
            "messages": [{"role": "user", "content": "Hi"}]}
    async with Simulator.running(REPLY) as sim, \
            running(keyed_gateway(sim, tmp_path), front) as origin, \
            httpx.AsyncClient() as http:
        for _ in range(2):
            _, events = await post_stream(http, origin, stream_body("openai-chat"), TEAM)
            assert events[-2]["event_type"] == "stop"
        assert (await http.post(origin + "/v1/chat/completions", json=door,
                                headers=TEAM)).status_code == 200
        refused, _ = await post_stream(http, origin, stream_body("openai-chat"), TEAM)
        _, events = await post_stream(
            http, origin, {**stream_body("openai-chat"), "messages": [empty]})
        strangers = [
            await post_stream(http, origin, stream_body("chosen-by-caller"), TEAM),
            await post_stream(http, origin, stream_body("openai-chat"),
                              {"authorization": "Bearer chosen-by-caller"}),
            await post_stream(http, origin, {"model": "openai-chat", "messages": 7}),
        ]
        scrape = await http.get(origin + "/metrics")
    assert refused.status_code == 429
    assert events[0]["error"]["type"] == "InvalidMessageError"
    assert [response.status_code for response, _ in strangers] == [404, 401, 400]
    assert scrape.status_code == 200
    assert scrape.headers["content-type"].startswith("text/plain; version=")
    scraped = samples(scrape.text)
    model = {"gen_ai_request_model": "openai-chat"}
    requests = "mmsp_gateway_requests_total"
    assert value(scraped, requests, **model, key="team", outcome="success") == 3
    assert value(scraped, requests, **model, key="api_keys[0]", outcome="failure") == 1
    assert value(scraped, "mmsp_gateway_refusals_total", reason="rpm", key="team") == 1
    assert value(scraped, "mmsp_gateway_cost_usd_total", **model, key="team") == 6.0
    assert value(scraped, "mmsp_gateway_streams_in_flight", **model) == 0
    tokens = "gen_ai_client_token_usage"
    for token_type, total in (("input", 36), ("output", 24), ("cache_read", 0)):
        assert value(scraped, tokens + "_count", **model, gen_ai_token_type=token_type) == 3
        assert value(scraped, tokens + "_sum", **model, gen_ai_token_type=token_type) == total
    # the failed call had no first event: three first events, four durations
    first = "gen_ai_server_time_to_first_token_seconds"
    assert value(scraped, first + "_count", **model) == 3
    assert value(scraped, first + "_bucket", **model, le="+Inf") == 3
    duration = "gen_ai_server_request_duration_seconds_count"
    assert value(scraped, duration, **model, outcome="success") == 3
    assert value(scraped, duration, **model, outcome="failure") == 1


@pytest.mark.anyio
async def test_label_values_come_from_the_configuration_only(
    front: str, tmp_path: Path
) -> None:
    """Whatever models, keys, routes and headers callers send, every label value of the
    scrape is a served model, a configured key name, or one of the fixed sets."""
    async with Simulator.running(REPLY) as sim, \
            running(keyed_gateway(sim, tmp_path), front) as origin, \
            httpx.AsyncClient() as http:
        for index in range(20):
            chosen = f"chosen-{index}"
            await post_stream(http, origin, stream_body(chosen), TEAM)
            await post_stream(http, origin, stream_body("openai-chat"),
                              {"authorization": f"Bearer {chosen}"})
            await http.post(origin + "/v1/chat/completions", headers=AUTH,
                            json={"model": chosen, "messages": []})
            await http.get(origin + f"/{chosen}", headers={"x-api-key": chosen})
        await post_stream(http, origin, stream_body("openai-chat"), TEAM)
        scraped = samples((await http.get(origin + "/metrics")).text)
    allowed = {
        "gen_ai_request_model": {"openai-chat"},
        "key": {"team", "api_keys[0]", "-"},
        "outcome": {"success", "failure", "disconnect"},
        "gen_ai_token_type": {"input", "cache_read", "reasoning", "output"},
        "reason": {"rpm", "tpm", "budget", "store"},
        "row": {"models[0]"},
    }
    for _, labels in scraped:
        for name, label in labels:
            if name != "le":
                assert label in allowed[name], (name, label)
    assert value(scraped, "mmsp_gateway_requests_total", gen_ai_request_model="openai-chat",
                 key="team", outcome="success") == 1


def asgi_client(gateway: Gateway, host: str) -> httpx.AsyncClient:
    """An in-process client of the gateway's ASGI app, which sees the request come in at
    ``host`` (the ASGI ``server``): no socket at all."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(ASGIApp(gateway)),
                             base_url=f"http://{host}")


@pytest.mark.anyio
async def test_off_loopback_metrics_need_the_metrics_token(tmp_path: Path) -> None:
    """At a non-loopback address: 403 while no ``metrics.token`` is configured; with one,
    401 without it, with another token or with a gateway key, 200 with it. On loopback no
    token is asked (the other tests scrape without one)."""
    pytest.importorskip("prometheus_client", reason="pip install 'mmsp-sansio[gateway]'")
    async with Simulator.running(REPLY) as sim:
        unset = Gateway(config(sim, ["openai-chat"]), timeouts=RELAXED)
        async with asgi_client(unset, "10.20.30.40") as http:
            unconfigured = await http.get("/metrics")
        document = {**config(sim, ["openai-chat"]), "metrics": {"token": "$SCRAPE"}}
        gateway = Gateway(resolve_config(document, environ={"SCRAPE": "scrape-token"}),
                          timeouts=RELAXED)
        async with asgi_client(gateway, "10.20.30.40") as http:
            statuses = [(await http.get("/metrics", headers=headers)).status_code
                        for headers in ({}, {"authorization": "Bearer nope"}, AUTH,
                                        {"authorization": "Bearer scrape-token"})]
        async with asgi_client(gateway, "127.0.0.1") as http:
            local = await http.get("/metrics")
        await unset.aclose()
        await gateway.aclose()
    assert unconfigured.status_code == 403
    assert "metrics.token" in unconfigured.json()["error"]["message"]
    assert statuses == [401, 401, 401, 200]
    assert local.status_code == 200


def test_the_metrics_token_is_a_non_empty_string_or_a_reference() -> None:
    document = {"models": [{"server_model_id": "m", "model_id": "x", "api_key": "k"}]}
    with pytest.raises(ConfigError, match=r"metrics\.token must be a non-empty string"):
        resolve_config({**document, "metrics": {"token": ""}})
    with pytest.raises(ConfigError, match=r"metrics\.token references \$UNSET"):
        resolve_config({**document, "metrics": {"token": "$UNSET"}}, environ={})
    assert resolve_config(document).metrics_token is None


@pytest.mark.anyio
async def test_without_prometheus_client_metrics_is_501_and_streams_are_served(
    front: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # import raises ImportError
    async with Simulator.running(REPLY) as sim:
        gateway = Gateway(config(sim, ["openai-chat"]), timeouts=RELAXED)
        assert gateway.prometheus is None
        async with running(gateway, front) as origin, httpx.AsyncClient() as http:
            _, events = await post_stream(http, origin, stream_body("openai-chat"))
            scrape = await http.get(origin + "/metrics")
    assert events[-1] == "[DONE]"
    assert scrape.status_code == 501
    assert scrape.json()["error"]["message"] == (
        "GET /metrics needs prometheus-client: pip install 'mmsp-sansio[gateway]'")


def start_serving(config_path: Path, backend: str, multiproc: Path,
                  stack: ExitStack) -> str:
    """``python -m mmsp_io serve`` on a free port with ``PROMETHEUS_MULTIPROC_DIR``, stopped
    when ``stack`` closes; its origin."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mmsp_io", "serve", "--config", str(config_path), "--port", "0",
         "--backend", backend, "--grace", "1"],
        cwd=ROOT, env=environment(PROMETHEUS_MULTIPROC_DIR=str(multiproc)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stack.callback(process.wait, timeout=10)
    stack.callback(process.terminate)
    assert process.stdout is not None
    first = process.stdout.readline()
    assert first.startswith("Starting MMSP server at "), first
    return first.split(" at ", 1)[1].strip().removesuffix("/v1")


def test_one_scrape_counts_the_requests_of_two_worker_processes(tmp_path: Path) -> None:
    """Two gateway processes (one on asyncio, one on trio) share the multiprocess directory:
    two streams served by one and three by the other are five in a scrape of either."""
    multiproc_dir = tmp_path / "prometheus"
    multiproc_dir.mkdir()
    with simulator_in_a_thread(REPLY) as sim, ExitStack() as stack:
        path = tmp_path / "server.json"
        path.write_text(json.dumps({"models": [row(sim, "openai-chat")],
                                    "api_keys": [TOKEN]}))
        first = start_serving(path, "asyncio", multiproc_dir, stack)
        second = start_serving(path, "trio", multiproc_dir, stack)
        with httpx.Client(timeout=HANG_GUARD) as http:
            for origin, count in ((first, 2), (second, 3)):
                for _ in range(count):
                    answer = http.post(origin + "/v1/stream", json=stream_body("openai-chat"),
                                       headers=AUTH)
                    assert answer.status_code == 200 and answer.text.endswith("[DONE]\n\n")
            scrapes = [samples(http.get(origin + "/metrics").text)
                       for origin in (first, second)]
    for scraped in scrapes:
        assert value(scraped, "mmsp_gateway_requests_total", gen_ai_request_model="openai-chat",
                     key="api_keys[0]", outcome="success") == 5
        assert value(scraped, "gen_ai_server_request_duration_seconds_count",
                     gen_ai_request_model="openai-chat", outcome="success") == 5
        assert value(scraped, "mmsp_gateway_streams_in_flight",
                     gen_ai_request_model="openai-chat") == 0


@pytest.mark.anyio
async def test_negative_counts_from_an_upstream_take_no_dollars_off(tmp_path: Path) -> None:
    """A usage priced below zero adds nothing to the cost, and the stream ends whole: a
    counter refuses a negative amount, and an error while counting the end of a call would
    cut the caller's stream before its last chunk."""
    reply = Reply(items=[TextDone(text="Hi")],
                  usage=UsageMetadata(cached_tokens=0, prompt_tokens=-1000, response_tokens=8))
    async with Simulator.running(reply) as sim, \
            running(keyed_gateway(sim, tmp_path), "h11") as origin, \
            httpx.AsyncClient() as http:
        _, events = await post_stream(http, origin, stream_body("openai-chat"), TEAM)
        scraped = samples((await http.get(origin + "/metrics")).text)
    assert events[-2]["usage_metadata"]["prompt_tokens"] == -1000
    model = {"gen_ai_request_model": "openai-chat"}
    assert value(scraped, "mmsp_gateway_requests_total", **model, key="team",
                 outcome="success") == 1
    assert ("mmsp_gateway_cost_usd_total", (("gen_ai_request_model", "openai-chat"),
                                            ("key", "team"))) not in scraped
