"""No test asserts a duration (08 D80).

A test that fails because the machine is busy is a false alarm that teaches people to ignore
failures. Speed is measured in ``benchmarks/``; a test checks that a timeout fired through the
typed timeout error, never how long something took. This module scans every test module for
assertions on clock differences and fails on one, naming the file and line; the self-tests
below show that each form it knows is caught.

What counts as a clock reading: a call of ``time.monotonic``, ``time.perf_counter``,
``time.time`` (their ``_ns`` forms, ``process_time``, ``thread_time``), ``anyio.current_time``,
``trio.current_time`` or an event loop's ``loop.time()``, and a name bound to one. A duration
is a subtraction with a reading on either side, and a name, a container (filled by
``append``/``extend``/``add``) or a function's result (the tuple positions it returns) bound to
one. An ``assert`` whose expression holds a duration is refused. Readings compared with each
other (``before <= created_at <= after``) are not durations, and pass.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

_CLOCK_FUNCTIONS = frozenset({
    "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "time", "time_ns",
    "process_time", "process_time_ns", "thread_time", "thread_time_ns", "current_time",
})
#: The receivers a clock function is called on: the modules and an event loop's usual names.
_CLOCK_OWNERS = frozenset({"time", "anyio", "trio", "loop", "asyncio"})
_FILLERS = frozenset({"append", "extend", "add", "appendleft", "insert"})


def _is_clock_call(node: ast.AST) -> bool:
    """``time.monotonic()``, ``anyio.current_time()``, ``loop.time()``, ``monotonic()``..."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in _CLOCK_FUNCTIONS:
        owner = func.value
        if isinstance(owner, ast.Call):  # asyncio.get_running_loop().time()
            owner = owner.func
        name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
        return name in _CLOCK_OWNERS or name.endswith(("loop", "_loop"))
    return isinstance(func, ast.Name) and func.id in _CLOCK_FUNCTIONS - {"time"}


def _targets(target: ast.AST) -> Iterator[tuple[str, int | None]]:
    """The names an assignment target binds, with their tuple position (``None``: whole)."""
    if isinstance(target, ast.Name):
        yield target.id, None
    elif isinstance(target, ast.Tuple | ast.List):
        for position, element in enumerate(target.elts):
            if isinstance(element, ast.Name):
                yield element.id, position


class _Scan:
    """The clock readings and durations of one module, then its assertions on durations.

    Names are tracked per scope: each top-level function with the functions nested in it (a
    closure reads its enclosing names), and the module's own statements. Functions whose
    result is a duration are known module-wide, by name.
    """

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        #: Functions whose result is a duration: ``None`` for the whole value, else positions.
        self.timed_functions: dict[str, set[int] | None] = {}
        self.readings: set[str] = set()
        self.durations: set[str] = set()

    def _reads_clock(self, node: ast.AST) -> bool:
        return any(_is_clock_call(n) or (isinstance(n, ast.Name) and n.id in self.readings)
                   for n in ast.walk(node))

    def _is_duration(self, node: ast.AST) -> bool:
        for n in ast.walk(node):
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub) and (
                self._reads_clock(n.left) or self._reads_clock(n.right)
            ):
                return True
            if isinstance(n, ast.Name) and n.id in self.durations:
                return True
            if isinstance(n, ast.Call) and _callee(n) in self.timed_functions:
                return True
        return False

    def _bind(self, target: ast.AST, value: ast.AST) -> bool:
        """Record what ``target = value`` binds; whether anything new was learnt."""
        learnt = False
        inner = value.value if isinstance(value, ast.Await) else value
        positions = (self.timed_functions.get(_callee(inner) or "")
                     if isinstance(inner, ast.Call) else None)
        for name, position in _targets(target):
            if name == "_":
                continue
            element = value
            if isinstance(value, ast.Tuple) and position is not None:
                element = value.elts[position] if position < len(value.elts) else value
            if position is not None and positions:
                is_duration = position in positions
            else:
                is_duration = self._is_duration(element)
            if is_duration and name not in self.durations:
                self.durations.add(name)
                learnt = True
            elif not is_duration and _is_clock_call(element) and name not in self.readings:
                self.readings.add(name)
                learnt = True
        return learnt

    def _learn_returns(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        learnt = False
        for node in ast.walk(function):
            if not (isinstance(node, ast.Return) and node.value is not None):
                continue
            if isinstance(node.value, ast.Tuple):
                positions = {i for i, e in enumerate(node.value.elts) if self._is_duration(e)}
                if positions and self.timed_functions.get(function.name) != positions:
                    self.timed_functions[function.name] = positions
                    learnt = True
            elif self._is_duration(node.value) and function.name not in self.timed_functions:
                self.timed_functions[function.name] = None
                learnt = True
        return learnt

    def _learn_scope(self, nodes: list[ast.AST]) -> bool:
        """Propagate readings and durations through one scope; whether a function's result
        became known as a duration."""
        functions_learnt = False
        learnt = True
        while learnt:
            learnt = False
            for node in nodes:
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        learnt |= self._bind(target, node.value)
                elif isinstance(node, ast.AnnAssign | ast.AugAssign) and node.value is not None:
                    learnt |= self._bind(node.target, node.value)
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    found = self._learn_returns(node)
                    learnt |= found
                    functions_learnt |= found
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                      and node.func.attr in _FILLERS and isinstance(node.func.value, ast.Name)
                      and any(self._is_duration(arg) for arg in node.args)
                      and node.func.value.id not in self.durations):
                    self.durations.add(node.func.value.id)
                    learnt = True
        return functions_learnt

    def _scopes(self) -> list[list[ast.AST]]:
        module_level: list[ast.AST] = []
        scopes = [module_level]
        for statement in self.tree.body:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                scopes.append(list(ast.walk(statement)))
            else:
                module_level.extend(ast.walk(statement))
        return scopes

    def timed_assertions(self) -> list[int]:
        """The lines of the module's assertions on a duration."""
        scopes = self._scopes()
        found: set[int] = set()
        again = True
        while again:  # until no function's result is newly known to be a duration
            again = False
            for nodes in scopes:
                self.readings, self.durations = set(), set()
                again |= self._learn_scope(nodes)
                found |= {node.lineno for node in nodes
                          if isinstance(node, ast.Assert) and self._is_duration(node.test)}
        return sorted(found)


