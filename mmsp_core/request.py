"""The request a builder produces: pure data, no host, no credentials (09)."""

from __future__ import annotations

import json
from typing import Any, Final, final

import attrs

__all__ = ["CREDENTIAL_HEADERS", "HTTPRequest", "encode_json_body"]


#: Header names whose values are credentials: never shown by ``repr`` (08 D16): bearer tokens,
#: the vendors' key headers, Azure OpenAI's ``api-key`` and an AWS session token (08 D72).
CREDENTIAL_HEADERS: Final = frozenset(
    {"authorization", "x-api-key", "x-goog-api-key", "api-key", "x-amz-security-token"}
)


@final
@attrs.frozen(slots=True, repr=False)
class HTTPRequest:
    """One HTTP request relative to a client's base URL.

    ``path`` is appended to the base URL by the I/O layer (08 D26); ``headers`` never carry
    credentials (``adapters.auth_headers`` supplies those); ``body`` is the exact bytes sent.
    """

    method: str
    path: str
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def __repr__(self) -> str:
        shown = tuple(
            (name, "[redacted]" if name.lower() in CREDENTIAL_HEADERS else value)
            for name, value in self.headers
        )
        return (
            f"HTTPRequest(method={self.method!r}, path={self.path!r}, headers={shown!r}, "
            f"body=<{len(self.body)} bytes>)"
        )


def encode_json_body(value: Any) -> bytes:
    """Encode ``value`` as the compact UTF-8 JSON every builder sends.

    Keys keep their insertion order and separators are fixed, so the same request always has
    the same bytes (golden tests compare bytes). Non-ASCII text is sent as UTF-8, not escaped.
    """
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
