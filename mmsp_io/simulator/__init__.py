"""A local provider simulator: real HTTP/1.1 on loopback, scripted answers, no network.

The simulator listens on ``127.0.0.1`` on a free port (``python -m mmsp_io simulate``: on
port 25753, ``DEFAULT_PORT``, 08 D78) and answers the endpoints of the real providers (spec
04 §4, §5): the generation endpoint of every registered wire protocol whose record has a
``SimulatorDialect`` (``Traits.dialect``; ``simulated_protocols()`` lists them), and the model
list of their client types. Everything about a provider (its route and base path,
its key headers, its error bodies, its in-stream error, how its requests read) comes from that
dialect, read from ``adapters.PROTOCOLS`` at call time, so a protocol registered later with
``adapters.register`` is served too (08 D63). It runs on the server core of
``mmsp_io.httpserver`` (h11 and anyio), under asyncio and trio. The end-to-end tests, the load
test, the benchmarks, ``python -m mmsp_io demo`` and the pytest plugin
(``mmsp_io.pytest_plugin``) use it; the user guide documents it for users ("Testing without a
network").

How to script it
----------------
::

    async with Simulator.running(Reply(items=[TextDone("Hi")])) as sim:
        client = AutoLLMClient("sim-model", api_key=sim.api_key,
                               base_url=sim.base_url("openai-chat"), client_type="openai-chat")
        ...
        assert sim.requests[0].json["model"] == "sim-model"

Every request to a model endpoint takes the next *behaviour* from ``sim.script`` (a deque: one
test can script "500, then success" with ``sim.script.extend([Reply(status=500), ok])``); when
the script is empty, the default behaviour given to ``running`` answers. A behaviour is a
``Reply`` or a function ``(RecordedRequest) -> Reply``. The default default is
``demo_script``, which reads the request: tools offered and no tool result yet → thinking and a
call to the first tool; a tool result in the request → a text answer quoting it; no tools → a
text answer echoing the question; an embedding request → one small vector per input.

A ``Reply`` says *what* to send:

- ``items``, ``usage``, ``finish_reason``: rendered by ``adapters.render`` as the body of the
  request's wire protocol (08 D49), with the request's ``model``;
- ``body``: a recorded body sent as it is (``Reply.recorded(path)`` reads a fixture file);
  ``content_type`` defaults to the dialect's;
- ``status`` other than 200: the provider's JSON error body for that status (``message`` and
  ``retry_after`` fill it in), for example ``Reply(status=429, retry_after=0)``, or ``body``
  as given.

``Reply.text(text, thinking=...)``, ``Reply.tool_call(name, arguments, thinking=...)`` and
``Reply.error(status, body=..., message=..., retry_after=...)`` build the common ones.

and *how* to send it: ``chunk_size`` (bytes per write; default one write per SSE event),
``delay`` (seconds before each write), ``error_after`` (keep that many events of the body, then
send the protocol's in-stream overload error), ``cut_after`` (close the connection after that
many body bytes), ``stall_at`` (stop sending after that many body bytes and hold the connection
open, sending ``: keep-alive`` comments every ``keepalive`` seconds if set: pick an offset
between two events then, as a server would) and ``stall_before_headers`` (never answer at all).
``fault`` takes a value of ``faults`` (cuts, resets, split characters, floods, the provider's
in-stream error, stalls, a trickle, a socket held open), played out on whatever the reply
sends; the ``faults`` docstring lists them with the error each gives the client.

What the simulator saw: ``sim.requests`` lists every request (method, path, headers, raw and
parsed body, protocol) in arrival order, its credential headers shown as ``[redacted]`` by its
``repr`` and ``safe_headers``; ``sim.disconnects`` lists the requests whose client
closed the connection before the response was complete (``await sim.wait_disconnects(n)``
waits for them). A request with a wrong or missing key gets the provider's 401 body and does not
consume the script. A request body over 50 MB is answered 413.

Azure OpenAI (08 D72): a protocol whose dialect has an ``azure`` dialect (openai-chat,
openai-responses, openai-embedding) is served a second time under ``/azure/openai/v1/...``,
which stands for an Azure resource's host: ``sim.base_url(protocol, azure=True)``, to which a
client adds an ``api-version`` query (on a loopback host, that is what makes its base URL
Azure's). There the key must come in the ``api-key`` header (a Bearer token gets Azure's 401),
errors have Azure's body (``{"error": {"code": "<status>", "message"}}``; for 400 its
content-filter refusal, code ``content_filter``), and Chat chunks carry Azure's
``prompt_filter_results`` and ``content_filter_results`` (the dialect's ``annotate``); the
model list is at ``/azure/openai/v1/models``.

Vertex AI (08 D72): a protocol whose dialect has a ``vertex`` dialect (generateContent,
Gemini embeddings) is served a second time at Vertex's paths (``/v1beta1/projects/<p>/
locations/<l>/publishers/google/models/<m>:streamGenerateContent``, ``:embedContent``) at the
origin. There no key is taken: only a bearer token that the simulator's token endpoint
(``POST /token``, ``sim.vertex``, ``mmsp_io.simulator.vertex``) issued for a service-account
key registered with ``sim.vertex.trust_key`` (its RS256 assertion checked) or user credentials
registered with ``sim.vertex.trust_user``; anything else gets Google's 401.

Adding a protocol is its record's ``dialect``: nothing here changes.

Where it lives
--------------
An application beside the client library (docs/architecture.md, "Applications beside the
library"): it uses the library and the protocol records, the library never imports it, and
``import mmsp_io`` does not load it. ``script`` holds ``Reply``, ``RecordedRequest`` and
``demo_script``; ``faults`` the faults a reply takes; ``routing`` the protocols served and
their endpoints; ``serving`` the ``Simulator`` itself; ``cassettes`` the replay of recorded
exchanges (``Simulator.running(cassettes=DIR)``, 08 D78).
"""

from . import faults
from .cassettes import CassetteError, Cassettes
from .routing import simulated_protocols
from .script import Behaviour, RecordedRequest, Reply, demo_script
from .serving import DEFAULT_PORT, Simulator

__all__ = [
    "DEFAULT_PORT",
    "Behaviour",
    "CassetteError",
    "Cassettes",
    "RecordedRequest",
    "Reply",
    "Simulator",
    "demo_script",
    "faults",
    "simulated_protocols",
]
