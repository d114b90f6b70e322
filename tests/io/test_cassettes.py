"""Cassettes (08 D78): record with ``record_to``, replay with the simulator, replay on the
command line; no cassette holds a secret (08 D61).

A stream is recorded from the simulator through ``AutoLLMClient(record_to=...)`` and replayed
by a simulator started with ``cassettes=`` that directory: the public stream is the same but
for ``created_at``, and the recorded chunks are written one by one. Every test runs under
asyncio and trio.
"""

from __future__ import annotations

import base64
import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from httpfakes import clean_environment

import adapters
from mmsp_core import IncompleteStreamError, ProviderHTTPError, ToolCallDone, to_wire
from mmsp_io import AutoLLMClient
from mmsp_io._cassettes import MAX_RECORDED_BYTES, Chunk, Recorder, read_cassette
from mmsp_io.simulator import Reply, Simulator, faults
from mmsp_io.simulator.cassettes import CassetteError, Cassettes

__all__ = ["clean_environment"]

pytestmark = pytest.mark.anyio

KEY = "sk-sim-cassette-5d1c7a9e3b2f4a6c8e0d"
ROOT = Path(__file__).resolve().parents[2]
TOOLS = [{"name": "get_weather", "description": "The weather of a city.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
#: The protocols replayed end to end: SSE, Google's JSON array stream and one-body answers.
PROTOCOLS = ["ant-messages", "openai-chat", "openai-responses", "google-genai",
             "google-interactions", "openai-embedding"]


def _client(sim: Simulator, protocol: str, **options: Any) -> AutoLLMClient:
    row = adapters.resolve(protocol)[0]
    return AutoLLMClient("sim-model", api_key=KEY,
                         base_url=sim.base_url(protocol), client_type=row.client_type,
                         max_retries=0, **options)


def _question(text: str = "Weather in Paris?") -> list[dict[str, Any]]:
    return [{"role": "user", "content_items": [{"type": "text.done", "text": text}]}]


async def _public(client: AutoLLMClient, config: dict[str, Any] | None = None,
                  text: str = "Weather in Paris?") -> list[dict[str, Any]]:
    """The call's public events in wire form, without ``created_at`` (each run stamps its own
    clock, 08 D78)."""
    events = []
    async for event in client.streaming_response(_question(text), config):
        wire = to_wire(event)
        wire.pop("created_at")
        events.append(wire)
    return events


def _cassette_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.json"))


def _holds_run_of(text: str, key: str) -> bool:
    """Whether ``text`` holds the key or any run of 12 characters of it after its first 8, as
    tests/io/test_security.py checks (08 D61)."""
    tail = key[8:]
    return key in text or any(tail[i : i + 12] in text for i in range(len(tail) - 11))


def assert_no_secret(directory: Path, *secrets: str) -> None:
    """No cassette file of ``directory`` holds any of ``secrets``: not its text, nor the
    bodies its base64 chunks and request body hold."""
    files = _cassette_files(directory)
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        cassette = read_cassette(path)
        for shown in (text, cassette.body.decode("latin-1"),
                      cassette.request_body.decode("latin-1"), cassette.url,
                      json.dumps(cassette.request_headers), json.dumps(cassette.headers)):
            for secret in secrets:
                assert not _holds_run_of(shown, secret), (path, secret)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_recorded_cassette_replays_to_the_identical_public_stream(
    protocol: str, tmp_path: Path
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    config = None if "embedding" in protocol else {"tools": TOOLS}
    async with Simulator.running(api_key=KEY, chunk_size=9) as sim, \
            _client(sim, protocol, record_to=first) as client:
        recorded = await _public(client, config)
    assert recorded[-1]["event_type"] == "stop"
    assert_no_secret(first, KEY)
    async with Simulator.running(api_key=KEY, cassettes=first) as sim, \
            _client(sim, protocol, record_to=second) as client:
        replayed = await _public(client, config)
    assert replayed == recorded
    assert sim.cassettes is not None and sim.cassettes.misses == []
    (original,), (again,) = map(read_cassette, _cassette_files(first)), \
        map(read_cassette, _cassette_files(second))
    assert again.body == original.body
    assert (again.status, again.method) == (original.status, original.method)
    assert again.request_body == original.request_body


async def test_the_simulator_writes_the_recorded_chunks_one_by_one(tmp_path: Path) -> None:
    async with Simulator.running(api_key=KEY, chunk_size=5) as sim, \
            _client(sim, "openai-chat", record_to=tmp_path) as client:
        await _public(client)
    (path,) = _cassette_files(tmp_path)
    cassette = read_cassette(path)
    assert cassette.end in ("complete", "closed")
    assert str(cassette.header("content-type")).startswith("text/event-stream")
    played = Cassettes(tmp_path).playback(cassette)
    assert played.steps == [chunk.data for chunk in cassette.chunks]
    assert played.event_stream
    assert [name for name, _ in played.headers if name.lower() == "transfer-encoding"] == []
    paced = Cassettes(tmp_path, pacing=True).playback(cassette)
    assert [step for step in paced.steps if isinstance(step, bytes)] == played.steps
    pauses = [step.seconds for step in paced.steps if isinstance(step, faults.Pause)]
    gaps = [b.seconds - a.seconds for a, b in zip(
        [Chunk(b"", cassette.headers_seconds), *cassette.chunks], cassette.chunks, strict=False)]
    assert pauses == [gap for gap in gaps if gap > 0]


async def test_an_agent_loop_replays_each_turn_from_its_own_cassette(tmp_path: Path) -> None:
    async def loop(sim: Simulator, **options: Any) -> list[Any]:
        async with _client(sim, "ant-messages", **options) as client:
            config = {"tools": TOOLS}
            async for _event in client.streaming_response_stateful(_question()[0], config):
                pass
            call = client.get_history()[-1].content_items[-1]
            assert isinstance(call, ToolCallDone)
            result = {"role": "user", "content_items": [
                {"type": "tool_result.done", "text": "Sunny", "tool_call_id": call.tool_call_id}]}
            async for _event in client.streaming_response_stateful(result, config):
                pass
            return [to_wire(message) | {"created_at": None} for message in client.get_history()]

    async with Simulator.running(api_key=KEY) as sim:
        recorded = await loop(sim, record_to=tmp_path)
    assert len(_cassette_files(tmp_path)) == 2
    async with Simulator.running(api_key=KEY, cassettes=tmp_path) as sim:
        replayed = await loop(sim)
    assert replayed == recorded
    assert "Sunny" in json.dumps(replayed[-1])


async def test_no_cassette_holds_the_key_nor_what_the_provider_echoed_of_it(
    tmp_path: Path
) -> None:
    # The key in one text delta, its body written ten bytes at a time: it straddles chunks.
    echo = Reply.text(f"Your key is {KEY}, and again {KEY[3:30]}.", chunk_size=10,
                      headers=(("x-echo", KEY),))
    async with Simulator.running(echo, api_key=KEY) as sim:
        for protocol in ("ant-messages", "openai-chat", "google-genai"):
            async with _client(sim, protocol, record_to=tmp_path,
                               default_headers={"x-trace-key": KEY}) as client:
                events = await _public(client, text=f"Is {KEY} my key?")
            assert events[-1]["event_type"] == "stop"
    assert len(_cassette_files(tmp_path)) == 3
    assert_no_secret(tmp_path, KEY)
    for path in _cassette_files(tmp_path):
        cassette = read_cassette(path)
        names = {name.lower() for name, _ in cassette.request_headers}
        assert not names & {"authorization", "x-api-key", "x-goog-api-key", "x-trace-key"}
        assert "x-echo" not in {name.lower() for name, _ in cassette.headers}


async def test_a_missing_cassette_fails_loudly(tmp_path: Path) -> None:
    async with Simulator.running(api_key=KEY) as sim, \
            _client(sim, "openai-chat", record_to=tmp_path) as client:
        await _public(client)
    async with Simulator.running(api_key=KEY, cassettes=tmp_path) as sim:
        async with AutoLLMClient("another-model", api_key=KEY, client_type="openai-chat",
                                 base_url=sim.base_url("openai-chat"), max_retries=0) as client:
            with pytest.raises(ProviderHTTPError) as caught:
                await _public(client)
        assert sim.cassettes is not None
        assert sim.cassettes.misses == ["POST /v1/chat/completions (model another-model)"]
    assert caught.value.status == 404
    assert "No cassette in" in str(caught.value) and "another-model" in str(caught.value)


async def test_a_cassette_used_once_is_not_used_again_for_another_body(tmp_path: Path) -> None:
    async with Simulator.running(api_key=KEY) as sim, \
            _client(sim, "openai-chat", record_to=tmp_path) as client:
        await _public(client, text="one")
    async with Simulator.running(api_key=KEY, cassettes=tmp_path) as sim, \
            _client(sim, "openai-chat") as client:
        await _public(client, text="two")  # no body matches: the one unused cassette answers
        await _public(client, text="one")  # the same body: the cassette answers again
        with pytest.raises(ProviderHTTPError):
            await _public(client, text="three")


async def test_a_file_that_is_no_cassette_fails_when_the_simulator_starts(
    tmp_path: Path
) -> None:
    (tmp_path / "broken.json").write_text('{"mmsp_cassette": 1, "request": {}}')
    with pytest.raises(CassetteError, match=r"broken\.json"):
        async with Simulator.running(cassettes=tmp_path):
            pass
    with pytest.raises(CassetteError, match="no such directory"):
        Cassettes(tmp_path / "nowhere")


async def test_a_cut_body_is_recorded_as_cut_and_replayed_as_a_cut(tmp_path: Path) -> None:
    reply = Reply.text("This answer is cut short on the wire.", fragment_size=4,
                       fault=faults.cut(after_events=4))
    async with Simulator.running(reply, api_key=KEY) as sim, \
            _client(sim, "openai-chat", record_to=tmp_path / "cut") as client:
        with pytest.raises(Exception) as recorded:
            await _public(client)
    (path,) = _cassette_files(tmp_path / "cut")
    assert read_cassette(path).end == "cut"
    async with Simulator.running(api_key=KEY, cassettes=tmp_path / "cut") as sim, \
            _client(sim, "openai-chat") as client:
        with pytest.raises(type(recorded.value)):
            await _public(client)


async def test_an_error_answer_is_recorded_and_replayed(tmp_path: Path) -> None:
    async with Simulator.running(Reply.error(429, message="Slow down.", retry_after=7),
                                 api_key=KEY) as sim, \
            _client(sim, "ant-messages", record_to=tmp_path) as client:
        with pytest.raises(ProviderHTTPError) as recorded:
            await _public(client)
    async with Simulator.running(api_key=KEY, cassettes=tmp_path) as sim, \
            _client(sim, "ant-messages") as client:
        with pytest.raises(ProviderHTTPError) as replayed:
            await _public(client)
    assert (replayed.value.status, replayed.value.retry_after) == (429, 7)
    assert str(replayed.value) == str(recorded.value)


async def test_a_recording_stops_at_its_cap_and_says_so(tmp_path: Path) -> None:
    assert Recorder(tmp_path, "openai-chat", "http://127.0.0.1:1/v1").limit == MAX_RECORDED_BYTES
    recording = Recorder(tmp_path, "openai-chat", "http://127.0.0.1:1/v1", limit=10).start(
        "openai-chat", "sim-model")
    for chunk in (b"1234567", b"abcdef", b"more"):
        recording.add(chunk)
    recording.ended("complete")
    assert [chunk.data for chunk in recording.chunks] == [b"1234567", b"abc"]
    assert recording.end == "truncated"


async def test_a_truncated_cassette_replays_up_to_its_cap_then_cuts(tmp_path: Path) -> None:
    reply = Reply.text("A long answer " * 40, fragment_size=8)
    async with Simulator.running(reply, api_key=KEY) as sim, \
            _client(sim, "openai-chat") as client:
        client._sender = attrs.evolve(client._sender, recorder=Recorder(
            tmp_path, "openai-chat", client.base_url, limit=300))
        complete = await _public(client)
    (path,) = _cassette_files(tmp_path)
    cassette = read_cassette(path)
    assert (cassette.end, len(cassette.body)) == ("truncated", 300)
    assert complete[-1]["event_type"] == "stop"
    async with Simulator.running(api_key=KEY, cassettes=tmp_path) as sim, \
            _client(sim, "openai-chat") as client:
        with pytest.raises(IncompleteStreamError):
            await _public(client)


def _run_replay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mmsp_io", "replay", *args],
                          capture_output=True, text=True, check=False, cwd=ROOT, timeout=60)


async def test_the_replay_command_prints_the_stream_of_a_cassette(tmp_path: Path) -> None:
    async with Simulator.running(api_key=KEY, chunk_size=6) as sim, \
            _client(sim, "google-genai", record_to=tmp_path) as client:
        await _public(client, text="Say hello")
    (path,) = _cassette_files(tmp_path)
    result = _run_replay(str(path))
    assert result.returncode == 0, result.stderr
    assert "You asked: Say hello" in result.stdout
    assert "[stop] finish_reason=stop" in result.stdout
    assert _run_replay("--chunk-size", "3", str(path)).stdout == result.stdout


async def test_the_replay_command_raises_the_error_a_cassette_holds(tmp_path: Path) -> None:
    async with Simulator.running(Reply.error(400, message="Bad request here."),
                                 api_key=KEY) as sim, \
            _client(sim, "openai-chat", record_to=tmp_path) as client:
        with pytest.raises(ProviderHTTPError):
            await _public(client)
    (path,) = _cassette_files(tmp_path)
    result = _run_replay(str(path))
    assert result.returncode == 1
    assert result.stderr.startswith("mmsp-sansio replay: ProviderHTTPError: ")
    assert "Bad request here." in result.stderr


async def test_a_gzip_coded_cassette_replays_in_the_simulator_and_the_command(
    tmp_path: Path
) -> None:
    async with Simulator.running(api_key=KEY) as sim, \
            _client(sim, "openai-chat", record_to=tmp_path / "plain") as client:
        plain_events = await _public(client, text="Say hello")
    (plain,) = _cassette_files(tmp_path / "plain")
    document = json.loads(plain.read_text(encoding="utf-8"))
    packed = gzip.compress(read_cassette(plain).body)
    document["response"]["headers"].append(["content-encoding", "gzip"])
    document["response"]["chunks"] = [
        {"s": 0.0, "data": base64.b64encode(part).decode()} for part in (packed[:25], packed[25:])]
    (tmp_path / "coded").mkdir()
    (tmp_path / "coded" / "coded.json").write_text(json.dumps(document), encoding="utf-8")
    async with Simulator.running(api_key=KEY, cassettes=tmp_path / "coded") as sim, \
            _client(sim, "openai-chat") as client:
        assert await _public(client, text="Say hello") == plain_events
    coded = _run_replay(str(tmp_path / "coded" / "coded.json"))
    assert coded.returncode == 0, coded.stderr
    assert coded.stdout == _run_replay(str(plain)).stdout
    assert _run_replay("--chunk-size", "2", str(tmp_path / "coded" / "coded.json")).stdout == \
        coded.stdout


def test_the_replay_command_needs_a_source_for_a_body_that_is_no_cassette(
    tmp_path: Path
) -> None:
    body = tmp_path / "body.sse"
    body.write_bytes(b"data: [DONE]\n\n")
    result = _run_replay(str(body))
    assert result.returncode == 1
    assert "needs --source" in result.stderr
