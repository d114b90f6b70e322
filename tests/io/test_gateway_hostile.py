"""The MMSP gateway against a hostile caller: what a caller names is fetched only as the
operator allows (08 D37), an open gateway answers only a loopback ``Host``, ``extra_body``
keys pass only when a row lists them, ``/v1/metrics`` hides error texts unless told (08 D75),
every stream's buffer is bounded in bytes, and the configuration refuses keys it does not know.

The servers run over loopback under asyncio and trio; the ``Host`` rule, which each front end
feeds, runs through both (the h11 one and the ASGI app under hypercorn).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from httpfakes import peak_memory
from serverkit import AUTH, FRONTS, RELAXED, config, post_stream, running, stream_body
from test_image_fetch import GENERIC, SECRET, image_server

from mmsp_core.model import TextDelta, TextDone, UniEvent
from mmsp_io import RemoteImages
from mmsp_io.httpserver import Request
from mmsp_io.server import ConfigError, Gateway, resolve_config
from mmsp_io.server.config import GATEWAY_IMAGES
from mmsp_io.simulator import Reply, Simulator

pytestmark = pytest.mark.anyio

MODEL = "openai-chat"
#: The operator's settings that let the gateway fetch from the loopback image server.
LOOPBACK_IMAGES = {"enabled": True, "allow_hosts": ["127.0.0.1"]}


@pytest.fixture(params=FRONTS)
def front(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def gateway(sim: Simulator, tmp_path: Path, *, keys: bool = True,
            row: dict[str, Any] | None = None, **settings: Any) -> Gateway:
    """A gateway serving the simulator's openai-chat endpoint; ``row`` adds columns to its
    row, ``settings`` top-level keys to its configuration."""
    document = config(sim, [MODEL], keys=keys)
    document["models"][0].update(row or {})
    return Gateway({**document, **settings}, timeouts=RELAXED, max_retries=0,
                   trace_dir=tmp_path / "traces")


def with_images(*urls: str) -> dict[str, Any]:
    body = stream_body(MODEL)
    body["messages"][0]["content_items"] += [
        {"type": "image_url.done", "image_url": url} for url in urls]
    return body


def error_of(events: list[Any]) -> dict[str, Any]:
    """The error of a stream that ended with one error event, then ``[DONE]``."""
    assert len(events) == 2 and events[1] == "[DONE]", events
    error: dict[str, Any] = events[0]["error"]
    return error




# -- remote images (08 D37) ----------------------------------------------------------------------


async def test_the_gateway_fetches_no_remote_image_by_default(front: str, tmp_path: Path) -> None:
    async with Simulator.running() as sim, image_server() as images:
        gate = gateway(sim, tmp_path)
        async with running(gate, front) as origin, httpx.AsyncClient() as http:
            response, events = await post_stream(http, origin, with_images(
                images.url("/image/100")))
    assert response.status_code == 200
    error = error_of(events)
    assert (error["type"], error["item_type"]) == ("InvalidMessageError", "image_url")
    assert "remote_images.enabled" in error["message"]
    assert images.seen == [] and sim.requests == []


async def test_a_tool_results_image_is_not_fetched_either(tmp_path: Path) -> None:
    async with Simulator.running() as sim, image_server() as images:
        body = stream_body(MODEL)
        body["messages"] += [
            {"role": "assistant", "content_items": [
                {"type": "tool_call.done", "name": "camera", "tool_call_id": "call_1",
                 "arguments": {}}]},
            {"role": "user", "content_items": [
                {"type": "tool_result.done", "tool_call_id": "call_1", "text": "a photo",
                 "images": [images.url("/image/100")]}]},
        ]
        for settings in ({}, {"remote_images": {"enabled": True}}):
            gate = gateway(sim, tmp_path, **settings)
            async with running(gate, "h11") as origin, httpx.AsyncClient() as http:
                _response, events = await post_stream(http, origin, body)
            error = error_of(events)
            assert (error["type"], error["message_index"]) == ("InvalidMessageError", 2)
    assert images.seen == [] and sim.requests == []


async def test_enabled_remote_images_still_refuse_loopback_unless_the_host_is_allowed(
    tmp_path: Path,
) -> None:
    async with Simulator.running() as sim, image_server() as images:
        url = images.url("/image/100")
        refusing = gateway(sim, tmp_path, remote_images={"enabled": True})
        async with running(refusing, "h11") as origin, httpx.AsyncClient() as http:
            _response, events = await post_stream(http, origin, with_images(url))
        error = error_of(events)
        assert error["type"] == "InvalidMessageError"
        assert error["message"].endswith(f"({GENERIC} {url})")
        assert images.seen == [] and sim.requests == []
        allowing = gateway(sim, tmp_path, remote_images=LOOPBACK_IMAGES)
        async with running(allowing, "h11") as origin, httpx.AsyncClient() as http:
            _response, events = await post_stream(http, origin, with_images(url))
    assert events[-2]["event_type"] == "stop"
    assert [path for path, _ in images.seen] == ["/image/100"]
    parts = sim.requests[0].json["messages"][0]["content"]
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")


async def test_what_an_image_server_answers_reaches_neither_the_caller_nor_the_metrics(
    tmp_path: Path,
) -> None:
    async with Simulator.running() as sim, image_server() as images:
        gate = gateway(sim, tmp_path, remote_images=LOOPBACK_IMAGES,
                       metrics={"show_errors": True})
        async with running(gate, "h11") as origin, httpx.AsyncClient() as http:
            _response, events = await post_stream(http, origin, with_images(
                images.url("/secret")))
            metrics = await http.get(origin + "/v1/metrics", headers=AUTH)
    error = error_of(events)
    assert error["message"].endswith(f"({GENERIC} {images.url('/secret')}: HTTP 500)")
    assert SECRET not in json.dumps(events) and SECRET not in metrics.text
    assert "HTTP 500" in metrics.json()["errors"][0]["message"]


async def test_a_small_request_naming_many_images_holds_no_more_than_the_configured_total(
    tmp_path: Path,
) -> None:
    """Issue: a 982-byte request naming 12 images grew the gateway by 1.2 GB. With the
    operator's limits (1 MB an image, 2 MiB a request) the call ends at its third image."""
    size = 1_000_000
    limits = {**LOOPBACK_IMAGES, "max_image_bytes": size, "max_total_bytes": 2 * 1024 * 1024}
    async with Simulator.running() as sim, image_server() as images:
        gate = gateway(sim, tmp_path, remote_images=limits)
        urls = [images.url(f"/image/{size}?n={n}") for n in range(12)]
        async with running(gate, "h11") as origin, httpx.AsyncClient() as http:
            with peak_memory() as peak:
                _response, events = await post_stream(http, origin, with_images(*urls))
    assert peak[0] < 12 * size
    assert "larger than 2 MiB together" in error_of(events)["message"]
    assert len(images.seen) == 3 and sim.requests == []


