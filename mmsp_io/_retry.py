"""The client's retry policy (08 D21, D60): whether an error before the first event is retried,
and after what wait.

Retried, before the first event only: connection failures, HTTP 408/409/429/5xx and in-stream
overload or rate-limit errors (their ``retryable``), up to ``max_retries`` times. The wait is
the provider's ``Retry-After`` (one longer than a minute ends the retries), else a jittered
exponential backoff. ``total`` counts from the start of the call, across every attempt and
wait: a wait longer than what is left ends the retries at once (08 D60). An error the client
stopped retrying says in its ``detail`` how many attempts were made and why there was no
other; it keeps its ``retryable``.
"""

from __future__ import annotations

import random
from typing import Final

from mmsp_core.errors import (
    MMSPError,
    ProviderConnectionError,
    ProviderHTTPError,
    ProviderStreamError,
)

__all__ = ["retry_wait"]

#: Backoff between retries (08 D21): ``base * 2**attempt`` seconds, capped, with jitter.
_RETRY_BASE: Final = 0.5
_RETRY_CAP: Final = 8.0
#: A provider asking to wait longer than this is not retried: the error goes to the caller.
_RETRY_AFTER_CAP: Final = 60.0


def retry_wait(
    exc: MMSPError, attempt: int, *, max_retries: int, total: float | None, elapsed: float
) -> float | None:
    """Seconds to wait before the next attempt, after ``exc`` ended attempt ``attempt``
    (counted from 0) before its first event; ``None`` when there is no other attempt (module
    doc), and then ``exc.detail`` says why, unless ``exc`` is never retried.

    ``total`` is the call's total timeout (``None``: none) and ``elapsed`` the seconds since
    the call started.
    """
    if not _retried(exc):
        return None
    delay = _delay(attempt, exc)
    if attempt == max_retries:
        why = f"max_retries is {max_retries}"
    elif isinstance(delay, str):
        why = delay
    elif total is not None and delay >= total - elapsed:  # it would outlast the call (08 D60)
        why = f"waiting {delay:.3g} s more would exceed the total timeout of {total} s"
    else:
        return delay
    _gave_up(exc, attempt + 1, why)
    return None


def _retried(exc: MMSPError) -> bool:
    """Whether the client retries ``exc`` when it comes before the first event (08 D21)."""
    return isinstance(
        exc, ProviderConnectionError | ProviderHTTPError | ProviderStreamError
    ) and exc.retryable


def _delay(attempt: int, exc: MMSPError) -> float | str:
    """Seconds to wait before retry ``attempt + 1``, or why there is no retry (08 D21): the
    ``Retry-After`` of ``exc`` when it has one of at most a minute, else the backoff."""
    retry_after: float | None = exc.retry_after if isinstance(exc, ProviderHTTPError) else None
    if retry_after is not None:
        if retry_after > _RETRY_AFTER_CAP:
            return f"the provider asked to wait {retry_after:g} s"
        return retry_after
    return random.uniform(0.5, 1.0) * min(_RETRY_CAP, _RETRY_BASE * 2.0**attempt)


def _gave_up(exc: MMSPError, attempts: int, why: str) -> None:
    """Say in ``exc.detail`` how many attempts were made and why there was no other."""
    note = f"gave up after {attempts} attempt{'s' if attempts != 1 else ''}: {why}"
    exc.detail = f"{exc.detail}; {note}" if exc.detail else note
