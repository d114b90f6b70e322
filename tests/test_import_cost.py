"""``import mmsp_io`` loads only what the values and errors need (issue 9).

What is deferred, and why, is docs/architecture.md "Import cost". Each check runs in a fresh
interpreter and reads ``sys.modules``: a statement about behaviour, never a timing.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Loaded on first use of the client or the protocols, never by ``import mmsp_io``.
DEFERRED = (
    "httpx",
    "httpcore",
    "h11",
    "email",
    "urllib.request",
    "http.client",
    "ssl",
    "orjson",
    "adapters",
    "mmsp_io.client",
    "mmsp_io.driver",
    "mmsp_core.pipeline",
    "mmsp_core.items",
    "mmsp_core.sse",
    "mmsp_core.grammar",
)

_LOADED = """
import json, sys
{statement}
print(json.dumps(sorted(name for name in sys.argv[1:] if name in sys.modules)))
"""


def _loaded(statement: str, names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` a fresh interpreter has loaded after running ``statement``."""
    done = subprocess.run(
        [sys.executable, "-c", _LOADED.format(statement=statement), *names],
        capture_output=True, text=True, check=True, cwd=ROOT, timeout=120,
    )
    loaded: list[str] = json.loads(done.stdout)
    return loaded


def test_import_mmsp_io_loads_neither_httpx_nor_the_protocols() -> None:
    assert _loaded("import mmsp_io", DEFERRED) == []


def test_the_values_and_errors_need_nothing_deferred() -> None:
    statement = ("from mmsp_io import UniMessage, TextDone, MMSPError, AbortSignal\n"
                 "UniMessage.user('Hi')")
    assert _loaded(statement, DEFERRED) == []


def test_import_adapters_leaves_the_suggestions_unloaded() -> None:
    assert _loaded("import adapters", ("difflib",)) == []


def test_orjson_is_imported_by_the_first_parse() -> None:
    statement = ("from mmsp_core import jsonlib\n"
                 "assert 'orjson' not in sys.modules\n"
                 "assert jsonlib.loads('[1]') == [1]")
    assert _loaded(statement, ("orjson",)) == (["orjson"] if _has("orjson") else [])


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@pytest.mark.parametrize(
    ("package", "name", "module"),
    [("mmsp_io", "AutoLLMClient", "mmsp_io.client"), ("mmsp_io", "Timeouts", "mmsp_io.driver"),
     ("mmsp_io", "open_stream", "mmsp_io.driver"),
     ("mmsp_io", "list_supported_models", "adapters"),
     ("mmsp_core", "StreamPipeline", "mmsp_core.pipeline"),
     ("mmsp_core", "END", "mmsp_core.pipeline"),
     ("mmsp_core", "SSEDecoder", "mmsp_core.sse"),
     ("mmsp_core", "StreamItems", "mmsp_core.items"),
     ("mmsp_core", "PassThrough", "mmsp_core.grammar")],
)
def test_a_deferred_name_loads_its_module_on_first_use(package: str, name: str,
                                                       module: str) -> None:
    statement = (f"import {package}\n"
                 f"assert {module!r} not in sys.modules\n"
                 f"assert '{name}' in dir({package})\n"
                 f"value = {package}.{name}\n"
                 f"import {module}\n"
                 f"assert value is {module}.{name}")
    assert module in _loaded(statement, (module,))


@pytest.mark.parametrize("package", ["mmsp_io", "mmsp_core"])
def test_star_import_gives_every_public_name(package: str) -> None:
    statement = (f"import {package}\n"
                 "namespace = {}\n"
                 f"exec('from {package} import *', namespace)\n"
                 f"missing = set({package}.__all__) - set(namespace)\n"
                 "assert not missing, missing")
    assert _loaded(statement, ()) == []


def test_an_unknown_name_is_an_attribute_error() -> None:
    import mmsp_core
    import mmsp_io

    with pytest.raises(AttributeError, match="'mmsp_io' has no attribute 'AutoLLMClinet'"):
        _ = mmsp_io.AutoLLMClinet
    with pytest.raises(AttributeError, match="'mmsp_core' has no attribute 'Pipeline'"):
        _ = mmsp_core.Pipeline
