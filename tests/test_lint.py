"""The static checks run with the suite, so CI runs them: ``mypy`` (strict, on the files
pyproject's ``[tool.mypy]`` names) and ``ruff check .``. Each test fails with the tool's output
and is skipped, saying why, when the tool is not installed."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(module: str, *args: str) -> None:
    """Run ``python -m <module> <args>`` in the project root; fail with its output."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed in this environment (pip install {module})")
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"{module} {' '.join(args)} failed:\n{done.stdout}{done.stderr}", pytrace=False)


def test_mypy_strict() -> None:
    _run("mypy")


def test_ruff_check() -> None:
    _run("ruff", "check", ".")
