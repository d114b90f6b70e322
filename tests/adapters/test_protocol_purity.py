"""Machines, builders and renderers never compare client names (08 D63).

Per-client differences are fields of the protocol's profile, read from the ``profile``
argument. This scans the ``machine.py``, ``request.py`` and ``render.py`` of every protocol
package under ``adapters/`` (found by walking, not listed) and fails on any string constant
equal to a client type name or alias of ``adapters.CLIENTS`` (case-insensitively) other than
the protocol's own name.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import adapters

SCANNED = ("machine.py", "request.py", "render.py")


def client_names() -> set[str]:
    """Every client type name and alias, lower-cased."""
    return {
        name.lower()
        for spec in adapters.CLIENTS.values()
        for name in (spec.client_type, *spec.aliases)
    }


def protocol_packages() -> list[tuple[str, Path]]:
    """(protocol name, package folder) of every package under ``adapters/`` with a record."""
    found = []
    for module in pkgutil.iter_modules(adapters.__path__, "adapters."):
        if not module.ispkg:
            continue
        package = importlib.import_module(module.name)
        record = getattr(package, "PROTOCOL", None)
        if isinstance(record, adapters.WireProtocol):
            found.append((record.name, Path(package.__file__ or "").parent))
    return found


def client_literals(source: str, names: set[str], own: str) -> list[tuple[int, str]]:
    """(line, text) of every string constant of ``source`` that names a client other than
    ``own``."""
    return [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.lower() in names
        and node.value.lower() != own.lower()
    ]


def test_no_machine_builder_or_renderer_names_a_client() -> None:
    names = client_names()
    packages = protocol_packages()
    assert len(packages) >= 3
    hits = [
        f"{path.relative_to(Path(adapters.__file__).parent.parent)}:{line}: {text!r}"
        for protocol, folder in packages
        for path in (folder / name for name in SCANNED)
        if path.is_file()
        for line, text in client_literals(path.read_text(encoding="utf-8"), names, protocol)
    ]
    assert hits == [], "client names in protocol code (make them profile fields):\n" + "\n".join(
        hits
    )


def test_the_scan_finds_what_it_looks_for() -> None:
    names = {"moonshot", "openai-chat", "openai"}
    code = 'if client == "moonshot" or client in ("OpenAI",):\n    x = "openai-chat"\n'
    assert client_literals(code, names, "openai-chat") == [(1, "moonshot"), (1, "OpenAI")]
    assert client_literals('"""moonshot is fine in a sentence."""', names, "x") == []
