"""Every MMSP error (spec 03 §2, 09, 08 D31, D46, D48).

All classes derive directly from ``MMSPError(ValueError)``; ``ProviderStreamError`` is also a
``RuntimeError``. Each class declares its fields; ``str(exc)`` is built from them, and the
optional ``detail`` says what no other field says. The wire form
``{"error": {"type", "message", **fields}}`` (spec 03 §3) is produced by ``mmsp_core.wire``
from ``ERROR_CLASSES`` and ``fields_of``; no string surgery.

Fields whose value is a ``UsageMetadata`` stay values here; the wire module converts them.

Every class is spelled ``@attrs.define(auto_exc=True, slots=False)`` on the class itself (not
through a helper) so that mypy's attrs plugin sees the fields: mutable (tracebacks), compared
by identity.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from .model import UsageMetadata

__all__ = [
    "ERROR_CLASSES",
    "AbortedError",
    "ApiKeyRequiredError",
    "ConcurrentCallError",
    "EmptyResponseError",
    "IncompleteStreamError",
    "InvalidMessageError",
    "MMSPError",
    "MalformedEventError",
    "ProviderConnectionError",
    "ProviderHTTPError",
    "ProviderStreamError",
    "RoutingError",
    "StreamLimitError",
    "StreamProtocolError",
    "StreamTimeoutError",
    "ToolCallArgumentParseError",
    "UnknownEventError",
    "UnsupportedContentError",
    "UnsupportedOperationError",
    "UnsupportedParameterError",
    "UpstreamError",
    "WireFormatError",
    "fields_of",
    "preview",
    "redact",
    "redact_error",
]

_PREVIEW_WHOLE: Final = 160
_PREVIEW_EDGE: Final = 72


def preview(text: str) -> str:
    """Return ``text`` whole up to 160 characters, else its first and last 72 (spec 03 §2)."""
    if len(text) <= _PREVIEW_WHOLE:
        return text
    return text[:_PREVIEW_EDGE] + "...[truncated]..." + text[-_PREVIEW_EDGE:]


#: What stands where a secret was removed.
REDACTED: Final = "[redacted]"
#: 08 D61: a key's first characters may show (a vendor prefix such as ``sk-ant-api03-``), no
#: run of this many characters of the rest may.
_SECRET_SHOWN: Final = 8
_SECRET_RUN: Final = 12


def redact(text: str, secret: str) -> str:
    """Return ``text`` with ``secret`` removed, whole and in part (08 D61).

    The whole secret is replaced by ``[redacted]``, and so is every stretch of ``text`` made of
    overlapping runs of 12 characters taken from the secret after its first 8. So a piece of the
    key that survived shortening (``preview`` keeps the first and last 72 characters, which may
    cut a key in two) is removed as well: redacting after shortening then leaves no more than
    redacting before it would. The functions that build errors never see the key; the layer
    that holds it calls this (or ``redact_error``) on everything it lets out.

    A secret of 8 characters or fewer is all prefix by that rule and is left alone: replacing
    it would mangle ordinary text (a test key ``"k"`` inside ``"tokens"``).
    """
    if len(secret) <= _SECRET_SHOWN:
        return text
    text = text.replace(secret, REDACTED)
    tail = secret[_SECRET_SHOWN:]
    if len(tail) < _SECRET_RUN:
        return text
    runs = {tail[i : i + _SECRET_RUN] for i in range(len(tail) - _SECRET_RUN + 1)}
    covered_until = -1
    spans: list[tuple[int, int]] = []
    for start in range(len(text) - _SECRET_RUN + 1):
        if text[start : start + _SECRET_RUN] in runs:
            end = start + _SECRET_RUN
            if spans and start <= covered_until:
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((start, end))
            covered_until = end
    if not spans:
        return text
    pieces, position = [], 0
    for start, end in spans:
        pieces += [text[position:start], REDACTED]
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def _redact_value(value: Any, secret: str) -> Any:
    """``value`` with ``secret`` redacted from every string in it (JSON-like containers)."""
    if isinstance(value, str):
        return redact(value, secret)
    if isinstance(value, Mapping):
        return {_redact_value(k, secret): _redact_value(v, secret) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return type(value)(_redact_value(v, secret) for v in value)
    return value


def redact_error(exc: BaseException, secret: str) -> None:
    """Remove ``secret`` (whole and in part, see ``redact``) from ``exc`` in place (08 D61).

    Every text an error shows is covered: each field of an ``MMSPError`` (``detail``,
    ``provider_message``, ``event``, ``raw_arguments_preview``, an ``UpstreamError``'s
    ``error`` object, ...), ``args`` (``str`` and ``repr`` of other exceptions), and the same
    for every exception in its ``__cause__`` / ``__context__`` chain, which a traceback shows.
    """
    if len(secret) <= _SECRET_SHOWN:
        return
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, MMSPError):
            for field in attrs.fields(type(current)):
                value = getattr(current, field.name)
                redacted = _redact_value(value, secret)
                if redacted != value:
                    setattr(current, field.name, redacted)
        current.args = tuple(_redact_value(arg, secret) for arg in current.args)
        current = current.__cause__ or current.__context__


@attrs.define(auto_exc=True, slots=False)
class MMSPError(ValueError):
    """Base of every MMSP error. ``retryable`` says whether the same call may succeed (D48)."""

    detail: str | None = attrs.field(default=None, kw_only=True)

    def _summary(self) -> str:
        return type(self).__name__

    def __str__(self) -> str:
        summary = self._summary()
        return f"{summary} ({self.detail})" if self.detail else summary

    @property
    def retryable(self) -> bool:
        """Whether retrying the same request may succeed (08 D48)."""
        return False


def fields_of(exc: MMSPError) -> dict[str, Any]:
    """Return the declared fields of ``exc`` in declaration order, ``detail`` last."""
    values = {f.name: getattr(exc, f.name) for f in attrs.fields(type(exc)) if f.name != "detail"}
    values["detail"] = exc.detail
    return values


@attrs.define(auto_exc=True, slots=False)
class UnsupportedParameterError(MMSPError):
    """A UniConfig value the client cannot send for this model; raised before any request."""

    client: str
    parameter: str

    def _summary(self) -> str:
        # What was wrong with the value, and what is accepted, is the detail's to say.
        return f"{self.client} cannot take the parameter {self.parameter!r} as given"


@attrs.define(auto_exc=True, slots=False)
class UnsupportedOperationError(MMSPError):
    """A capability the client lacks whatever the input (Bedrock, Vertex; 08 D23)."""

    client: str
    operation: str

    def _summary(self) -> str:
        return f"{self.client} does not support {self.operation}"


@attrs.define(auto_exc=True, slots=False)
class UnsupportedContentError(MMSPError):
    """A well-formed item the model cannot take (an image on a text-only model, ...)."""

    client: str
    item_type: str | None

    def _summary(self) -> str:
        return f"{self.client} cannot send content of type {self.item_type!r} to this model"


@attrs.define(auto_exc=True, slots=False)
class InvalidMessageError(MMSPError):
    """A message that cannot be sent as it is (RFC-0003 §3.3)."""

    client: str
    item_type: str | None = None
    message_index: int | None = None

    def _summary(self) -> str:
        where = f"message {self.message_index}" if self.message_index is not None else "a message"
        what = f" (item type {self.item_type!r})" if self.item_type else ""
        # What is wrong, and what is accepted, is the detail's to say.
        return f"{self.client} cannot send {where}{what}"


@attrs.define(auto_exc=True, slots=False)
class ApiKeyRequiredError(MMSPError):
    """No API key may be used for this client and endpoint (spec 04 §3, 08 D25)."""

    client: str
    client_type: str
    api_key_env: str
    base_url_env: str
    base_url: str | None

    def _summary(self) -> str:
        if self.base_url is None:
            return (
                f"{self.api_key_env} is required for {self.client}: "
                f"pass api_key or set {self.api_key_env}."
            )
        return (
            f"{self.client} needs an api_key passed in code for the base_url given in code: "
            f"{self.api_key_env} is only sent to {self.base_url_env} or the vendor's endpoint."
        )


@attrs.define(auto_exc=True, slots=False)
class RoutingError(MMSPError):
    """No client can be chosen for the model and client type (spec 04 §2)."""

    model: str
    client_type: str | None

    def _summary(self) -> str:
        if self.client_type is not None and not self.model:  # no model involved: a bad name
            return f"{self.client_type!r} names no client type"
        if self.client_type is not None:
            return f"cannot route model {self.model!r} with client type {self.client_type!r}"
        return (
            f"No client for model {self.model!r}: its family is not known. "
            "Pass client_type to choose one."
        )


@attrs.define(auto_exc=True, slots=False)
class ConcurrentCallError(MMSPError):
    """A stateful call started while another is in flight on the same client."""

    client: str

    def _summary(self) -> str:
        return f"{self.client} already has a stateful call in flight"


@attrs.define(auto_exc=True, slots=False)
class UnknownEventError(MMSPError):
    """Strict mode only: a wire event the machine does not know (08 D8, D51)."""

    client: str
    event: str

    def __attrs_post_init__(self) -> None:
        self.event = preview(self.event)

    def _summary(self) -> str:
        return f"{self.client} received an unknown event: {self.event}"


@attrs.define(auto_exc=True, slots=False)
class MalformedEventError(MMSPError):
    """A known wire event whose data is not the JSON it must be (09)."""

    client: str
    event: str

    def __attrs_post_init__(self) -> None:
        self.event = preview(self.event)

    def _summary(self) -> str:
        return f"{self.client} received a malformed event: {self.event}"


@attrs.define(auto_exc=True, slots=False)
class StreamLimitError(MMSPError):
    """A bounded buffer overflowed (08 D18): ``size`` bytes or characters went past ``limit``."""

    what: str
    limit: int
    size: int

    def _summary(self) -> str:
        return f"{self.what} exceeds the limit of {self.limit} ({self.size} so far)"


@attrs.define(auto_exc=True, slots=False)
class StreamProtocolError(MMSPError):
    """The client stream broke the grammar: always a client bug, never repaired (02 §7)."""

    client: str

    def _summary(self) -> str:
        return f"{self.client} broke the streaming protocol"

    def __str__(self) -> str:
        return f"{self._summary()}: {self.detail}" if self.detail else self._summary()


@attrs.define(auto_exc=True, slots=False)
class ToolCallArgumentParseError(MMSPError):
    """Tool-call arguments are not a JSON object; raised in place of ``tool_call.done``."""

    client: str
    tool_name: str
    tool_call_id: str
    raw_arguments_length: int
    raw_arguments_preview: str

    def _summary(self) -> str:
        return (
            f"{self.client}: the arguments of tool call {self.tool_name!r} "
            f"({self.tool_call_id}) are not a JSON object "
            f"({self.raw_arguments_length} characters: {self.raw_arguments_preview!r})"
        )


def _missing_text(missing: tuple[str, ...]) -> str:
    return " and ".join(missing) if missing else "nothing"


@attrs.define(auto_exc=True, slots=False)
class IncompleteStreamError(MMSPError):
    """The stream ended without usage and/or finish reason: it was cut (RFC-0003 §5)."""

    client: str
    missing: tuple[str, ...]
    finish_reason: str | None = None
    usage_metadata: UsageMetadata | None = None

    def _summary(self) -> str:
        return f"{self.client}'s stream ended without {_missing_text(self.missing)}."

    @property
    def retryable(self) -> bool:
        return True


@attrs.define(auto_exc=True, slots=False)
class EmptyResponseError(MMSPError):
    """The response held no content other than thinking (RFC-0003 §5)."""

    client: str
    finish_reason: str | None = None
    usage_metadata: UsageMetadata | None = None

    def _summary(self) -> str:
        return (
            f"{self.client} returned a response with no content other than thinking "
            f"(finish reason {self.finish_reason!r})"
        )


_RETRYABLE_WORDS: Final = (
    "overload",
    "api_error",
    "rate_limit",
    "rate-limit",
    "ratelimit",
    "server_error",
    "internal",
    "unavailable",
    "resource_exhausted",
    "timeout",
    # Bedrock's throttlingException and modelNotReadyException (08 D72).
    "throttl",
    "notready",
)
_RETRYABLE_CODES: Final = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


@attrs.define(auto_exc=True, slots=False)
class ProviderStreamError(MMSPError, RuntimeError):
    """The provider reported an error inside an open stream (08 D4)."""

    client: str
    code: int | str | None = None
    error_type: str | None = None
    provider_message: str | None = None
    usage_metadata: UsageMetadata | None = None

    def _summary(self) -> str:
        label = " ".join(str(x) for x in (self.error_type, self.code) if x is not None)
        head = f"{self.client} stream error" + (f" {label}" if label else "")
        return f"{head}: {self.provider_message}" if self.provider_message else head

    @property
    def retryable(self) -> bool:
        code = int(self.code) if isinstance(self.code, str) and self.code.isdigit() else self.code
        if isinstance(code, int) and code in _RETRYABLE_CODES:
            return True
        text = f"{self.code} {self.error_type}".lower()
        return any(word in text for word in _RETRYABLE_WORDS)


@attrs.define(auto_exc=True, slots=False)
class ProviderHTTPError(MMSPError):
    """The provider answered with a non-2xx status (08 D19)."""

    client: str
    status: int
    error_type: str | None = None
    provider_message: str | None = None
    request_id: str | None = None
    retry_after: float | None = None

    def _summary(self) -> str:
        head = f"{self.client} answered HTTP {self.status}"
        if self.error_type:
            head += f" {self.error_type}"
        return f"{head}: {self.provider_message}" if self.provider_message else head

    @property
    def retryable(self) -> bool:
        return self.status in _RETRYABLE_CODES or self.status >= 500 or (
            self.error_type is not None and "overload" in self.error_type.lower()
        )


@attrs.define(auto_exc=True, slots=False)
class ProviderConnectionError(MMSPError):
    """No response came: connecting or reading the response headers failed (08 D19)."""

    client: str
    reason: str

    def _summary(self) -> str:
        return f"{self.client} could not be reached: {self.reason}"

    @property
    def retryable(self) -> bool:
        return True


@attrs.define(auto_exc=True, slots=False)
class StreamTimeoutError(MMSPError):
    """One of the four named timeouts expired (08 D22)."""

    client: str
    which: str
    seconds: float

    def _summary(self) -> str:
        return f"{self.client}: the {self.which} timeout of {self.seconds} s expired"

    @property
    def retryable(self) -> bool:
        return True


@attrs.define(auto_exc=True, slots=False)
class AbortedError(MMSPError):
    """The caller's ``AbortSignal`` fired (08 D20)."""

    client: str
    reason: str | None = None

    def _summary(self) -> str:
        return f"{self.client}: the call was aborted" + (f": {self.reason}" if self.reason else "")


