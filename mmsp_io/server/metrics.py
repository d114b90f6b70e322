"""The counts behind ``GET /v1/metrics`` (spec 07 §5), held in memory.

What counts (07 §5): a request counts once it reaches a model (it named a served model and
passed every refusal); it is a *success* when its ``stop`` was sent, a *failure* when it ended
with an error event or was cancelled, a *disconnect* when the caller left first. Refusals
(401, 400, 404 for an unknown model) are counted apart, in ``refused``. Latencies are those of
the latest 1,000 successes: to the first public event and to the end. ``tokens_out`` is the
sum of the successes' ``response_tokens`` and ``generation_ms`` the time they spent between
their first event and their end, so ``tps`` is the rate at which answers were generated.

Error texts (``errors[].message``, each model's ``last_error``) are shown only when the
metrics are built with ``show_errors`` (the configuration's ``metrics.show_errors``, 08 D75):
every token holder reads the metrics, and the text of one caller's error may tell another
about that caller's request. Without it, ``errors`` still lists when and on which model calls
failed, and ``last_error`` is ``null``.

The optional time windows of 07 §5 (``?window=``, ``?from=``/``?to=``, the history file) are
not kept: the snapshot covers the whole life of the server.

Every buffer is bounded (08 D18): 1,000 latency samples, 100 errors, and one entry per
configured model.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Final, Literal, final

from mmsp_core.model import UsageMetadata

__all__ = ["Metrics", "Outcome", "Tally", "counted"]

_LATENCY_SAMPLES: Final = 1000
_ERRORS_KEPT: Final = 100
_TOKEN_KINDS: Final = ("prompt", "cached", "thoughts", "response")

Outcome = Literal["success", "failure", "disconnect"]
Refusal = Literal["unauthorized", "invalid_request", "unknown_model"]


def counted(usage: UsageMetadata) -> UsageMetadata:
    """``usage`` with a negative count (an upstream's bug, or a hostile endpoint's) as 0, as
    the gateway counts it (these metrics, a key's limits): its totals never go down."""
    return UsageMetadata(*(None if count is None else max(count, 0)
                           for count in (usage.cached_tokens, usage.prompt_tokens,
                                         usage.thoughts_tokens, usage.response_tokens)))


def _percentile(samples: Sequence[float], fraction: float) -> float | None:
    """The nearest-rank percentile of ``samples`` in ms (one decimal), ``None`` when empty."""
    if not samples:
        return None
    ordered = sorted(samples)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return round(ordered[rank - 1], 1)


@final
class _Counts:
    """The counts kept for the whole server and for each model."""

    def __init__(self) -> None:
        self.requests = 0
        self.successes = 0
        self.failures = 0
        self.disconnects = 0
        self.in_flight = 0
        self.first_event_ms: collections.deque[float] = collections.deque(
            maxlen=_LATENCY_SAMPLES)
        self.total_ms: collections.deque[float] = collections.deque(maxlen=_LATENCY_SAMPLES)
        self.tokens = dict.fromkeys(_TOKEN_KINDS, 0)
        self.tokens_out = 0
        self.generation_ms = 0.0
        self.last_request_at: float | None = None

    def snapshot(self) -> dict[str, Any]:
        finished = self.successes + self.failures
        tps = None
        if self.successes and self.generation_ms > 0:
            rate = Decimal(self.tokens_out) / Decimal(self.generation_ms) * 1000
            tps = float(rate.quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))
        return {
            "requests": self.requests,
            "successes": self.successes,
            "failures": self.failures,
            "disconnects": self.disconnects,
            "in_flight": self.in_flight,
            "success_rate": round(self.successes / finished, 4) if finished else None,
            "latency_ms": {
                "first_event": {"p50": _percentile(self.first_event_ms, 0.5),
                                "p90": _percentile(self.first_event_ms, 0.9)},
                "total": {"p50": _percentile(self.total_ms, 0.5),
                          "p90": _percentile(self.total_ms, 0.9)},
            },
            "tokens": dict(self.tokens),
            "tokens_out": self.tokens_out,
            "generation_ms": round(self.generation_ms, 1),
            "tps": tps,
        }


