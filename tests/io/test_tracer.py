"""The tracer: file names, containment, contents, tracing through a call (07 §7, D14, D24, D27)."""

from __future__ import annotations

import base64
import json
import logging
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpfakes import Body, clean_environment, mock_client

import adapters
from mmsp_core import (
    FinishReason,
    InlineDataDone,
    TextDone,
    ToolCallDone,
    ToolSchema,
    UniConfig,
    UniMessage,
    UnsupportedParameterError,
    UsageMetadata,
    to_wire,
)
from mmsp_io import AutoLLMClient
from mmsp_io.tracer import trace_dir, trace_files, write_trace
from mmsp_io.traces._summary import summary

__all__ = ["clean_environment"]

USAGE = UsageMetadata(2, 5, None, 3)
HELLO = adapters.render("openai-responses", [TextDone("Hello world")], USAGE, "stop")
USER = {"role": "user", "content_items": [{"type": "text.done", "text": "Hi"}]}


# -- names and containment (08 D14, D24) --------------------------------------------------------


def test_the_suffix_is_appended_to_the_whole_id(tmp_path: Path) -> None:
    assert trace_files(tmp_path, "a/run.2", "c") == (tmp_path / "a" / "run.2.json",
                                                     tmp_path / "a" / "run.2.txt")
    assert trace_files(tmp_path, "./plain", "c")[0] == tmp_path / "plain.json"


@pytest.mark.parametrize(
    "trace_id", ["/etc/passwd", "../outside", "a/../../outside", "a/..", "nul\0byte"]
)
def test_an_id_that_escapes_the_directory_is_refused(tmp_path: Path, trace_id: str) -> None:
    with pytest.raises(UnsupportedParameterError) as caught:
        trace_files(tmp_path / "cache", trace_id, "openai-chat")
    assert (caught.value.client, caught.value.parameter) == ("openai-chat", "trace_id")


@pytest.mark.parametrize(
    ("trace_id", "reason"),
    [
        ("/".join(["a"] * 1000), "at most 200 characters"),
        ("x" * 201, "at most 200 characters"),
        ("a/b/c/d/e/f/g/h/i", "at most 8 '/'-separated segments"),
        ("runs/" + "\u00e9" * 101, "at most 200 bytes of UTF-8"),
        ("runs/\ud800", "surrogate code point"),
    ],
    ids=["1000-segments", "too-long", "9-segments", "segment-bytes", "surrogate"],
)
def test_an_id_too_long_or_too_deep_is_refused_and_nothing_is_created(
    tmp_path: Path, trace_id: str, reason: str
) -> None:
    root = tmp_path / "cache"
    with pytest.raises(UnsupportedParameterError) as caught:
        trace_files(root, trace_id, "openai-chat")
    assert (caught.value.client, caught.value.parameter) == ("openai-chat", "trace_id")
    assert reason in str(caught.value)
    assert not root.exists()


def test_an_id_at_the_bounds_is_written(tmp_path: Path) -> None:
    trace_id = "/".join(["d"] * 7 + ["\u00e9" * 100])  # 8 segments, the last 200 bytes
    history = [UniMessage.user("Hi")]
    write_trace(tmp_path, trace_id, "openai-chat", "gpt-6", history, UniConfig())
    json_path, txt_path = trace_files(tmp_path, trace_id, "openai-chat")
    assert json.loads(json_path.read_text("utf-8"))["history"] == [to_wire(history[0])]
    assert txt_path.is_file()


def test_a_symbolic_link_out_of_the_directory_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    root.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (root / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsupportedParameterError):
        trace_files(root, "link/t", "c")
    # A sibling whose name merely starts like the root is outside too.
    (root / "sibling").symlink_to(tmp_path / "cache-old")
    with pytest.raises(UnsupportedParameterError):
        trace_files(root, "sibling/t", "c")


def test_trace_dir_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert trace_dir(None) == tmp_path / "cache"
    monkeypatch.setenv("MMSP_CACHE_DIR", "from-env")
    assert trace_dir(None) == tmp_path / "from-env"
    assert trace_dir("given") == tmp_path / "given"


# -- contents (07 §7) -------------------------------------------------------------------------


