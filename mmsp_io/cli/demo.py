"""The ``demo`` command: an agent loop per simulated wire protocol, one on Amazon Bedrock, one on
Vertex AI (when the extra ``vertex`` is installed), then one through an MMSP server, against
the provider simulator on loopback (the package docstring)."""

from __future__ import annotations

import json
import os
from contextlib import aclosing
from typing import Any, Final

import adapters
from adapters.clients import VERTEX_EXTRA
from mmsp_core.model import (
    TextDone,
    ToolCallDone,
    ToolResultDone,
    ToolSchema,
    UniConfig,
    UniMessage,
)

from .. import simulator
from ..client import AutoLLMClient
from ..simulator import bedrock
from .printer import StreamPrinter

_DEMO_QUESTION: Final = "What is the weather in Paris?"
_DEMO_KEY: Final = "sk-demo-not-a-real-key"
#: The bearer token the demo's MMSP server accepts (07 §3).
_DEMO_GATEWAY_TOKEN: Final = "mmsp-demo-token"
#: The demo's local tool: a weather lookup table.
_WEATHER: Final = {
    "Paris": "18 degrees C, light rain",
    "Tokyo": "24 degrees C, clear sky",
    "Lima": "16 degrees C, overcast",
}
_WEATHER_TOOL: Final = ToolSchema(
    name="get_weather",
    description="The current weather in a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city's name."}},
        "required": ["city"],
    },
)
#: Model turns per agent loop at most, so a model that keeps calling tools cannot loop forever.
_MAX_TURNS: Final = 4
#: The base URL of the Bedrock turn (08 D72).
_BEDROCK_URL: Final = "bedrock://us-east-1"


def _get_weather(arguments: Any) -> str:
    city = arguments.get("city", "") if isinstance(arguments, dict) else ""
    return _WEATHER.get(city, f"no weather data for {city!r}")


async def _agent_loop(client: AutoLLMClient, question: str, printer: StreamPrinter) -> None:
    """Ask ``question``; run every tool call locally and send the results until an answer."""
    config = UniConfig(tools=(_WEATHER_TOOL,))
    printer.line(f"user> {question}")
    message = UniMessage(role="user", content_items=(TextDone(text=question),))
    for _ in range(_MAX_TURNS):
        calls = []
        stream = client.streaming_response_stateful(message, config)
        async with aclosing(stream) as events:
            async for event in events:
                printer.event(event)
                calls += [i for i in event.content_items if isinstance(i, ToolCallDone)]
        if not calls:
            return
        results = []
        for call in calls:
            result = _get_weather(call.arguments)
            printer.line(f"tool> {call.name}({json.dumps(call.arguments)}) -> {result}")
            results.append(ToolResultDone(text=result, tool_call_id=call.tool_call_id))
        message = UniMessage(role="user", content_items=tuple(results))


async def run(delay: float, printer: StreamPrinter) -> int:
    """Run the demo (module docstring) with ``delay`` seconds before each simulated event;
    return the exit status, 0.

    Raises:
        MMSPError: a call of the demo failed (the command line reports it).
    """
    async with simulator.Simulator.running(api_key=_DEMO_KEY, delay=delay) as sim:
        printer.line(f"Provider simulator listening on {sim.url} (loopback only)")
        for protocol in simulator.simulated_protocols():
            spec, record, _ = adapters.resolve(protocol)
            base_url = sim.base_url(protocol)
            model = record.traits.dialect.demo_model if record.traits.dialect else "sim-model"
            printer.line("")
            printer.line(
                f"== {record.traits.display_name}: client {spec.client_type}, {base_url}"
            )
            async with AutoLLMClient(
                model, api_key=_DEMO_KEY, base_url=base_url, client_type=spec.client_type
            ) as client:
                await _agent_loop(client, _DEMO_QUESTION, printer)
        await _demo_bedrock(sim, printer)
        await _demo_vertex(sim, printer)
        await _demo_gateway(sim, printer)
    return 0


async def _demo_bedrock(sim: simulator.Simulator, printer: StreamPrinter) -> None:
    """The agent turn on Amazon Bedrock (08 D72): anthropic-official with the base URL
    ``bedrock://us-east-1``, pointed at the simulator by AWS's endpoint variable, its requests
    signed (SigV4) with the simulator's AWS test key given as ``api_key``."""
    _, record, _ = adapters.resolve("anthropic-official", base_url=_BEDROCK_URL)
    dialect = record.traits.dialect
    assert dialect is not None and dialect.endpoint_variable is not None
    printer.line("")
    printer.line(f"== {record.traits.display_name}: client anthropic-official, "
                 f"{_BEDROCK_URL} at {sim.url}")
    variable = dialect.endpoint_variable
    saved = os.environ.get(variable)
    os.environ[variable] = sim.url  # read when the client is built
    try:
        client = AutoLLMClient(
            "global.anthropic.claude-sonnet-4-6", client_type="anthropic-official",
            base_url=_BEDROCK_URL, api_key=f"{bedrock.TEST_ACCESS_KEY},{bedrock.TEST_SECRET_KEY}",
        )
    finally:
        if saved is None:
            del os.environ[variable]
        else:
            os.environ[variable] = saved
    async with client:
        await _agent_loop(client, _DEMO_QUESTION, printer)


async def _demo_vertex(sim: simulator.Simulator, printer: StreamPrinter) -> None:
    """The agent turn on Vertex AI (08 D72): google-genai with a service-account key made for
    the demo, which the simulator's token endpoint trusts, at the simulator's origin; without
    google-auth, one line saying what to install."""
    printer.line("")
    try:
        import google.auth  # noqa: F401  (the extra: only whether it is there)
    except ImportError:
        printer.line(f"== Vertex AI is left out: {VERTEX_EXTRA}")
        return
    printer.line(f"== Gemini generateContent on Vertex AI: client google-genai, {sim.url} "
                 "(a service-account key made for the demo)")
    async with AutoLLMClient("gemini-3.8-flash", client_type="google-genai", base_url=sim.url,
                             api_key=sim.vertex.throwaway_key(sim.url)) as client:
        await _agent_loop(client, _DEMO_QUESTION, printer)


async def _demo_gateway(sim: simulator.Simulator, printer: StreamPrinter) -> None:
    """The same agent turn through an MMSP server (spec 07) whose one row is the first
    simulated protocol's client: the demo's caller holds only the gateway's token."""
    from ..server import Gateway, serve  # the server is only the demo's last part

    protocol = simulator.simulated_protocols()[0]
    spec, record, _ = adapters.resolve(protocol)
    row = {"server_model_id": "demo-gateway-model", "model_id": "sim-model",
           "api_key": _DEMO_KEY, "base_url": sim.base_url(protocol),
           "client_type": spec.client_type}
    config = {"models": [row], "api_keys": [_DEMO_GATEWAY_TOKEN]}
    async with serve(Gateway(config), host="127.0.0.1", port=0) as server:
        printer.line("")
        printer.line(f"== MMSP server at {server.url}/v1 in front of "
                     f"{record.traits.display_name}: client mmsp")
        async with AutoLLMClient(
            "demo-gateway-model", api_key=_DEMO_GATEWAY_TOKEN, base_url=f"{server.url}/v1",
            client_type="mmsp",
        ) as client:
            await _agent_loop(client, _DEMO_QUESTION, printer)

