"""The benchmark harness (``python -m benchmarks``) runs end to end on a tiny matrix, and its
consumers' checks catch a stream that is not the body: a wrong count, a wrong last event.

No timing is asserted: the numbers are the harness's output, not a property of the code.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks import bodies, consumers, run, server
from benchmarks.bodies import Body

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
    "consumer", ["floor", "lines", "pipeline", "client-asyncio", "client-trio", "memory"]
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


@pytest.mark.parametrize("consumer", ["floor", "lines", "pipeline", "client-trio", "memory"])
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
    for consumer in ("floor", "lines"):
        with pytest.raises(consumers.ConsumptionError, match="not the stop"):
            consumers.run(consumer, origin, cut, "event", 1)


def test_the_command_runs_a_tiny_matrix_in_fresh_processes(
    protocol: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "results.json"
    code = run.main([
        "--n", "4", "8", "--protocols", protocol, "--shapes", "text", "--chunkings", "event",
        "--runs", "1", "--consumers", "floor", "client-trio", "--no-peers", "--no-memory",
        "--streams", "3", "--stream-n", "4", "--import-samples", "1", "--json", str(saved),
    ])
    out = capsys.readouterr().out
    assert code == 0, out
    results = json.loads(saved.read_text())
    assert sorted((row["consumer"], row["n"]) for row in results["rows"]) == [
        ("client-trio", 4), ("client-trio", 8), ("floor", 4), ("floor", 8)]
    assert all(row["error"] is None and len(row["runs"]) == 1 for row in results["rows"])
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