@attrs.define(auto_exc=True, slots=False)
class UpstreamError(MMSPError):
    """An error an MMSP server reported to the ``mmsp`` client (RFC-0003 §7, 08 D13)."""

    client: str
    status: int | None = None
    error_type: str | None = None
    error: Mapping[str, Any] = attrs.field(factory=dict)

    def _summary(self) -> str:
        message = self.error.get("message") or self.error_type or "unknown error"
        return f"{self.client} upstream error: {message}"


@attrs.define(auto_exc=True, slots=False)
class WireFormatError(MMSPError):
    """Malformed MMSP JSON given to a ``*_from_wire`` function; ``path`` names the field."""

    path: str
    reason: str

    def _summary(self) -> str:
        return f"{self.path}: {self.reason}"


ERROR_CLASSES: Final[Mapping[str, type[MMSPError]]] = {
    cls.__name__: cls
    for cls in (
        UnsupportedParameterError,
        UnsupportedOperationError,
        UnsupportedContentError,
        InvalidMessageError,
        ApiKeyRequiredError,
        RoutingError,
        ConcurrentCallError,
        UnknownEventError,
        MalformedEventError,
        StreamLimitError,
        StreamProtocolError,
        ToolCallArgumentParseError,
        IncompleteStreamError,
        EmptyResponseError,
        ProviderStreamError,
        ProviderHTTPError,
        ProviderConnectionError,
        StreamTimeoutError,
        AbortedError,
        UpstreamError,
        WireFormatError,
    )
}
