"""What the gateway's request handling passes between its parts (``handler``, ``relay``,
``whole``): where a response goes (``Output``), an accepted call (``StreamCall``,
``FrontCall``) and one call while it runs (``Flight``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, final

import attrs

from adapters import FrontDoor, FrontRequest

from ..abort import AbortSignal
from .config import KeyRow, ModelRow
from .metrics import Tally

__all__ = ["Flight", "FrontCall", "Output", "StreamCall"]


class Output(Protocol):
    """Where a response goes: the h11 core's ``Response``, or the ASGI front end's twin."""

    @property
    def client_gone(self) -> bool: ...

    async def start(
        self, status: int, headers: Sequence[tuple[str, str]] = (), *, hold: bool = False
    ) -> None: ...

    async def send(self, data: bytes) -> None: ...

    async def end(self, data: bytes = b"") -> None: ...

    async def respond(
        self, status: int, headers: Sequence[tuple[str, str]] = (), body: bytes = b""
    ) -> None: ...

    async def cut(self) -> None: ...


@final
@attrs.frozen
class StreamCall:
    """An accepted ``POST /v1/stream``: the row (the first of its group, 08 D77) and what is
    forwarded to its client."""

    row: ModelRow
    messages: list[Any]
    config: Mapping[str, Any] | None
    #: The caller's key (``None``: an open server's caller).
    key: KeyRow | None = None


@final
@attrs.frozen
class FrontCall:
    """An accepted request at a front door (08 D73): the door, the row (the first of its
    group, 08 D77) and what the door read of the request."""

    door: FrontDoor
    row: ModelRow
    request: FrontRequest
    #: The caller's key (``None``: an open server's caller).
    key: KeyRow | None = None


@final
@attrs.define
class Flight:
    """One call in flight (``Gateway._flight``); ``delivered`` once the caller has the whole
    answer."""

    signal: AbortSignal
    tally: Tally
    #: The row serving the call: the one its group tries now, the last one tried at the end.
    row: ModelRow
    delivered: bool = False
    #: The rows of its group that failed before their first event, in the order tried (08 D77).
    failed_over: list[ModelRow] = attrs.field(factory=list)
    #: The request's method and path, the status sent (``None`` until then) and the type of
    #: the error that ended the call, for its access-log line (``access``).
    route: tuple[str, str] = ("", "")
    status: int | None = None
    error_type: str | None = None
