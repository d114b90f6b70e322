"""A protocol package never imports another protocol package (issue 22).

What two protocols share (Google's error shapes and thinking rows, OpenAI's error body, the
one-body embedding machine) lives in a shared module of ``adapters`` (``adapters._google``,
``adapters._openai``, ``adapters._embedding``) that both import. This scans every module of
every protocol package under ``adapters/`` (found by walking: a package whose ``PROTOCOL`` is a
``WireProtocol``) and of the test suite's toy protocol, statically with ``ast``, and fails on
an import, at any depth (a function's own imports included), of a protocol package other than
the module's own.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from test_protocol_purity import protocol_packages

import adapters

ROOT = Path(adapters.__file__).parent.parent


def protocol_package_names() -> dict[str, Path]:
    """Dotted name -> folder of every protocol package: the library's and the toy's."""
    found = {
        f"adapters.{folder.name}": folder for _protocol, folder in protocol_packages()
    }
    toy = importlib.import_module("tests.toy_protocol")
    found["tests.toy_protocol"] = Path(toy.__file__ or "").parent
    return found


def imported_modules(source: str, package: str) -> list[tuple[int, str]]:
    """(line, dotted name) of every module ``source`` imports, relative imports resolved
    against ``package`` (the dotted package of the module scanned); for ``from X import a,
    b`` both ``X`` and ``X.a``, ``X.b`` (``a`` may be a module)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def foreign_imports(source: str, package: str, protocols: set[str]) -> list[tuple[int, str]]:
    """(line, name) of each import in ``source`` of a protocol package other than
    ``package``, or of a module inside one."""
    return [
        (line, name)
        for line, name in imported_modules(source, package)
        for other in protocols
        if other != package and (name == other or name.startswith(f"{other}."))
    ]


def test_no_protocol_package_imports_another() -> None:
    packages = protocol_package_names()
    assert len(packages) >= 9  # eight built-in protocols and the toy
    hits = []
    for package, folder in packages.items():
        for path in sorted(folder.rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            for line, name in foreign_imports(source, package, set(packages)):
                hits.append(f"{path.relative_to(ROOT)}:{line}: imports {name}")
    assert hits == [], (
        "protocol packages importing another protocol package (move what they share into a "
        "shared module of adapters):\n" + "\n".join(hits)
    )


def test_the_scan_finds_what_it_looks_for() -> None:
    protocols = {"adapters.openai_chat", "adapters.google_genai", "adapters.openai_embedding"}
    code = (
        "from ..openai_chat.simulate import error_body\n"
        "from .. import google_genai\n"
        "import adapters.openai_embedding.machine\n"
        "from adapters._google.shapes import ERROR_SHAPE\n"
        "from . import simulate\n"
        "from .._openai import error_body\n"
        "def late():\n"
        "    from adapters.google_genai import shapes\n"
    )
    hits = foreign_imports(code, "adapters.openai_responses", protocols)
    assert hits == [
        (1, "adapters.openai_chat.simulate"),
        (1, "adapters.openai_chat.simulate.error_body"),
        (2, "adapters.google_genai"),
        (3, "adapters.openai_embedding.machine"),
        (8, "adapters.google_genai"),
        (8, "adapters.google_genai.shapes"),
    ]
    own = "from .machine import X\nfrom adapters.openai_chat import profiles\n"
    assert foreign_imports(own, "adapters.openai_chat", protocols) == []

