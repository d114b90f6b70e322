"""A provider's non-2xx answer as ``ProviderHTTPError``, pure (08 D19, D21): the body read by
its protocol's ``ErrorShape``, the request id header, and the wait ``Retry-After`` asks for,
counted from a ``now`` the test gives (no clock is read)."""

from __future__ import annotations

import email.utils
import math
from datetime import UTC, datetime, timedelta, timezone
from email.utils import format_datetime

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

import adapters
from adapters._errors import provider_http_error, retry_after

#: 2026-12-03 12:00:00 UTC, in seconds since the epoch.
NOW = 1_796_299_200.0


def test_retry_after_forms() -> None:
    def wait(**headers: str) -> float | None:
        return provider_http_error("c", 429, httpx.Headers(headers), b"", now=NOW).retry_after

    later = format_datetime(datetime.fromtimestamp(NOW + 30, UTC), usegmt=True)
    assert wait(**{"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert wait(**{"retry-after": "2.5"}) == 2.5
    assert (seconds := wait(**{"retry-after": later})) is not None and 25 < seconds <= 30
    assert seconds == 30.0
    assert wait(**{"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert wait(**{"retry-after": "soon"}) is None
    assert wait() is None


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("Thu, 03 Dec 2026 12:01:00 GMT", 60.0),
        ("Thu, 03 Dec 2026 13:01:00 +0100", 60.0),  # a zone offset counts
        ("Thu, 03 Dec 2026 12:01:00", 60.0),  # no zone: UTC
        ("Thu, 03 Dec 2026 12:01:00 -0000", 60.0),
        ("Sunday, 06-Dec-26 12:00:00 GMT", 3 * 86400.0),  # RFC 850 form
        ("Thu Dec  3 12:00:10 2026", 10.0),  # asctime form
        ("Thu, 03 Dec 2026 25:00:00 GMT", None),  # no such hour
        ("Mon, 30 Feb 2026 12:00:00 GMT", None),  # no such day
        ("Thu, 03 Dec 2026 12:01:00 +9999", None),  # no such offset
        ("-1", 0.0),
        ("inf", None),
        ("nan", None),
    ],
)
def test_retry_after_dates_are_counted_from_now(value: str, seconds: float | None) -> None:
    assert retry_after({"retry-after": value}, now=NOW) == seconds


def _reference(value: str, now: float) -> float | None:
    """The wait of a ``Retry-After`` value, computed independently with ``datetime`` (the form
    the I/O layer used before the rule moved down)."""
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.fromtimestamp(now, UTC)).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


_DATES = st.builds(
    lambda when, minutes, zone: format_datetime(
        when.replace(tzinfo=timezone(timedelta(minutes=minutes))) if zone else when
    ),
    st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9998, 12, 30)),
    st.integers(-23 * 60, 23 * 60),
    st.booleans(),
)


@given(value=st.one_of(_DATES, st.text(max_size=40), st.from_regex(
    r"\A[A-Z][a-z]{2}, [0-9]{1,3} [A-Z][a-z]{2} [0-9]{1,5} [0-9]{1,2}:[0-9]{2}:[0-9]{2}"
    r"( GMT| [+-][0-9]{4})?\Z")))
def test_retry_after_agrees_with_a_datetime_reading(value: str) -> None:
    assert retry_after({"retry-after": value}, now=NOW) == _reference(value, NOW)


def test_a_bad_retry_after_ms_falls_back_to_retry_after() -> None:
    assert retry_after({"retry-after-ms": "soon", "retry-after": "4"}, now=NOW) == 4.0
    assert retry_after({"retry-after-ms": "-20"}, now=NOW) == 0.0


def test_the_body_by_the_protocols_shape_and_the_header_request_id() -> None:
    body = (b'{"type":"error","error":{"type":"rate_limit_error","message":"Slow down"},'
            b'"request_id":"req_body"}')
    error = provider_http_error("anthropic-official", 429, {}, body, now=NOW)
    assert (error.client, error.status, error.error_type, error.provider_message,
            error.request_id, error.retry_after) == (
        "anthropic-official", 429, "rate_limit_error", "Slow down", "req_body", None)
    assert error.retryable
    headed = provider_http_error("anthropic-official", 429, {"request-id": "req_head"}, body,
                                 now=NOW)
    assert headed.request_id == "req_head"
    google = b'[{"error": {"code": 500, "message": "Internal.", "status": "INTERNAL"}}]'
    error = provider_http_error("google-genai", 500, {"x-goog-request-id": "g1"}, google,
                                now=NOW)
    assert (error.error_type, error.provider_message, error.request_id) == (
        "INTERNAL", "Internal.", "g1")


def test_the_public_name_is_the_same_function() -> None:
    assert adapters.provider_http_error is provider_http_error


def test_the_mmsp_servers_refusal_is_read_by_the_mmsp_records_shape() -> None:
    body = (b'{"error": {"type": "AuthenticationError", "message": "Invalid or missing API '
            b'key.", "request_id": "r1"}}')
    assert adapters.read_error_body("mmsp", body) == (
        "AuthenticationError", "Invalid or missing API key.", "r1")
    shape = adapters.protocol_traits("mmsp").error_shape
    assert shape.error_type == (("error", "type"),)
    assert shape.message == (("error", "message"),)
    # The server's error object is its whole story: no top-level guesses.
    assert adapters.read_error_body("mmsp", b'{"message": "m", "request_id": "x"}') == (
        None, None, None)

