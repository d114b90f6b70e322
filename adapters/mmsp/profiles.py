"""Per-client data of the MMSP protocol (08 D63): the one profile of the ``mmsp`` client type.

An MMSP server maps the config and checks the messages with its own client (07 §4, 08 D58), so
the mmsp client has nothing to map: its profile only says where the stream is asked for.
"""

from __future__ import annotations

from typing import Final, final

import attrs

__all__ = ["MMSP", "MMSPProfile"]


@final
@attrs.frozen
class MMSPProfile:
    """What an MMSP client sends where."""

    #: The stream route, relative to the base URL that ends with ``/v1`` (07 §1: the client
    #: appends ``/stream``).
    stream_path: str = "/stream"


#: The ``mmsp`` client type (07 §6).
MMSP: Final = MMSPProfile()
