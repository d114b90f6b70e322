"""A server that sends lone surrogates, relayed by the MMSP server to an mmsp client, over
loopback HTTP, through both front ends, under asyncio and trio (08 D55, spec 07 §4).

The provider simulator plays an upstream MMSP server that repairs nothing: its text and tool
call carry JSON escapes of lone surrogates and of a pair split across two events. The gateway's
mmsp row reads them through ``PassThrough``, which repairs them as the finalizer repairs a
provider's, so the gateway writes UTF-8 (no ``UnicodeEncodeError``) and the client downstream
gets the repaired stream, its history included.
"""

from __future__ import annotations

import json
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest
from serverkit import FRONTS, RELAXED, TOKEN, running

from mmsp_core.errors import MMSPError
from mmsp_core.model import (
    TextDelta,
    TextDone,
    ToolCallDelta,
    ToolCallDone,
    UniEvent,
    UniMessage,
)
from mmsp_core.testing import assert_stream_grammar
from mmsp_core.wire import to_wire
from mmsp_io import AutoLLMClient
from mmsp_io.server import Gateway
from mmsp_io.simulator import Reply, Simulator

pytestmark = pytest.mark.anyio


def _event(item: dict[str, Any]) -> bytes:
    event = {"event_type": "delta", "content_items": [item], "created_at": 1}
    return b"data: " + json.dumps(event).encode() + b"\n\n"


#: What the upstream server writes: ``\ud83d`` / ``\ude00`` split across two text events, a
#: lone low surrogate, and a tool call whose id and arguments hold lone surrogates.
UPSTREAM = b"".join([
    _event({"type": "text.delta", "text": "smile \ud83d"}),
    _event({"type": "text.delta", "text": "\ude00 and \udc00"}),
    _event({"type": "text.done", "text": "smile \U0001f600 and \udc00"}),
    _event({"type": "tool_call.delta", "name": "f", "tool_call_id": "c\udbff",
            "arguments": '{"a": "\\ud83d"}'}),
    _event({"type": "tool_call.done", "name": "f", "tool_call_id": "c\udbff",
            "arguments": {"a": "\ud83d"}}),
    b'data: {"event_type": "stop", "content_items": [], "usage_metadata": {"prompt_tokens": 3,'
    b' "response_tokens": 4}, "finish_reason": "tool_call", "created_at": 1}\n\n',
    b"data: [DONE]\n\n",
])


@pytest.fixture(params=FRONTS)
def front(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_a_relayed_lone_surrogate_reaches_the_client_repaired(
    front: str, tmp_path: Path
) -> None:
    reply = Reply(body=UPSTREAM, content_type="text/event-stream; charset=utf-8")
    async with Simulator.running(reply) as sim:
        gateway = Gateway(
            {"models": [{"server_model_id": "relayed", "model_id": "sim-model",
                         "api_key": sim.api_key, "base_url": sim.base_url("mmsp"),
                         "client_type": "mmsp"}], "api_keys": [TOKEN]},
            timeouts=RELAXED, max_retries=0, trace_dir=tmp_path / "traces")
        async with running(gateway, front) as origin:
            client = AutoLLMClient("relayed", api_key=TOKEN, base_url=origin + "/v1",
                                   client_type="mmsp", timeouts=RELAXED, max_retries=0)
            events: list[UniEvent] = []
            async with client:
                try:
                    stream = client.streaming_response_stateful(UniMessage.user("Hi"), None)
                    async with aclosing(stream) as items:
                        async for event in items:
                            events.append(event)
                except MMSPError as exc:  # the relay's failure, if any, with its type
                    pytest.fail(f"the relayed stream failed: {exc!r}")
                history = client.get_history()
    assert_stream_grammar(events)
    assert [e.content_items[0] for e in events[:-1]] == [
        TextDelta("smile "),
        TextDelta("\U0001f600 and \ufffd"),
        TextDone("smile \U0001f600 and \ufffd"),
        ToolCallDelta("f", "c\ufffd", '{"a": "\\ud83d"}'),
        ToolCallDone("f", "c\ufffd", {"a": "\ufffd"}),
    ]
    assert history[-1].content_items == (
        TextDone("smile \U0001f600 and \ufffd"), ToolCallDone("f", "c\ufffd", {"a": "\ufffd"}))
    for value in (*events, *history):
        json.dumps(to_wire(value), ensure_ascii=False).encode("utf-8")
