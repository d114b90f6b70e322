"""The ``python -m mmsp_io`` command, run in a subprocess as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio.from_thread
import pytest

import adapters
from mmsp_core.model import FinishReason, TextDone, ThinkingDone, ToolCallDone, UsageMetadata
from mmsp_core.sse import SSEDecoder
from mmsp_io import simulator

ROOT = Path(__file__).resolve().parents[2]
#: Provider key variables unset for the subprocess, so ``chat`` can never reach a provider.
KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "CLIENT_TYPE")


def run(*args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARIABLES} | variables
    return subprocess.run(
        [sys.executable, "-m", "mmsp_io", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


#: What the demo prints for a generation protocol: an agent loop with one tool call.
AGENT_TURN = [
    "user> What is the weather in Paris?",
    "thinking> The user asks: 'What is the weather in Paris?'. I will call get_weather.",
    "tool_call> get_weather(id=",
    '[tool_call.done] get_weather {"city": "Paris"}',
    "[stop] finish_reason=tool_call usage: prompt=",
    'tool> get_weather({"city": "Paris"}) -> 18 degrees C, light rain',
    "text> Here is what I found: 18 degrees C, light rain",
    "[text.done] 46 characters",
    "[stop] finish_reason=stop usage: prompt=",
]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_demo_runs_an_agent_loop_for_every_wire_protocol(backend: str) -> None:
    result = run("demo", "--backend", backend, "--delay", "0")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    *sections, bedrock, vertex, gateway = result.stdout.split("\n== ")[1:]
    protocols = simulator.simulated_protocols()
    assert len(sections) == len(protocols) >= 3
    # The Bedrock turn (08 D72): signed requests to the simulator, an event-stream answer.
    assert bedrock.startswith("Anthropic Messages on Amazon Bedrock: client anthropic-official, "
                              "bedrock://us-east-1 at http://127.0.0.1:")
    assert_in_order(bedrock, AGENT_TURN, "bedrock")
    # The Vertex AI turn (08 D72): a key made for the demo, tokens from the simulator.
    assert vertex.startswith("Gemini generateContent on Vertex AI: client google-genai, "
                             "http://127.0.0.1:")
    assert_in_order(vertex, AGENT_TURN, "vertex")
    first = adapters.resolve(protocols[0])[1].traits.display_name
    assert gateway.startswith("MMSP server at http://127.0.0.1:")
    assert gateway.splitlines()[0].endswith(f"in front of {first}: client mmsp")
    assert_in_order(gateway, AGENT_TURN, "mmsp")
    for protocol, section in zip(protocols, sections, strict=True):
        spec, record, _ = adapters.resolve(protocol)
        assert f"client {spec.client_type}," in section.splitlines()[0]
        if not isinstance(record.new_decoder(), SSEDecoder):  # an embedding call (02 §10)
            expected_in_order = [
                "user> What is the weather in Paris?",
                "embedding> <8 floats>",
                "[embedding.done] 8 dimensions",
                "[stop] finish_reason=stop usage: prompt=",
            ]
        else:
            expected_in_order = AGENT_TURN
        assert_in_order(section, expected_in_order, protocol)


def assert_in_order(section: str, expected_in_order: list[str], name: str) -> None:
    """Each expected line appears in ``section``, in this order."""
    position = 0
    for expected in expected_in_order:
        found = section.find(expected, position)
        assert found >= 0, f"{name}: {expected!r} missing after {section[position:]!r}"
        position = found + len(expected)




def test_replay_prints_the_unified_stream_of_a_recorded_body(tmp_path: Path) -> None:
    items = [
        ThinkingDone(thinking="Let me look.", fidelity={"signature": "sig"}),
        ToolCallDone(name="lookup", tool_call_id="toolu_9", arguments={"q": "x"}),
    ]
    usage = UsageMetadata(
        cached_tokens=1, prompt_tokens=20, thoughts_tokens=None, response_tokens=7
    )
    body = tmp_path / "body.sse"
    body.write_bytes(adapters.render("ant-messages", items, usage, FinishReason.TOOL_CALL))
    result = run("replay", "--source", "anthropic-official", "--chunk-size", "5", str(body))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "thinking> Let me look.",
        "  [thinking.done] 12 characters, fidelity ['signature']",
        'tool_call> lookup(id=toolu_9) {"q":"x"}',
        '  [tool_call.done] lookup {"q": "x"} (id=toolu_9)',
        "  [stop] finish_reason=tool_call usage: prompt=20 cached=1 thoughts=- response=7",
    ]


@pytest.mark.parametrize("size", ["-1", "0", "five"])
def test_replay_refuses_a_chunk_size_below_one(size: str, tmp_path: Path) -> None:
    body = tmp_path / "body.sse"
    body.write_bytes(adapters.render("openai-chat", [TextDone(text="Hello")],
                                     UsageMetadata(prompt_tokens=3), FinishReason.STOP))
    result = run("replay", "--source", "openai-chat", "--chunk-size", size, str(body))
    assert result.returncode == 2
    assert result.stdout == ""
    assert "argument --chunk-size: " in result.stderr
    assert "Traceback" not in result.stderr


def test_replay_reports_a_broken_stream_after_what_it_decoded(tmp_path: Path) -> None:
    usage = UsageMetadata(prompt_tokens=3, response_tokens=2)
    whole = adapters.render("openai-chat", [TextDone(text="Hello")], usage, FinishReason.STOP)
    body = tmp_path / "cut.sse"
    body.write_bytes(whole[: whole.index(b'"finish_reason":"stop"')])  # cut before the finish
    result = run("replay", "--source", "openai-chat", str(body))
    assert result.returncode == 1
    assert result.stdout.splitlines() == ["text> Hello", "  [text.done] 5 characters"]
    assert result.stderr.startswith("mmsp-sansio replay: IncompleteStreamError: ")
    assert "Traceback" not in result.stderr


def test_chat_without_a_key_says_which_variable_to_set() -> None:
    result = run("chat", "--model", "claude-sonnet-5", "Hello")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("mmsp-sansio chat: ApiKeyRequiredError: ")
    assert "ANTHROPIC_API_KEY" in result.stderr
    assert "Traceback" not in result.stderr



@contextmanager
def simulator_in_a_thread(reply: simulator.Reply, api_key: str) -> Iterator[simulator.Simulator]:
    """The provider simulator on its own event loop, for a command run as a subprocess."""
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(
            simulator.Simulator.running(reply, api_key=api_key)
        ) as sim,
    ):
        yield sim


def chat(sim: simulator.Simulator, *options: str) -> subprocess.CompletedProcess[str]:
    return run("chat", "--model", "sim-model", "--client-type", "openai-chat",
               "--base-url", sim.base_url("openai-chat"), *options, "Hi")


def test_chat_with_a_base_url_takes_its_key_as_api_key() -> None:
    reply = simulator.Reply(items=[TextDone(text="Hello there")])
    with simulator_in_a_thread(reply, "sk-cli-key") as sim:
        result = chat(sim, "--api-key", "sk-cli-key")
        missing = chat(sim)
    assert result.returncode == 0, result.stderr
    assert "text> Hello there" in result.stdout.splitlines()
    assert missing.returncode == 1
    assert missing.stderr.startswith("mmsp-sansio chat: ApiKeyRequiredError: ")
    assert "--api-key" in missing.stderr and len(missing.stderr.splitlines()) == 1


def test_a_failure_mid_stream_ends_the_line_of_text_first() -> None:
    items = [TextDone(text="Hello there, a long answer")]
    with simulator_in_a_thread(simulator.Reply(items=items, error_after=3), "k") as sim:
        result = chat(sim, "--api-key", "k")
    assert result.returncode == 1
    assert result.stdout.startswith("text> ") and result.stdout.endswith("\n")
    assert result.stderr.startswith("mmsp-sansio chat: ProviderStreamError: ")
    assert len(result.stderr.splitlines()) == 1


def test_a_key_in_a_bad_base_url_does_not_show_on_stderr() -> None:
    key = "sk-cli-Zq7Xw2Vb9Nm4Lk8Jh3Gf6Ds1Ap0Oi5Uy"
    result = run("chat", "--model", "gpt-6", "--base-url", f"ftp://host/{key}", "--api-key", key,
                 "Hi")
    assert result.returncode == 1
    assert result.stderr.startswith("mmsp-sansio chat: UnsupportedParameterError: ")
    assert not any(key[8:][i : i + 12] in result.stderr for i in range(len(key) - 19))


def test_replay_of_a_deeply_nested_body_is_one_line_and_debug_shows_the_traceback(
    tmp_path: Path
) -> None:
    body = tmp_path / "deep.sse"
    body.write_bytes(b"data: " + b"[" * 100_000 + b"\n\n")
    result = run("replay", "--source", "openai-chat", str(body))
    assert result.returncode == 1
    assert result.stderr.startswith("mmsp-sansio replay: ")
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    debug = run("replay", "--debug", "--source", "openai-chat", str(body))
    assert debug.returncode == 1 and "Traceback" in debug.stderr
    assert debug.stderr.splitlines()[-1] == result.stderr.strip()


@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
def test_replay_prints_text_the_terminal_cannot_encode(encoding: str, tmp_path: Path) -> None:
    """A lone surrogate in the answer, and text an ASCII terminal cannot show: escaped."""
    usage = UsageMetadata(prompt_tokens=3, response_tokens=2)
    whole = adapters.render("openai-chat", [TextDone(text="Hi X")], usage, FinishReason.STOP)
    body = tmp_path / "surrogate.sse"
    body.write_bytes(whole.replace(b"Hi X", b"Hi \\ud83d caf\\u00e9"))
    result = run("replay", "--source", "openai-chat", str(body), PYTHONIOENCODING=encoding)
    assert "Traceback" not in result.stderr
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("text> Hi ")


def test_a_missing_file_and_a_missing_command_are_usage_errors(tmp_path: Path) -> None:
    missing = run("replay", "--source", "openai-chat", str(tmp_path / "nope.sse"))
    assert missing.returncode == 2
    assert "No such file" in missing.stderr
    assert run().returncode == 2


def test_the_console_script_is_the_same_command() -> None:
    script = Path(sys.executable).with_name("mmsp-sansio")
    if not script.exists():
        pytest.skip("the package is not installed with its console script")
    result = subprocess.run([script, "replay"], capture_output=True, text=True, check=False)
    assert (result.returncode, result.stderr) == (2, run("replay").stderr)


@pytest.mark.parametrize(
    "raised",
    [
        KeyboardInterrupt(),
        BaseExceptionGroup("tasks", [KeyboardInterrupt()]),
        BaseExceptionGroup("tasks", [KeyboardInterrupt(), OSError("connection reset")]),
    ],
    ids=["alone", "grouped", "grouped-with-a-task-error"],
)
def test_ctrl_c_exits_130_even_grouped_with_what_cancelled_tasks_raised(
    raised: BaseException, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Under trio a Ctrl-C while the trace page answers a request arrives in an exception
    # group (seen once in CI: exit 1 instead of 130).
    from mmsp_io import cli

    def interrupted(*args: object) -> None:
        raise raised

    monkeypatch.setattr(cli.traces, "run", interrupted)
    assert cli.main(["traces", "--dir", str(tmp_path)]) == 130


def test_a_group_without_ctrl_c_is_not_taken_for_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from mmsp_io import cli

    def failing(*args: object) -> None:
        raise BaseExceptionGroup("tasks", [SystemExit(3)])

    monkeypatch.setattr(cli.traces, "run", failing)
    with pytest.raises(BaseExceptionGroup):
        cli.main(["traces", "--dir", str(tmp_path)])
