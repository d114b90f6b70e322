"""Google's error bodies and model list, shared by both Google protocols (spec 04 §5, 08 D4, D19).

The Gemini API answers a failed request with ``{"error": {"code": <HTTP status>, "message",
"status": <canonical status name>}}`` (sometimes wrapped in a one-element list, which
``adapters._errors.read_error_body`` unwraps), and reports a failure inside a stream with a
chunk holding the same ``error`` object. Both Google protocols (generateContent and
Interactions) read and write these shapes with this module:

* ``ERROR_SHAPE``: where a non-2xx body keeps its type (the ``status`` name, else the numeric
  ``code``) and message (``Traits.error_shape``, 08 D19);
* ``error_body``: the body a Gemini server sends for a status (the simulator's dialects);
* ``stream_error``: the ``ProviderStreamError`` of an in-stream ``error`` object (08 D4), read
  leniently: the provider said the stream failed, so odd field types never turn it into a
  ``MalformedEventError``;
* ``model_list_body``: the ``GET /v1/models`` page that ``ListingForm.GOOGLE`` reads
  (``models[].name`` as ``models/<id>``, paged by ``nextPageToken``; 04 §5).

Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from adapters._spec import ErrorShape
from mmsp_core.errors import ProviderStreamError
from mmsp_core.model import UsageMetadata

__all__ = [
    "ERROR_SHAPE",
    "STATUS_NAMES",
    "error_body",
    "model_list_body",
    "stream_error",
]

#: HTTP status -> Google's canonical status name (google.rpc.Code), as its error bodies say.
STATUS_NAMES: Final[Mapping[int, str]] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

#: ``{"error": {"code", "message", "status"}}``: the status name is the type, else the code.
ERROR_SHAPE: Final = ErrorShape(
    error_type=(("error", "status"), ("error", "code")),
    message=(("error", "message"), ("error",), ("message",)),
    request_id=(),
)


def error_body(status: int, message: str) -> dict[str, Any]:
    """The JSON body a Gemini server sends with a non-2xx ``status``."""
    name = STATUS_NAMES.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    return {"error": {"code": status, "message": message, "status": name}}


def stream_error(
    client: str, error: Any, usage: UsageMetadata | None
) -> ProviderStreamError:
    """The ``ProviderStreamError`` of an in-stream ``error`` value (08 D4).

    ``code`` is the error's numeric or string ``code``, ``error_type`` its ``status`` name,
    the message its ``message``; a value of another JSON type is left out, and an error that
    is not an object is passed on whole as the message (JSON text). ``usage`` is what had
    arrived so far.
    """
    if type(error) is not dict:
        return ProviderStreamError(
            client, provider_message=_text(error), usage_metadata=usage
        )
    code = error.get("code")
    status = error.get("status")
    message = error.get("message")
    return ProviderStreamError(
        client,
        code if type(code) in (int, str) else None,
        status if type(status) is str else None,
        None if message is None else _text(message),
        usage_metadata=usage,
    )


def _text(value: Any) -> str:
    """A provider's message as text: a string as it is, anything else as JSON."""
    if type(value) is str:
        return value
    try:
        return json.dumps(value)
    except (TypeError, ValueError, RecursionError):  # too deep to write again (08 D59)
        return repr(type(value))


def model_list_body(models: Sequence[str]) -> dict[str, Any]:
    """One ``GET /v1/models`` page listing ``models`` (04 §5), the last page (no token)."""
    return {
        "models": [
            {"name": f"models/{model}", "displayName": model, "supportedGenerationMethods": [
                "generateContent", "streamGenerateContent",
            ]}
            for model in models
        ]
    }
