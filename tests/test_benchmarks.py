"""The benchmark harness (``python -m benchmarks``) runs end to end on a tiny matrix, and its
consumers' checks catch a stream that is not the body: a wrong count, a wrong last event.

No timing is asserted: the numbers are the harness's output, not a property of the code.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import adapters
from benchmarks import bodies, consumers, run, server
from benchmarks.bodies import Body
from mmsp_core.pipeline import NEED_DATA

#: One test worker runs the module: its tests share the bodies and their server (``origin``).
pytestmark = pytest.mark.xdist_group("benchmarks")

N = 6


@pytest.fixture(scope="module")
def protocol() -> str:
    """The first registered protocol with an event stream."""
    return next(name for name, reason in bodies.streamed_protocols() if reason is None)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, protocol: str) -> tuple[Path, list[Body]]:
    directory = tmp_path_factory.mktemp("bodies")
    made, skipped = bodies.build(directory, [N], protocols=[protocol])
    assert skipped == []
    return directory, made


@pytest.fixture(scope="module")
def origin(built: tuple[Path, list[Body]]) -> Iterator[str]:
    with server.running(built[0]) as url:
        yield url


def test_every_body_carries_n_fragments_and_its_lines(built: tuple[Path, list[Body]]) -> None:
    _, made = built
    assert sorted(body.shape for body in made) == ["text", "tool"]
    for body in made:
        data = Path(body.path).read_bytes()
        assert body.length == len(data)
        assert b"".join(bodies.frames(data, "event")) == data
        assert b"".join(bodies.frames(data, "packed")) == data
        assert len(bodies.frames(data, "event")) == data.count(b"\n\n")
        assert body.data_lines == len(bodies.data_lines(data)) > N
        assert bodies.load(bodies.described(body)) == body


@pytest.mark.parametrize("chunking", bodies.CHUNKINGS)
@pytest.mark.parametrize(
    "consumer",
    ["floor", "transport", "lines", "pipeline", "client-asyncio", "client-trio", "memory"],
)
def test_each_consumer_reads_the_whole_body(
    built: tuple[Path, list[Body]], origin: str, consumer: str, chunking: str
) -> None:
    for body in built[1]:
        result = consumers.run(consumer, origin, body, chunking, 2)
        assert len(result["runs"]) == 2
        assert all(r["cpu"] >= 0 for r in result["runs"])
        if consumer != "memory":
            assert all(0 < r["first"] <= r["wall"] for r in result["runs"])


@pytest.mark.parametrize(
    "consumer", ["floor", "transport", "lines", "pipeline", "client-trio", "memory"]
)
def test_a_wrong_count_is_caught(
    built: tuple[Path, list[Body]], origin: str, consumer: str
) -> None:
    body = built[1][0]
    counts = "deltas" if consumer == "memory" else consumers.CONSUMERS[consumer].counts
    field = {"bytes": "length", "lines": "data_lines", "deltas": "n"}[counts]
    wrong = dataclasses.replace(body, **{field: getattr(body, field) + 1})
    with pytest.raises(consumers.ConsumptionError, match="counted"):
        consumers.run(consumer, origin, wrong, "event", 1)


def test_a_missing_stop_is_caught(built: tuple[Path, list[Body]], origin: str) -> None:
    body = built[1][0]
    with pytest.raises(consumers.ConsumptionError, match="not the stop"):
        consumers.verify("deltas", body, body.n, "delta")
    # The floor and aiter_lines know the end by the body's last bytes and last line.
    cut = dataclasses.replace(body, tail="00" * 8, last_data="{}")
    for consumer in ("floor", "transport", "lines"):
        with pytest.raises(consumers.ConsumptionError, match="not the stop"):
            consumers.run(consumer, origin, cut, "event", 1)


def test_the_first_content_arrives_with_the_event_the_floor_marks(
    built: tuple[Path, list[Body]],
) -> None:
    """The floor and ``aiter_lines`` mark their first event where the library can first hand
    out content: the bytes up to ``first_content_bytes`` carry a content delta, one SSE event
    fewer carries none."""
    _, made = built
    for body in made:
        data = Path(body.path).read_bytes()
        head = data[: body.first_content_bytes]
        assert head.endswith(b"\n\n")
        before = head[: head[:-2].rfind(b"\n\n") + 2] if b"\n\n" in head[:-2] else b""
        assert _content_in(body.protocol, head) and not _content_in(body.protocol, before)
        assert body.first_content_line == len(bodies.data_lines(head)) >= 1


def _content_in(protocol: str, head: bytes) -> int:
    """The content deltas a pipeline hands out from ``head`` before the end of the body."""
    pipeline = adapters.new_pipeline(protocol, clock=None)
    pipeline.receive_data(head)
    found = 0
    while (event := pipeline.next_event()) is not NEED_DATA:
        found += bodies.fragments(event)
    return found


def test_the_command_runs_a_tiny_matrix_in_fresh_processes(
    protocol: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "results.json"
    code = run.main([
        "--n", "4", "8", "--protocols", protocol, "--shapes", "text", "--chunkings", "event",
        "--runs", "1", "--consumers", "floor", "client-trio", "--no-peers", "--no-memory",
        "--streams", "3", "--stream-n", "4", "--import-samples", "1", "--first-samples", "2",
        "--first-rounds", "2", "--json", str(saved),
    ])
    out = capsys.readouterr().out
    assert code == 0, out
    results = json.loads(saved.read_text())
    assert sorted((row["consumer"], row["n"]) for row in results["rows"]) == [
        ("client-trio", 4), ("client-trio", 8), ("floor", 4), ("floor", 8)]
    assert all(row["error"] is None and len(row["runs"]) == 1 for row in results["rows"])
    # The first-event table's cell (text, smallest N) gets the extra first-content passes,
    # of two processes (rounds) each.
    assert sorted((row["n"], len(row["first"])) for row in results["rows"]) == [
        (4, 4), (4, 4), (8, 0), (8, 0)]
    assert all(0 < first < 10 for row in results["rows"] for first in row["first"])
    assert [row["consumer"] for row in results["concurrent"]] == [
        "concurrent-asyncio", "concurrent-trio"]
    assert all(row["error"] is None for row in results["concurrent"])
    assert {statement: len(times) for statement, times in results["import_seconds"].items()} == {
        "import mmsp_io": 1, "from mmsp_io import AutoLLMClient": 1}
    # Every table the issue asks for is printed, with ratios to the floor of the same run.
    for heading in ("N = 8, one HTTP chunk per SSE event", "First event", "Peak RSS",
                    "`import mmsp_io`", "Concurrent streams"):
        assert heading in out, heading
    assert "(1.0x)" in out


def test_a_consumer_reports_its_own_peak_rss_not_its_parents() -> None:
    """A process spawned by a large one must not inherit its peak: on Linux ``ru_maxrss``
    keeps the spawner's high-water mark across ``exec``, which made every consumer of a run
    report the harness's own peak."""
    grandchild = "from benchmarks.consumers import peak_rss_kib; print(peak_rss_kib())"
    child = (
        "import subprocess, sys\n"
        "ballast = bytearray(256 * 2**20)\n"
        "for at in range(0, len(ballast), 4096): ballast[at] = 1\n"
        f"print(subprocess.run([sys.executable, '-c', {grandchild!r}], capture_output=True,"
        " text=True, check=True).stdout)\n"
    )
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).resolve().parents[1])
    peak_kib = int(done.stdout.strip())
    assert 0 < peak_kib < 128 * 1024, peak_kib
