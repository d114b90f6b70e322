"""Code read in one pass (issue 22): no module over 600 lines, no function over 60, and no
module that reaches into another top-level package's private modules or names.

The checks parse the sources with ``ast`` and import nothing. A function's length counts from
its ``def`` line to its last line (decorators not included); methods and nested functions are
functions. The import check covers the three packages of the library (``adapters``,
``mmsp_core``, ``mmsp_io``): a module of one may import from another only names without a
leading underscore, from modules whose dotted path has no part with one (dunder names such as
``__main__`` are not private). Within its own package a module imports what it likes; tests
and benchmarks are exempt.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: The packages whose sizes are checked.
SIZED = ("adapters", "mmsp_core", "mmsp_io", "benchmarks")
#: The top-level packages of the library, which keep their private parts to themselves.
FLOORS = ("adapters", "mmsp_core", "mmsp_io")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60


def _sources(root: Path, packages: tuple[str, ...]) -> Iterator[tuple[Path, str]]:
    """Every ``.py`` file of ``packages`` under ``root``, sorted, with its text."""
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            yield path, path.read_text(encoding="utf-8")


def size_offenders(root: Path, packages: tuple[str, ...] = SIZED) -> list[str]:
    """Each module over ``MAX_MODULE_LINES`` lines and each function over
    ``MAX_FUNCTION_LINES`` under ``root``, as ``path: N lines`` or ``path:line name: N
    lines``."""
    found: list[str] = []
    for path, source in _sources(root, packages):
        where = path.relative_to(root).as_posix()
        lines = len(source.splitlines())
        if lines > MAX_MODULE_LINES:
            found.append(f"{where}: {lines} lines")
        for node in ast.walk(ast.parse(source, filename=where)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{where}:{node.lineno} {node.name}: {length} lines")
    return found


def _private(name: str) -> bool:
    """Whether one part of a dotted name is private: a leading underscore, not a dunder."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(root: Path) -> list[str]:
    """Each import under ``root`` of a private module or name of another of ``FLOORS``, as
    ``path:line module name``."""
    found: list[str] = []
    for path, source in _sources(root, FLOORS):
        where = path.relative_to(root).as_posix()
        own = path.relative_to(root).parts[0]
        for node in ast.walk(ast.parse(source, filename=where)):
            if isinstance(node, ast.Import):
                imported = [(alias.name, "") for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported = [(node.module, alias.name) for alias in node.names]
            else:
                continue
            for module, name in imported:
                floor, *parts = module.split(".")
                if floor in FLOORS and floor != own and any(map(_private, [*parts, name])):
                    found.append(f"{where}:{node.lineno} {module} {name}".rstrip())
    return found


def test_no_module_or_function_is_too_long() -> None:
    offenders = size_offenders(ROOT)
    assert offenders == [], "over the limits of issue 22:\n" + "\n".join(offenders)


def test_no_package_imports_another_ones_private_parts() -> None:
    found = private_imports(ROOT)
    assert found == [], "private modules or names of another package:\n" + "\n".join(found)


def _write(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (path under ``root``: source) and return ``root``."""
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return root


def _body(lines: int, indent: int) -> str:
    """``lines`` statements indented by ``indent`` spaces."""
    return "".join(f"{' ' * indent}x{i} = {i}\n" for i in range(lines))


def test_the_size_check_names_each_long_module_and_function(tmp_path: Path) -> None:
    root = _write(tmp_path, {
        # Exactly the limit, def line included: allowed.
        "mmsp_core/fine.py": "def at_limit():\n" + _body(MAX_FUNCTION_LINES - 1, 4),
        # A decorated method one line over: the decorator does not count.
        "adapters/methods.py": "class C:\n    @staticmethod\n    def longer():\n"
                               + _body(MAX_FUNCTION_LINES, 8),
        # A nested function over the limit, and so the function holding it.
        "mmsp_io/nested.py": "def outer():\n    def inner():\n" + _body(MAX_FUNCTION_LINES, 8),
        "benchmarks/big.py": _body(MAX_MODULE_LINES + 1, 0),
        "benchmarks/limit.py": _body(MAX_MODULE_LINES, 0),
    })
    assert size_offenders(root) == [
        "adapters/methods.py:3 longer: 61 lines",
        "mmsp_io/nested.py:1 outer: 62 lines",
        "mmsp_io/nested.py:2 inner: 61 lines",
        "benchmarks/big.py: 601 lines",
    ]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from mmsp_core._lazy import on_first_use\n", "mmsp_core._lazy on_first_use"),
        ("from adapters._json import BadField\n", "adapters._json BadField"),
        ("from adapters.mmsp._state import State\n", "adapters.mmsp._state State"),
        ("from adapters import _registry\n", "adapters _registry"),
        ("from mmsp_core.sse import _split_field\n", "mmsp_core.sse _split_field"),
        ("import mmsp_core._wire_read\n", "mmsp_core._wire_read"),
        ("def f():\n    from adapters._preflight import MAX_DEPTH\n",
         "adapters._preflight MAX_DEPTH"),
    ],
)
def test_the_import_check_names_each_private_import(
    tmp_path: Path, source: str, expected: str
) -> None:
    root = _write(tmp_path, {"mmsp_io/user.py": source})
    line = source.count("\n")
    assert private_imports(root) == [f"mmsp_io/user.py:{line} {expected}"]


def test_the_import_check_allows_public_and_own_private_parts(tmp_path: Path) -> None:
    root = _write(tmp_path, {
        "mmsp_io/user.py": "from mmsp_core.lazy import on_first_use\n"
                           "from mmsp_core.wire import to_wire\nimport adapters\n"
                           "from mmsp_io._transport import Transport\nfrom . import _status\n"
                           "from mmsp_io.__main__ import main\nimport json\n",
        "adapters/_plan.py": "from adapters._json import loads_object\n"
                             "from mmsp_core.wire import config_from_wire\n",
    })
    assert private_imports(root) == []
