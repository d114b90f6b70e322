"""The playground over HTTP on loopback (07 §8, 08 D78): its page and protections, the model
sources, the chat stream with thinking, tool calls and their results, abort, clear, the
bounded sessions, and the traces its calls write, shown by the trace page it mounts."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tomllib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from mmsp_io import cli
from mmsp_io.httpserver import HTTPServer
from mmsp_io.playground import MAX_TOOL_ROUNDS, Playground
from mmsp_io.playground._sessions import COOKIE
from mmsp_io.server import Gateway, serve
from mmsp_io.simulator import Reply, simulated_protocols

pytestmark = pytest.mark.anyio

WEATHER_TOOL = {
    "name": "get_weather",
    "description": "The weather of a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    "result": "18 degrees C, light rain",
}


@pytest.fixture
async def playground(tmp_path: Path) -> AsyncIterator[tuple[Playground, HTTPServer]]:
    page = Playground(tmp_path / "traces")
    async with page.running() as server:
        yield page, server


@pytest.fixture
async def http(playground: tuple[Playground, HTTPServer]) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=playground[1].url, timeout=10) as client:
        yield client


async def simulator_model(http: httpx.AsyncClient, protocol: str = "openai-chat") -> Any:
    listed = (await http.post("/api/models", json={"source": "simulator"})).json()["models"]
    return next(model for model in listed if model["protocol"] == protocol)


async def chat(http: httpx.AsyncClient, message: str, model: Mapping[str, Any],
               config: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Send one chat message; the frames of the answer, each ``data:`` JSON."""
    body = {"message": message, "model": model, "config": config or {}}
    async with http.stream("POST", "/api/chat", json=body) as answer:
        assert answer.status_code == 200, await answer.aread()
        assert answer.headers["content-type"] == "text/event-stream; charset=utf-8"
        return [json.loads(line.removeprefix("data: ")) async for line in answer.aiter_lines()
                if line.startswith("data: ")]


