"""The gateway's metrics for Prometheus at ``GET /metrics`` (issue 25), through
``prometheus-client`` (the ``gateway`` extra).

The package is imported when a gateway is built, never by ``import mmsp_io.server``: without
it the gateway serves as before and ``GET /metrics`` answers 501 naming the extra
(``health.operational_answer``). ``GET /v1/metrics`` keeps 07 §5's JSON counts (08 D75).

Names and labels follow the OpenTelemetry GenAI metric conventions where one exists, in
Prometheus spelling (dots as underscores, the unit as a suffix); the gateway's own carry the
``mmsp_gateway_`` prefix:

- ``mmsp_gateway_requests_total{gen_ai_request_model, key, outcome}``: requests that reached a
  model (07 §5's counting), ``outcome`` one of ``success``, ``failure``, ``disconnect``;
- ``gen_ai_server_time_to_first_token_seconds{gen_ai_request_model}``: histogram, the seconds
  from the request to its first public event, for every request that had one;
- ``gen_ai_server_request_duration_seconds{gen_ai_request_model, outcome}``: histogram, the
  seconds from the request to its end;
- ``gen_ai_client_token_usage{gen_ai_request_model, gen_ai_token_type}``: histogram of the
  tokens of each request whose stream reported usage, ``gen_ai_token_type`` one of ``input``
  (prompt tokens, the cached among them), ``cache_read`` (cached), ``reasoning`` (thoughts)
  and ``output`` (response); an unreported kind is not observed;
- ``mmsp_gateway_cost_usd_total{gen_ai_request_model, key}``: dollars, ``adapters.price`` of
  that usage at the row's price (``limits.row_pricing``); a row without a price, or a usage
  whose price is not positive (an upstream reporting negative counts), adds nothing;
- ``mmsp_gateway_streams_in_flight{gen_ai_request_model}``: requests being answered;
- ``mmsp_gateway_refusals_total{reason, key}``: requests the keys' limits turned away before
  any upstream call, ``reason`` one of ``rpm``, ``tpm``, ``budget``, ``store``
  (``limits.Refusal.reason``);
- ``mmsp_gateway_upstream_attempts_total{gen_ai_request_model, row}``: the rows a request
  tried (08 D77, ``failover``), ``row`` the row's place in the file, ``models[<i>]``;
- ``mmsp_gateway_failovers_total{gen_ai_request_model, row}``: the attempts that failed before
  their first event and moved the request to the next row of its group.

The tokens and cost of a request are those of the row that served it, the last one it tried.

Every label value comes from the configuration or a fixed set, never from what a caller
sends: ``gen_ai_request_model`` is a served ``server_model_id`` (a request naming any other
model is refused before it counts), ``row`` a row's place in the file, ``key`` the name of
the caller's key (``keys[].name``, ``api_keys[<i>]`` for an entry of ``api_keys``, ``-`` on an
open server), so the number of series is bounded by the file.

Several workers (``hypercorn --workers N``, or several ``serve`` processes on one machine) are
scraped as one when ``PROMETHEUS_MULTIPROC_DIR`` names a directory they share, empty when they
start: ``prometheus-client``'s multiprocess mode, where each process writes its values to
files there and a scrape of any worker sums them all (the streams in flight of live processes
only; a gateway that closes removes its own).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Final, final

import adapters
from adapters import ModelPricing

from .config import KeyRow, ModelRow, ServerConfig
from .failover import places
from .limits import row_pricing
from .metrics import Outcome, Tally

__all__ = ["MULTIPROCESS_DIR", "Prometheus", "prometheus_for"]

#: The variable naming the directory of the multiprocess mode (module doc).
MULTIPROCESS_DIR: Final = "PROMETHEUS_MULTIPROC_DIR"
#: The ``key`` label of an open server's callers, who carry no key.
_NO_KEY: Final = "-"
#: ``gen_ai_token_type`` of each kind of ``UsageMetadata``'s counts (module doc).
_TOKEN_TYPES: Final = {"prompt": "input", "cached": "cache_read", "thoughts": "reasoning",
                       "response": "output"}
#: The bucket boundaries the OpenTelemetry GenAI conventions give each histogram.
_FIRST_TOKEN_BUCKETS: Final = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
                               0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
_DURATION_BUCKETS: Final = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24,
                            20.48, 40.96, 81.92)
_TOKEN_BUCKETS: Final = tuple(float(4**power) for power in range(14))
_MODEL: Final = "gen_ai_request_model"


def _key_label(key: KeyRow | None) -> str:
    """The ``key`` label of a caller with ``key`` (module doc)."""
    return _NO_KEY if key is None else key.name


@final
class Prometheus:
    """The gateway's Prometheus metrics (module doc), in a registry of their own, so that
    several gateways of one process do not share them.

    Args:
        pricing: each row's price, ``None`` for a row without one (``prometheus_for``), the
            rows in file order.
        monotonic: the clock the gateway's tallies read (``metrics.Metrics``).

    Raises:
        ImportError: ``prometheus-client`` is not installed.
    """

    def __init__(
        self,
        pricing: Mapping[ModelRow, ModelPricing | None],
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        import prometheus_client

        self._client = prometheus_client
        self._pricing = pricing
        self._monotonic = monotonic
        self.multiprocess = bool(os.environ.get(MULTIPROCESS_DIR))
        registry = self._registry = prometheus_client.CollectorRegistry()
        self._requests = prometheus_client.Counter(
            "mmsp_gateway_requests", "Requests that reached a model, by outcome.",
            [_MODEL, "key", "outcome"], registry=registry)
        self._first_token = prometheus_client.Histogram(
            "gen_ai_server_time_to_first_token", "Time to the first public event.", [_MODEL],
            unit="seconds", buckets=_FIRST_TOKEN_BUCKETS, registry=registry)
        self._duration = prometheus_client.Histogram(
            "gen_ai_server_request_duration", "Time from the request to its end.",
            [_MODEL, "outcome"], unit="seconds", buckets=_DURATION_BUCKETS, registry=registry)
        self._tokens = prometheus_client.Histogram(
            "gen_ai_client_token_usage", "Tokens of each request that reported usage.",
            [_MODEL, "gen_ai_token_type"], buckets=_TOKEN_BUCKETS, registry=registry)
        self._cost = prometheus_client.Counter(
            "mmsp_gateway_cost_usd", "Dollars the requests cost at their row's price.",
            [_MODEL, "key"], registry=registry)
        self._in_flight = prometheus_client.Gauge(
            "mmsp_gateway_streams_in_flight", "Requests being answered.", [_MODEL],
            multiprocess_mode="livesum", registry=registry)
        self._refusals = prometheus_client.Counter(
            "mmsp_gateway_refusals", "Requests the keys' limits refused, by reason.",
            ["reason", "key"], registry=registry)
        self._attempts = prometheus_client.Counter(
            "mmsp_gateway_upstream_attempts", "Rows the requests tried, by row.",
            [_MODEL, "row"], registry=registry)
        self._failovers = prometheus_client.Counter(
            "mmsp_gateway_failovers", "Attempts that failed before their first event and moved "
            "to the next row of the group.", [_MODEL, "row"], registry=registry)
        #: Each row's ``row`` label (module doc).
        self._places = places(pricing)
        for row in pricing:  # every served model shows, at 0, before its first request
            self._in_flight.labels(row.server_model_id)

    def began(self, row: ModelRow) -> None:
        """Count a request to ``row`` in flight."""
        self._in_flight.labels(row.server_model_id).inc()

    def ended(
        self, row: ModelRow, key: KeyRow | None, tally: Tally, outcome: Outcome,
        failed_over: Sequence[ModelRow] = (),
    ) -> None:
        """Count the end of a request of ``key`` served by ``row`` (``began`` before), after
        the rows of its group that ``failed_over`` (08 D77): its outcome, its times, its
        attempts, and the tokens and cost of the usage it reported."""
        model, key_name = row.server_model_id, _key_label(key)
        self._in_flight.labels(model).dec()
        for tried in failed_over:
            self._attempts.labels(model, self._places[tried]).inc()
            self._failovers.labels(model, self._places[tried]).inc()
        self._attempts.labels(model, self._places[row]).inc()
        self._requests.labels(model, key_name, outcome).inc()
        self._duration.labels(model, outcome).observe(self._monotonic() - tally.started)
        if tally.first_event is not None:
            self._first_token.labels(model).observe(tally.first_event - tally.started)
        usage = tally.usage
        if usage is None:
            return
        for kind, token_type in _TOKEN_TYPES.items():
            count = getattr(usage, f"{kind}_tokens")
            if count is not None:
                self._tokens.labels(model, token_type).observe(count)
        pricing = self._pricing.get(row)
        cost = 0.0 if pricing is None else adapters.price(usage, pricing)
        if cost > 0:  # an upstream's negative counts never take dollars off
            self._cost.labels(model, key_name).inc(cost)

    def refused(self, reason: str, key: KeyRow | None) -> None:
        """Count a request of ``key`` the limits refused for ``reason``
        (``limits.Refusal.reason``)."""
        self._refusals.labels(reason, _key_label(key)).inc()

    def exposition(self) -> tuple[str, bytes]:
        """The content type and body of a scrape: this gateway's metrics, or in the
        multiprocess mode those of every process writing to the shared directory."""
        registry = self._registry
        if self.multiprocess:
            from prometheus_client import multiprocess

            registry = self._client.CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return self._client.CONTENT_TYPE_LATEST, self._client.generate_latest(registry)

    def close(self) -> None:
        """In the multiprocess mode, drop this process's streams in flight from the sum (its
        counts stay)."""
        if self.multiprocess:
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]


def prometheus_for(
    config: ServerConfig, base_urls: Mapping[ModelRow, str]
) -> Prometheus | None:
    """The metrics of a gateway serving ``config``, each row's price taken at its endpoint
    (``base_urls``); ``None`` when ``prometheus-client`` is not installed."""
    try:
        return Prometheus({row: row_pricing(row, base_urls[row]) for row in config.models})
    except ImportError:
        return None
