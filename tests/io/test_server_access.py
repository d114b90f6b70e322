"""The gateway's access log (issue 25 item 7, ``mmsp_io.server.access``): one JSON line per
request when its response has ended, with names, counts and times, never a key or content
(08 D61)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from serverkit import AUTH, FRONTS, RELAXED, TOKEN, config, running, stream_body

from mmsp_core.model import TextDone, UsageMetadata
from mmsp_io.server import ConfigError, Gateway
from mmsp_io.server.access import ACCESS_LOGGER, configure
from mmsp_io.simulator import Reply, Simulator

PROTOCOL = "openai-chat"
SECRET_TEXT = "the caller's private question"
ANSWER_TEXT = "the model's private answer"


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[dict[str, Any]] = []
        self.raw: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.raw.append(record.getMessage())
        self.lines.append(json.loads(record.getMessage()))


@pytest.fixture
def access() -> Iterator[_Lines]:
    logger = logging.getLogger(ACCESS_LOGGER)
    handler, level = _Lines(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _no_secret(handler: _Lines, sim: Simulator) -> None:
    """D61: no line holds the caller's key, the row's key or any content."""
    for line in handler.raw:
        for secret in (TOKEN, TOKEN[8:20], sim.api_key, SECRET_TEXT, ANSWER_TEXT):
            assert secret not in line, line


@pytest.mark.anyio
@pytest.mark.parametrize("front", FRONTS)
async def test_a_stream_writes_one_line_with_its_row_outcome_times_and_tokens(
    front: str, access: _Lines, tmp_path: Path
) -> None:
    usage = UsageMetadata(prompt_tokens=7, response_tokens=3)
    reply = Reply(items=[TextDone(text=ANSWER_TEXT)], usage=usage)
    async with Simulator.running(reply) as sim:
        gateway = Gateway(config(sim, [PROTOCOL]), timeouts=RELAXED, trace_dir=tmp_path)
        async with running(gateway, front) as origin, httpx.AsyncClient() as http:
            answer = await http.post(f"{origin}/v1/stream", headers=AUTH, timeout=10,
                                     json=stream_body(PROTOCOL, SECRET_TEXT))
            assert answer.status_code == 200
            assert answer.content.endswith(b"data: [DONE]\n\n")
    [line] = access.lines
    assert line.keys() == {"time", "method", "path", "key", "model", "row", "upstream_model",
                           "outcome", "status", "first_event_ms", "duration_ms", "tokens",
                           "cost_usd", "attempts", "error_type"}
    assert line["time"].endswith("Z")
    assert {k: line[k] for k in ("method", "path", "key", "model", "row", "upstream_model",
                                 "outcome", "status", "attempts", "error_type")} == {
        "method": "POST", "path": "/v1/stream", "key": "api_keys[0]", "model": PROTOCOL,
        "row": "models[0]", "upstream_model": "sim-model", "outcome": "success",
        "status": 200, "attempts": 1, "error_type": None}
    assert line["tokens"] == {"prompt": 7, "cached": None, "thoughts": None, "response": 3}
    assert line["cost_usd"] is None  # the simulator's model has no price
    assert isinstance(line["first_event_ms"], float) and isinstance(line["duration_ms"], float)
    _no_secret(access, sim)


@pytest.mark.anyio
@pytest.mark.parametrize("front", FRONTS)
async def test_refusals_write_their_status_and_no_key(
    front: str, access: _Lines, tmp_path: Path
) -> None:
    async with Simulator.running() as sim:
        gateway = Gateway(config(sim, [PROTOCOL]), timeouts=RELAXED, trace_dir=tmp_path)
        async with running(gateway, front) as origin, httpx.AsyncClient() as http:
            wrong = await http.post(f"{origin}/v1/stream", json=stream_body(PROTOCOL),
                                    headers={"authorization": f"Bearer {TOKEN}x"}, timeout=10)
            unknown = await http.post(f"{origin}/v1/stream", headers=AUTH, timeout=10,
                                      json=stream_body("no-such-model", SECRET_TEXT))
    assert (wrong.status_code, unknown.status_code) == (401, 404)
    assert [(line["path"], line["key"], line["outcome"], line["status"])
            for line in access.lines] == [("/v1/stream", None, "refused", 401),
                                          ("/v1/stream", "api_keys[0]", "refused", 404)]
    assert all(isinstance(line["duration_ms"], float) for line in access.lines)
    _no_secret(access, sim)


@pytest.mark.anyio
async def test_an_upstream_error_writes_a_failure_with_its_error_type(
    access: _Lines, tmp_path: Path
) -> None:
    reply = Reply(status=400, message=f"refused: {SECRET_TEXT}")
    async with Simulator.running(reply) as sim:
        gateway = Gateway(config(sim, [PROTOCOL]), timeouts=RELAXED, trace_dir=tmp_path)
        async with running(gateway, "h11") as origin, httpx.AsyncClient() as http:
            answer = await http.post(f"{origin}/v1/stream", headers=AUTH, timeout=10,
                                     json=stream_body(PROTOCOL, SECRET_TEXT))
    assert b'"error"' in answer.content
    [line] = access.lines
    assert (line["outcome"], line["status"], line["error_type"]) == (
        "failure", 200, "ProviderHTTPError")
    assert line["tokens"] is None and line["first_event_ms"] is None
    _no_secret(access, sim)


def test_the_setting_sends_the_log_to_a_file_or_nowhere_and_refuses_anything_else(
    tmp_path: Path,
) -> None:
    logger = logging.getLogger(ACCESS_LOGGER)
    path = tmp_path / "access.log"
    try:
        configure(str(path))
        logger.info('{"n":1}')
        configure("off")
        assert not logger.isEnabledFor(logging.INFO)
        logger.info('{"n":2}')
        assert path.read_text() == '{"n":1}\n'
        with pytest.raises(ConfigError, match="access_log must be"):
            configure(5)
        with pytest.raises(ConfigError, match="access_log: cannot open"):
            configure(str(tmp_path / "absent" / "access.log"))
    finally:
        configure("off")
        logger.setLevel(logging.NOTSET)
        logger.propagate = True


@pytest.mark.anyio
async def test_a_caller_that_leaves_writes_a_disconnect(access: _Lines, tmp_path: Path) -> None:
    reply = Reply.text("one two three four five six", fragment_size=4, delay=0.2)
    async with Simulator.running(reply) as sim:
        gateway = Gateway(config(sim, [PROTOCOL]), timeouts=RELAXED, trace_dir=tmp_path)
        async with running(gateway, "h11") as origin:
            async with httpx.AsyncClient() as http, http.stream(
                "POST", f"{origin}/v1/stream", headers=AUTH, timeout=10,
                json=stream_body(PROTOCOL, SECRET_TEXT),
            ) as answer:
                async for _ in answer.aiter_bytes():
                    break  # the first bytes, then the caller leaves
            for _ in range(100):  # the server notices and ends the call
                if access.lines:
                    break
                await anyio.sleep(0.05)
    [line] = access.lines
    assert (line["outcome"], line["status"], line["model"]) == ("disconnect", 200, PROTOCOL)
    _no_secret(access, sim)
