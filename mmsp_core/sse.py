"""Server-sent events: ``SSEEvent`` and the bounded, chunking-invariant ``SSEDecoder``."""

from __future__ import annotations

from typing import final

import attrs

__all__ = ["SSEEvent"]


@final
@attrs.frozen(slots=True)
class SSEEvent:
    """One dispatched event of an event stream (WHATWG HTML §9.2)."""

    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None
