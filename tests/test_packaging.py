"""The wheel ships the ``py.typed`` marker of all three packages, so users get the types (issue 8).

Without the marker, ``mypy --strict`` on a user's program says "module is installed, but missing
library stubs or py.typed marker" and treats every name of the package as ``Any``. The test
builds the wheel from a copy of the project's sources (so nothing is written into the
checkout), looks for the three markers inside it, then unpacks it as an installation would and
type-checks a small user program against it with ``mypy --strict``.

Building needs the build backend ``pyproject.toml`` names (setuptools 68 or later, and
wheel). When the running interpreter has both, they are used as they are; otherwise pip fetches
them into an isolated build environment from the configured package index, as the README's
``pip install .`` does. If neither works the test is skipped, saying why.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

#: One test worker runs the module: its tests share one wheel build (``wheel``).
pytestmark = pytest.mark.xdist_group("packaging")

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("mmsp_core", "adapters", "mmsp_io")
#: What a wheel build reads from the checkout.
SOURCES = ("pyproject.toml", "README.md", *PACKAGES)

USER_PROGRAM = """\
from adapters import build_request
from mmsp_core import UniMessage
from mmsp_io import AutoLLMClient, TextDone, UniConfig


def request_bytes() -> bytes:
    message = UniMessage(role="user", content_items=(TextDone(text="Hi"),))
    config = UniConfig(max_tokens=16)
    return build_request("openai-chat", "gpt-5.5", [message], config).body


def client_type(client: AutoLLMClient) -> str:
    return client.client_type
"""


def _has_backend() -> bool:
    """Whether setuptools >= 68 and wheel are importable here (a build needs no download)."""
    try:
        major = int(importlib.metadata.version("setuptools").split(".")[0])
        importlib.metadata.version("wheel")
    except importlib.metadata.PackageNotFoundError:
        return False
    return major >= 68


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built from a copy of its sources."""
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, source / name)
    out = tmp_path_factory.mktemp("wheel")
    isolation = ["--no-build-isolation"] if _has_backend() else []
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", *isolation,
         "--wheel-dir", str(out), str(source)],
        capture_output=True, text=True, timeout=600, check=False,
    )
    if done.returncode != 0:
        if not isolation and "Could not find a version that satisfies" in done.stderr:
            pytest.skip(
                "no build backend: setuptools>=68 and wheel are neither installed here nor "
                f"available from the package index:\n{done.stderr[-2000:]}"
            )
        pytest.fail(f"building the wheel failed:\n{done.stdout}{done.stderr}")
    (built,) = out.glob("*.whl")
    return built


def test_the_wheel_holds_the_three_py_typed_markers(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    for package in PACKAGES:
        assert f"{package}/py.typed" in names, f"{package}/py.typed is not in {wheel.name}"
        assert f"{package}/__init__.py" in names


def test_mypy_strict_reads_the_installed_packages_types(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    program = tmp_path / "program" / "user_program.py"
    program.parent.mkdir()
    program.write_text(USER_PROGRAM, encoding="utf-8")
    # The unpacked wheel is a directory on the interpreter's path, as site-packages is: mypy
    # then reads a package only when it carries the marker.
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("MYPYPATH", None)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", program.name],
        cwd=program.parent, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_ci_pins_every_runtime_dependency_at_its_declared_floor() -> None:
    """``.ci/floors.py`` gives ``.ci/run``'s floor step one pin per runtime dependency, at the
    version ``pyproject.toml`` declares as its minimum (08 D80); h11 is at least 0.16 (a
    5,000-digit Content-Length was a bare ValueError before) and httpx is bounded above (the
    transport reads its response objects)."""
    import tomllib

    done = subprocess.run([sys.executable, str(ROOT / ".ci" / "floors.py")],
                          capture_output=True, text=True, check=True)
    pins = dict(line.split("==") for line in done.stdout.splitlines())
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert sorted(pins) == sorted({"attrs", "anyio", "httpx", "h11", "mypy_extensions"})
    assert len(declared) == len(pins)
    for requirement in declared:
        name = requirement.split(">=")[0].strip()
        assert f">={pins[name]}" in requirement.replace(" ", ""), requirement
    assert tuple(int(part) for part in pins["h11"].split(".")) >= (0, 16)
    assert any(r.startswith("httpx") and ",<" in r.replace(" ", "") for r in declared)


def test_ci_floors_run_installs_the_test_tools_but_the_sdks_that_need_newer_floors() -> None:
    """The floors step installs the test extra less the official SDKs, whose releases demand an
    anyio newer than the floor (openai 3.60 needs anyio 4.10; pip then refused the whole install);
    every other test requirement is kept as declared."""
    import tomllib

    done = subprocess.run([sys.executable, str(ROOT / ".ci" / "floors.py"), "--test-tools"],
                          capture_output=True, text=True, check=True)
    tools = done.stdout.splitlines()
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["test"]
    assert not [t for t in tools if t.startswith(("openai", "anthropic"))]
    assert tools == [r for r in declared if not r.startswith(("openai", "anthropic"))]
    assert any(t.startswith("pytest") for t in tools)
