"""The README and the user guide show only code that type-checks and runs (issue 8).

Every ``python`` code block of ``README.md`` and ``docs/guide.md`` is read from the file itself
and checked as a user's program: ``mypy --strict`` over all of them at once, then each block is
run in a fresh interpreter with the provider keys and base URLs of the environment pointed at
the provider simulator (``mmsp_io.simulator.Simulator``), so an example that talks to "Claude"
or "GPT" talks to the simulator instead and must finish with exit status 0. A block that cannot
run there says so in an HTML comment on the line before its fence,
``<!-- not run: <reason> -->``; it is still type-checked.

The README must also start with exactly its two set-up commands, and its benchmark command
must work as written (run here with a small count so the suite stays fast).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import anyio
import pytest

from mmsp_io.simulator import Simulator

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide.md"
DOCUMENTS = (README, GUIDE)

#: The two commands the README opens with; the first one a new user copies.
SETUP_COMMANDS = (
    "python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/python -m mmsp_io demo",
    "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/python -m pytest",
)
#: Seconds one example may take against the simulator.
RUN_SECONDS = 60
_NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>.+?)\s*-->")


class Block(NamedTuple):
    """One ``python`` code block of a document."""

    document: Path
    line: int
    code: str
    #: Why it is not run against the simulator; ``None``: it is run.
    not_run: str | None

    @property
    def name(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"

    @property
    def module(self) -> str:
        return f"{self.document.stem}_line_{self.line}"


def _blocks(document: Path) -> Iterator[Block]:
    """Every fenced ``python`` block of ``document``, with the line its code starts on."""
    lines = document.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        if lines[index].strip() == "```python":
            start = index + 1
            end = start
            while lines[end].strip() != "```":
                end += 1
            marker = _NOT_RUN.search(lines[index - 1]) if index else None
            yield Block(
                document,
                start + 1,
                "\n".join(lines[start:end]) + "\n",
                marker.group("reason") if marker else None,
            )
            index = end
        index += 1


BLOCKS = [block for document in DOCUMENTS for block in _blocks(document)]


# --------------------------------------------------------------------------------------------
# the document itself
# --------------------------------------------------------------------------------------------


def test_readme_starts_with_the_two_setup_commands() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert lines[:5] == ["# mmsp-sansio", "", "```sh", *SETUP_COMMANDS], lines[:5]
    assert lines[5] == "```"


def test_every_document_has_python_examples() -> None:
    for document in DOCUMENTS:
        assert any(block.document == document for block in BLOCKS), document


def test_readme_links_the_guide_and_the_configuration_page() -> None:
    text = README.read_text(encoding="utf-8")
    assert "](docs/guide.md)" in text
    assert "](docs/configuration.md)" in text


def test_readme_client_example_closes_its_client() -> None:
    clients = [block for block in BLOCKS
               if block.document == README and "AutoLLMClient(" in block.code]
    assert clients, "the README shows no AutoLLMClient example"
    for block in clients:
        assert re.search(r"async with AutoLLMClient\(", block.code), block.name
        assert not re.search(r"=\s*AutoLLMClient\(", block.code), block.name


def test_readme_benchmark_command_works_as_written() -> None:
    """The benchmark command runs with the interpreter the set-up commands create."""
    text = README.read_text(encoding="utf-8")
    commands = [line for line in re.findall(r"```sh\n(.*?)```", text, flags=re.S)
                for line in line.splitlines() if "benchmarks/" in line]
    assert commands, "the README shows no benchmark command"
    for command in commands:
        argv = shlex.split(command)
        assert argv[0] == ".venv/bin/python", f"{command!r}: run it with the set-up's venv"
        assert (ROOT / argv[1]).is_file(), command
        # As written but with a small count, from a clean environment: the package must come
        # from the installation, not from the checkout's directory.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        done = subprocess.run(
            [sys.executable, argv[1], "200"], cwd=ROOT, env=env, capture_output=True,
            text=True, timeout=120, check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "events/s" in done.stdout


def _cli_commands() -> Iterator[list[str]]:
    """Every ``mmsp-sansio`` command line of the guide's ``sh`` blocks, continuations joined."""
    text = GUIDE.read_text(encoding="utf-8")
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            argv = shlex.split(line, comments=True)
            if argv and argv[0] == ".venv/bin/mmsp-sansio":
                yield argv


