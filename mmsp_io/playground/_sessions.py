"""The playground's browser sessions (``mmsp_io.playground``, package doc, "Sessions"): each
holds its conversation and the abort signal of its call in flight; their number and their
turns are bounded."""

from __future__ import annotations

import secrets
from typing import Final, final

import attrs

from mmsp_core.model import UniMessage

from ..abort import AbortSignal

__all__ = ["COOKIE", "Busy", "Session", "Sessions"]

#: The cookie that names a browser's session.
COOKIE: Final = "mmsp_playground_session"
#: The length of a session id: 32 URL-safe characters (192 random bits).
_ID_BYTES: Final = 24


@final
class Busy(Exception):
    """Every session is in a call: no room for a new one."""


@final
@attrs.define
class Session:
    """One browser's conversation (package doc, "Sessions")."""

    #: The messages so far, as the last finished call left them.
    history: list[UniMessage] = attrs.Factory(list)
    #: The user messages answered so far.
    turns: int = 0
    #: The signal of the call in flight; ``None``: no call.
    signal: AbortSignal | None = None
    #: When the session was last used (``anyio.current_time()``), for eviction.
    used: float = 0.0


@final
class Sessions:
    """At most ``limit`` sessions by id; a new one evicts the session used least recently
    among those without a call in flight."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._by_id: dict[str, Session] = {}

    def __len__(self) -> int:
        return len(self._by_id)

    def get(self, session_id: str | None) -> Session | None:
        """The session named ``session_id``, or ``None``."""
        return self._by_id.get(session_id) if session_id else None

    def new(self) -> tuple[str, Session]:
        """A new session and its id.

        Raises:
            Busy: ``limit`` sessions are held and each has a call in flight.
        """
        if len(self._by_id) >= self.limit:
            idle = [(session.used, key) for key, session in self._by_id.items()
                    if session.signal is None]
            if not idle:
                raise Busy
            del self._by_id[min(idle)[1]]
        session_id = secrets.token_urlsafe(_ID_BYTES)
        session = self._by_id[session_id] = Session()
        return session_id, session
