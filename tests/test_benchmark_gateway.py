"""The gateway benchmark (``python -m benchmarks.gateway``) runs end to end on its smallest
configuration, prints and writes its two tables, and leaves no process behind, also when it
is stopped midway.

No timing is asserted (08 D80): the figures are the benchmark's output; only the tables'
shape is checked.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from benchmarks import gateway, server

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").is_file(),
                                reason="the benchmark reads CPU from /proc (Linux)")

SMALLEST = ["--burst-n", "6", "--short-n", "3", "--concurrency", "1", "2", "--samples", "2",
            "--burst-rounds", "1", "--no-litellm"]


def _harness(tmp_path: Path, argv: list[str]) -> subprocess.Popen[str]:
    """The benchmark in a process of its own, its temporary files under ``tmp_path``."""
    env = {**server.child_env(), "TMPDIR": str(tmp_path)}
    return subprocess.Popen([sys.executable, "-P", "-m", "benchmarks.gateway", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _stragglers(tmp_path: Path) -> list[str]:
    """The command lines of live processes that name a file under ``tmp_path``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if entry.name.isdigit() and str(tmp_path) in command:
            found.append(command)
    return found


def _rows(text: str, heading: str) -> list[list[str]]:
    """The body rows of the markdown table under ``heading``, as cells."""
    table = text.split(heading, 1)[1].split("\n\n", 2)[1]
    return [line.strip("|").split(" | ") for line in table.splitlines()[2:]]


def test_the_smallest_run_prints_and_writes_both_tables(tmp_path: Path) -> None:
    out = tmp_path / "results.md"
    harness = _harness(tmp_path, [*SMALLEST, "--out", str(out)])
    stdout, stderr = harness.communicate(timeout=120)
    assert harness.returncode == 0, stderr
    assert out.read_text().rstrip("\n") == stdout.rstrip("\n")
    burst = _rows(stdout, "### Burst")
    assert [row[0].strip() for row in burst] == [
        "direct `AutoLLMClient` (openai-chat)", "MMSP gateway (asyncio), `POST /v1/stream`",
        "MMSP gateway (asyncio), Chat Completions door"]
    assert all(len(row) == 5 and row[2].endswith("x") for row in burst)
    cells = _rows(stdout, "### Concurrent")
    assert [(row[0].strip(), row[1]) for row in cells] == [
        (relay, streams) for relay in ("direct `AutoLLMClient` (openai-chat)",
                                       "MMSP gateway (asyncio), `POST /v1/stream`",
                                       "MMSP gateway (asyncio), Chat Completions door")
        for streams in ("1", "2")]
    assert all(len(row) == 9 and row[8].strip() == "0" for row in cells)
    assert all(row[3].endswith(" ms") and row[5].endswith(" ms") for row in cells)
    assert [row[6] == "—" for row in cells] == [True, True, False, False, False, False]
    assert _stragglers(tmp_path) == []


def test_a_missing_litellm_is_a_row_saying_why(tmp_path: Path) -> None:
    argv = ["--burst-n", "6", "--short-n", "3", "--burst-rounds", "1", "--concurrency",
            "--no-doors", "--litellm", str(tmp_path / "absent"),
            "--out", str(tmp_path / "results.md")]
    harness = _harness(tmp_path, argv)
    stdout, _ = harness.communicate(timeout=120)
    assert harness.returncode == 1
    last = _rows(stdout, "### Burst")[-1]
    assert last[0] == " LiteLLM proxy"
    assert last[1].startswith("not measured: did not start")
    assert _stragglers(tmp_path) == []


def test_stopped_midway_it_stops_every_process_it_started(tmp_path: Path) -> None:
    harness = _harness(tmp_path, ["--burst-n", "6", "--short-n", "3", "--concurrency", "1",
                                  "--samples", "100000", "--no-litellm",
                                  "--out", str(tmp_path / "results.md")])
    assert harness.stderr is not None
    guard = threading.Timer(60, harness.kill)  # the line never came: the test ends anyway
    guard.start()
    try:
        for line in harness.stderr:  # the direct row's load: the upstream is running
            if "streaming" in line:
                break
        assert _stragglers(tmp_path) != []
        harness.send_signal(signal.SIGTERM)
        harness.wait(timeout=60)
    finally:
        guard.cancel()
        if harness.poll() is None:
            harness.kill()
            harness.wait()
    assert harness.returncode != 0
    assert _stragglers(tmp_path) == []


def test_process_cpu_counts_a_busy_child() -> None:
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        seen = 0.0
        for _ in range(200):
            seen = gateway.process_cpu(child.pid)
            if seen > 0:
                break
            time.sleep(0.05)
        assert seen > 0
        assert gateway.process_cpu(os.getpid()) >= seen
    finally:
        child.kill()
        child.wait()
