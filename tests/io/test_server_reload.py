"""``SIGHUP`` reloads the configuration of ``python -m mmsp_io serve`` (issue 25 item 7,
``mmsp_io.server.reload``): new requests see the new file, a bad file is announced and the old
one kept, and a stream in flight across the reload completes on the gateway it began on."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import httpx
import pytest
from serverkit import AUTH, TOKEN, parse_sse, row, stream_body
from test_server_cli import ROOT, environment, simulator_in_a_thread

from mmsp_io import simulator

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP here")


def _write(path: Path, sim: simulator.Simulator, name: str) -> None:
    path.write_text(json.dumps({"models": [{**row(sim, "openai-chat"), "server_model_id": name}],
                                "api_keys": [TOKEN], "access_log": "off"}))


def _until(stdout: IO[str], prefix: str) -> str:
    """The next line of ``stdout`` starting with ``prefix`` (a bounded number of lines)."""
    for _ in range(20):
        line = stdout.readline()
        if line.startswith(prefix) or not line:
            return line
    return ""


def _status(base: str, model: str) -> tuple[int, Any]:
    answer = httpx.post(f"{base}/stream", json=stream_body(model), headers=AUTH, timeout=10)
    events = parse_sse(answer.content) if answer.status_code == 200 else None
    return answer.status_code, events


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_sighup_reloads_keeps_the_old_file_when_bad_and_lets_streams_finish(
    backend: str, tmp_path: Path
) -> None:
    words = "one two three four five six"
    with simulator_in_a_thread(simulator.Reply.text(words, fragment_size=4)) as sim:
        # The first stream is slow enough to be running when the file is reloaded; the
        # requests after it are answered at once.
        sim.script.append(simulator.Reply.text(words, fragment_size=4, delay=0.3))
        path = tmp_path / "server.json"
        _write(path, sim, "first")
        process = subprocess.Popen(
            [sys.executable, "-m", "mmsp_io", "serve", "--config", str(path), "--port", "0",
             "--backend", backend, "--grace", "2"],
            cwd=ROOT, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        try:
            assert process.stdout is not None
            started = _until(process.stdout, "Starting MMSP server at ")
            base = started.split(" at ", 1)[1].strip()
            in_flight: dict[str, bytes] = {}
            began = threading.Event()

            def stream() -> None:
                with httpx.stream("POST", f"{base}/stream", json=stream_body("first"),
                                  headers=AUTH, timeout=10) as answer:
                    chunks = answer.iter_bytes()
                    body = next(chunks)
                    began.set()
                    in_flight["body"] = body + b"".join(chunks)

            reader = threading.Thread(target=stream)
            reader.start()
            assert began.wait(10)

            _write(path, sim, "second")
            process.send_signal(signal.SIGHUP)
            assert _until(process.stdout, "Reloaded") == "Reloaded: serving models: second\n"
            crossed = reader.is_alive()  # the stream began before the reload, ends after it
            new_row, old_row = _status(base, "second"), _status(base, "first")

            path.write_text("{not json")
            process.send_signal(signal.SIGHUP)
            failed = _until(process.stdout, "Reload failed")
            kept = _status(base, "second")

            reader.join(10)
            process.send_signal(signal.SIGTERM)
            out, err = process.communicate(timeout=10)
        finally:
            process.kill()
            process.wait()
    assert crossed
    assert new_row[0] == 200 and new_row[1][-2]["finish_reason"] == "stop"
    assert old_row[0] == 404
    assert failed.startswith(f"Reload failed, the configuration in use stays: {path}")
    assert kept[0] == 200 and kept[1][-2]["finish_reason"] == "stop"
    events = parse_sse(in_flight["body"])
    assert events[-1] == "[DONE]" and events[-2]["finish_reason"] == "stop"
    assert "".join(item["text"] for event in events[:-1] for item in event["content_items"]
                   if item["type"] == "text.delta") == "one two three four five six"
    assert process.returncode == 0, err
    assert "Shutting down" in out
