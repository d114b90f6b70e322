"""The limits of the gateway's keys (08 D75, D76) decided by ``mmsp_io.server.limits`` over the
in-process store, the clock injected: rpm, tpm crossing, budgets per UTC day and month, the
windows rolling over, ``Retry-After``, a failing store closed or open, and the start checks."""

from __future__ import annotations

import hashlib
import logging
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from adapters import ModelPricing
from mmsp_core.model import UsageMetadata
from mmsp_io.server import ConfigError, ServerConfig, resolve_config
from mmsp_io.server.limits import (
    Limiter,
    Refusal,
    limiter_for,
    minute_window,
    period_window,
    row_pricing,
)
from mmsp_io.server.stores import Count, MemoryStore, StoreError, open_store

pytestmark = pytest.mark.anyio

ROW = {"model_id": "sim-model", "api_key": "sk-row", "server_model_id": "fast",
       "base_url": "http://127.0.0.1:9/v1", "client_type": "openai-chat",
       "pricing": {"prompt_tokens": 1.0, "response_tokens": 2.0}}
FREE = {**ROW, "server_model_id": "free", "pricing": None}
#: 2027-01-15 10:00:10 UTC: ten seconds into a minute.
T0 = datetime(2027, 1, 15, 10, 0, 10, tzinfo=UTC).timestamp()


