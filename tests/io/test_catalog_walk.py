"""Every row of the model catalog works, or is refused when its client is built (issue 10 item 6).

``adapters.list_supported_models()`` lists 125 ``(model, base_url, client)`` rows (spec 04 §7).
Each row either streams against the provider simulator, through ``AutoLLMClient`` with the
row's model id and client type (the simulator standing in for the row's endpoint; a Bedrock
row keeps its ``bedrock://`` base URL and reaches the simulator through
``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, 08 D72; a Vertex AI row is given a throwaway
service-account key whose ``token_uri`` is the simulator's, and the simulator's origin, under
which it keeps Vertex's paths, 08 D72). The walk goes over every row and reports every row that
fails, each with its reason, under asyncio and trio.
"""

from __future__ import annotations

import urllib.parse
from contextlib import aclosing

import httpx
import pytest
from vertexkit import key_text, trust

import adapters
from adapters import SupportedModel
from mmsp_core.model import UniEvent, UniMessage
from mmsp_core.testing import assert_stream_grammar
from mmsp_io import AutoLLMClient, MMSPError, Timeouts, UnsupportedOperationError
from mmsp_io.simulator import Simulator

ROWS = adapters.list_supported_models()
QUESTION = UniMessage.user("What is the weather in Paris?")
RELAXED = Timeouts(connect=5, first_event=10, idle=10, total=30)
#: A key for the hosts below: what they do must come from the endpoint, not a missing key.
SOME_KEY = "sk-catalog-walk"


def on_vertex(row: SupportedModel) -> bool:
    """Whether the row is a Vertex AI row (08 D66's host rule, D72)."""
    host = urllib.parse.urlsplit(row.base_url).hostname or ""
    return host == "aiplatform.googleapis.com" or host.endswith("-aiplatform.googleapis.com")


def test_the_catalog_has_its_rows_and_its_cloud_ones() -> None:
    assert len(ROWS) == 125
    assert sum(row.base_url.startswith("bedrock://") for row in ROWS) == 9  # 08 D72
    vertex = [row for row in ROWS if on_vertex(row)]
    assert len(vertex) == 6 and {row.client for row in vertex} == {"google-genai"}  # 08 D72


@pytest.mark.parametrize(
    "base_url",
    ["https://aiplatform.googleapis.com/v1beta1", "https://europe-west4-aiplatform.googleapis.com"],
)
def test_a_vertex_host_on_google_official_is_refused_before_the_base_url_rule(
    base_url: str
) -> None:
    """Vertex serves Gemini through google-genai (08 D72)."""
    with pytest.raises(UnsupportedOperationError) as caught:
        AutoLLMClient("gemini-3.8-flash", api_key=SOME_KEY, base_url=base_url,
                      client_type="google-official")
    assert caught.value.operation == "Vertex AI"


@pytest.mark.parametrize(
    ("client_type", "base_url"),
    [
        ("google-genai", "https://generativelanguage.googleapis.com"),
        ("google-genai", "https://notaiplatform.googleapis.com"),
        ("openai-chat", "https://aiplatform.googleapis.com/v1"),  # not a Gemini client
    ],
)
def test_other_hosts_are_not_vertex(client_type: str, base_url: str) -> None:
    client = AutoLLMClient("gemini-3.8-flash", api_key=SOME_KEY, base_url=base_url,
                           client_type=client_type)
    assert client.base_url == base_url


def protocol_of(row: SupportedModel) -> str:
    """The wire protocol a row's calls speak: its client type routed for its model id (04 §2,
    ``text-embedding-*`` on openai-official), then the model's class (08 D64).

    Raises:
        MMSPError: the row's client or protocol cannot be resolved (a protocol not built yet).
    """
    client = adapters.route(row.model, row.client)
    return adapters.resolve(client, row.model, row.base_url)[1].name


async def stream_row(sim: Simulator, http: httpx.AsyncClient, row: SupportedModel) -> str | None:
    """Stream the question through the row's client against the simulator; ``None`` when it
    ended with a stop the grammar accepts, else why not."""
    try:
        protocol = protocol_of(row)
        dialect = adapters.PROTOCOLS[protocol].traits.dialect
        # A cloud route keeps its base URL; the endpoint variable points it at the simulator.
        cloud = dialect is not None and dialect.endpoint_variable is not None
        base_url = row.base_url if cloud else sim.base_url(protocol)
        # A Vertex row: its key (token_uri the simulator's) keeps Vertex's paths at the origin.
        api_key = key_text(sim) if on_vertex(row) else sim.api_key
        asked = len(sim.requests)
        events: list[UniEvent] = []
        client = AutoLLMClient(row.model, api_key=api_key, base_url=base_url,
                               client_type=row.client, timeouts=RELAXED, max_retries=0,
                               http_client=http)
        async with client, aclosing(client.streaming_response([QUESTION], None)) as stream:
            async for event in stream:
                events.append(event)
    except (MMSPError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    try:
        assert_stream_grammar(events)
    except AssertionError as exc:
        return f"the public stream breaks the grammar: {exc}"
    seen = [r.protocol for r in sim.requests[asked:] if r.path != "/token"]
    if seen != [protocol]:
        return f"the simulator saw {seen}, not {protocol}"
    return None


@pytest.mark.anyio
async def test_every_row_streams_against_the_simulator(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    failures = []
    # One connection pool for the whole walk (a client's own would build a TLS context).
    async with Simulator.running() as sim, httpx.AsyncClient(timeout=None) as http:
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", sim.url)
        trust(sim)
        for row in ROWS:
            problem = await stream_row(sim, http, row)
            if problem is not None:
                failures.append(f"{row.client} {row.model} ({row.base_url}): {problem}")
    assert failures == [], f"{len(failures)} of {len(ROWS)} rows fail:\n" + "\n".join(
        failures
    )
