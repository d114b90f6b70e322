"""``python -m mmsp_io serve`` run in a subprocess as a user runs it (spec 07 §2, issue 11)."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio.from_thread
import httpx
import pytest
from serverkit import TOKEN, parse_sse, row, stream_body

from mmsp_core.model import TextDone
from mmsp_io import simulator

ROOT = Path(__file__).resolve().parents[2]


def environment(**variables: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if k not in ("MMSP_SERVER_CONFIG", "CLIENT_TYPE")} | variables


def run(*args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mmsp_io", *args], cwd=ROOT,
                          env=environment(**variables), capture_output=True, text=True,
                          timeout=60, check=False)


@contextmanager
def simulator_in_a_thread(reply: simulator.Reply) -> Iterator[simulator.Simulator]:
    """The provider simulator on its own event loop, for a server run as a subprocess."""
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(simulator.Simulator.running(reply)) as sim,
    ):
        yield sim


def test_serve_is_offered() -> None:
    assert "serve" in run("--help").stdout
    assert "--config" in run("serve", "--help").stdout


def test_without_a_configuration_it_says_so_and_exits_2() -> None:
    result = run("serve")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == ("mmsp-sansio serve: no server configuration: pass --config FILE "
                             "or set MMSP_SERVER_CONFIG\n")


def test_an_invalid_configuration_names_its_row_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "server.json"
    path.write_text(json.dumps({"models": [
        {"model_id": "gpt-5", "api_key": "k", "server_model_id": "a"},
        {"model_id": "gpt-5", "api_key": "${UNSET_KEY_VARIABLE}", "server_model_id": "b"},
    ]}))
    by_variable = run("serve", MMSP_SERVER_CONFIG=str(path))
    unknown_type = tmp_path / "unknown.json"
    unknown_type.write_text(json.dumps({"models": [
        {"model_id": "x", "api_key": "k", "server_model_id": "a", "client_type": "nope"}]}))
    by_option = run("serve", "--config", str(unknown_type))
    missing = run("serve", "--config", str(tmp_path / "absent.json"))
    assert by_variable.returncode == by_option.returncode == missing.returncode == 2
    assert by_variable.stderr == (f"mmsp-sansio serve: {path}: models[1].api_key references "
                                  "$UNSET_KEY_VARIABLE, which is not set in the environment.\n")
    assert by_option.stderr.startswith(
        f"mmsp-sansio serve: {unknown_type}: models[0] ('a'): RoutingError: ")
    assert "cannot read the server configuration" in missing.stderr


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_serve_announces_itself_streams_and_stops_on_sigterm(
    backend: str, tmp_path: Path
) -> None:
    reply = simulator.Reply(items=[TextDone(text="served")])
    with simulator_in_a_thread(reply) as sim:
        path = tmp_path / "server.json"
        path.write_text(json.dumps({"models": [row(sim, "openai-chat")],
                                    "api_keys": ["$SERVER_TOKEN"]}))
        process = subprocess.Popen(
            [sys.executable, "-m", "mmsp_io", "serve", "--config", str(path), "--port", "0",
             "--backend", backend, "--grace", "2"],
            cwd=ROOT, env=environment(SERVER_TOKEN=TOKEN), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        try:
            assert process.stdout is not None
            first = process.stdout.readline()
            second = process.stdout.readline()
            assert first.startswith("Starting MMSP server at http://127.0.0.1:"), first
            assert first.rstrip().endswith("/v1")
            assert second == "Serving models: openai-chat\n"
            base = first.split(" at ", 1)[1].strip()
            answer = httpx.post(base + "/stream", json=stream_body("openai-chat"),
                                headers={"authorization": f"Bearer {TOKEN}"}, timeout=10)
            events = parse_sse(answer.content)
            assert events[-1] == "[DONE]"
            assert events[-2]["finish_reason"] == "stop"
            process.send_signal(signal.SIGTERM)
            out, err = process.communicate(timeout=10)
        finally:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert "Shutting down" in out
    [access] = err.splitlines()  # the access log goes to stderr by default, one line a request
    assert json.loads(access)["outcome"] == "success"
    assert TOKEN not in access and sim.api_key not in access


def test_an_open_server_is_announced(tmp_path: Path) -> None:
    with simulator_in_a_thread(simulator.Reply()) as sim:
        path = tmp_path / "server.json"
        path.write_text(json.dumps({"models": [row(sim, "openai-chat")]}))
        process = subprocess.Popen(
            [sys.executable, "-m", "mmsp_io", "serve", "--config", str(path), "--port", "0"],
            cwd=ROOT, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        try:
            assert process.stdout is not None
            lines = [process.stdout.readline() for _ in range(3)]
            process.send_signal(signal.SIGINT)
            process.communicate(timeout=10)
        finally:
            process.kill()
            process.wait()
    assert lines[2] == "Open server: api_keys is empty, every request is accepted\n"
    assert process.returncode == 0


def test_serve_tunes_the_collector_once_its_gateway_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``serve`` freezes the objects of its start and collects the youngest generation every
    ``SERVER_GC_THRESHOLD`` allocations (issue 25: a request's many short-lived objects);
    checked in this process, with the server's run replaced, and the collector restored."""
    from mmsp_io import cli, server

    path = tmp_path / "server.json"
    path.write_text(json.dumps({"models": [{"server_model_id": "m", "model_id": "gpt-5",
                                            "api_key": "k", "base_url": "http://127.0.0.1:9"}]}))
    seen: list[tuple[int, int]] = []

    async def serving(*args: object, **kwargs: object) -> None:
        seen.append((gc.get_threshold()[0], gc.get_freeze_count()))

    threshold = gc.get_threshold()
    monkeypatch.setattr(server, "run", serving)
    try:
        assert cli.main(["serve", "--config", str(path)]) == 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
    assert len(seen) == 1
    assert seen[0][0] == cli.SERVER_GC_THRESHOLD != threshold[0]
    assert seen[0][1] > 0
