"""The counts behind ``GET /v1/metrics`` (spec 07 §5), on fake clocks."""

from __future__ import annotations

from collections.abc import Callable

from mmsp_core.model import UsageMetadata
from mmsp_io.server.metrics import Metrics


def clock(start: float) -> tuple[Callable[[], float], Callable[[float], None]]:
    now = [start]

    def advance(seconds: float) -> None:
        now[0] += seconds

    return lambda: now[0], advance


def test_counts_latencies_tokens_and_rates() -> None:
    wall, _ = clock(1_760_000_000.0)
    monotonic, advance = clock(100.0)
    metrics = Metrics(["a", "b"], wall=wall, monotonic=monotonic, show_errors=True)
    for first, rest, tokens in [(0.1, 0.9, 10), (0.2, 0.8, 5), (0.3, 0.25, 1)]:
        tally = metrics.begin("a")
        advance(first)
        tally.event(stop=False, usage=None)
        advance(rest)
        tally.event(stop=True, usage=UsageMetadata(prompt_tokens=3, cached_tokens=1,
                                                   response_tokens=tokens))
        tally.end(client_gone=False)
    failed = metrics.begin("b")
    failed.failed("upstream trouble")
    failed.end(client_gone=False)
    gone = metrics.begin("b")
    gone.end(client_gone=True)
    refused = ["unauthorized", "unknown_model", "unknown_model"]
    for why in refused:
        metrics.refused(why)  # type: ignore[arg-type]
    snapshot = metrics.snapshot()
    assert (snapshot["requests"], snapshot["successes"], snapshot["failures"]) == (5, 3, 1)
    assert (snapshot["disconnects"], snapshot["in_flight"]) == (1, 0)
    assert snapshot["success_rate"] == 0.75
    assert snapshot["latency_ms"] == {"first_event": {"p50": 200.0, "p90": 300.0},
                                      "total": {"p50": 1000.0, "p90": 1000.0}}
    assert snapshot["tokens"] == {"prompt": 9, "cached": 3, "thoughts": 0, "response": 16}
    assert snapshot["tokens_out"] == 16
    assert snapshot["generation_ms"] == 1950.0
    assert snapshot["tps"] == 8.2  # 16 / 1.95 s = 8.205..., rounded half-up to one decimal
    assert snapshot["refused"] == {"unauthorized": 1, "invalid_request": 0, "unknown_model": 2}
    assert snapshot["errors"] == [{"at": 1_760_000_000.0, "model": "b",
                                   "message": "upstream trouble"}]
    models = {m["id"]: m for m in snapshot["models"]}
    assert next(iter(models["a"])) == "id"
    assert (models["a"]["successes"], models["a"]["last_outcome"]) == (3, "success")
    assert (models["b"]["failures"], models["b"]["disconnects"]) == (1, 1)
    assert (models["b"]["last_outcome"], models["b"]["last_error"]) == ("disconnect", None)
    assert snapshot["started_at"] == snapshot["since"] == 1_760_000_000.0
    assert snapshot["uptime_s"] == 2.55


def test_before_any_request_the_rates_are_null() -> None:
    wall, _ = clock(5.0)
    monotonic, _ = clock(0.0)
    snapshot = Metrics(["a"], wall=wall, monotonic=monotonic).snapshot()
    assert snapshot["success_rate"] is None and snapshot["tps"] is None
    assert snapshot["latency_ms"]["total"] == {"p50": None, "p90": None}
    assert snapshot["last_request_at"] is None and snapshot["errors"] == []


def test_the_kept_samples_and_errors_are_bounded() -> None:
    wall, _ = clock(0.0)
    monotonic, advance = clock(0.0)
    metrics = Metrics(["a"], wall=wall, monotonic=monotonic, show_errors=True)
    for n in range(1200):
        tally = metrics.begin("a")
        advance(1.0 if n < 200 else 0.001)
        tally.event(stop=True, usage=None)
        tally.end(client_gone=False)
    for n in range(150):
        tally = metrics.begin("a")
        tally.failed(f"error {n}")
        tally.end(client_gone=False)
    snapshot = metrics.snapshot()
    assert snapshot["latency_ms"]["total"]["p90"] == 1.0  # the 200 slow ones fell out
    assert len(snapshot["errors"]) == 100
    assert snapshot["errors"][0]["message"] == "error 149"  # newest first


def test_negative_counts_from_an_upstream_take_no_tokens_off() -> None:
    """A stop whose usage holds a negative count (an upstream's bug, or a hostile endpoint's)
    adds 0 for it: the totals never go down."""
    wall, _ = clock(1_760_000_000.0)
    monotonic, _ = clock(100.0)
    metrics = Metrics(["a"], wall=wall, monotonic=monotonic)
    for usage in (UsageMetadata(prompt_tokens=5, response_tokens=7),
                  UsageMetadata(prompt_tokens=-1000, cached_tokens=-1, response_tokens=-50)):
        tally = metrics.begin("a")
        tally.event(stop=True, usage=usage)
        tally.end(client_gone=False)
    snapshot = metrics.snapshot()
    assert snapshot["tokens"] == {"prompt": 5, "cached": 0, "thoughts": 0, "response": 7}
    assert snapshot["tokens_out"] == 7