# -- the send buffer -----------------------------------------------------------------------------


class _Stuck:
    """A gateway ``Output`` whose caller reads nothing: the first send never returns."""

    client_gone = False

    async def start(self, status: int, headers: Sequence[tuple[str, str]] = (), *,
                    hold: bool = False) -> None:
        assert status == 200

    async def send(self, data: bytes) -> None:
        await anyio.sleep_forever()

    async def end(self, data: bytes = b"") -> None:
        await anyio.sleep_forever()

    async def respond(self, status: int, headers: Sequence[tuple[str, str]] = (),
                      body: bytes = b"") -> None:
        raise AssertionError(f"answered {status}: {body!r}")

    async def cut(self) -> None:
        raise AssertionError("cut")


def _request(body: dict[str, Any]) -> Request:
    return Request(method="POST", path="/v1/stream", query="",
                   headers=(("host", "127.0.0.1"), ("content-type", "application/json"),
                            ("authorization", AUTH["authorization"])),
                   body=json.dumps(body).encode())


async def test_a_caller_who_reads_nothing_holds_a_bounded_number_of_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Frames of 512 KiB for a caller who reads none: the stream holds about 1 MiB of them,
    not 16 frames (8 MiB) as a buffer counted in frames did."""
    frame_text = "x" * (512 * 1024)
    pulled: list[int] = []

    async def big_events(*args: Any, **kwargs: Any) -> AsyncIterator[UniEvent]:
        for n in range(64):
            pulled.append(n)
            yield UniEvent("delta", (TextDelta(frame_text),))

    async with Simulator.running() as sim:
        gate = gateway(sim, tmp_path)
        monkeypatch.setattr(gate._clients[gate.config.models[0]], "streaming_response",
                            big_events)
        with peak_memory() as peak:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(gate.handle, _request(stream_body(MODEL)), _Stuck())
                await anyio.wait_all_tasks_blocked()
                tasks.cancel_scope.cancel()
        await gate.aclose()
    assert peak[0] < 5 * 1024 * 1024
    assert len(pulled) < 64  # the producer waits too


async def test_a_frame_larger_than_the_buffer_goes_through_alone(
    front: str, tmp_path: Path,
) -> None:
    text = "y" * (3 * 1024 * 1024)
    async with Simulator.running() as sim:
        sim.script.append(Reply(items=[TextDone(text=text)], fragment_size=len(text)))
        gate = gateway(sim, tmp_path)
        async with running(gate, front) as origin, httpx.AsyncClient() as http:
            _response, events = await post_stream(http, origin, stream_body(MODEL))
    texts = [event["content_items"][0]["text"] for event in events[:-2]]
    assert texts == [text, text]  # the one delta, then the done item
    assert events[-2]["event_type"] == "stop" and events[-1] == "[DONE]"


# -- the Host rule of an open gateway --------------------------------------------------------------


async def test_an_open_gateway_answers_only_a_loopback_host(front: str, tmp_path: Path) -> None:
    async with Simulator.running() as sim:
        gate = gateway(sim, tmp_path, keys=False)
        async with running(gate, front) as origin, httpx.AsyncClient() as http:
            port = origin.rpartition(":")[2]
            rebound = await http.post(origin + "/v1/stream", json=stream_body(MODEL),
                                      headers={"host": "evil.example"})
            listing = await http.get(origin + "/v1/models",
                                     headers={"host": f"evil.example:{port}"})
            served = {}
            for host in (f"127.0.0.1:{port}", f"localhost:{port}"):
                served[host] = await post_stream(http, origin, stream_body(MODEL),
                                                 headers={"host": host})
    for refused in (rebound, listing):
        assert refused.status_code == 403
        assert refused.json()["error"]["type"] == "PermissionDeniedError"
        assert "loopback" in refused.json()["error"]["message"]
    for response, events in served.values():
        assert response.status_code == 200 and events[-2]["event_type"] == "stop"
    assert len(sim.requests) == 2


async def test_an_open_gateway_refuses_a_foreign_host_before_reading_its_upload(
    front: str, tmp_path: Path
) -> None:
    """40 MiB declared, 1 KiB sent, ``Host: evil.example``: the 403 comes without the rest."""
    async with Simulator.running() as sim:
        gate = gateway(sim, tmp_path, keys=False)
        async with running(gate, front) as origin:
            host, port = origin.removeprefix("http://").rsplit(":", 1)
            async with await anyio.connect_tcp(host, int(port)) as stream:
                await stream.send(b"POST /v1/stream HTTP/1.1\r\nHost: evil.example\r\n"
                                  b"Content-Type: application/json\r\n"
                                  b"Content-Length: %d\r\n\r\n" % (40 * 1024 * 1024)
                                  + b" " * 1024)
                received = b""
                with anyio.fail_after(30):  # a hang guard: the body is never completed
                    while b'"PermissionDeniedError"' not in received:
                        received += await stream.receive()
    assert received.startswith(b"HTTP/1.1 403 ")
    assert sim.requests == []


async def test_the_connections_setting_caps_the_h11_front_end(tmp_path: Path) -> None:
    """``connections.max: 1``: with one connection open a second is answered 503 and closed,
    and the first is still served."""
    async with Simulator.running() as sim:
        gate = gateway(sim, tmp_path, connections={"max": 1, "head_timeout_s": 30})
        async with running(gate, "h11") as origin:
            host, port = origin.removeprefix("http://").rsplit(":", 1)
            async with await anyio.connect_tcp(host, int(port)) as first:
                await first.send(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                 b"Authorization: Bearer " + AUTH["authorization"].split()[1]
                                 .encode() + b"\r\n\r\n")
                answer = b""
                with anyio.fail_after(30):  # hang guards, not timings
                    while b'"object": "list"' not in answer and b'"object":"list"' not in answer:
                        answer += await first.receive()
                    async with await anyio.connect_tcp(host, int(port)) as second:
                        refused = b""
                        with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                            while True:
                                refused += await second.receive()
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert refused.startswith(b"HTTP/1.1 503 ")
    assert b"ServiceUnavailableError" in refused


async def test_a_gateway_with_keys_answers_any_host(front: str, tmp_path: Path) -> None:
    async with Simulator.running() as sim:
        gate = gateway(sim, tmp_path)
        async with running(gate, front) as origin, httpx.AsyncClient() as http:
            response, events = await post_stream(http, origin, stream_body(MODEL),
                                                 headers={**AUTH, "host": "gateway.example"})
    assert response.status_code == 200 and events[-2]["event_type"] == "stop"


def test_the_host_rule_binds_an_open_gateway_listening_on_loopback_or_somewhere_unknown(
    tmp_path: Path,
) -> None:
    gate = Gateway({"models": [{"model_id": "gpt-6", "api_key": "k", "server_model_id": "m"}]},
                   trace_dir=tmp_path)
    evil = Request("GET", "/v1/models", "", (("host", "evil.example"),), b"")
    assert not gate.host_allowed(evil, "127.0.0.1")
    assert not gate.host_allowed(evil, "::1")
    assert not gate.host_allowed(evil, None)  # a front end that cannot say
    assert gate.host_allowed(evil, "0.0.0.0")  # listening everywhere: the operator's choice
    assert not gate.host_allowed(Request("GET", "/", "", (), b""), None)  # no Host at all
    for host in ("127.0.0.1", "[::1]:25752", "localhost", "LOCALHOST.:1"):
        assert gate.host_allowed(Request("GET", "/", "", (("host", host),), b""), "127.0.0.1")


# -- extra_body ------------------------------------------------------------------------------------


async def test_extra_body_keys_are_refused_unless_the_row_lists_them(tmp_path: Path) -> None:
    body = stream_body(MODEL, config={"extra_body": {"n": 8, "logit_bias": {"1": 5}}})
    async with Simulator.running() as sim:
        refusing = gateway(sim, tmp_path)
        async with running(refusing, "h11") as origin, httpx.AsyncClient() as http:
            response, events = await post_stream(http, origin, body)
        assert response.status_code == 200
        error = error_of(events)
        assert (error["type"], error["parameter"]) == ("UnsupportedParameterError", "extra_body")
        assert "'n'" in error["message"] and "'logit_bias'" in error["message"]
        assert "extra_body_keys" in error["message"]
        assert sim.requests == []
        allowing = gateway(sim, tmp_path, row={"extra_body_keys": ["n", "logit_bias"]})
        async with running(allowing, "h11") as origin, httpx.AsyncClient() as http:
            _response, events = await post_stream(http, origin, body)
    assert events[-2]["event_type"] == "stop"
    sent = sim.requests[0].json
    assert (sent["n"], sent["logit_bias"]) == (8, {"1": 5})


async def test_a_listed_key_lets_only_itself_through(tmp_path: Path) -> None:
    body = stream_body(MODEL, config={"extra_body": {"n": 8, "seed": 1}})
    async with Simulator.running() as sim:
        gate = gateway(sim, tmp_path, row={"extra_body_keys": ["seed"]})
        async with running(gate, "h11") as origin, httpx.AsyncClient() as http:
            _response, events = await post_stream(http, origin, body)
    error = error_of(events)
    assert "'n'" in error["message"] and "'seed'" not in error["message"]
    assert sim.requests == []


# -- metrics (08 D75) ------------------------------------------------------------------------------


@pytest.mark.parametrize("show", [False, True])
async def test_metrics_show_error_texts_only_when_the_operator_says_so(
    show: bool, tmp_path: Path,
) -> None:
    async with Simulator.running() as sim:
        sim.script.append(Reply(status=400, message="another caller's secret prompt"))
        gate = gateway(sim, tmp_path, metrics={"show_errors": show})
        async with running(gate, "h11") as origin, httpx.AsyncClient() as http:
            _response, events = await post_stream(http, origin, stream_body(MODEL))
            metrics = (await http.get(origin + "/v1/metrics", headers=AUTH)).json()
    assert "another caller's secret prompt" in error_of(events)["message"]
    [entry] = metrics["errors"]
    [model] = metrics["models"]
    assert entry["model"] == MODEL and model["last_outcome"] == "failure"
    if show:
        assert "another caller's secret prompt" in entry["message"]
        assert model["last_error"] == entry["message"]
    else:
        assert "message" not in entry and model["last_error"] is None
        assert "secret" not in json.dumps(metrics)


# -- the configuration ---------------------------------------------------------------------------


ROW = {"model_id": "gpt-5", "api_key": "sk-row", "server_model_id": "fast"}


def test_the_gateway_settings_have_safe_defaults() -> None:
    settings = resolve_config({"models": [ROW]})
    assert settings.remote_images == GATEWAY_IMAGES == RemoteImages(enabled=False,
                                                                    allow_private=False)
    assert settings.show_errors is False and settings.models[0].extra_body_keys == ()
    enabled = resolve_config({"models": [ROW], "remote_images": {"enabled": True}})
    assert enabled.remote_images == RemoteImages(allow_private=False)
    full = resolve_config({
        "models": [{**ROW, "extra_body_keys": ["n"]}],
        "metrics": {"show_errors": True},
        "remote_images": {"enabled": True, "allow_private": True, "allow_hosts": ["img.lan"],
                          "max_image_bytes": 1000, "max_total_bytes": 5000},
    })
    assert full.show_errors and full.models[0].extra_body_keys == ("n",)
    assert full.remote_images == RemoteImages(allow_hosts=["img.lan"], max_image_bytes=1000,
                                              max_total_bytes=5000)


INVALID: list[tuple[dict[str, Any], str]] = [
    ({"key": [{"name": "a", "key": "k"}]},  # "keys" misspelt must never run an open server
     "the configuration has unknown keys ['key']; the keys are models, api_keys, keys, store, "
     "metrics, remote_images, connections, telemetry, access_log, host, port."),
    ({"api_key": ["k"]}, "the configuration has unknown keys ['api_key']; the keys are models, "
     "api_keys, keys, store, metrics, remote_images, connections, telemetry, access_log, "
     "host, port."),
    ({"metrics": True}, "metrics must be an object."),
    ({"metrics": {"show_error": True}},
     "metrics has unknown keys ['show_error']; the keys are show_errors, token."),
    ({"metrics": {"show_errors": "yes"}}, "metrics.show_errors must be true or false."),
    ({"remote_images": []}, "remote_images must be an object."),
    ({"remote_images": {"enable": True}},
     "remote_images has unknown keys ['enable']; the keys are enabled, allow_private, "
     "allow_hosts, max_image_bytes, max_total_bytes."),
    ({"remote_images": {"enabled": 1}}, "remote_images.enabled must be true or false."),
    ({"remote_images": {"allow_hosts": "img.lan"}},
     "remote_images.allow_hosts must be a list of non-empty strings."),
    ({"remote_images": {"allow_hosts": [""]}},
     "remote_images.allow_hosts must be a list of non-empty strings."),
    ({"remote_images": {"max_image_bytes": 0}},
     "remote_images.max_image_bytes must be a whole number of bytes, at least 1."),
    ({"remote_images": {"max_total_bytes": 1.5}},
     "remote_images.max_total_bytes must be a whole number of bytes, at least 1."),
    ({"connections": {"max_connections": 5}},
     "connections has unknown keys ['max_connections']; the keys are max, head_timeout_s, "
     "body_timeout_s."),
    ({"connections": {"max": 2.5}}, "connections.max must be a positive whole number."),
    ({"connections": {"head_timeout_s": 0}},
     "connections.head_timeout_s must be a positive number of seconds."),
    ({"connections": {"body_timeout_s": "60"}},
     "connections.body_timeout_s must be a positive number of seconds."),
    ({"models": [{**ROW, "extra_body_keys": "n"}]},
     "models[0].extra_body_keys must be a list of non-empty strings."),
    ({"models": [{**ROW, "extra_body_keys": ["n", 3]}]},
     "models[0].extra_body_keys must be a list of non-empty strings."),
]


@pytest.mark.parametrize(("changes", "message"), INVALID)
def test_each_invalid_gateway_setting_stops_the_start(changes: dict[str, Any],
                                                      message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Gateway({"models": [ROW], **changes})
    assert str(raised.value) == message
