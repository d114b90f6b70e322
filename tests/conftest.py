"""Shared fixtures: every async test runs under asyncio and trio; a deterministic clock."""

from __future__ import annotations

from collections.abc import Callable

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run each ``@pytest.mark.anyio`` test once per event loop."""
    return str(request.param)


@pytest.fixture
def fake_clock() -> Callable[[], int]:
    """A clock that returns 1000, 1001, 1002, ... Unix milliseconds."""
    ticks = iter(range(1000, 1 << 62))
    return lambda: next(ticks)
