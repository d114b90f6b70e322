"""The pure packages stay pure: no I/O library loaded, no clock, randomness, environment or
files.

``mmsp_core`` and ``adapters`` must not import httpx, anyio, asyncio, trio or h11 (the project
rules, 08 D1, D8), and must not read the clock (09: the clock is injected), draw random
numbers (the same input writes the same bytes: the gateway makes the response ids), read the
environment or files.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PURE = ("mmsp_core", "adapters")
IO_LIBRARIES = ("httpx", "anyio", "asyncio", "trio", "h11")

_IMPORT_ALL = """
import importlib, json, pkgutil, sys

import adapters
import mmsp_core
import mmsp_core.testing

imported = ["mmsp_core", "mmsp_core.testing", "adapters"]
failed = {}
for module in pkgutil.walk_packages(adapters.__path__, "adapters."):
    try:
        importlib.import_module(module.name)
    except Exception as exc:
        failed[module.name] = repr(exc)
    else:
        imported.append(module.name)
loaded = sorted({name.split(".")[0] for name in sys.modules} & set(sys.argv[1:]))
print(json.dumps({"imported": imported, "failed": failed, "loaded": loaded}))
"""


def test_importing_the_pure_packages_loads_no_io_library() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALL, *IO_LIBRARIES],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=120,
    )
    report = json.loads(done.stdout)
    assert report["failed"] == {}
    assert len(report["imported"]) > 3
    assert report["loaded"] == []


# Word-bounded, so "runtime." or "_open(" do not count.
FORBIDDEN = {
    "the os module": re.compile(r"\bimport os\b|\bfrom os\b"),
    "the clock": re.compile(r"\btime\.|\bimport time\b|\bfrom time\b"),
    "files": re.compile(r"\bopen\("),
    "datetime": re.compile(r"\bdatetime\b"),
}


def _sources() -> list[Path]:
    return sorted(p for package in PURE for p in (ROOT / package).rglob("*.py"))


def test_the_pure_packages_use_no_clock_environment_or_files() -> None:
    sources = _sources()
    assert any(p.name == "items.py" for p in sources)
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {what}: {line.strip()}"
        for path in sources
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for what, pattern in FORBIDDEN.items()
        if pattern.search(line)
    ]
    assert hits == []


#: Modules whose mere import in a pure package is an impurity: randomness, the clock, the
#: environment.
FORBIDDEN_MODULES = frozenset({"uuid", "random", "secrets", "time", "datetime", "os"})


def forbidden_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import in ``source`` of a module in ``FORBIDDEN_MODULES`` (or
    of one of its submodules), however it is spelled."""
    hits: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        hits.extend((node.lineno, name) for name in names
                    if name.split(".")[0] in FORBIDDEN_MODULES)
    return sorted(hits)


def test_the_pure_packages_import_no_randomness_clock_or_environment() -> None:
    hits = [
        f"{path.relative_to(ROOT)}:{line}: import {module}"
        for path in _sources()
        for line, module in forbidden_imports(path.read_text(encoding="utf-8"))
    ]
    assert hits == []


def test_the_import_scan_finds_what_it_looks_for() -> None:
    code = ("import json, uuid\nfrom random import choice\nif x:\n    import secrets as s\n"
            "from os.path import join\nfrom . import time\nimport timeit\n")
    assert forbidden_imports(code) == [(1, "uuid"), (2, "random"), (4, "secrets"),
                                       (5, "os.path")]


def test_the_forbidden_patterns_find_what_they_look_for() -> None:
    samples = {
        "the os module": "import os",
        "the clock": "now = time.time()",
        "files": "with open(path) as f:",
        "datetime": "from datetime import datetime",
    }
    for what, line in samples.items():
        assert FORBIDDEN[what].search(line), what
    assert not any(p.search("runtime.x = self._open(x)") for p in FORBIDDEN.values())
