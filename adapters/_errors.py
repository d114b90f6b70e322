"""A provider's non-2xx answer as an error (08 D19), by the shape its protocol's record gives.

A non-2xx answer's body says what went wrong: a type, a message and sometimes a request id, at
places that differ per protocol (``Traits.error_shape``). ``read_error_body`` reads them and
never raises (08 D59): a body that is not JSON, is nested too deeply for the parser, or holds
none of the fields gives ``None`` fields, or a short preview of its text as the message.
``provider_http_error`` builds the ``ProviderHTTPError`` of a whole answer: the body, the
request id header and the wait ``retry_after`` reads, for a ``now`` the caller gives (this
module reads no clock).
"""

from __future__ import annotations

import calendar
import math
from collections.abc import Mapping
from typing import Any, Final

from mmsp_core.errors import ProviderHTTPError, UpstreamError, preview

from ._json import BadField, loads, nests_within
from ._preflight import MAX_DEPTH
from ._registry import CLIENTS, canonical_client_type, protocol_traits
from ._spec import ErrorShape, JsonPath

__all__ = [
    "REQUEST_ID_HEADERS",
    "provider_http_error",
    "read_error_body",
    "retry_after",
    "upstream_http_error",
]

_DEFAULT_SHAPE = ErrorShape()

#: Headers that carry a provider's request id, the first present wins: OpenAI, Anthropic,
#: Google, AWS.
REQUEST_ID_HEADERS: Final = ("x-request-id", "request-id", "x-goog-request-id", "x-amzn-requestid")
#: AWS's error type header: ``AccessDeniedException:http://internal.amazon.com/...``.
ERROR_TYPE_HEADER: Final = "x-amzn-errortype"


def provider_http_error(
    client: str, status: int, headers: Mapping[str, str], body: bytes, *, now: float
) -> ProviderHTTPError:
    """Build the ``ProviderHTTPError`` of a non-2xx answer of ``client`` (08 D19).

    The type, message and request id come from the body (``read_error_body``), the type from
    AWS's ``x-amzn-ErrorType`` header when the body has none (Bedrock, 08 D72); a request id
    header (``REQUEST_ID_HEADERS``) wins over the body's. ``retry_after`` is
    ``retry_after(headers, now=now)``. ``headers`` is case-insensitive (an ``httpx.Headers``)
    or has lower-case names; ``now`` is the time in seconds since the epoch.

    Raises nothing: any answer gives an error to raise (08 D59).
    """
    error_type, message, body_request_id = read_error_body(client, body)
    if error_type is None and ERROR_TYPE_HEADER in headers:  # AWS: ``Type:<namespace>``
        error_type = headers[ERROR_TYPE_HEADER].partition(":")[0] or None
    request_id = next((headers[name] for name in REQUEST_ID_HEADERS if name in headers),
                      body_request_id)
    return ProviderHTTPError(client, status, error_type, message, request_id,
                             retry_after(headers, now=now))


def upstream_http_error(client: str, status: int, body: bytes) -> UpstreamError:
    """Build the ``UpstreamError`` of a gateway's non-2xx answer (spec 03 §5, 08 D13).

    The error object is the one holding the error type where ``client``'s protocol's
    ``ErrorShape`` reads it (the MMSP server's ``{"error": {"type", "message", ...}}``,
    ``adapters.mmsp.ERROR_SHAPE``): it is kept whole as ``error``, its type (a string) as
    ``error_type``. A body without that object, or with one nested deeper than ``MAX_DEPTH``
    (too deep for the key redaction to walk, 08 D61), gets the stand-in ``{"type":
    "HTTPError", "message": "HTTP <status>: <the body's first 200 characters>"}``.

    Raises nothing: any answer gives an error to raise (08 D59).
    """
    text = body.decode("utf-8", "replace")
    *where, type_key = _shape(client).error_type[0]
    try:
        error = loads(text)
    except BadField:  # not JSON, or nested too deeply to read (08 D59)
        error = None
    for key in where:
        error = error.get(key) if type(error) is dict else None
    if type(error) is not dict or not nests_within(error, MAX_DEPTH):
        error = {"type": "HTTPError", "message": f"HTTP {status}: {text[:200]}"}
        type_key = "type"
    error_type = error.get(type_key)
    return UpstreamError(client, status, error_type if type(error_type) is str else None, error)


def retry_after(headers: Mapping[str, str], *, now: float) -> float | None:
    """The wait a provider asks for, in seconds, or ``None`` when it asks for none (08 D21).

    ``retry-after-ms`` (OpenAI) wins over ``Retry-After``, which is either a number of seconds
    or an HTTP date (RFC 9110 §10.2.3), counted from ``now`` (seconds since the epoch). A date
    in the past is ``0``; a value that is neither, or not finite, is ``None``. ``headers`` as
    in ``provider_http_error``.
    """
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        when = _http_date(value)
        if when is None:
            return None
        seconds = when - now
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _http_date(value: str) -> int | None:
    """The seconds since the epoch of an HTTP date (RFC 9110 §5.6.7, or the older forms RFC
    5322 readers take; no zone is UTC), or ``None`` when ``value`` is no valid date."""
    import email.utils  # only a dated Retry-After needs it: not loaded with the package

    try:
        fields = email.utils.parsedate_tz(value)
    except (TypeError, ValueError):
        return None
    if fields is None:
        return None
    year, month, day, hour, minute, second = fields[:6]
    offset = fields[9] or 0
    valid = (
        1 <= year <= 9999 and 1 <= month <= 12
        and 1 <= day <= calendar.monthrange(year, month)[1]
        and 0 <= hour < 24 and 0 <= minute < 60 and 0 <= second < 60
        and abs(offset) < 24 * 3600
    )
    return calendar.timegm((year, month, day, hour, minute, second)) - offset if valid else None


def read_error_body(client_type: str, body: bytes) -> tuple[str | None, str | None, str | None]:
    """Return ``(error_type, message, request_id)`` of an error body of ``client_type``.

    The fields are read at the paths of the client's protocol's ``ErrorShape``; a client type
    the registry does not know reads with the default shape. A document that is a one-element
    list (Google) is read as its element. A body that is not a JSON object becomes
    ``(None, preview of its text, None)`` (``None`` message when it is empty).

    Raises nothing: any bytes give a result (08 D59).
    """
    text = body.decode("utf-8", "replace").strip()
    try:
        document = loads(text)
    except BadField:
        return None, (preview(text) if text else None), None
    if isinstance(document, list) and document:
        document = document[0]
    if not isinstance(document, dict):
        return None, preview(text), None
    shape = _shape(client_type)
    return (
        _first(document, shape.error_type),
        _first(document, shape.message),
        _first(document, shape.request_id),
    )


def _shape(client_type: str) -> ErrorShape:
    canonical = canonical_client_type(client_type)
    if canonical is None:
        return _DEFAULT_SHAPE
    return protocol_traits(CLIENTS[canonical].protocol).error_shape


def _first(document: dict[str, Any], paths: tuple[JsonPath, ...]) -> str | None:
    """The first of ``paths`` that leads to a non-empty scalar, as text."""
    for path in paths:
        value: Any = document
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if text := _text(value):
            return text
    return None


def _text(value: Any) -> str | None:
    """A JSON scalar as text; ``None`` for null, booleans, empty strings and containers."""
    if value is None or isinstance(value, bool | dict | list):
        return None
    return str(value) or None