def items_of(frames: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [item for frame in frames for item in frame.get("content_items", ())
            if item["type"] == kind]


# -- the page and its protections ----------------------------------------------------------------


async def test_the_page_and_its_files_carry_the_trace_pages_policy(
    http: httpx.AsyncClient,
) -> None:
    home, script, style = [await http.get(path) for path in ("/", "/page.js", "/page.css")]
    markdown = await http.get("/tracer/markdown.js")
    assert [r.status_code for r in (home, script, style, markdown)] == [200] * 4
    assert b'<script src="/tracer/markdown.js"' in home.content
    for answer in (home, script, style):
        policy = answer.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src 'self'" in policy
        assert answer.headers["x-content-type-options"] == "nosniff"
    assert (await http.get("/nothing")).status_code == 404


async def test_a_loopback_playground_answers_only_a_loopback_host(
    playground: tuple[Playground, HTTPServer],
) -> None:
    url = playground[1].url
    async with httpx.AsyncClient() as client:
        for path in ("/", "/tracer/api/traces"):
            refused = await client.get(url + path, headers={"host": "rebound.example"})
            assert refused.status_code == 403
            assert refused.json() == {"error": "The Host header names no loopback host."}


@pytest.mark.parametrize(("method", "headers", "body", "status"), [
    ("GET", {}, b"", 405),
    ("POST", {"content-type": "text/plain"}, b"{}", 415),  # a form another site may send
    ("POST", {"content-type": "application/json", "origin": "http://evil.example"}, b"{}", 403),
    ("POST", {"content-type": "application/json"}, b"[1, 2]", 400),
    ("POST", {"content-type": "application/json"}, b"\xff", 400),
    ("POST", {"content-type": "application/json"}, b"x" * (1024 * 1024 + 1), 413),
])
async def test_the_api_takes_only_json_posts_of_its_own_origin(
    http: httpx.AsyncClient, method: str, headers: dict[str, str], body: bytes, status: int,
) -> None:
    answer = await http.request(method, "/api/chat", headers=headers, content=body)
    assert answer.status_code == status
    if status != 413:  # the server core's own refusal
        assert isinstance(answer.json()["error"], str)


async def test_the_own_origin_is_accepted(http: httpx.AsyncClient) -> None:
    origin = str(http.base_url).rstrip("/")
    answer = await http.post("/api/abort", json={}, headers={"origin": origin})
    assert answer.json() == {"status": "idle"}


@pytest.mark.parametrize(("body", "message"), [
    ({"model": {}}, "The message must be a non-empty string."),
    ({"message": "hi", "model": []}, "model and config must be JSON objects."),
    ({"message": "hi", "model": {"source": "simulator"}}, "Pick a model first."),
    ({"message": "hi", "model": {"source": "elsewhere", "id": "m"}}, "not 'elsewhere'"),
    ({"message": "hi", "model": {"source": "simulator", "id": "m", "protocol": "nope"}},
     "The simulator serves no protocol 'nope'."),
    ({"message": "hi", "model": {"source": "catalog", "id": "gpt-x", "client_type": "openai",
                                 "base_url": "https://api.openai.com/v1"}},
     "gpt-x is no catalog model whose key is in the environment."),
    ({"message": "hi", "model": {"source": "gateway", "id": "m", "base_url": "ftp://x"}},
     "A gateway's URL is an http(s) URL"),
    ({"message": "hi", "model": {"source": "simulator", "id": "m", "protocol": "openai-chat"},
      "config": {"tools": {"name": "x"}}}, "tools must be a JSON list of objects."),
])
async def test_a_bad_chat_request_is_refused_before_any_stream(
    http: httpx.AsyncClient, body: dict[str, Any], message: str,
) -> None:
    answer = await http.post("/api/chat", json=body)
    assert answer.status_code == 400
    assert answer.headers["content-type"] == "application/json; charset=utf-8"
    assert message in answer.json()["error"]


# -- models ------------------------------------------------------------------------------------


async def test_the_simulator_offers_a_model_per_protocol(
    playground: tuple[Playground, HTTPServer], http: httpx.AsyncClient,
) -> None:
    models = (await http.post("/api/models", json={"source": "simulator"})).json()["models"]
    assert [m["protocol"] for m in models] == list(simulated_protocols())
    assert all(m["source"] == "simulator" and m["label"] for m in models)


async def test_the_catalog_offers_the_models_whose_key_is_in_the_environment(
    http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key-0123456789")
    models = (await http.post("/api/models", json={"source": "catalog"})).json()["models"]
    assert models and {m["client_type"] for m in models} == {"openai-official"}
    assert "sk-test" not in json.dumps(models)  # the key stays on the server
    monkeypatch.delenv("OPENAI_API_KEY")
    names = {m["client_type"] for m in
             (await http.post("/api/models", json={"source": "catalog"})).json()["models"]}
    assert "openai-official" not in names


async def test_a_gateway_lists_its_models_and_answers_a_chat(
    playground: tuple[Playground, HTTPServer], http: httpx.AsyncClient,
) -> None:
    sim = playground[0].simulator
    assert sim is not None
    row = {"server_model_id": "team-model", "model_id": "sim-model", "api_key": sim.api_key,
           "base_url": sim.base_url("openai-chat"), "client_type": "openai-chat"}
    async with serve(Gateway({"models": [row], "api_keys": ["gw-token-0123456789"]}),
                     host="127.0.0.1", port=0) as gateway:
        base_url = f"{gateway.url}/v1"
        refused = await http.post("/api/models", json={"source": "gateway",
                                                       "base_url": base_url,
                                                       "api_key": "gw-wrong-0123456789abc"})
        listed = await http.post("/api/models", json={"source": "gateway", "base_url": base_url,
                                                      "api_key": "gw-token-0123456789"})
        assert refused.status_code == 400
        assert "gw-wrong-0123456789abc" not in refused.text
        [model] = listed.json()["models"]
        assert model["id"] == "team-model"
        frames = await chat(http, "Hello gateway", {**model, "api_key": "gw-token-0123456789"})
    assert items_of(frames, "text.done")[0]["text"] == "You asked: Hello gateway"
    assert frames[-1]["done"]["trace"].startswith("/tracer/trace/playground/")


async def test_an_unknown_source_or_an_unreachable_gateway_is_400(
    http: httpx.AsyncClient, refusing_port: int,
) -> None:
    unknown = await http.post("/api/models", json={"source": "nowhere"})
    unreachable = await http.post("/api/models", json={
        "source": "gateway", "base_url": f"http://127.0.0.1:{refusing_port}/v1"})
    assert unknown.status_code == unreachable.status_code == 400
    assert "ProviderConnectionError" not in unreachable.json()["error"]  # said, not named
    assert unreachable.json()["error"]


# -- the chat stream ---------------------------------------------------------------------------


async def test_a_turn_streams_thinking_a_tool_call_its_result_and_the_answer(
    playground: tuple[Playground, HTTPServer], http: httpx.AsyncClient,
) -> None:
    model = await simulator_model(http)
    frames = await chat(http, "What is the weather in Paris?", model,
                        {"tools": [WEATHER_TOOL], "thinking_level": "low"})
    assert COOKIE in http.cookies
    thinking, = items_of(frames, "thinking.done")
    assert thinking["thinking"].startswith("The user asks")
    call, = items_of(frames, "tool_call.done")
    assert call["name"] == "get_weather" and call["arguments"] == {"city": "Paris"}
    assert items_of(frames, "thinking.delta") and items_of(frames, "tool_call.delta")
    results = [frame["tool_result"] for frame in frames if "tool_result" in frame]
    assert results == [{"type": "tool_result.done", "text": WEATHER_TOOL["result"],
                        "tool_call_id": call["tool_call_id"]}]
    answer, = items_of(frames, "text.done")
    assert answer["text"] == f"Here is what I found: {WEATHER_TOOL['result']}"
    stops = [frame for frame in frames if frame.get("event_type") == "stop"]
    assert [stop["finish_reason"] for stop in stops] == ["tool_call", "stop"]
    assert all(stop["usage_metadata"]["prompt_tokens"] > 0 for stop in stops)
    # The "result" key is the playground's: the model is never sent it.
    sim = playground[0].simulator
    assert sim is not None
    assert "result" not in json.dumps(sim.requests[0].json["tools"])

    link = frames[-1]["done"]["trace"]
    trace_id = link.removeprefix("/tracer/trace/")
    shown = (await http.get(f"/tracer/api/trace/{trace_id}")).json()
    assert (await http.get(link)).status_code == 200
    roles = [message["role"] for message in shown["trace"]["history"]]
    assert roles == ["user", "assistant", "user", "assistant"]  # the whole turn
    assert shown["trace"]["outcome"] == "stop"


async def test_a_tool_without_a_result_is_answered_with_a_note(http: httpx.AsyncClient) -> None:
    tool = {key: value for key, value in WEATHER_TOOL.items() if key != "result"}
    frames = await chat(http, "Weather in Lima?", await simulator_model(http), {"tools": [tool]})
    result, = [frame["tool_result"] for frame in frames if "tool_result" in frame]
    assert "no result" in result["text"]


async def test_a_model_that_keeps_calling_tools_is_stopped_after_the_rounds(
    playground: tuple[Playground, HTTPServer], http: httpx.AsyncClient,
) -> None:
    sim = playground[0].simulator
    assert sim is not None
    sim.script.extend([Reply.tool_call("get_weather", {"city": "Paris"})] * (MAX_TOOL_ROUNDS + 1))
    frames = await chat(http, "Loop", await simulator_model(http), {"tools": [WEATHER_TOOL]})
    assert len(items_of(frames, "tool_call.done")) == MAX_TOOL_ROUNDS
    assert "done" in frames[-1]


async def test_the_history_follows_the_session_across_models_and_clear_empties_it(
    playground: tuple[Playground, HTTPServer], http: httpx.AsyncClient,
) -> None:
    sim = playground[0].simulator
    assert sim is not None
    await chat(http, "First question", await simulator_model(http, "openai-chat"))
    await chat(http, "Second question", await simulator_model(http, "ant-messages"))
    second = json.dumps(sim.requests[-1].json)
    assert "First question" in second and "You asked: First question" in second
    async with httpx.AsyncClient(base_url=http.base_url) as stranger:  # another browser
        await chat(stranger, "Alone", await simulator_model(stranger))
    assert "First question" not in json.dumps(sim.requests[-1].json)

    history = (await http.post("/api/history", json={})).json()["messages"]
    assert [m["role"] for m in history] == ["user", "assistant"] * 2
    assert history[3]["content_items"][-1] == {"type": "text.done",
                                               "text": "You asked: Second question"}
    async with httpx.AsyncClient(base_url=http.base_url) as newcomer:  # no session yet
        assert (await newcomer.post("/api/history", json={})).json() == {"messages": []}

    cleared = await http.post("/api/clear", json={})
    assert cleared.json() == {"status": "cleared"}
    assert (await http.post("/api/history", json={})).json() == {"messages": []}
    await chat(http, "Third question", await simulator_model(http))
    assert "First question" not in json.dumps(sim.requests[-1].json)


async def test_a_failed_call_says_its_error_and_links_its_trace(
    playground: tuple[Playground, HTTPServer], http: httpx.AsyncClient,
) -> None:
    sim = playground[0].simulator
    assert sim is not None
    sim.script.append(Reply.error(400, message="no such thing <b>here</b>"))
    frames = await chat(http, "Fail please", await simulator_model(http))
    failure, = frames
    assert failure["type"] == "ProviderHTTPError"
    assert "no such thing <b>here</b>" in failure["error"]
    listing = (await http.get("/tracer/api/traces")).json()
    assert failure["trace"] == "/tracer/trace/" + listing["traces"][0]["id"]
    assert listing["traces"][0]["summary"]["outcome"] == "ProviderHTTPError"
    # The session's history has no trace of the failed turn.
    await chat(http, "Again", await simulator_model(http))
    assert "Fail please" not in json.dumps(sim.requests[-1].json)


async def test_stop_aborts_the_call_in_flight(
    playground: tuple[Playground, HTTPServer], http: httpx.AsyncClient,
) -> None:
    sim = playground[0].simulator
    assert sim is not None
    model = await simulator_model(http)
    await chat(http, "Open a session", model)  # the cookie, so abort names the session
    sim.script.append(Reply.text("slow " * 400, delay=0.05))  # 25 s unless stopped
    frames: list[dict[str, Any]] = []
    first = anyio.Event()
    body = {"message": "Tell me a long story", "model": model, "config": {}}

    async def read() -> None:
        async with http.stream("POST", "/api/chat", json=body) as answer:
            async for line in answer.aiter_lines():
                if line.startswith("data: "):
                    frames.append(json.loads(line.removeprefix("data: ")))
                    first.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            await first.wait()
            busy = await http.post("/api/chat", json=body)
            assert busy.status_code == 409
            aborted = await http.post("/api/abort", json={})
    assert aborted.json() == {"status": "aborted"}
    assert frames[-1]["type"] == "AbortedError"
    assert frames[-1]["trace"] is None  # an aborted call writes no trace (08 D20)
    assert not any(frame.get("event_type") == "stop" for frame in frames)
    assert (await http.post("/api/abort", json={})).json() == {"status": "idle"}
    await chat(http, "After the stop", model)  # the session goes on
    assert "Tell me a long story" not in json.dumps(sim.requests[-1].json)


# -- bounds ------------------------------------------------------------------------------------


async def test_sessions_and_turns_are_bounded(tmp_path: Path) -> None:
    page = Playground(tmp_path, max_sessions=2, max_turns=1)
    async with page.running() as server:
        browsers = [httpx.AsyncClient(base_url=server.url) for _ in range(3)]
        try:
            model = await simulator_model(browsers[0])
            for browser in browsers:
                await chat(browser, "Hi", model)
            assert len(page.sessions) == 2
            # The first browser's session was evicted: it starts a new one.
            again = await browsers[0].post("/api/chat", json={"message": "Hi", "model": model})
            assert again.status_code == 200 and COOKIE in again.headers["set-cookie"]
            full = await browsers[2].post("/api/chat", json={"message": "More", "model": model})
            assert full.status_code == 409
            assert "clear it" in full.json()["error"]
        finally:
            for browser in browsers:
                await browser.aclose()


# -- the command -------------------------------------------------------------------------------


async def test_the_cli_serves_the_playground_until_interrupted(
    tmp_path: Path, anyio_backend: str,
) -> None:
    command = [sys.executable, "-m", "mmsp_io", "playground", "--dir", str(tmp_path),
               "--port", "0", "--backend", anyio_backend]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=_default_sigint)
    try:
        assert process.stdout is not None
        banner = await anyio.to_thread.run_sync(process.stdout.readline)
        assert banner.startswith("Playground at http://127.0.0.1:")
        url = banner.split()[2]
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            frames = await chat(client, "Hello", await simulator_model(client))
        assert items_of(frames, "text.done")[0]["text"] == "You asked: Hello"
        assert list(tmp_path.glob("playground/*.json"))
        process.send_signal(signal.SIGINT)
        try:  # a hang guard: the playground must stop on SIGINT
            code = await anyio.to_thread.run_sync(lambda: process.wait(timeout=30))
        except subprocess.TimeoutExpired:
            process.kill()
            pytest.fail(f"it did not stop on SIGINT: {process.communicate()[1][-3000:]}")
        assert code == 130
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_the_cli_defaults_to_port_25751(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["playground", "--help"])
    assert "default 25751" in capsys.readouterr().out


async def test_a_refused_chat_makes_no_session(
    playground: tuple[Playground, HTTPServer], http: httpx.AsyncClient,
) -> None:
    refused = await http.post("/api/chat", json={"message": "hi", "model": {"source": "x"}})
    assert refused.status_code == 400
    assert "set-cookie" not in refused.headers
    assert len(playground[0].sessions) == 0


def test_the_pages_files_ship_with_the_package() -> None:
    """Every static file of the trace page and the playground is package data, so an
    installed package serves them too."""
    root = Path(__file__).resolve().parents[2]
    shipped = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
                  ["package-data"]["mmsp_io"])
    static = {path.relative_to(root / "mmsp_io").as_posix()
              for package in ("traces", "playground")
              for path in (root / "mmsp_io" / package).iterdir()
              if path.suffix in (".html", ".css", ".js")}
    assert static <= shipped
    assert "playground/page.js" in static
