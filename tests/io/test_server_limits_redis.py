"""The keys' limits shared through a real Redis (08 D76): two limiters, as two gateway
processes hold, enforce one rpm, one tpm and one budget limit together; a Redis stopped mid-run
gives the configured outcome (closed: 503, open: served) and a Redis that never answers is a
``StoreError`` once the store timeout has passed, never a hang. Then the same with two real
gateway processes, one on asyncio and one on trio, in front of the provider simulator.

``redis-server`` (Debian's package; ``.ci/run`` installs it when absent) is started on a free
loopback port in a temporary directory, without persistence, and stopped after each test; the
tests skip, saying why, where it is not on ``PATH``.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import attrs
import httpx
import pytest
from serverkit import row, stream_body
from test_server_cli import ROOT, environment, simulator_in_a_thread

from mmsp_core.model import TextDone, UsageMetadata
from mmsp_io import simulator
from mmsp_io.server import ServerConfig, resolve_config
from mmsp_io.server.limits import Limiter, limiter_for, minute_window
from mmsp_io.server.stores import Count, RedisStore, StoreError

pytestmark = pytest.mark.anyio
pytest.importorskip("redis", reason="the Redis client is the gateway extra's: "
                                    "pip install 'mmsp-sansio[gateway]'")

ROW = {"model_id": "sim-model", "api_key": "sk-row", "server_model_id": "fast",
       "base_url": "http://127.0.0.1:9/v1", "client_type": "openai-chat",
       "pricing": {"prompt_tokens": 1.0, "response_tokens": 2.0}}
T0 = 1_800_000_010.0  # ten seconds into a UTC minute
#: What bounds a test that would otherwise hang (never a measured figure).
HANG_GUARD = 30


@attrs.define
class RedisServer:
    url: str
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A ``redis-server`` on a free loopback port, stopped after the test."""
    executable = shutil.which("redis-server")
    if executable is None:
        pytest.skip("redis-server is not on PATH (Debian's redis-server package; .ci/run "
                    "installs it with apt-get)")
    port = _free_port()
    process = subprocess.Popen(
        [executable, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = RedisServer(f"redis://127.0.0.1:{port}/0", process)
    try:
        for _ in range(200):
            if _answers(port):
                break
            if process.poll() is not None:
                pytest.fail(f"redis-server exited with {process.returncode}")
            time.sleep(0.05)
        else:
            pytest.fail("redis-server did not answer on its port")
        yield server
    finally:
        if process.poll() is None:
            server.stop()


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def configure(redis: RedisServer, key: dict[str, Any], **store: Any) -> ServerConfig:
    return resolve_config({"models": [ROW], "keys": [{"name": "team", "key": "k", **key}],
                           "store": {"redis_url": redis.url, **store}}, environ={})


def two_gateways(config: ServerConfig, clock: Clock) -> tuple[Limiter, Limiter]:
    """Two limiters with a Redis client each, as two gateway processes have."""
    base_urls = {row: "http://127.0.0.1:9/v1" for row in config.models}
    return (limiter_for(config, base_urls, clock=clock),
            limiter_for(config, base_urls, clock=clock))


async def test_two_gateways_enforce_one_rpm_limit(redis_server: RedisServer) -> None:
    clock = Clock()
    first, second = two_gateways(configure(redis_server, {"rpm": 3}), clock)
    assert first.shared and second.shared
    assert [await gateway.admit(gateway.identify("k"))
            for gateway in (first, second, first)] == [None, None, None]
    for gateway in (second, first):
        refusal = await gateway.admit(gateway.identify("k"))
        assert refusal is not None and (refusal.status, refusal.reason) == (429, "rpm")
        assert refusal.retry_after == 50
    clock.now += 50
    assert await second.admit(second.identify("k")) is None
    await first.aclose()
    await second.aclose()


async def test_two_gateways_enforce_one_tpm_limit(redis_server: RedisServer) -> None:
    clock = Clock()
    config = configure(redis_server, {"tpm": 100})
    first, second = two_gateways(config, clock)
    key = first.identify("k")
    assert await first.admit(key) is None
    assert await second.admit(key) is None
    await first.settle(key, config.models[0], UsageMetadata(10, 30, 0, 20))  # 60
    assert await second.admit(key) is None
    await second.settle(key, config.models[0], UsageMetadata(None, 20, 30, None))  # 110
    for gateway in (first, second):
        refusal = await gateway.admit(key)
        assert refusal is not None and (refusal.reason, refusal.retry_after) == ("tpm", 50)
    await first.aclose()
    await second.aclose()


async def test_two_gateways_enforce_one_budget(redis_server: RedisServer) -> None:
    clock = Clock()
    config = configure(redis_server, {"budget": {"usd": 1.0, "period": "day"}})
    first, second = two_gateways(config, clock)
    key = first.identify("k")
    await first.settle(key, config.models[0], UsageMetadata(prompt_tokens=300_000))  # 0.3
    assert await second.admit(key) is None
    await second.settle(key, config.models[0], UsageMetadata(response_tokens=350_000))  # 1.0
    refusal = await first.admit(key)
    assert refusal is not None and refusal.reason == "budget"
    clock.now += 86_400  # the next UTC day
    assert await first.admit(key) is None
    await first.aclose()
    await second.aclose()


async def test_redis_stopped_mid_run_fails_closed(redis_server: RedisServer) -> None:
    config = configure(redis_server, {"rpm": 100, "tpm": 1000}, timeout_s=0.5)
    first, _ = two_gateways(config, Clock())
    key = first.identify("k")
    assert await first.admit(key) is None
    assert await first.ready()
    redis_server.stop()
    with anyio.fail_after(HANG_GUARD):
        refusal = await first.admit(key)
        assert refusal is not None
        assert (refusal.status, refusal.error_type) == (503, "ServiceUnavailableError")
        await first.settle(key, config.models[0], UsageMetadata(prompt_tokens=5))  # lost
        assert not await first.ready()
    await first.aclose()


async def test_redis_stopped_mid_run_serves_uncounted_when_open(
    redis_server: RedisServer,
) -> None:
    config = configure(redis_server, {"rpm": 1}, on_error="open", timeout_s=0.5)
    first, _ = two_gateways(config, Clock())
    key = first.identify("k")
    assert await first.admit(key) is None
    redis_server.stop()
    with anyio.fail_after(HANG_GUARD):
        assert [await first.admit(key) for _ in range(3)] == [None, None, None]
    await first.aclose()


async def test_a_redis_that_never_answers_is_a_store_error_not_a_hang() -> None:
    with socket.socket() as silent:  # accepts connections (the backlog) and never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        store = RedisStore(f"redis://127.0.0.1:{silent.getsockname()[1]}/0", 0.3)
        with anyio.fail_after(HANG_GUARD):
            with pytest.raises(StoreError, match="Redis"):
                await store.apply([Count("mmsp:test", 1, 60)])
            with pytest.raises(StoreError):
                await store.ping()
        await store.aclose()


async def test_the_redis_counters_expire(redis_server: RedisServer) -> None:
    import redis

    store = RedisStore(redis_server.url, 1.0)
    assert await store.apply([Count("c:int", 2, 120), Count("c:float", 0.25, 120),
                              Count("c:none", 0, 120)]) == [2, 0.25, 0]
    assert await store.apply([Count("c:int", 3, 120), Count("c:float", 0, 120)]) == [5, 0.25]
    client = redis.Redis.from_url(redis_server.url)
    assert 0 < client.ttl("c:int") <= 120 and 0 < client.ttl("c:float") <= 120
    assert client.exists("c:none") == 0  # a read creates nothing
    client.close()
    await store.aclose()


@attrs.frozen
class GatewayProcess:
    url: str
    process: subprocess.Popen[str]

    def post(self, key: str) -> httpx.Response:
        return httpx.post(self.url + "/stream", json=stream_body("openai-chat"),
                          headers={"authorization": f"Bearer {key}"}, timeout=HANG_GUARD)


def start_gateway(config: Path, backend: str, stack: ExitStack) -> GatewayProcess:
    """``python -m mmsp_io serve`` on a free port, stopped when ``stack`` closes."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mmsp_io", "serve", "--config", str(config), "--port", "0",
         "--backend", backend, "--grace", "1"],
        cwd=ROOT, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stack.callback(process.wait, timeout=10)
    stack.callback(process.kill)
    assert process.stdout is not None
    first = process.stdout.readline()
    assert first.startswith("Starting MMSP server at "), first + process.stderr.read()
    return GatewayProcess(first.split(" at ", 1)[1].strip(), process)


def test_two_gateway_processes_share_one_rpm_tpm_and_budget_then_fail_closed(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """rpm 3, tpm 30 (20 tokens a stream) and 3 USD a day (2 USD a stream), each counted by
    whichever process served the request; then Redis stops and both answer 503 to a key with
    limits, while an ``api_keys`` token is still served. A run that
    spans the end of a minute is run again on an empty Redis (minute counts restart)."""
    import redis

    keys = [{"name": "rpm", "key": "rpm-key", "rpm": 3},
            {"name": "tpm", "key": "tpm-key", "tpm": 30},
            {"name": "budget", "key": "budget-key", "budget": {"usd": 3, "period": "day"}}]
    reply = simulator.Reply(items=[TextDone(text="served")],
                            usage=UsageMetadata(cached_tokens=0, prompt_tokens=12,
                                                response_tokens=8))
    with simulator_in_a_thread(reply) as sim, ExitStack() as stack:
        path = tmp_path / "server.json"
        served = {**row(sim, "openai-chat"),
                  "pricing": {"prompt_tokens": 100_000, "response_tokens": 100_000}}
        path.write_text(json.dumps({"models": [served], "keys": keys, "api_keys": ["plain"],
                                    "store": {"redis_url": redis_server.url,
                                              "timeout_s": 0.5}}))
        first, second = (start_gateway(path, "asyncio", stack),
                         start_gateway(path, "trio", stack))
        order = [first, second, first, second]
        for _ in range(2):
            minute = minute_window(time.time())[0]
            statuses = {key["name"]: [gateway.post(str(key["key"])).status_code
                                      for gateway in order] for key in keys}
            if minute_window(time.time())[0] == minute:
                break
            redis.Redis.from_url(redis_server.url).flushall()
        assert statuses == {"rpm": [200, 200, 200, 429], "tpm": [200, 200, 429, 429],
                            "budget": [200, 200, 429, 429]}
        refused = second.post("budget-key")
        assert refused.json()["error"]["type"] == "RateLimitError"
        assert int(refused.headers["retry-after"]) > 0
        redis_server.stop()
        down = [gateway.post("rpm-key") for gateway in (first, second)]
        assert [answer.status_code for answer in down] == [503, 503]
        assert {answer.json()["error"]["type"] for answer in down} == {"ServiceUnavailableError"}
        assert first.post("plain").status_code == 200  # a key without limits needs no store
