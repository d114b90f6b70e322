"""``GET /readyz`` of a gateway whose keys' limits live in a real Redis (issue 25 item 1, 08
D76), on both front ends: ready and shared while Redis answers, 503 ``store unavailable`` once
it stops. ``redis-server`` and the Redis client as ``test_server_limits_redis`` needs them
(the tests skip, saying why, without them).
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from serverkit import FRONTS, running
from test_server_health import REPLY, gateway_of
from test_server_limits_redis import RedisServer, redis_server  # noqa: F401 (the fixture)

from mmsp_io.simulator import Simulator

pytestmark = pytest.mark.anyio


@pytest.fixture(params=FRONTS)
def front(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_readyz_follows_the_shared_store(
    front: str, tmp_path: Path, redis_server: RedisServer  # noqa: F811
) -> None:
    """With a Redis store: ready and shared while it answers; 503 ``store unavailable`` once it
    stops, while ``/healthz`` stays 200 (the process is alive)."""
    store = {"redis_url": redis_server.url, "timeout_s": 0.5}
    async with Simulator.running(REPLY) as sim, \
            running(gateway_of(sim, tmp_path, store=store), front) as origin, \
            httpx.AsyncClient() as http:
        up = await http.get(origin + "/readyz")
        redis_server.stop()
        down = await http.get(origin + "/readyz")
        alive = await http.get(origin + "/healthz")
    assert (up.status_code, up.json()["limits"], up.json()["status"]) == (200, "shared", "ready")
    assert down.status_code == 503
    assert down.json() == {"status": "store unavailable", "config": "loaded",
                           "store": "does not answer", "draining": False, "limits": "shared"}
    assert alive.status_code == 200
