"""Shared fixtures: every async test runs under asyncio and trio; a deterministic clock;
hypothesis example counts from profiles; the JSON the parser and adapter tests parse gives the
same values in every JSON backend.

Hypothesis profiles: ``dev`` (the default: the README's test command, in CI too, stays within
its five minutes) and ``ci`` (eight times the examples: ``.ci/run``'s second step runs the core,
adapter and end-to-end client tests with it); ``HYPOTHESIS_PROFILE`` names one. No test sets
its own example count.

JSON backends (``mmsp_core.jsonlib``): a test of the parser and adapter suites
(``JSON_SUITES``) runs once, in jsonlib's default backend (orjson where it is installed), and
its results must not depend on the backend: every text it gave ``jsonlib.loads`` is then parsed
by each available backend, which must give the same value, types and key order included, or the
same error. That checks what running the test once per backend would, for the one function of
the core whose result the backend decides, without reading every chunking again.
``MMSP_TEST_JSON_MODE`` names the backend the tests run in (the compiled build's test: json).

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
import tracemalloc
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

#: The suites whose parsed JSON is checked in every backend: the parsers and the adapters.
JSON_SUITES = ("core", "adapters")


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook, unknown when it is not loaded
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject's addopts): one and a half workers per core, at least two. The
    end-to-end tests spend about half their time waiting on loopback peers and timeouts, which
    a third worker on two cores fills with another test's work."""
    return max(2, (os.cpu_count() or 1) * 3 // 2)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "first_please: a long test, handed out first")


def _suite(path: Path) -> str:
    """The first part of a test module's path under ``tests/``: its suite's directory, or the
    module's own name for a top-level one ("" outside ``tests/``)."""
    try:
        return path.resolve().relative_to(TESTS).parts[0]
    except ValueError:
        return ""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Hand the long tests out first, so that none runs alone at the end: the compiled build's
    (``first_please``), then the top-level modules' (``tests/test_*.py``: documents, builds and
    commands checked in subprocesses); the order within each stays as collected."""

    def rank(item: pytest.Item) -> tuple[bool, bool]:
        top_level = _suite(item.path).startswith("test_")
        return item.get_closest_marker("first_please") is None, not top_level

    items.sort(key=rank)


@pytest.fixture(autouse=True)
def json_backend(request: pytest.FixtureRequest) -> Iterator[None]:
    """For a test of ``JSON_SUITES``: its JSON backend (``MMSP_TEST_JSON_MODE``, else
    jsonlib's default), and the check of the module docstring on every text it parsed."""
    if _suite(request.path) not in JSON_SUITES:
        yield
        return
    previous = jsonlib.backend()  # installs the default, so ``parse`` is a backend's own
    chosen = os.environ.get("MMSP_TEST_JSON_MODE")
    if chosen:
        jsonlib.use_backend(chosen)
    parse = jsonlib.loads
    texts: dict[str, None] = {}

    def loads(text: str) -> Any:
        if not tracemalloc.is_tracing():  # a memory test measures its parser, not this list
            texts[text] = None
        return parse(text)

    jsonlib.loads = loads
    try:
        yield
    finally:
        jsonlib.use_backend(previous)
    _check_every_backend_agrees(list(texts), request.node.nodeid)


def _check_every_backend_agrees(texts: list[str], nodeid: str) -> None:
    """Each of ``texts`` parses to the same typed value, or the same error, in every backend.

    Raises:
        AssertionError: naming the first text two backends read differently.
    """
    backends = jsonlib.available()
    if len(backends) < 2 or not texts:
        return
    previous = jsonlib.backend()
    readings: dict[str, list[object]] = {}
    try:
        for name in backends:
            jsonlib.use_backend(name)
            readings[name] = [_reading(text) for text in texts]
    finally:
        jsonlib.use_backend(previous)
    first, *others = backends
    for other in others:
        for text, one, two in zip(texts, readings[first], readings[other], strict=True):
            if _TOO_DEEP in (one, two):
                continue  # where json's reader runs out of stack depends on the caller's frames
            assert one == two, (
                f"{nodeid}: {first} and {other} read {text[:200]!r} differently: {one!r} != "
                f"{two!r}"
            )


#: The reading of a text nested deeper than the interpreter's stack allowed there.
_TOO_DEEP = ("raises", "RecursionError")


def _reading(text: str) -> object:
    """What ``jsonlib.loads`` makes of ``text``: its value with every type spelled out
    (``_typed``), or the error's type."""
    try:
        return _typed(jsonlib.loads(text))
    except Exception as exc:  # compared, not handled: any error a backend raises
        return ("raises", type(exc).__name__)


def _typed(value: object) -> str:
    """``value`` written out with every type (``1 == 1.0 == True`` in Python; JSON's readers
    must not swap them) and every key in its order; iteratively, for values nested as deep as
    a reader allows."""
    out: list[str] = []
    stack: list[tuple[bool, object]] = [(False, value)]  # (is a closing token, what)
    while stack:
        closing, item = stack.pop()
        if closing:
            out.append(str(item))
        elif isinstance(item, dict):
            out.append("{")
            stack.append((True, "}"))
            for key, member in reversed(item.items()):
                stack.extend([(False, member), (True, f"{key!r}:")])
        elif isinstance(item, list):
            out.append("[")
            stack.append((True, "]"))
            stack.extend((False, member) for member in reversed(item))
        else:
            out.append(f"{type(item).__name__}({item!r}),")
    return "".join(out)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run each ``@pytest.mark.anyio`` test once per event loop."""
    return str(request.param)


@pytest.fixture
def fake_clock() -> Callable[[], int]:
    """A clock that returns 1000, 1001, 1002, ... Unix milliseconds."""
    ticks = iter(range(1000, 1 << 62))
    return lambda: next(ticks)
