"""The limits of the gateway's keys (08 D75, D76): who is calling, whether the call may go
upstream, and what it cost once it ended.

A key (``config.KeyRow``) may have three limits, each counted per window of the UTC clock:
``rpm``, requests per minute; ``tpm``, tokens per minute (every kind: spec 01 §6's total of the
usage a stream reported); ``budget``, dollars per UTC day or month. ``Limiter.admit`` runs
before any upstream call and refuses a request, 429 ``RateLimitError`` with ``Retry-After``
(the seconds to the end of the window at fault), when

- the key's requests this minute, this one included, are more than ``rpm``;
- the tokens its finished streams used this minute have reached ``tpm``;
- the dollars they cost this day or month have reached ``budget.usd``.

Tokens and dollars are counted when a stream ends (``Limiter.settle``), from the last usage it
reported, also when it failed after that usage arrived: a stream admitted below a limit
completes even when it crosses it, and the next request is refused. A request's cost is
``adapters.price`` of its usage and its row's price (the ``pricing`` column, else the
catalog's list price of the row's model at its endpoint, ``row_pricing``); a key with a budget
may use no row without a price (refused at start, ``Limiter``).

One ``admit`` is one store transaction: it reads the key's tokens and dollars and counts the
request. A request refused for its tokens or dollars is still counted against ``rpm``, which
changes no answer: tokens share the minute, and dollars stay over for the rest of their day or
month, so every request of that window is refused anyway. A key without limits (an
``api_keys`` entry among them) and an open server's callers touch no store.

The counts live in a ``stores.Store``. While it fails (Redis down or slow), ``admit`` answers
as ``store.on_error`` says: ``"closed"``, 503 ``ServiceUnavailableError``; ``"open"``, the
request is served uncounted; a ``settle`` that fails loses that stream's counts. The first
failure and the recovery are logged, not each request. Nothing waits on the store longer than
its timeout.

The clock (``time.time`` by default) is an argument, so tests move it instead of sleeping.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Final, final

import attrs

import adapters
from adapters import ModelPricing
from mmsp_core.model import UsageMetadata

from .config import ConfigError, KeyRow, ModelRow, ServerConfig
from .metrics import counted
from .stores import Count, Store, StoreError, open_store

__all__ = ["Limiter", "Refusal", "limiter_for", "minute_window", "period_window",
           "row_pricing"]

_logger = logging.getLogger("mmsp_io")

#: Seconds a counter outlives its window, so one read at the window's last instant finds it.
_SLACK: Final = 60
#: The prefix of the store's counter names.
_PREFIX: Final = "mmsp:limits"


@final
@attrs.frozen
class Refusal:
    """A request the limits turn away before any upstream call: the HTTP status, the error
    body's ``type`` and ``message`` (07 §4's form), ``reason`` (``"rpm"``, ``"tpm"``,
    ``"budget"`` or ``"store"``, for metrics and logs) and ``Retry-After`` in seconds."""

    status: int
    error_type: str
    message: str
    reason: str
    retry_after: int | None = None

    @property
    def headers(self) -> tuple[tuple[str, str], ...]:
        """The refusal's extra headers: ``Retry-After`` when it has one."""
        return () if self.retry_after is None else (("retry-after", str(self.retry_after)),)


def minute_window(now: float) -> tuple[str, float]:
    """The UTC minute holding ``now`` (unix seconds): its label and its end."""
    start = math.floor(now / 60) * 60
    return f"{start}", start + 60.0


def period_window(period: str, now: float) -> tuple[str, float]:
    """The UTC day or month (``period``) holding ``now`` (unix seconds): its label and its
    end."""
    moment = datetime.fromtimestamp(now, UTC)
    if period == "day":
        start = moment.replace(hour=0, minute=0, second=0, microsecond=0)
        return start.strftime("%Y%m%d"), (start + timedelta(days=1)).timestamp()
    start = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = (start + timedelta(days=32)).replace(day=1)
    return start.strftime("%Y%m"), end.timestamp()


