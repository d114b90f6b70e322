"""``python -m mmsp_io simulate`` run in a subprocess as a user runs it (issue 26 item 1,
08 D78): it prints each protocol's base URL and the key, serves the canned agent turn, and
stops cleanly on SIGINT or SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import adapters
from mmsp_core.model import TextDone
from mmsp_io.simulator import DEFAULT_PORT, simulated_protocols

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_port_is_the_simulators_and_the_options_are_offered() -> None:
    shown = subprocess.run([sys.executable, "-m", "mmsp_io", "simulate", "--help"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60, check=True).stdout
    assert "--host" in shown and "--port" in shown
    assert DEFAULT_PORT == 25753  # 08 D78
    assert "default 25753" in " ".join(shown.split())


@pytest.mark.parametrize(("stop", "backend"), [(signal.SIGINT, "asyncio"),
                                               (signal.SIGTERM, "trio")])
def test_simulate_announces_every_base_url_and_the_key_serves_and_stops(
    stop: signal.Signals, backend: str
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CLIENT_TYPE"}
    process = subprocess.Popen(
        [sys.executable, "-m", "mmsp_io", "simulate", "--port", "0", "--backend", backend],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("Provider simulator at http://127.0.0.1:"), first
        origin = first.split(" at ", 1)[1].split()[0]
        urls = {}
        for _ in simulated_protocols():
            protocol, url, *_ = process.stdout.readline().split()
            urls[protocol] = url
        key_line = process.stdout.readline()
        assert set(urls) == set(simulated_protocols())
        assert urls["openai-chat"] == origin + "/v1"
        assert key_line.startswith("key: ")
        key = key_line.removeprefix("key: ").strip()
        answer = httpx.post(
            urls["openai-chat"] + "/chat/completions", timeout=10,
            headers={"authorization": f"Bearer {key}"},
            json={"model": "sim-model", "stream": True,
                  "messages": [{"role": "user", "content": "Hello"}]},
        )
        assert answer.status_code == 200
        done = [item for event in adapters.decode("openai-chat", [answer.content])
                for item in event.content_items if isinstance(item, TextDone)]
        assert done == [TextDone("You asked: Hello")]  # the canned agent turn
        process.send_signal(stop)
        out, err = process.communicate(timeout=10)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 0, err
    assert out == "Shutting down\n"
    assert err == ""
