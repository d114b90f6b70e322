"""Every call traced when the trace directory is given explicitly, failed calls too (08 D78).

Each test runs a real client against the provider simulator over loopback, under asyncio and
trio, and reads the trace file the call left: its outcome, its error in wire form, what had
arrived before the error, its attempts and its timing keys (whose values are never compared
with a bound, 08 D80).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from httpfakes import clean_environment

from mmsp_core import (
    AbortedError,
    IncompleteStreamError,
    ProviderHTTPError,
    StreamTimeoutError,
    TextDelta,
    UniConfig,
    UniEvent,
)
from mmsp_io import AbortSignal, AutoLLMClient, Timeouts
from mmsp_io.simulator import Reply, Simulator, faults
from mmsp_io.tracer import MAX_LABEL_LENGTH, trace_label, with_trace_label

__all__ = ["clean_environment"]

pytestmark = pytest.mark.anyio

KEY = "sk-sim-trace-3c9e1a7f5b2d4e6a8c0f"
QUESTION = [{"role": "user", "content_items": [{"type": "text.done", "text": "Hello?"}]}]
MADE_ID = re.compile(r"^\d{8}T\d{6}Z-sim-model-[0-9a-f]{6}$")


def _client(sim: Simulator, **options: Any) -> AutoLLMClient:
    return AutoLLMClient("sim-model", api_key=KEY, base_url=sim.base_url("openai-chat"),
                         client_type="openai-chat", **options)


async def _collect(events: AsyncIterator[UniEvent]) -> list[UniEvent]:
    return [event async for event in events]


def _only_trace(root: Path) -> tuple[str, dict[str, Any], str]:
    """The id, the JSON document and the transcript of the one trace under ``root``."""
    files = sorted(root.rglob("*.json"))
    assert len(files) == 1, files
    trace_id = files[0].relative_to(root).as_posix().removesuffix(".json")
    return (trace_id, json.loads(files[0].read_text(encoding="utf-8")),
            files[0].with_suffix(".txt").read_text(encoding="utf-8"))


def _text_of(events: list[UniEvent]) -> str:
    """The text of the ``text.delta`` items of ``events``."""
    return "".join(item.text for event in events for item in event.content_items
                   if isinstance(item, TextDelta))


def _holds_run_of(text: str, key: str) -> bool:
    """Whether ``text`` holds the key or any run of 12 characters of it after its first 8."""
    tail = key[8:]
    return key in text or any(tail[i : i + 12] in text for i in range(len(tail) - 11))


async def test_a_call_without_trace_id_is_traced_under_a_made_id(tmp_path: Path) -> None:
    async with Simulator.running(api_key=KEY) as sim, _client(sim, trace_dir=tmp_path) as client:
        events = await _collect(client.streaming_response(QUESTION))
    trace_id, document, transcript = _only_trace(tmp_path)
    assert MADE_ID.match(trace_id), trace_id
    assert document["outcome"] == "stop"
    assert "error" not in document and "partial" not in document
    assert [attempt["error"] for attempt in document["attempts"]] == [None]
    assert isinstance(document["first_event_s"], float)
    assert isinstance(document["duration_s"], float)
    assert document["history"][-1]["finish_reason"] == events[-1].finish_reason
    assert "Outcome: stop" in transcript and "Attempts: 1" in transcript


async def test_a_trace_id_still_names_the_file(tmp_path: Path) -> None:
    async with Simulator.running(api_key=KEY) as sim, _client(sim, trace_dir=tmp_path) as client:
        await _collect(client.streaming_response(QUESTION, {"trace_id": "runs/mine"}))
    assert _only_trace(tmp_path)[0] == "runs/mine"


async def test_the_trace_dir_variable_traces_every_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MMSP_TRACE_DIR", str(tmp_path / "from-env"))
    async with Simulator.running(api_key=KEY) as sim, _client(sim) as client:
        await _collect(client.streaming_response(QUESTION))
    assert MADE_ID.match(_only_trace(tmp_path / "from-env")[0])


async def test_without_an_explicit_trace_dir_only_a_trace_id_traces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    async with Simulator.running(api_key=KEY) as sim, _client(sim) as client:
        await _collect(client.streaming_response(QUESTION))
        assert list(tmp_path.rglob("*.json")) == []
        await _collect(client.streaming_response(QUESTION, {"trace_id": "named"}))
    assert _only_trace(tmp_path / "cache")[0] == "named"


async def test_an_http_500_after_retries_is_traced_with_every_attempt(tmp_path: Path) -> None:
    async with Simulator.running(api_key=KEY) as sim, \
            _client(sim, trace_dir=tmp_path, max_retries=2) as client:
        sim.script.extend([Reply.error(500, message="upstream broke", retry_after=0)] * 3)
        with pytest.raises(ProviderHTTPError) as caught:
            await _collect(client.streaming_response(QUESTION))
    _trace_id, document, transcript = _only_trace(tmp_path)
    assert document["outcome"] == "error"
    error = document["error"]
    assert (error["type"], error["status"]) == ("ProviderHTTPError", 500)
    assert error["message"] == str(caught.value)
    attempts = document["attempts"]
    assert [a["error"]["status"] for a in attempts] == [500, 500, 500]
    assert all(isinstance(a["started_s"], float) for a in attempts)
    assert document["first_event_s"] is None
    assert isinstance(document["duration_s"], float)
    assert document["partial"] == []
    assert [m["role"] for m in document["history"]] == ["user"]
    assert "Outcome: error" in transcript and "Attempts: 3" in transcript


async def test_a_cut_stream_is_traced_with_what_arrived_before_it(tmp_path: Path) -> None:
    answer = "The first words arrive, then the line goes dead before the end."
    reply = Reply.text(answer, thinking="Let me think.", fragment_size=4,
                       fault=faults.cut(after_events=10))
    received: list[UniEvent] = []
    async with Simulator.running(reply, api_key=KEY) as sim, \
            _client(sim, trace_dir=tmp_path, max_retries=0) as client:
        with pytest.raises(IncompleteStreamError):
            async for event in client.streaming_response(QUESTION):
                received.append(event)
    _trace_id, document, _transcript = _only_trace(tmp_path)
    assert document["outcome"] == "error"
    assert document["error"]["type"] == "IncompleteStreamError"
    assert document["error"]["missing"] == ["usage_metadata", "finish_reason"]
    text_so_far = _text_of(received)
    assert text_so_far and text_so_far != answer
    # At the cut the finalizer closed the text that had arrived (02 §7): it is a done item.
    assistant = document["history"][-1]
    assert assistant["content_items"] == [
        {"type": "thinking.done", "thinking": "Let me think."},
        {"type": "text.done", "text": text_so_far},
    ]
    assert "usage_metadata" not in assistant and "finish_reason" not in assistant
    assert document["partial"] == []
    assert isinstance(document["first_event_s"], float)
    assert [a["error"] for a in document["attempts"]] == [None]


async def test_a_stream_that_times_out_mid_item_is_traced_with_the_partial_text(
    tmp_path: Path
) -> None:
    reply = Reply.text("Half of this arrives and then nothing more.", fragment_size=5,
                       fault=faults.stall(30, after_events=4))
    received: list[UniEvent] = []
    async with Simulator.running(reply, api_key=KEY) as sim, \
            _client(sim, trace_dir=tmp_path, max_retries=0,
                    timeouts=Timeouts(first_event=5, idle=0.3)) as client:
        with pytest.raises(StreamTimeoutError):
            async for event in client.streaming_response(QUESTION):
                received.append(event)
    _trace_id, document, transcript = _only_trace(tmp_path)
    assert (document["error"]["type"], document["error"]["which"]) == ("StreamTimeoutError",
                                                                      "idle")
    text_so_far = _text_of(received)
    assert text_so_far
    assert document["partial"] == [{"type": "text.delta", "text": text_so_far}]
    assert [m["role"] for m in document["history"]] == ["user"]
    assert f"Partial text.delta: {text_so_far}" in transcript


async def test_a_failed_trace_holds_no_key_the_provider_echoed(tmp_path: Path) -> None:
    async with Simulator.running(api_key=KEY) as sim, \
            _client(sim, trace_dir=tmp_path, max_retries=0) as client:
        sim.script.append(Reply.error(400, message=f"The key {KEY} may not do this."))
        with pytest.raises(ProviderHTTPError):
            await _collect(client.streaming_response(QUESTION))
    for path in tmp_path.rglob("*.*"):
        assert not _holds_run_of(path.read_text(encoding="utf-8"), KEY), path


async def test_an_aborted_call_writes_no_trace(tmp_path: Path) -> None:
    signal = AbortSignal()
    async with Simulator.running(Reply.text("Hi", delay=0.05), api_key=KEY) as sim, \
            _client(sim, trace_dir=tmp_path) as client:
        with pytest.raises(AbortedError):
            async for _event in client.streaming_response(QUESTION, signal=signal):
                signal.abort("enough")
    assert list(tmp_path.rglob("*")) == []


@pytest.mark.parametrize(("trace_id", "label"), [
    ("runs/one", "runs_one"), ("../../etc/passwd", "_.._etc_passwd"), ("..", "_"),
    (".hidden", "hidden"), ("a b\u00e9c", "a_b_c"), ("ok-1.2_3", "ok-1.2_3"), ("", ""),
    ("x" * 500, "x" * MAX_LABEL_LENGTH),
])
def test_a_label_is_one_file_name(trace_id: str, label: str) -> None:
    assert trace_label(trace_id) == label


def test_a_gateway_config_gets_its_trace_id_made_a_label() -> None:
    assert with_trace_label({"trace_id": "a/b", "temperature": 1}) == {
        "trace_id": "a_b", "temperature": 1}
    assert with_trace_label(UniConfig(trace_id="../x")) == UniConfig(trace_id="_x")
    assert with_trace_label(UniConfig()) == UniConfig()
    assert with_trace_label({"trace_id": 7}) == {"trace_id": 7}  # the client refuses it
    assert with_trace_label(None) is None