def test_the_guide_uses_only_options_the_cli_has() -> None:
    """Each option of each guide command is in that command's ``--help``."""
    commands = list(_cli_commands())
    assert commands, "the guide shows no mmsp-sansio command"
    helps = {
        command: subprocess.run(
            [sys.executable, "-m", "mmsp_io", command, "--help"],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout
        for command in {argv[1] for argv in commands}
    }
    missing = [f"{argv[1]} {option}" for argv in commands for option in argv[2:]
               if option.startswith("--") and option not in helps[argv[1]]]
    assert missing == [], f"options the CLI does not have: {missing}"


# --------------------------------------------------------------------------------------------
# every example type-checks and runs
# --------------------------------------------------------------------------------------------


def test_every_example_type_checks(tmp_path: Path) -> None:
    """``mypy --strict`` over every example at once (a cold mypy run costs seconds, so there is
    one): no example has an error, and mypy reports none outside them."""
    for block in BLOCKS:
        (tmp_path / f"{block.module}.py").write_text(block.code, encoding="utf-8")
    # The official SDKs a front-door example drives are not followed (their types are Any):
    # reading them took mypy three times as long as everything else; what is checked is the
    # examples' use of this library.
    (tmp_path / "mypy.ini").write_text(
        "[mypy]\nstrict = True\n\n"
        "[mypy-openai,openai.*,anthropic,anthropic.*]\nfollow_imports = skip\n",
        encoding="utf-8")
    # The packages are read from the checkout (an editable install is an import hook mypy
    # cannot follow); tests/test_packaging.py checks the installed wheel is typed.
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--no-error-summary",
         *(f"{block.module}.py" for block in BLOCKS)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    names = {block.module: block.name for block in BLOCKS}
    errors = done.stdout.splitlines()
    outside = [line for line in errors if line.split(".py:", 1)[0] not in names]
    assert outside == [], f"mypy failed outside the examples:\n{done.stdout}{done.stderr}"
    assert errors == [], "\n".join(
        f"{names[line.split('.py:', 1)[0]]}: {line}" for line in errors
    )


def _one_loop_each(blocks: list[Block]) -> list[object]:
    """``(anyio_backend, block)`` pairs, the loops alternating: the example runs in its own
    interpreter on the loop it chooses, so the test's loop only hosts the simulator; both
    loops still host it."""
    loops = ("asyncio", "trio")
    return [pytest.param(loops[index % 2], block, id=f"{loops[index % 2]}-{block.name}")
            for index, block in enumerate(blocks)]


@pytest.mark.anyio
@pytest.mark.parametrize(("anyio_backend", "block"), _one_loop_each(BLOCKS))
async def test_example_runs_against_the_simulator(block: Block, tmp_path: Path) -> None:
    if block.not_run is not None:
        pytest.skip(f"{block.name} is not run: {block.not_run}")
    script = tmp_path / f"{block.module}.py"
    script.write_text(block.code, encoding="utf-8")
    async with Simulator.running() as sim:
        env = {k: v for k, v in os.environ.items()
               if k not in ("CLIENT_TYPE", "MMSP_DEBUG", "PYTHONPATH")}
        env.update(
            ANTHROPIC_API_KEY=sim.api_key,
            ANTHROPIC_BASE_URL=sim.base_url("ant-messages"),
            OPENAI_API_KEY=sim.api_key,
            OPENAI_BASE_URL=sim.base_url("openai-responses"),
            MMSP_CACHE_DIR=str(tmp_path / "cache"),
        )
        with anyio.fail_after(RUN_SECONDS):
            done = await anyio.run_process(
                [sys.executable, str(script)], cwd=tmp_path, env=env, check=False
            )
    assert done.returncode == 0, (
        f"{block.name} exited {done.returncode}:\n{done.stdout.decode()}{done.stderr.decode()}"
    )
