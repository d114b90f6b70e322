"""The client library never imports the applications beside it (issue 22; docs/architecture.md,
"Applications beside the library").

``mmsp_io`` is the client library; its sub-packages ``server`` (the MMSP gateway), ``simulator``
(the provider simulator), ``traces`` (the trace page), ``playground`` (the chat page) and
``cli`` (the command), the h11 server core ``httpserver`` they share and ``__main__`` are
applications that use it. Every
other module of ``mmsp_io``, and the pure packages ``mmsp_core`` and ``adapters`` below it, is
library. The static check parses every module with ``ast`` and builds the import graph:
``import`` and ``from ... import`` statements, absolute and relative, at module level or inside
a function or an ``if TYPE_CHECKING:`` block, and a module named whole in a string (the lazy
table of ``mmsp_io/__init__.py``, an ``importlib.import_module`` argument). Importing a module
runs its packages' ``__init__`` too, so an import reaches every package above its target. A
library module fails the check when the graph leads it to an application module, directly or
through other library modules. The runtime check imports ``mmsp_io`` in a fresh interpreter and
reads ``sys.modules``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: The packages whose modules make the graph.
PACKAGES = ("mmsp_core", "adapters", "mmsp_io")
#: The application modules and packages; every other module of ``PACKAGES`` is library.
APPLICATIONS = (
    "mmsp_io.server",
    "mmsp_io.simulator",
    "mmsp_io.traces",
    "mmsp_io.playground",
    "mmsp_io.cli",
    "mmsp_io.httpserver",
    "mmsp_io.__main__",
    "mmsp_io.pytest_plugin",
)


def is_application(module: str) -> bool:
    """Whether ``module`` is one of ``APPLICATIONS`` or inside one of them."""
    return any(module == app or module.startswith(app + ".") for app in APPLICATIONS)


def modules_under(root: Path) -> dict[str, Path]:
    """Every module of ``PACKAGES`` found under ``root``, by dotted name (a package by its
    ``__init__.py``)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _with_packages(target: str) -> list[str]:
    """``target`` and every package above it: importing it runs each of their ``__init__``."""
    parts = target.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts) + 1)]


