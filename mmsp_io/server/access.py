"""The gateway's access log (issue 25, item 7): one JSON line per request, on the logger
``mmsp_io.server.access`` (``ACCESS_LOGGER``), written when the response has ended.

A call that reached a model (``Gateway._flight``) writes::

    {"time": "2026-12-04T01:02:03.456Z", "method": "POST", "path": "/v1/stream",
     "key": "team-a", "model": "gpt", "row": "models[0]", "upstream_model": "gpt-5",
     "outcome": "success", "status": 200, "first_event_ms": 412.3, "duration_ms": 2310.0,
     "tokens": {"prompt": 12, "cached": null, "thoughts": null, "response": 40},
     "cost_usd": 0.00041, "attempts": 1, "error_type": null}

``time`` is when the response ended (UTC); ``key`` the name of the caller's key (08 D75;
``null`` on an open server); ``model`` the served id the caller named and ``row`` the
configuration row that served it, ``upstream_model`` that row's ``model_id``; ``outcome`` is
``success``, ``failure`` or ``disconnect`` as ``/v1/metrics`` counts it (07 §5); ``status``
the HTTP status sent (``null`` when the caller left before the head); ``tokens`` the usage of
the stop (``null`` when none arrived) and ``cost_usd`` its price (``adapters.price``, 08 D75;
``null`` without usage or a price); ``attempts`` the upstream rows tried (08 D77);
``error_type`` the MMSP error class that ended the call, else ``null``.

Every other request (a refusal, the model list, the metrics, the health routes) writes
``time``, ``method``, ``path``, ``key``, ``outcome`` (``refused`` for a status of 400 or more,
else ``answered``), ``status`` and ``duration_ms``. The core's own refusals of bad HTTP (413,
431, 408, 400, 503) are not requests the gateway saw and write nothing.

No line holds a key, a header or any content of a request or an answer (08 D61): only names,
counts, times and types.

Where it goes (``configure``, the configuration's ``access_log``): ``"stderr"`` (``python -m
mmsp_io serve``'s default), ``"off"``, or a file path (appended to). Left unset under an ASGI
server, the logger is left as the host's logging configures it.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, final

import adapters

from ..httpserver import Request
from .config import ConfigError, KeyRow, ModelRow
from .limits import row_pricing

if TYPE_CHECKING:
    from .calls import Flight

__all__ = ["ACCESS_LOGGER", "AccessLog", "configure"]

ACCESS_LOGGER: Final = "mmsp_io.server.access"
_logger = logging.getLogger(ACCESS_LOGGER)
_TOKEN_KINDS: Final = ("prompt", "cached", "thoughts", "response")


def configure(setting: object) -> None:
    """Send the access log where ``setting`` (the configuration's ``access_log``) says (module
    docstring): ``"stderr"``, ``"off"``, a file path; ``None`` leaves the logger as it is. A
    handler this function installed before is removed (and closed) first, so a reload can
    move the log.

    Raises:
        ConfigError: ``setting`` is no non-empty string, or its file cannot be opened for
            appending (the message names the cell).
    """
    if setting is None:
        return
    if not isinstance(setting, str) or not setting:
        raise ConfigError('access_log must be "stderr", "off" or a file path.')
    handler: logging.Handler | None = None
    if setting == "stderr":
        handler = logging.StreamHandler(sys.stderr)
    elif setting != "off":
        try:
            handler = logging.FileHandler(setting, encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"access_log: cannot open {setting!r}: {exc.strerror}") from exc
    for installed in [h for h in _logger.handlers if getattr(h, "mmsp_access", False)]:
        _logger.removeHandler(installed)
        installed.close()
    _logger.propagate = False
    if handler is None:
        _logger.setLevel(logging.WARNING)  # nothing at INFO: no line is even built
        return
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.mmsp_access = True  # type: ignore[attr-defined]
    _logger.addHandler(handler)
    _logger.setLevel(logging.INFO)


def _time(wall: float) -> str:
    """``wall`` (unix seconds) as ISO 8601 UTC with milliseconds."""
    moment = datetime.fromtimestamp(wall, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def _write(entry: Mapping[str, Any]) -> None:
    _logger.info(json.dumps(entry, ensure_ascii=False, separators=(",", ":")))


@final
class AccessLog:
    """The access-log lines of one gateway (module docstring).

    Args:
        places: what each row is called, ``models[<i>]`` (``failover.places``).
        base_urls: each row's endpoint, where its price is looked up (``limits.row_pricing``).
        wall, monotonic: the clocks (unix seconds; the metrics' monotonic clock, which the
            calls' tallies read).
    """

    def __init__(
        self,
        places: Mapping[ModelRow, str],
        base_urls: Mapping[ModelRow, str],
        *,
        wall: Callable[[], float],
        monotonic: Callable[[], float],
    ) -> None:
        self._places = places
        self._pricing = {row: row_pricing(row, base_url) for row, base_url in base_urls.items()}
        self._wall = wall
        self._monotonic = monotonic

    @property
    def enabled(self) -> bool:
        """Whether a line would be written (the logger takes ``INFO``)."""
        return _logger.isEnabledFor(logging.INFO)

    def answered(
        self, request: Request, key: KeyRow | None, status: int, started: float
    ) -> None:
        """Write the line of ``request`` of ``key``, answered whole with ``status`` (module
        docstring), begun at ``started`` (the monotonic clock)."""
        if not self.enabled:
            return
        _write({"time": _time(self._wall()), "method": request.method, "path": request.path,
                "key": None if key is None else key.name,
                "outcome": "refused" if status >= 400 else "answered", "status": status,
                "duration_ms": _ms(self._monotonic() - started)})

    def called(self, flight: Flight, key: KeyRow | None, outcome: str) -> None:
        """Write the line of ``flight``, a call of ``key`` that ended with ``outcome``
        (module docstring); its row is the one that served it, or was tried last."""
        if not self.enabled:
            return
        row, tally = flight.row, flight.tally
        pricing = self._pricing.get(row)
        tokens = cost = None
        if tally.usage is not None:
            tokens = {kind: getattr(tally.usage, f"{kind}_tokens") for kind in _TOKEN_KINDS}
            cost = None if pricing is None else adapters.price(tally.usage, pricing)
        first_event = (None if tally.first_event is None
                       else _ms(tally.first_event - tally.started))
        _write({"time": _time(self._wall()), "method": flight.route[0], "path": flight.route[1],
                "key": None if key is None else key.name, "model": row.server_model_id,
                "row": self._places[row], "upstream_model": row.model_id,
                "outcome": outcome, "status": flight.status, "first_event_ms": first_event,
                "duration_ms": _ms(self._monotonic() - tally.started), "tokens": tokens,
                "cost_usd": cost, "attempts": len(flight.failed_over) + 1,
                "error_type": flight.error_type})
