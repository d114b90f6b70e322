"""The operator's routes of the gateway, outside ``/v1`` (issue 25): health and Prometheus.

- ``GET /healthz``: the process is alive. 200 ``{"status": "ok"}``; no key, no upstream call,
  no store call.
- ``GET /readyz``: whether the gateway should be sent traffic. 200 ``{"status": "ready"}``
  once its configuration is loaded (a gateway exists only with a valid one), while its store
  answers (``limits.Limiter.ready``; the in-process store always does) and while it is not
  draining; else 503 with ``status`` ``"draining"`` or ``"store unavailable"``. The body also
  says whether the keys' limits are ``"shared"`` (Redis, 08 D76) or ``"per process"``. A
  gateway drains from the moment its server begins to shut down (``Gateway.draining``: the h11
  server's graceful close, an ASGI server's ``lifespan.shutdown``).
- ``GET /metrics``: the Prometheus text exposition (``prometheus``), 501 naming the extra when
  ``prometheus-client`` is not installed. A server listening at a loopback address serves it
  to anyone who reaches it; at any other address (or one the front end cannot tell) only to
  ``Authorization: Bearer <metrics.token>``: 401 for another token, 403 while the
  configuration has no ``metrics.token``.

The keys of ``api_keys`` and ``keys`` open none of these routes, and none of them is counted in
``GET /v1/metrics``. An open server's ``Host`` rule (``Gateway.host_allowed``) applies to them
as to every route.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING, Final

from ..httpserver import Request, is_loopback_host
from .answers import Answer, json_answer, refusal
from .stores import GATEWAY_EXTRA

if TYPE_CHECKING:
    from .handler import Gateway

__all__ = ["ROUTES", "operational_answer"]

#: The paths answered here, on ``GET``.
ROUTES: Final = ("/healthz", "/readyz", "/metrics")


async def operational_answer(
    gateway: Gateway, request: Request, local_host: str | None
) -> Answer | None:
    """The answer of ``request`` when it is a ``GET`` of one of ``ROUTES`` (module doc), else
    ``None``; ``local_host`` is the address the server listens on or the request came in at
    (``None``: not known). A request the ``Host`` rule refuses is left to ``Gateway.decide``,
    which refuses it."""
    if (request.method != "GET" or request.path not in ROUTES
            or not gateway.host_allowed(request, local_host)):
        return None
    if request.path == "/healthz":
        return json_answer(200, {"status": "ok"})
    if request.path == "/readyz":
        return await _readiness(gateway)
    return _metrics(gateway, request, local_host)


async def _readiness(gateway: Gateway) -> Answer:
    """``GET /readyz`` (module doc)."""
    store = await gateway.limits.ready()
    status = ("draining" if gateway.draining else "ready" if store
              else "store unavailable")
    return json_answer(200 if status == "ready" else 503, {
        "status": status,
        "config": "loaded",
        "store": "answers" if store else "does not answer",
        "draining": gateway.draining,
        "limits": "shared" if gateway.limits.shared else "per process",
    })


def _metrics(gateway: Gateway, request: Request, local_host: str | None) -> Answer:
    """``GET /metrics`` (module doc)."""
    if local_host is None or not is_loopback_host(local_host):
        expected = gateway.config.metrics_token
        if expected is None:
            return refusal(403, "PermissionDeniedError",
                           "GET /metrics on a server listening at a non-loopback address "
                           "needs a metrics token: set metrics.token in the configuration.")
        scheme, _, token = (request.header("authorization") or "").partition(" ")
        if scheme.lower() != "bearer" or not _same(token.strip(), expected):
            return refusal(401, "AuthenticationError", "Invalid or missing metrics token.")
    if gateway.prometheus is None:
        return refusal(501, "NotImplementedError",
                       f"GET /metrics needs prometheus-client: {GATEWAY_EXTRA}")
    content_type, body = gateway.prometheus.exposition()
    return Answer(200, (("content-type", content_type),), body)


def _same(presented: str, expected: str) -> bool:
    """Whether ``presented`` (a header's text, whose characters are its bytes) is
    ``expected``, compared by their SHA-256 digests so that the timing tells nothing about the
    token."""
    try:
        digest = hashlib.sha256(presented.encode("latin-1")).digest()
    except UnicodeEncodeError:  # no header byte string decodes to it
        return False
    return hmac.compare_digest(digest, hashlib.sha256(expected.encode()).digest())