def imported_by(name: str, path: Path) -> set[str]:
    """The dotted names the module ``name`` at ``path`` imports or names whole in a string,
    relative imports resolved; a ``from X import y`` counts ``X`` and ``X.y`` (``y`` may be a
    module). Names that are no module are filtered out by the caller."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            targets.add(source)
            targets.update(f"{source}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            targets.add(node.value)
    return {package for target in targets for package in _with_packages(target)}


def import_graph(root: Path) -> dict[str, set[str]]:
    """For every module under ``root``, the modules under ``root`` it imports."""
    modules = modules_under(root)
    return {name: imported_by(name, path) & modules.keys() - {name}
            for name, path in modules.items()}


def _chain(graph: Mapping[str, Iterable[str]], start: str) -> list[str] | None:
    """The shortest import chain from the library module ``start`` to an application module
    through library modules only, or ``None`` when there is none."""
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for module in frontier:
            for target in sorted(graph[module]):
                if target in paths:
                    continue
                paths[target] = [*paths[module], target]
                if is_application(target):
                    return paths[target]
                following.append(target)
        frontier = following
    return None


def layer_violations(root: Path) -> list[str]:
    """Every library module under ``root`` that reaches an application module, each as its
    import chain (``a -> b -> app``)."""
    graph = import_graph(root)
    chains = (_chain(graph, module) for module in sorted(graph) if not is_application(module))
    return [" -> ".join(chain) for chain in chains if chain is not None]


def test_the_library_imports_no_application() -> None:
    assert layer_violations(ROOT) == []


def test_the_graph_sees_the_applications_using_the_library() -> None:
    # The check is not vacuous: the tree's real edges are in the graph, both ways they are
    # written (relative and absolute), and every application package is found.
    graph = import_graph(ROOT)
    assert "mmsp_io.httpserver" in graph["mmsp_io.simulator.serving"]  # from .. import
    assert "mmsp_io.client" in graph["mmsp_io.cli.demo"]  # from ..client import
    assert "mmsp_io.cli" in graph["mmsp_io.__main__"]  # from mmsp_io.cli import
    assert "mmsp_io.client" in graph["mmsp_io"]  # the lazy table's strings
    assert {"mmsp_io.server", "mmsp_io.simulator", "mmsp_io.traces", "mmsp_io.cli"} <= graph.keys()


#: A library module ``mmsp_io/client.py`` importing an application, each way it can be written.
BAD_IMPORTS = {
    "relative from": "from .server import Gateway\n",
    "relative submodule": "from . import simulator\n",
    "relative deep": "from .server.config import load_config\n",
    "absolute": "import mmsp_io.traces\n",
    "absolute from": "from mmsp_io.cli import main\n",
    "absolute submodule": "from mmsp_io import httpserver\n",
    "in a function": "def run() -> None:\n    from .simulator import Simulator\n",
    "type checking": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                     "    from mmsp_io.server import Gateway\n",
    "by name": "import importlib\nimportlib.import_module('mmsp_io.simulator')\n",
}


def _tree(root: Path, files: Mapping[str, str]) -> Path:
    """A package tree under ``root``: the applications and a few library modules, empty but
    for ``files`` (path: source); the applications import the library, as they may."""
    sources = {
        "mmsp_core/__init__.py": "",
        "adapters/__init__.py": "from mmsp_core import *\n",
        "mmsp_io/__init__.py": "from .abort import AbortSignal\n",
        "mmsp_io/abort.py": "",
        "mmsp_io/client.py": "from . import abort\n",
        "mmsp_io/httpserver.py": "",
        "mmsp_io/__main__.py": "from mmsp_io.cli import main\n",
        "mmsp_io/cli/__init__.py": "from ..client import AutoLLMClient\nfrom .. import server\n",
        "mmsp_io/server/__init__.py": "from .config import load_config\n",
        "mmsp_io/server/config.py": "from ..httpserver import Request\nimport mmsp_io.client\n",
        "mmsp_io/simulator/__init__.py": "from .. import httpserver\nimport adapters\n",
        "mmsp_io/traces/__init__.py": "from mmsp_io import httpserver, tracer\n",
        "mmsp_io/tracer.py": "",
        **files,
    }
    for relative, source in sources.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return root


def test_the_checker_passes_applications_that_use_the_library(tmp_path: Path) -> None:
    assert layer_violations(_tree(tmp_path, {})) == []


@pytest.mark.parametrize("source", BAD_IMPORTS.values(), ids=BAD_IMPORTS.keys())
def test_the_checker_catches_a_library_module_importing_an_application(
    tmp_path: Path, source: str
) -> None:
    violations = layer_violations(_tree(tmp_path, {"mmsp_io/client.py": source}))
    assert violations
    assert violations[0].startswith("mmsp_io.client -> mmsp_io.")


def test_the_checker_catches_an_application_reached_through_library_modules(
    tmp_path: Path,
) -> None:
    # The pure package imports the library's tracer, which imports the simulator.
    files = {"adapters/__init__.py": "from mmsp_io.tracer import write\n",
             "mmsp_io/tracer.py": "from .simulator import Simulator\n"}
    violations = layer_violations(_tree(tmp_path, files))
    assert "adapters -> mmsp_io.tracer -> mmsp_io.simulator" in violations
    assert "mmsp_io.tracer -> mmsp_io.simulator" in violations


def test_a_module_named_like_an_application_is_library() -> None:
    assert is_application("mmsp_io.server.handler")
    assert is_application("mmsp_io.cli")
    assert not is_application("mmsp_io.serverless")
    assert not is_application("mmsp_io.client")


_LOADED = """
import json, sys
{statement}
print(json.dumps(sorted(name for name in sys.modules if name.startswith("mmsp_io"))))
"""


@pytest.mark.parametrize(
    "statement",
    ["import mmsp_io", "from mmsp_io import AutoLLMClient",
     "from mmsp_io import AutoLLMClient, Timeouts, RemoteImages, open_stream\n"
     "import mmsp_io.tracer, mmsp_io.abort"],
)
def test_using_the_library_loads_no_application(statement: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _LOADED.format(statement=statement)],
        capture_output=True, text=True, check=True, cwd=ROOT, timeout=120,
    )
    loaded: list[str] = json.loads(done.stdout)
    assert "mmsp_io" in loaded
    assert [name for name in loaded if is_application(name)] == []
