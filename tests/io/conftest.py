"""Fixtures of the I/O tests: a loopback port that refuses connections."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A loopback port that refuses every connection for the whole test: bound here but never
    listening, so no other process (another test worker) can listen on it meanwhile."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])
