"""Shared fixtures: every async test runs under asyncio and trio; a deterministic clock; the
parser and adapter stream tests run once per JSON backend."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mmsp_core import jsonlib

TESTS = Path(__file__).resolve().parent
#: The suites whose tests run once per JSON backend (``mmsp_core.jsonlib``): the parsers and
#: the protocol adapters. Their results never depend on the backend; running both proves it.
BOTH_JSON_MODES = ("core", "adapters")
#: Modules of those suites that never parse with the backend (they build requests, read the
#: registry, the catalog or images, check sources, convert parsed values to and from the MMSP
#: wire format; ``adapters/test_mmsp.py`` parses that format from bytes in both modes): both
#: runs would be the same run, so they run once, and ``json_backend`` fails one of their tests
#: that parses with the backend after all (move its module out of this list then).
ONE_JSON_MODE = frozenset({
    "adapters/test_anthropic_requests.py",
    "adapters/test_catalog.py",
    "adapters/test_clients.py",
    "adapters/test_google_genai_requests.py",
    "adapters/test_google_interactions_requests.py",
    "adapters/test_media.py",
    "adapters/test_openai_chat_requests.py",
    "adapters/test_openai_responses_requests.py",
    "adapters/test_preflight.py",
    "adapters/test_protocol_purity.py",
    "core/test_constructors.py",
    "core/test_errors.py",
    "core/test_messages.py",
    "core/test_purity.py",
    "core/test_request.py",
    "core/test_wire.py",
})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow tests first: a test worker that takes one late would run on alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def _suite_module(path: Path) -> tuple[str, str]:
    """``(suite, "suite/test_x.py")`` of a test module's path ("" outside ``tests/``)."""
    try:
        parts = path.resolve().relative_to(TESTS).parts
    except ValueError:
        return "", ""
    return parts[0], "/".join(parts)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``json_backend`` with every available backend for the tests of
    ``BOTH_JSON_MODES``, but for the modules of ``ONE_JSON_MODE``."""
    suite, module = _suite_module(metafunc.definition.path)
    if suite in BOTH_JSON_MODES and module not in ONE_JSON_MODE:
        metafunc.parametrize("json_backend", jsonlib.available(), indirect=True)


@pytest.fixture(autouse=True)
def json_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The JSON backend of the test: each one in turn where ``pytest_generate_tests``
    parametrized it; elsewhere the default, left as it is. In an ``ONE_JSON_MODE`` module the
    test fails if it parsed JSON with the backend (the module then belongs in both modes)."""
    previous = jsonlib.backend()
    name: str | None = getattr(request, "param", None)
    if name is not None:
        jsonlib.use_backend(name)
        try:
            yield name
        finally:
            jsonlib.use_backend(previous)
        return
    if _suite_module(request.path)[1] not in ONE_JSON_MODE:
        yield previous
        return
    parsed: list[str] = []
    real = jsonlib.loads

    def loads(text: str) -> Any:
        parsed.append(text[:80])
        return real(text)

    jsonlib.loads = loads
    try:
        yield previous
    finally:
        jsonlib.loads = real
    assert not parsed, (
        f"{request.node.nodeid} parsed JSON with the backend ({parsed[0]!r}...): move its "
        "module out of ONE_JSON_MODE in tests/conftest.py so it runs in both JSON modes"
    )


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run each ``@pytest.mark.anyio`` test once per event loop."""
    return str(request.param)


@pytest.fixture
def fake_clock() -> Callable[[], int]:
    """A clock that returns 1000, 1001, 1002, ... Unix milliseconds."""
    ticks = iter(range(1000, 1 << 62))
    return lambda: next(ticks)
