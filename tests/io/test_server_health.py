"""The gateway's health routes on both front ends (issue 25 item 1): ``GET /healthz`` is alive
without a key or an upstream call; ``GET /readyz`` is 200 while the configuration is loaded
and the server is not draining, else 503 saying so, and says whether the keys' limits are
shared (with a Redis store: ``test_server_health_redis``). Streamed answers carry
``X-Accel-Buffering: no`` (item 7).
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from serverkit import AUTH, FRONTS, RELAXED, config, post_stream, running, stream_body

from mmsp_core.model import TextDone
from mmsp_io.httpserver import Request
from mmsp_io.server import Gateway, serve
from mmsp_io.server.health import operational_answer
from mmsp_io.simulator import Reply, Simulator

pytestmark = pytest.mark.anyio

REPLY = Reply(items=[TextDone(text="Hi")])


@pytest.fixture(params=FRONTS)
def front(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def gateway_of(sim: Simulator, tmp_path: Path, **settings: object) -> Gateway:
    """A keyed gateway over the simulator's openai-chat row, with more top-level ``settings``."""
    return Gateway({**config(sim, ["openai-chat"]), **settings}, timeouts=RELAXED,
                   max_retries=0, trace_dir=tmp_path / "traces")


async def test_healthz_and_readyz_answer_without_a_key_or_an_upstream_call(
    front: str, tmp_path: Path
) -> None:
    async with Simulator.running(REPLY) as sim:
        async with running(gateway_of(sim, tmp_path), front) as origin, \
                httpx.AsyncClient() as http:
            alive = await http.get(origin + "/healthz")
            ready = await http.get(origin + "/readyz")
            metrics = (await http.get(origin + "/v1/metrics", headers=AUTH)).json()
        assert sim.requests == []
    assert (alive.status_code, alive.json()) == (200, {"status": "ok"})
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "config": "loaded", "store": "answers",
                            "draining": False, "limits": "per process"}
    assert (metrics["requests"], metrics["refused"]["unauthorized"]) == (0, 0)


async def test_readyz_is_503_while_the_server_drains(tmp_path: Path) -> None:
    """Leaving ``serve`` begins the graceful close; from then on the gateway is not ready (the
    h11 core accepts no new connection by then, so the gateway is asked directly, as a request
    on a connection still open would)."""
    async with Simulator.running(REPLY) as sim:
        gateway = gateway_of(sim, tmp_path)
        async with serve(gateway) as server, httpx.AsyncClient() as http:
            assert (await http.get(server.url + "/readyz")).status_code == 200
        assert gateway.draining
        request = Request(method="GET", path="/readyz", query="",
                          headers=(("host", "127.0.0.1"),), body=b"")
        answer = await operational_answer(gateway, request, "127.0.0.1")
    assert answer is not None and answer.status == 503
    assert b'"status":"draining"' in answer.body and b'"draining":true' in answer.body


async def test_the_asgi_app_drains_at_lifespan_shutdown(tmp_path: Path) -> None:
    async with Simulator.running(REPLY) as sim:
        gateway = gateway_of(sim, tmp_path)
        async with running(gateway, "asgi"):
            assert not gateway.draining
    assert gateway.draining


async def test_an_open_server_applies_its_host_rule_to_the_health_routes(
    front: str, tmp_path: Path
) -> None:
    async with Simulator.running(REPLY) as sim:
        gateway = Gateway(config(sim, ["openai-chat"], keys=False), timeouts=RELAXED)
        async with running(gateway, front) as origin, httpx.AsyncClient() as http:
            rebound = await http.get(origin + "/healthz", headers={"host": "evil.example"})
    assert rebound.status_code == 403


async def test_streams_tell_proxies_not_to_buffer(front: str, tmp_path: Path) -> None:
    """``/v1/stream`` and a front door's stream carry ``X-Accel-Buffering: no``."""
    async with Simulator.running(REPLY) as sim, \
            running(gateway_of(sim, tmp_path), front) as origin, \
            httpx.AsyncClient() as http:
        mmsp, events = await post_stream(http, origin, stream_body("openai-chat"))
        door = await http.post(origin + "/v1/chat/completions", headers=AUTH, json={
            "model": "openai-chat", "stream": True,
            "messages": [{"role": "user", "content": "Hi"}]})
    assert events[-1] == "[DONE]"
    assert door.status_code == 200 and door.content.endswith(b"data: [DONE]\n\n")
    for response in (mmsp, door):
        assert response.headers["x-accel-buffering"] == "no"
        assert response.headers["content-type"].startswith("text/event-stream")
