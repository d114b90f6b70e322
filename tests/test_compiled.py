"""The compiled build (``setup.py`` with ``MMSP_COMPILE=1``) behaves as the pure one.

A copy of the tree is compiled with mypyc, then the property tests of the parser and adapter
suites (hypothesis: every decoder, finalizer and protocol machine on generated input) run on the
copy in a fresh process, which must import the compiled modules, in one JSON mode: the JSON
backend is not what the build changes, and the example-based tests walk the same code the
properties do. They draw the ``compiled`` profile's few examples: the pure build's run draws
the full count of the same properties, and what differs here is the build, not the input. The
test skips, saying why, where no C compiler, Python headers or mypyc are at hand.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: What the copy needs: the packages, their tests and the build files.
TREE = ("mmsp_core", "adapters", "mmsp_io", "benchmarks", "tests", "setup.py", "pyproject.toml",
        "README.md")
#: The suites that exercise every module the build compiles; their property tests run.
SUITES = ("tests/core", "tests/adapters", "tests/test_toy_protocol.py")

#: The longest test of the suite: started first (tests/conftest.py).
pytestmark = pytest.mark.first_please


def _why_not_buildable() -> str | None:
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler})"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file():
        return "no Python headers (Python.h)"
    try:
        import mypyc.build  # noqa: F401
    except ImportError:
        return "mypyc is not installed (it comes with mypy, in the test extra)"
    return None


def test_the_compiled_build_passes_the_parser_and_adapter_properties(tmp_path: Path) -> None:
    why = _why_not_buildable()
    if why is not None:
        pytest.skip(f"the compiled build cannot be made here: {why}")
    for name in TREE:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.so", ".hypothesis"))
        else:
            shutil.copy2(source, tmp_path / name)
    # At the C compiler's -O0: mypyc's translation, what the test checks, is the same at every
    # level, and the build takes half the time.
    env = {**os.environ, "MMSP_COMPILE": "1", "MMSP_COMPILE_OPT_LEVEL": "0",
           "PYTHONPATH": str(tmp_path),
           "MMSP_TEST_JSON_MODE": "json", "HYPOTHESIS_PROFILE": "compiled"}
    build = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert build.returncode == 0, build.stderr[-3000:]
    probe = ("import mmsp_core.sse, mmsp_core.items, adapters._table, "
             "adapters.openai_chat.machine as m; "
             "print(*(x.__file__ for x in (mmsp_core.sse, mmsp_core.items, adapters._table, m)))")
    where = subprocess.run([sys.executable, "-P", "-c", probe], cwd=tmp_path, env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    compiled = tuple(EXTENSION_SUFFIXES)
    assert all(path.startswith(str(tmp_path)) and path.endswith(compiled) for path in where), where
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0",
         "-m", "hypothesis", *SUITES],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )
    assert run.returncode == 0, run.stdout[-5000:]
    assert re.search(r"\b[1-9]\d* passed", run.stdout), run.stdout[-500:]  # no empty selection
