"""Whole answers of the MMSP server: a status, headers and a JSON body (spec 07 §3-§5), and
the wire form of an error (03 §3).

The gateway's refusals, its model list and metrics, and the front doors' error bodies and
non-streaming responses (08 D73) are all one ``Answer``, which either front end sends as it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, final

import attrs

from mmsp_core.errors import MMSPError, redact
from mmsp_core.wire import to_wire

__all__ = ["JSON", "SSE_HEADERS", "Answer", "json_answer", "refusal", "wire_error"]

JSON: Final = "application/json"
#: The head of a stream's answer (07 §4); the front doors add theirs (08 D73). A proxy that
#: buffers responses (nginx, an ingress) is told not to hold a stream's events back.
SSE_HEADERS: Final = (
    ("content-type", "text/event-stream; charset=utf-8"),
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),
)


@final
@attrs.frozen
class Answer:
    """A whole response: status, headers and body."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


def json_answer(
    status: int, document: Mapping[str, Any], headers: tuple[tuple[str, str], ...] = ()
) -> Answer:
    """``document`` as compact JSON (non-ASCII kept) under ``status``, after ``headers``."""
    body = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
    return Answer(status, (("content-type", JSON), *headers), body)


def refusal(status: int, error_type: str, message: str) -> Answer:
    """The answer ``{"error": {"type", "message"}}`` of a refusal (07 §3, §4; 03 §3)."""
    return json_answer(status, {"error": {"type": error_type, "message": message}})


def wire_error(exc: Exception, secret: str) -> dict[str, Any]:
    """The wire form of ``exc`` (03 §3): an MMSP error with its fields (the row's client has
    redacted its key from them); any other exception as its class name and message, ``secret``
    redacted (08 D16), plus ``status`` when it has an integer ``status_code``."""
    if isinstance(exc, MMSPError):
        return to_wire(exc)
    message = redact(str(exc), secret) or type(exc).__name__
    error: dict[str, Any] = {"type": type(exc).__name__, "message": message}
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and not isinstance(status, bool):
        error["status"] = status
    return {"error": error}