class Clock:
    """A wall clock the test moves."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FailingStore:
    """A store that never answers, counting the calls it got."""

    shared = True

    def __init__(self) -> None:
        self.calls = 0

    async def apply(self, counts: Sequence[Count]) -> list[float]:
        self.calls += 1
        raise StoreError("Redis did not answer within 1 s")

    async def ping(self) -> None:
        raise StoreError("Redis did not answer within 1 s")

    async def aclose(self) -> None:
        pass


def configure(*keys: dict[str, Any], **settings: Any) -> ServerConfig:
    return resolve_config({"models": [ROW, FREE], "keys": list(keys), **settings}, environ={})


def limiter(config: ServerConfig, clock: Clock, store: Any = None) -> Limiter:
    pricing = {row: row_pricing(row, "http://127.0.0.1:9/v1") for row in config.models}
    return Limiter(config, MemoryStore() if store is None else store, pricing, clock=clock)


def usage(prompt: int = 0, response: int = 0, cached: int = 0, thoughts: int = 0) -> UsageMetadata:
    return UsageMetadata(cached, prompt, thoughts, response)


def assert_429(refusal: Refusal | None, reason: str, retry_after: int) -> None:
    assert refusal is not None
    assert (refusal.status, refusal.error_type, refusal.reason) == (429, "RateLimitError", reason)
    assert refusal.retry_after == retry_after
    assert refusal.headers == (("retry-after", str(retry_after)),)


async def test_rpm_refuses_the_request_over_the_limit_until_the_minute_ends() -> None:
    config = configure({"name": "team", "key": "k", "rpm": 2})
    clock = Clock()
    limits = limiter(config, clock)
    key = limits.identify("k")
    assert await limits.admit(key) is None
    assert await limits.admit(key) is None
    clock.now += 5  # 15 s into the minute
    refusal = await limits.admit(key)
    assert_429(refusal, "rpm", 45)
    assert refusal is not None and refusal.message == (
        "Key 'team' is over 2 requests per minute; retry in 45 s.")
    clock.now += 45  # the next minute
    assert await limits.admit(key) is None


async def test_tpm_lets_the_crossing_stream_finish_and_refuses_the_next_request() -> None:
    config = configure({"name": "team", "key": "k", "tpm": 100})
    clock = Clock()
    limits = limiter(config, clock)
    key = limits.identify("k")
    row = config.models[0]
    assert await limits.admit(key) is None
    assert await limits.admit(key) is None  # a second stream starts before the first ends
    await limits.settle(key, row, usage(prompt=40, cached=10))
    assert await limits.admit(key) is None  # 50 of 100
    await limits.settle(key, row, usage(response=30, thoughts=40))  # crosses: 120
    assert_429(await limits.admit(key), "tpm", 50)
    clock.now += 50
    assert await limits.admit(key) is None  # a new minute counts afresh


async def test_tpm_reached_exactly_refuses() -> None:
    config = configure({"name": "team", "key": "k", "tpm": 100})
    limits = limiter(config, Clock())
    key = limits.identify("k")
    await limits.settle(key, config.models[0], usage(prompt=60, response=39))
    assert await limits.admit(key) is None
    await limits.settle(key, config.models[0], usage(response=1))
    assert_429(await limits.admit(key), "tpm", 50)


async def test_a_daily_budget_counts_cost_and_resets_at_utc_midnight() -> None:
    config = configure({"name": "team", "key": "k", "budget": {"usd": 1.0, "period": "day"},
                        "models": ["fast"]})
    clock = Clock()
    limits = limiter(config, clock)
    key = limits.identify("k")
    row = config.models[0]  # 1 USD per million prompt tokens, 2 per million output
    await limits.settle(key, row, usage(prompt=400_000, response=100_000))  # 0.6 USD
    assert await limits.admit(key) is None
    await limits.settle(key, row, usage(prompt=None, response=200_000))  # 1.0 USD
    midnight = datetime(2027, 1, 16, tzinfo=UTC).timestamp()
    refusal = await limits.admit(key)
    assert_429(refusal, "budget", int(midnight - T0))
    assert refusal is not None and "budget of 1 USD per day" in refusal.message
    clock.now = midnight
    assert await limits.admit(key) is None


async def test_a_monthly_budget_holds_until_the_first_of_next_month() -> None:
    config = configure({"name": "team", "key": "k", "budget": {"usd": 0.5, "period": "month"},
                        "models": ["fast"]})
    clock = Clock(datetime(2027, 2, 27, 12, tzinfo=UTC).timestamp())
    limits = limiter(config, clock)
    key = limits.identify("k")
    await limits.settle(key, config.models[0], usage(prompt=500_000))
    assert_429(await limits.admit(key), "budget", 36 * 3600)  # to 2027-03-01 00:00 UTC
    clock.now = datetime(2027, 2, 28, 23, 59, 59, tzinfo=UTC).timestamp()
    assert_429(await limits.admit(key), "budget", 1)
    clock.now += 1
    assert await limits.admit(key) is None


async def test_when_several_limits_are_over_retry_after_is_the_latest_end() -> None:
    config = configure({"name": "team", "key": "k", "rpm": 1, "tpm": 10,
                        "budget": {"usd": 0.000001, "period": "day"}, "models": ["fast"]})
    limits = limiter(config, Clock())
    key = limits.identify("k")
    assert await limits.admit(key) is None
    await limits.settle(key, config.models[0], usage(prompt=20))
    midnight = datetime(2027, 1, 16, tzinfo=UTC).timestamp()
    assert_429(await limits.admit(key), "budget", int(midnight - T0))


async def test_keys_count_apart() -> None:
    config = configure({"name": "a", "key": "ka", "rpm": 1}, {"name": "b", "key": "kb", "rpm": 1})
    limits = limiter(config, Clock())
    assert await limits.admit(limits.identify("ka")) is None
    assert await limits.admit(limits.identify("kb")) is None
    assert_429(await limits.admit(limits.identify("ka")), "rpm", 50)


async def test_keys_without_limits_and_open_callers_touch_no_store() -> None:
    config = configure({"name": "free", "key": "kf", "models": ["fast"]}, api_keys=["legacy"],
                       store={"redis_url": "redis://127.0.0.1:9"})
    store = FailingStore()
    limits = limiter(config, Clock(), store)
    for token in ("kf", "legacy"):
        key = limits.identify(token)
        assert key is not None and not key.limited
        assert await limits.admit(key) is None
        await limits.settle(key, config.models[0], usage(prompt=10))
    assert await limits.admit(None) is None
    await limits.settle(None, config.models[0], usage(prompt=10))
    assert store.calls == 0


async def test_a_stream_without_usage_counts_nothing() -> None:
    config = configure({"name": "team", "key": "k", "tpm": 1})
    store = MemoryStore()
    limits = limiter(config, Clock(), store)
    await limits.settle(limits.identify("k"), config.models[0], None)
    await limits.settle(limits.identify("k"), config.models[0], usage())
    assert len(store) == 0
    assert await limits.admit(limits.identify("k")) is None


def test_identify_by_key_digest_and_api_keys() -> None:
    digest = hashlib.sha256(b"hashed-key").hexdigest()
    config = configure({"name": "plain", "key": "k"}, {"name": "hashed", "key_sha256": digest},
                       api_keys=["legacy"])
    limits = limiter(config, Clock())
    found = {token: limits.identify(token) for token in ("k", "hashed-key", "legacy")}
    assert {token: key.name if key else None for token, key in found.items()} == {
        "k": "plain", "hashed-key": "hashed", "legacy": "api_keys[0]"}
    assert limits.identify("K") is None and limits.identify("") is None
    assert limits.identify("k\u0100") is None  # no header decodes to it


async def test_a_failing_store_refuses_with_503_when_closed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = configure({"name": "team", "key": "k", "rpm": 5, "tpm": 5},
                       store={"redis_url": "redis://127.0.0.1:9"})
    limits = limiter(config, Clock(), FailingStore())
    key = limits.identify("k")
    with caplog.at_level(logging.WARNING, logger="mmsp_io"):
        for _ in range(3):
            refusal = await limits.admit(key)
            assert refusal is not None
            assert (refusal.status, refusal.error_type, refusal.reason) == (
                503, "ServiceUnavailableError", "store")
            assert refusal.headers == ()
        await limits.settle(key, config.models[0], usage(prompt=3))  # lost, not raised
    failures = [r for r in caplog.records if "limit store failed" in r.getMessage()]
    assert len(failures) == 1  # the first failure is logged, not every request
    assert "refused with 503" in failures[0].getMessage()
    assert not await limits.ready()


async def test_a_failing_store_serves_uncounted_when_open(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = configure({"name": "team", "key": "k", "rpm": 1},
                       store={"redis_url": "redis://127.0.0.1:9", "on_error": "open"})
    limits = limiter(config, Clock(), FailingStore())
    with caplog.at_level(logging.WARNING, logger="mmsp_io"):
        for _ in range(3):
            assert await limits.admit(limits.identify("k")) is None
    assert ["served uncounted" in r.getMessage() for r in caplog.records] == [True]


async def test_the_store_recovering_is_logged_and_counting_resumes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = configure({"name": "team", "key": "k", "rpm": 1},
                       store={"redis_url": "redis://127.0.0.1:9"})
    failing = FailingStore()
    memory = MemoryStore()
    store = failing

    class Switch:
        shared = True

        async def apply(self, counts: Sequence[Count]) -> list[float]:
            return await store.apply(counts)

        async def ping(self) -> None:
            await store.ping()

        async def aclose(self) -> None:
            pass

    limits = limiter(config, Clock(), Switch())
    key = limits.identify("k")
    with caplog.at_level(logging.WARNING, logger="mmsp_io"):
        assert await limits.admit(key) is not None
        store = memory  # type: ignore[assignment]
        assert await limits.admit(key) is None
        assert_429(await limits.admit(key), "rpm", 50)
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "The limit store failed (Redis did not answer within 1 s)",
        "The limit store answers again"]
    assert await limits.ready()


def test_a_key_with_a_budget_may_not_use_a_row_without_a_price() -> None:
    budget = {"usd": 5, "period": "month"}
    config = configure({"name": "team", "key": "k", "budget": budget})
    with pytest.raises(ConfigError, match=(
            r"keys\[0\] \('team'\) has a budget but may use 'free', which has no price")):
        limiter(config, Clock())
    # listing only priced rows, or no budget, is fine
    limiter(configure({"name": "team", "key": "k", "budget": budget, "models": ["fast"]}),
            Clock())
    limiter(configure({"name": "team", "key": "k", "tpm": 5}), Clock())


def test_a_row_without_a_pricing_column_takes_the_catalog_price_at_its_endpoint() -> None:
    document = {"models": [{"model_id": "gpt-6-luna", "api_key": "sk", "server_model_id": "luna"},
                           {"model_id": "gpt-6-luna", "api_key": "sk", "server_model_id": "local",
                            "base_url": "http://127.0.0.1:9/v1"}],
                "keys": [{"name": "team", "key": "k", "budget": {"usd": 1, "period": "day"},
                          "models": ["luna"]}]}
    config = resolve_config(document, environ={})
    luna, local = config.models
    assert row_pricing(luna, "https://api.openai.com/v1") == ModelPricing(
        "USD", 0.125, 0.5, 0.5, 0.01)
    assert row_pricing(local, "http://127.0.0.1:9/v1") is None
    limiter_for(config, {luna: "https://api.openai.com/v1", local: "http://127.0.0.1:9/v1"})
    document["keys"][0]["models"] = ["luna", "local"]
    with pytest.raises(ConfigError, match="'local', which has no price"):
        limiter_for(resolve_config(document, environ={}),
                    {luna: "https://api.openai.com/v1", local: "http://127.0.0.1:9/v1"})


def test_windows_are_utc_minutes_days_and_months() -> None:
    assert minute_window(T0) == (str(int(T0 - 10)), T0 + 50)
    assert period_window("day", T0) == (
        "20270115", datetime(2027, 1, 16, tzinfo=UTC).timestamp())
    december = datetime(2027, 12, 31, 23, 59, tzinfo=UTC).timestamp()
    assert period_window("month", december) == (
        "202712", datetime(2028, 1, 1, tzinfo=UTC).timestamp())


async def test_the_memory_store_forgets_expired_counters() -> None:
    monotonic = Clock(1000.0)
    store = MemoryStore(monotonic)
    assert await store.apply([Count("a", 2, 30), Count("b", 0.5, 90), Count("c", 0, 30)]) == [
        2, 0.5, 0]
    assert len(store) == 2  # a read creates nothing
    monotonic.now += 40
    assert await store.apply([Count("a", 0, 30), Count("b", 0.25, 90)]) == [0, 0.75]
    monotonic.now += 30  # the sweep, a minute after the store was made
    assert await store.apply([]) == []
    assert len(store) == 1  # "a" expired and is gone
    assert await store.apply([Count("a", 1, 30)]) == [1]  # an expired counter starts at 0


def test_a_configured_store_without_the_redis_client_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = configure(store={"redis_url": "redis://127.0.0.1:9"})
    monkeypatch.setitem(sys.modules, "redis", None)  # import redis raises ImportError
    with pytest.raises(ConfigError, match=r"pip install 'mmsp-sansio\[gateway\]'"):
        open_store(config.store)


def test_a_store_url_that_is_not_redis_is_refused_at_start() -> None:
    config = configure(store={"redis_url": "http://127.0.0.1:9"})
    with pytest.raises(ConfigError, match=r"store\.redis_url is not a Redis URL"):
        open_store(config.store)


async def test_negative_counts_from_an_upstream_give_no_tokens_or_dollars_back() -> None:
    """An upstream that reports a negative count (a bug, or a hostile endpoint) counts it as
    0: the key's tokens and spend never go down."""
    config = configure({"name": "team", "key": "k", "tpm": 100,
                        "budget": {"usd": 1.0, "period": "day"}, "models": ["fast"]})
    limits = limiter(config, Clock())
    key = limits.identify("k")
    row = config.models[0]  # 1 USD per million prompt tokens, 2 per million output
    await limits.settle(key, row, usage(prompt=99, response=1))
    await limits.settle(key, row, usage(prompt=-1_000_000_000, response=0))
    assert_429(await limits.admit(key), "tpm", 50)
    await limits.settle(key, row, usage(prompt=-1_000_000_000, response=500_000))
    refusal = await limits.admit(key)
    assert refusal is not None and "budget of 1 USD per day" in refusal.message
