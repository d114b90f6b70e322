"""What the OpenAI protocols share (openai-chat, openai-responses, openai-embedding).

``error_body`` is the JSON body OpenAI sends with a non-2xx status, the same on every one of
its APIs (``{"error": {"message", "type", "param", "code"}}``), and ``ERROR_SHAPE`` where the
three protocols read one, Azure OpenAI's included (08 D72: ``{"error": {"code", "message"}}``,
whose content-filter refusal has a null ``type``, a ``code`` and a numeric ``status``).
``with_azure`` adds to a protocol's simulator dialect how Azure OpenAI serves it. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import attrs

from ._spec import ErrorShape, SimulatorDialect

__all__ = ["AZURE_PREFIX", "ERROR_SHAPE", "azure_error_body", "error_body", "with_azure"]

_ERRORS: Final = {  # status -> (type, code)
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "not_found"),
    429: ("requests", "rate_limit_exceeded"),
}

#: Where an OpenAI protocol's error body keeps its fields (08 D19): OpenAI's ``error.type``,
#: else the ``error.code`` Azure sends (``"401"``, ``"content_filter"``), before the numeric
#: ``error.status`` of Azure's content-filter refusal.
ERROR_SHAPE: Final = ErrorShape(
    error_type=(("error", "type"), ("error", "code"), ("error", "status")),
)

#: The path before an OpenAI path on the simulator's Azure endpoint: it stands for an Azure
#: resource's host, whose v1 API lives under ``/openai/v1`` (08 D72).
AZURE_PREFIX: Final = "/azure/openai"

#: What Azure OpenAI answers to a missing or wrong ``api-key``.
_AZURE_BAD_KEY: Final = (
    "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide "
    "a valid key for an active subscription and use a correct regional API endpoint for your "
    "resource."
)


def error_body(status: int, message: str, *, param: str | None = None) -> dict[str, Any]:
    """The JSON body OpenAI sends with a non-2xx ``status`` (every one of its APIs), ``param``
    naming the request field at fault (a front door's refused field, 08 D73)."""
    error_type, code = _ERRORS.get(
        status, ("server_error", None) if status >= 500 else ("invalid_request_error", None)
    )
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


def azure_error_body(status: int, message: str) -> dict[str, Any]:
    """The JSON body Azure OpenAI sends with a non-2xx ``status``: ``{"error": {"code":
    "<status>", "message"}}``, and for 400 its content-filter refusal (``code``
    ``content_filter``, a null ``type``, ``status`` 400 and the filter's verdict)."""
    if status != 400:
        return {"error": {"code": str(status), "message": message}}
    return {"error": {
        "message": message, "type": None, "param": "prompt", "code": "content_filter",
        "status": 400,
        "innererror": {
            "code": "ResponsibleAIPolicyViolation",
            "content_filter_result": {"hate": {"filtered": True, "severity": "high"}},
        },
    }}


def with_azure(
    dialect: SimulatorDialect, annotate: Callable[[bytes], bytes] | None = None
) -> SimulatorDialect:
    """``dialect``, served by Azure OpenAI too (08 D72): the same routes under
    ``AZURE_PREFIX``, the key in ``api-key`` only, Azure's error bodies and 401 message, and
    the body passed through ``annotate`` (Azure's content-filter annotations), if given."""
    method, path = dialect.route
    azure = attrs.evolve(
        dialect,
        route=(method, AZURE_PREFIX + path),
        base_path=AZURE_PREFIX + dialect.base_path,
        key_headers=("api-key",),
        error_body=azure_error_body,
        bad_key_message=_AZURE_BAD_KEY,
        annotate=annotate,
    )
    return attrs.evolve(dialect, azure=azure)
