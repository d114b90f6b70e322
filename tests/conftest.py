"""Shared fixtures: every async test runs under asyncio and trio; a deterministic clock;
hypothesis example counts from profiles; the tests that parse provider JSON run once per JSON
backend.

Hypothesis profiles: ``dev`` (the default: the README's test command, in CI too, stays within
its five minutes) and ``ci`` (eight times the examples: ``.ci/run``'s second step runs the core,
adapter and end-to-end client tests with it); ``HYPOTHESIS_PROFILE`` names one. No test sets
its own example count.

JSON backends (``mmsp_core.jsonlib``): the tests of the parser and adapter suites
(``BOTH_JSON_MODES``) run once per available backend, since their results must never depend on
it, but for those that never parse JSON with the backend: a module of ``ONE_JSON_MODE``, or a
test (or parameter) marked ``one_json_mode``, runs once, in the default mode. Both rules are
checked while the tests run: a test that runs once and parses JSON with the backend fails (it
belongs in both modes), and so does a test that runs in both modes and parses none (its second
run would be the first one again: mark it ``one_json_mode``), but for a property test, whose
examples decide whether it parses. ``MMSP_TEST_JSON_MODE`` names the
one backend to run (the compiled build's test runs its suites in one mode).

Trust store: no test reaches a public host, and every ``httpx`` client made loads its trust
store (certifi's bundle, or the system's that ``SSL_CERT_FILE`` names: about 45 ms a client).
The suite's processes trust a one-certificate bundle instead (``SSL_CERT_FILE``, which httpx
reads; ``SSL_CERT_DIR`` is removed), so that a client costs a millisecond; a test of the
default store deletes the variable.
"""

from __future__ import annotations

import atexit
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from mmsp_core import jsonlib

TESTS = Path(__file__).resolve().parent


def _one_certificate_bundle() -> str:
    """A temporary file holding the first certificate of certifi's bundle (module doc),
    removed when the process ends."""
    import certifi

    bundle = Path(certifi.where()).read_text(encoding="ascii")
    end = "-----END CERTIFICATE-----"
    first = bundle[bundle.index("-----BEGIN CERTIFICATE-----") : bundle.index(end) + len(end)]
    handle, name = tempfile.mkstemp(prefix="mmsp-tests-", suffix=".pem")
    os.write(handle, first.encode("ascii") + b"\n")
    os.close(handle)
    atexit.register(os.unlink, name)
    return name


os.environ["SSL_CERT_FILE"] = _one_certificate_bundle()
os.environ.pop("SSL_CERT_DIR", None)
# Bytecode caches are written whatever PYTHONDONTWRITEBYTECODE says, here (the test modules'
# rewritten assertions: half the collection's time) and in the interpreters the tests start
# (each compiled the packages from source: half a second a start).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

settings.register_profile(
    "dev", max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("ci", settings.get_profile("dev"), max_examples=80)
# The compiled build's run (tests/test_compiled.py): the same properties on the compiled modules.
settings.register_profile("compiled", settings.get_profile("dev"), max_examples=5)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "dev")

#: The suites whose tests run once per JSON backend: the parsers and the protocol adapters.
BOTH_JSON_MODES = ("core", "adapters")
#: Modules of those suites that never parse with the backend (they build requests, read the
#: registry, the catalog or images, check sources, convert parsed values to and from the MMSP
#: wire format): they run once.
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
    "adapters/test_table.py",
    "core/test_constructors.py",
    "core/test_errors.py",
    "core/test_fast_construct.py",
    "core/test_jsonlib.py",
    "core/test_memory_limits.py",
    "core/test_messages.py",
    "core/test_purity.py",
    "core/test_request.py",
    "core/test_sse.py",
    "core/test_wire.py",
})


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook, unknown when it is not loaded
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject's addopts): one and a half workers per core, at least two. The
    end-to-end tests spend about half their time waiting on loopback peers and timeouts, which
    a third worker on two cores fills with another test's work."""
    return max(2, (os.cpu_count() or 1) * 3 // 2)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "one_json_mode: the test parses no JSON with the backend: it runs once"
    )
    config.addinivalue_line("markers", "first_please: a long test, handed out first")


def _suite_module(path: Path) -> tuple[str, str]:
    """``(suite, "suite/test_x.py")`` of a test module's path ("" outside ``tests/``)."""
    try:
        parts = path.resolve().relative_to(TESTS).parts
    except ValueError:
        return "", ""
    return parts[0], "/".join(parts)


def _json_modes() -> list[str]:
    chosen = os.environ.get("MMSP_TEST_JSON_MODE")
    return [chosen] if chosen else jsonlib.available()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``json_backend`` with every available backend for the tests of
    ``BOTH_JSON_MODES``, but for the modules of ``ONE_JSON_MODE``."""
    suite, module = _suite_module(metafunc.definition.path)
    if suite in BOTH_JSON_MODES and module not in ONE_JSON_MODE:
        metafunc.parametrize("json_backend", _json_modes(), indirect=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run a test marked ``one_json_mode`` once: in the first backend only; hand the longest
    test (the compiled build's, ``first_please``) to a worker first, so it never runs alone at
    the end."""
    items.sort(key=lambda item: item.get_closest_marker("first_please") is None)
    first = _json_modes()[0]
    kept, dropped = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        backend = callspec.params.get("json_backend") if callspec is not None else None
        once = item.get_closest_marker("one_json_mode") is not None
        (dropped if once and backend not in (None, first) else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


_SKIPPED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Note on the item that its test skipped (an optional package absent), so the JSON check
    of ``json_backend``'s teardown does not hold a test that never ran to parsing."""
    report = yield
    if call.when == "call" and report.skipped:
        item.stash[_SKIPPED] = True
    return report


@pytest.fixture(autouse=True)
def json_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The JSON backend of the test, with the checks of the module docstring: a test that runs
    once must parse no JSON with the backend, one that runs in every mode must parse some."""
    previous = jsonlib.backend()
    name: str | None = getattr(request, "param", None)
    both = name is not None and request.node.get_closest_marker("one_json_mode") is None
    # Whether a property test parses depends on the examples drawn: it is not held to parse.
    must_parse = both and request.node.get_closest_marker("hypothesis") is None
    if name is None and _suite_module(request.path)[0] not in BOTH_JSON_MODES:
        yield previous
        return
    parsed: list[str] = []
    real = jsonlib.loads if name is None else None
    if name is not None:
        jsonlib.use_backend(name)
    chosen = jsonlib.loads

    def loads(text: str) -> Any:
        parsed.append(text[:80])
        return chosen(text)

    jsonlib.loads = loads
    try:
        yield name or previous
    finally:
        if real is not None:
            jsonlib.loads = real
        else:
            jsonlib.use_backend(previous)
    if must_parse and not request.node.stash.get(_SKIPPED, False):
        assert parsed, (
            f"{request.node.nodeid} runs in every JSON mode but parsed no JSON with the "
            "backend: mark it one_json_mode (tests/conftest.py)"
        )
    elif not both:
        assert not parsed, (
            f"{request.node.nodeid} runs in one JSON mode but parsed JSON with the backend "
            f"({parsed[0]!r}...): it belongs in both modes (tests/conftest.py)"
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