def test_the_json_and_text_files(tmp_path: Path) -> None:
    history = [
        UniMessage("user", (TextDone("Weather in Paris?"),
                            InlineDataDone(b"\x89PNG", "image/png")), created_at=1),
        UniMessage("assistant", (ToolCallDone("get_weather", "call_1", {"city": "Paris"}),),
                   USAGE, FinishReason.TOOL_CALL, 2),
    ]
    config = UniConfig(temperature=0.5, trace_id="t/1",
                       tools=(ToolSchema("get_weather", "Look it up", {"type": "object"}),))
    write_trace(tmp_path, "t/1", "openai-chat", "gpt-6", history, config)

    document = json.loads((tmp_path / "t" / "1.json").read_text("utf-8"))
    assert document["history"] == [to_wire(m) for m in history]
    assert document["history"][0]["content_items"][1]["data"] == \
        base64.b64encode(b"\x89PNG").decode()
    assert document["config"] == {**to_wire(config), "model": "gpt-6"}
    assert datetime.fromisoformat(document["timestamp"]).tzinfo is not None

    text = (tmp_path / "t" / "1.txt").read_text("utf-8")
    for line in ("Conversation History - ", "  temperature: 0.5", "  model: gpt-6",
                 "[1] USER:", "Text: Weather in Paris?", "Inline Data: image/png",
                 "[2] ASSISTANT:", "Tool Call: get_weather", 'Arguments: {"city": "Paris"}',
                 "Tool Call ID: call_1", "  Total Tokens: 10", "Finish Reason: tool_call"):
        assert line in text
    assert "trace_id" not in text
    # No temporary file is left behind.
    assert sorted((tmp_path / "t").iterdir()) == [tmp_path / "t" / "1.json",
                                                  tmp_path / "t" / "1.txt"]


# -- through a call -----------------------------------------------------------------------------


def traced_client(tmp_path: Path, requests: list[httpx.Request], **options: Any) -> AutoLLMClient:
    def serve(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(200, stream=Body(HELLO))

    return AutoLLMClient("gpt-6", client_type="openai-responses", api_key="k",
                         http_client=mock_client(serve), **options)


@pytest.mark.anyio
async def test_a_traced_turn_is_written_before_the_stop(tmp_path: Path) -> None:
    requests: list[httpx.Request] = []
    client = traced_client(tmp_path, requests, trace_dir=tmp_path)
    trace = tmp_path / "runs" / "t.1.json"
    async for event in client.streaming_response_stateful(USER, {"trace_id": "runs/t.1"}):
        if event.event_type == "stop":
            assert trace.exists()
    first = json.loads(trace.read_text("utf-8"))
    assert first["history"] == [to_wire(m) for m in client.get_history()]
    assert first["config"] == {"trace_id": "runs/t.1", "model": "gpt-6"}

    async for _event in client.streaming_response_stateful(USER, {"trace_id": "runs/t.1"}):
        pass
    second = json.loads(trace.read_text("utf-8"))
    assert len(second["history"]) == 4


@pytest.mark.anyio
async def test_a_trace_names_the_base_url_so_the_trace_page_prices_the_turn(
    tmp_path: Path,
) -> None:
    priced = next(entry for entry in adapters.list_supported_models()
                  if entry.pricing is not None and entry.client == "openai-responses")
    client = AutoLLMClient(priced.model, client_type="openai-responses", api_key="k",
                           base_url=priced.base_url, trace_dir=tmp_path,
                           http_client=mock_client(lambda _: httpx.Response(200,
                                                                            stream=Body(HELLO))))
    async for _event in client.streaming_response([USER], {"trace_id": "priced"}):
        pass
    document = json.loads((tmp_path / "priced.json").read_text("utf-8"))
    assert document["base_url"] == priced.base_url
    assert priced.pricing is not None
    assert summary(document)["cost"] == pytest.approx(adapters.price(USAGE, priced.pricing),
                                                      abs=1e-6)


@pytest.mark.anyio
async def test_an_escaping_trace_id_is_refused_before_the_request(tmp_path: Path) -> None:
    requests: list[httpx.Request] = []
    client = traced_client(tmp_path, requests, trace_dir=tmp_path / "cache")
    with pytest.raises(UnsupportedParameterError) as caught:
        async for _event in client.streaming_response([USER], {"trace_id": "../../etc/x"}):
            pass
    assert caught.value.parameter == "trace_id"
    assert requests == []


@pytest.mark.anyio
async def test_a_deep_trace_id_is_refused_before_the_request(tmp_path: Path) -> None:
    requests: list[httpx.Request] = []
    client = traced_client(tmp_path, requests, trace_dir=tmp_path / "cache")
    with pytest.raises(UnsupportedParameterError) as caught:
        async for _event in client.streaming_response_stateful(
            USER, {"trace_id": "/".join(["a"] * 1000)}
        ):
            pass
    assert caught.value.parameter == "trace_id"
    assert requests == []
    assert not (tmp_path / "cache").exists()
    assert client.get_history() == []


@pytest.mark.anyio
async def test_a_failed_write_is_a_warning_and_the_stop_still_comes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    requests: list[httpx.Request] = []
    client = traced_client(tmp_path, requests, trace_dir=blocker)
    with caplog.at_level(logging.WARNING, logger="mmsp_io"):
        events = [e async for e in client.streaming_response_stateful(USER, {"trace_id": "t"})]
    assert events[-1].event_type == "stop"
    assert len(client.get_history()) == 2
    (record,) = [r for r in caplog.records if r.name == "mmsp_io"]
    assert record.levelno == logging.WARNING
    assert "could not write the trace 't'" in record.getMessage()