def row_pricing(row: ModelRow, base_url: str) -> ModelPricing | None:
    """The price of ``row``, served at ``base_url`` (its client's endpoint): the row's
    ``pricing`` column, else the catalog's list price, else ``None`` (08 D75)."""
    return row.pricing or adapters.catalog_pricing(row.model_id, base_url)


def _tokens(usage: UsageMetadata) -> int:
    """Every token of ``usage`` (spec 01 §6's total; an unreported count is 0)."""
    return sum(count or 0 for count in (usage.cached_tokens, usage.prompt_tokens,
                                        usage.thoughts_tokens, usage.response_tokens))


@final
class Limiter:
    """The keys of ``config`` and their limits, counted in ``store`` (module doc).

    Args:
        config: the gateway's configuration: its ``keys``, ``api_keys``, rows and
            ``store.on_error``.
        store: where the counts live.
        pricing: each row's price (``row_pricing``), ``None`` for a row without one.
        clock: the wall clock, unix seconds.

    Raises:
        ConfigError: a key with a budget may use a row without a price (D75).
    """

    def __init__(
        self,
        config: ServerConfig,
        store: Store,
        pricing: Mapping[ModelRow, ModelPricing | None],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._pricing = pricing
        self._clock = clock
        self._open_on_error = config.store is not None and config.store.on_error == "open"
        self._store_down = False
        unlimited = (KeyRow(name=f"api_keys[{index}]",
                            sha256=hashlib.sha256(token.encode()).digest())
                     for index, token in enumerate(config.api_keys))
        self._keys = {key.sha256: key for key in (*unlimited, *config.keys)}
        for index, key in enumerate(config.keys):
            if key.budget is None:
                continue
            for row in config.models:
                if key.allows(row.server_model_id) and pricing.get(row) is None:
                    where = f"{config.source}: " if config.source else ""
                    raise ConfigError(
                        f"{where}keys[{index}] ({key.name!r}) has a budget but may use "
                        f"{row.server_model_id!r}, which has no price: give that row a "
                        f"pricing column, or list the key's models without it.")

    @property
    def shared(self) -> bool:
        """Whether the counts are shared with other processes (a Redis store)."""
        return self._store.shared

    def identify(self, token: str) -> KeyRow | None:
        """The key (of ``keys`` or ``api_keys``) presented as ``token``, a header's text
        (whose characters are its bytes, latin-1), else ``None``. The token is compared by its
        SHA-256 digest, so the lookup's timing tells nothing about any key."""
        try:
            presented = token.encode("latin-1")
        except UnicodeEncodeError:  # no header byte string decodes to it
            return None
        return self._keys.get(hashlib.sha256(presented).digest())

    async def admit(self, key: KeyRow | None) -> Refusal | None:
        """``None`` if a request with ``key`` (``None``: an open server's caller) may go
        upstream now, else its refusal: 429 over ``rpm``, ``tpm`` or ``budget`` (the latest
        window's end as ``Retry-After`` when several are over), 503 when the store fails and
        ``on_error`` is ``"closed"`` (module doc). Whether the key may name the model is
        ``KeyRow.allows``, asked before."""
        if key is None or not key.limited:
            return None
        now = self._clock()
        checks = self._windows(key, now)
        counts = [Count(name, 1 if kind == "rpm" else 0, ttl)
                  for kind, (name, ttl, _, _) in checks.items()]
        try:
            values = await self._store.apply(counts)
        except StoreError as exc:
            return self._store_failed(exc)
        self._store_answered()
        # ``rpm``'s count includes this request; the others are what finished streams used.
        over = [(end, kind, limit) for (kind, (_, _, end, limit)), value
                in zip(checks.items(), values, strict=True)
                if (value > limit if kind == "rpm" else value >= limit)]
        if not over:
            return None
        end, kind, limit = max(over)
        retry_after = max(1, math.ceil(end - now))
        return Refusal(429, "RateLimitError", _over_message(key, kind, limit, retry_after),
                       kind, retry_after)

    async def settle(self, key: KeyRow | None, row: ModelRow, usage: UsageMetadata | None) -> None:
        """Count the tokens and the cost of a stream of ``key`` on ``row`` that ended having
        reported ``usage`` (``None``: none arrived, nothing to count; a negative count counts
        0), in the windows holding the clock's reading now. A store failure is logged and the
        counts lost (module doc).
        """
        if key is None or usage is None or (key.tpm is None and key.budget is None):
            return
        usage = counted(usage)
        now = self._clock()
        checks = self._windows(key, now)
        amounts: dict[str, int | float] = {"tpm": _tokens(usage)}
        pricing = self._pricing.get(row)
        if pricing is not None:
            amounts["budget"] = adapters.price(usage, pricing)
        counts = [Count(name, amounts[kind], ttl) for kind, (name, ttl, _, _) in checks.items()
                  if amounts.get(kind)]
        if not counts:
            return
        try:
            await self._store.apply(counts)
        except StoreError as exc:
            self._store_failed(exc)
            return
        self._store_answered()

    async def ready(self) -> bool:
        """Whether the store answers now."""
        try:
            await self._store.ping()
        except StoreError:
            return False
        return True

    async def aclose(self) -> None:
        """Release the store."""
        await self._store.aclose()

    def _windows(self, key: KeyRow, now: float) -> dict[str, tuple[str, int, float, float]]:
        """The key's limits at ``now``, by kind: ``(counter name, its ttl, the window's end,
        the limit)``, in the order ``rpm``, ``tpm``, ``budget``."""
        minute, minute_end = minute_window(now)
        windows: dict[str, tuple[str, float, float]] = {}
        if key.rpm is not None:
            windows["rpm"] = (minute, minute_end, key.rpm)
        if key.tpm is not None:
            windows["tpm"] = (minute, minute_end, key.tpm)
        if key.budget is not None:
            label, end = period_window(key.budget.period, now)
            windows["budget"] = (label, end, key.budget.usd)
        return {kind: (f"{_PREFIX}:{kind}:{label}:{key.name}", math.ceil(end - now) + _SLACK,
                       end, limit)
                for kind, (label, end, limit) in windows.items()}

    def _store_failed(self, exc: StoreError) -> Refusal | None:
        """Log the store's first failure; the refusal ``on_error`` gives (``None``: open)."""
        if not self._store_down:
            self._store_down = True
            outcome = ("served uncounted" if self._open_on_error
                       else "refused with 503 (store.on_error closed)")
            _logger.warning("The limit store failed (%s): requests of keys with limits are %s, "
                            "and streams that end are left uncounted, until it answers again.",
                            exc, outcome)
        if self._open_on_error:
            return None
        return Refusal(503, "ServiceUnavailableError",
                       "The gateway cannot reach the store of its keys' limits; try again "
                       "shortly.", "store")

    def _store_answered(self) -> None:
        """Log the store's recovery after a failure."""
        if self._store_down:
            self._store_down = False
            _logger.warning("The limit store answers again: requests are counted.")


def limiter_for(
    config: ServerConfig,
    base_urls: Mapping[ModelRow, str],
    *,
    clock: Callable[[], float] = time.time,
) -> Limiter:
    """The limiter of ``config``: its store (``stores.open_store``) and each row's price at its
    endpoint (``base_urls``, the rows' clients' ``base_url``).

    Raises:
        ConfigError: as ``Limiter`` and ``stores.RedisStore``.
    """
    pricing = {row: row_pricing(row, base_urls[row]) for row in config.models}
    return Limiter(config, open_store(config.store), pricing, clock=clock)


def _over_message(key: KeyRow, kind: str, limit: float, retry_after: int) -> str:
    """The message of a 429: which limit of which key, and when to retry."""
    plural = "" if limit == 1 else "s"
    what = {"rpm": f"{limit:g} request{plural} per minute",
            "tpm": f"{limit:g} token{plural} per minute",
            "budget": f"its budget of {limit:g} USD per "
                      f"{key.budget.period if key.budget else 'period'}"}[kind]
    return f"Key {key.name!r} is over {what}; retry in {retry_after} s."
