"""What the OpenAI protocols share (openai-chat, openai-responses, openai-embedding).

``error_body`` is the JSON body OpenAI sends with a non-2xx status, the same on every one of
its APIs (``{"error": {"message", "type", "param", "code"}}``); each protocol's simulator
dialect names it. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["error_body"]

_ERRORS: Final = {  # status -> (type, code)
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def error_body(status: int, message: str) -> dict[str, Any]:
    """The JSON body OpenAI sends with a non-2xx ``status`` (every one of its APIs)."""
    error_type, code = _ERRORS.get(
        status, ("server_error", None) if status >= 500 else ("invalid_request_error", None)
    )
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}