def _callee(call: ast.Call) -> str | None:
    return call.func.id if isinstance(call.func, ast.Name) else None


def timed_assertions(source: str) -> list[int]:
    """The line numbers of the assertions on clock differences in ``source``."""
    return _Scan(ast.parse(source)).timed_assertions()


def test_no_test_asserts_a_duration() -> None:
    found = [f"{path.relative_to(TESTS)}:{line}"
             for path in sorted(TESTS.rglob("*.py")) if path.name != Path(__file__).name
             for line in timed_assertions(path.read_text(encoding="utf-8"))]
    assert not found, (
        "these assertions bound a duration (08 D80: check the typed timeout error or the "
        "outcome instead; measure speed in benchmarks/): " + ", ".join(found)
    )


CAUGHT = {
    "monotonic": """
import time
def test():
    started = time.monotonic()
    work()
    assert time.monotonic() - started < 1.0
""",
    "perf_counter through a name": """
from time import perf_counter
def test():
    t0 = perf_counter()
    work()
    elapsed = perf_counter() - t0
    assert elapsed < 0.5
""",
    "time.time, lower bound": """
import time
def test():
    started = time.time()
    work()
    assert time.time() - started >= 0.3
""",
    "anyio loop time": """
import anyio
async def test():
    started = anyio.current_time()
    await work()
    assert anyio.current_time() - started < 0.5
""",
    "trio loop time": """
import trio
async def test():
    started = trio.current_time()
    await work()
    assert 0.1 < trio.current_time() - started
""",
    "an asyncio loop's time": """
import asyncio
async def test():
    loop = asyncio.get_running_loop()
    started = loop.time()
    await work()
    assert loop.time() - started < 2
""",
    "a helper returning the elapsed time": """
import time
async def timed():
    started = time.monotonic()
    error = await work()
    return error, time.monotonic() - started
async def test():
    error, elapsed = await timed()
    assert isinstance(error, TimeoutError)
    assert elapsed < 2.0
""",
    "samples in a list": """
import statistics, time
def test():
    samples = []
    for _ in range(3):
        started = time.perf_counter_ns()
        work()
        samples.append(time.perf_counter_ns() - started)
    assert statistics.median(samples) < 1000
""",
    "a ratio of two durations": """
import time
def test():
    a = time.monotonic()
    work()
    direct = time.monotonic() - a
    b = time.monotonic()
    work()
    wall = time.monotonic() - b
    assert wall < 4 * direct
""",
}

PASSES = {
    "readings compared, no duration": """
import time
def test():
    before = time.time_ns() // 1_000_000
    value = work()
    after = time.time_ns() // 1_000_000
    assert before <= value.created_at <= after
""",
    "a duration printed, not asserted": """
import time
def test():
    started = time.monotonic()
    result = work()
    print(time.monotonic() - started)
    assert result == 3
""",
    "the typed timeout error of a helper that also times": """
import time
async def timed():
    started = time.monotonic()
    error = await work()
    return error, time.monotonic() - started
async def test():
    error, _ = await timed()
    assert isinstance(error, TimeoutError)
""",
    "a fake clock's arithmetic": """
def test(clock):
    monotonic, advance = clock(100.0)
    advance(5)
    assert metrics.snapshot()["uptime"] == 5
""",
}


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_the_scan_catches(name: str) -> None:
    source = CAUGHT[name]
    lines = timed_assertions(source)
    assert len(lines) == 1, (name, lines)
    assert source.splitlines()[lines[0] - 1].strip().startswith("assert"), name


@pytest.mark.parametrize("name", sorted(PASSES))
def test_the_scan_passes(name: str) -> None:
    assert timed_assertions(PASSES[name]) == [], name