@final
class Tally:
    """One request that reached a model: what it did, told to ``Metrics`` when it ends."""

    def __init__(self, metrics: Metrics, model: str) -> None:
        self._metrics = metrics
        self.model = model
        self.started = metrics.monotonic()
        self.first_event: float | None = None
        self.usage: UsageMetadata | None = None
        self.stopped = False
        self.error: str | None = None

    def event(self, *, stop: bool, usage: UsageMetadata | None) -> None:
        """Note one public event sent (the ``stop`` with its usage)."""
        if self.first_event is None:
            self.first_event = self._metrics.monotonic()
        if stop:
            self.stopped = True
            self.usage = usage

    def failed(self, message: str) -> None:
        """Note the error event sent (or the cancellation) that ended the stream."""
        self.error = message

    def end(self, *, client_gone: bool) -> Outcome:
        """Close the request's record: a disconnect, a success or a failure (module doc),
        which it returns."""
        outcome: Outcome
        if client_gone:
            outcome = "disconnect"
        elif self.stopped and self.error is None:
            outcome = "success"
        else:
            outcome = "failure"
        self._metrics._end(self, outcome)
        return outcome


@final
class Metrics:
    """The server's counts (module docstring), built with the clocks it reads; error texts
    are shown only with ``show_errors``."""

    def __init__(
        self,
        models: Sequence[str],
        *,
        wall: Callable[[], float],
        monotonic: Callable[[], float],
        show_errors: bool = False,
    ) -> None:
        self.wall = wall
        self.monotonic = monotonic
        self.show_errors = show_errors
        self.started_at = wall()
        self._started_monotonic = monotonic()
        self._all = _Counts()
        self._models = {model: _Counts() for model in models}
        self._outcomes: dict[str, tuple[Outcome | None, str | None]] = dict.fromkeys(
            models, (None, None))
        self._refused = {"unauthorized": 0, "invalid_request": 0, "unknown_model": 0}
        self._errors: collections.deque[dict[str, Any]] = collections.deque(maxlen=_ERRORS_KEPT)

    def refused(self, why: Refusal) -> None:
        """Count a request refused before it reached a model."""
        self._refused[why] += 1

    def begin(self, model: str) -> Tally:
        """Count a request that reached ``model`` (a served id) and return its record."""
        now = self.wall()
        for counts in (self._all, self._models[model]):
            counts.requests += 1
            counts.in_flight += 1
            counts.last_request_at = now
        return Tally(self, model)

    def _end(self, tally: Tally, outcome: Outcome) -> None:
        now = self.monotonic()
        for counts in (self._all, self._models[tally.model]):
            counts.in_flight -= 1
            if outcome == "disconnect":
                counts.disconnects += 1
            elif outcome == "failure":
                counts.failures += 1
            else:
                counts.successes += 1
                first = tally.first_event if tally.first_event is not None else now
                counts.first_event_ms.append((first - tally.started) * 1000)
                counts.total_ms.append((now - tally.started) * 1000)
                counts.generation_ms += (now - first) * 1000
                usage = counted(tally.usage or UsageMetadata())
                for kind in _TOKEN_KINDS:
                    counts.tokens[kind] += getattr(usage, f"{kind}_tokens") or 0
                counts.tokens_out += usage.response_tokens or 0
        error = tally.error if outcome == "failure" else None
        if error is not None:
            entry: dict[str, Any] = {"at": round(self.wall(), 3), "model": tally.model}
            if self.show_errors:
                entry["message"] = error
            self._errors.appendleft(entry)
        self._outcomes[tally.model] = (outcome, error if self.show_errors else None)

    def snapshot(self) -> dict[str, Any]:
        """The ``GET /v1/metrics`` document (07 §5, without the optional windows)."""
        models = []
        for model, counts in self._models.items():
            outcome, error = self._outcomes[model]
            models.append({"id": model, **counts.snapshot(),
                           "last_request_at": _rounded(counts.last_request_at),
                           "last_outcome": outcome, "last_error": error})
        return {
            "started_at": round(self.started_at, 3),
            "since": round(self.started_at, 3),
            "uptime_s": round(self.monotonic() - self._started_monotonic, 3),
            **self._all.snapshot(),
            "refused": dict(self._refused),
            "last_request_at": _rounded(self._all.last_request_at),
            "errors": list(self._errors),
            "models": models,
        }


def _rounded(at: float | None) -> float | None:
    return None if at is None else round(at, 3)
