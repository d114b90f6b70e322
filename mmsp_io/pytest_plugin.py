"""The pytest plugin of mmsp-sansio: a provider simulator and clients pointed at it.

Installed with the package (the ``pytest11`` entry point ``mmsp_sansio``), so a project that
depends on mmsp-sansio has these fixtures in every test without a ``conftest.py``:

- ``mmsp_simulator``: a ``mmsp_io.simulator.Simulator`` started for the test and stopped after
  it, with an empty script and no requests: script it (``sim.script.append(Reply(...))``) and
  assert on ``sim.requests``;
- ``mmsp_simulator_session``: one simulator for the whole session; its script and requests
  are shared by every test that uses it (clear them where that matters);
- ``mmsp_client``: a factory, ``mmsp_client(model="sim-model", client_type="openai-chat",
  **options)``, of ``AutoLLMClient`` pointed at the test's simulator (its base URL for the
  protocol the client type speaks for that model, its key); ``simulator=`` names another one
  (the session's). Use each client as ``async with mmsp_client() as client:``.

``assert_stream_grammar`` (``mmsp_core.testing``'s) is exported here too: it checks a finished
public stream against every rule of the grammar (spec 02 §12).

The simulator runs in a thread of its own, on its own event loop, and is reached over
loopback HTTP, so the fixtures are plain ones: a test using them may be synchronous or run
under any backend of pytest's ``anyio`` plugin, whose ``anyio_backend`` fixture this plugin
leaves alone (it defines no fixture of that name, nor any other name the project or pytest's
plugins use), and nothing here needs trio. The plugin module imports the simulator only when
a fixture is used.

An application beside the client library (docs/architecture.md): the library never imports
it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from mmsp_core.testing import assert_stream_grammar

if TYPE_CHECKING:
    from mmsp_io.client import AutoLLMClient
    from mmsp_io.simulator import Simulator

__all__ = ["assert_stream_grammar", "mmsp_client", "mmsp_simulator", "mmsp_simulator_session"]


@contextlib.contextmanager
def _simulator_thread() -> Iterator[Simulator]:
    """A simulator on an asyncio loop in a thread of its own, for the ``with`` block."""
    import anyio.from_thread

    from mmsp_io.simulator import Simulator

    with (
        anyio.from_thread.start_blocking_portal("asyncio") as portal,
        portal.wrap_async_context_manager(Simulator.running()) as sim,
    ):
        yield sim


@pytest.fixture
def mmsp_simulator() -> Iterator[Simulator]:
    """A provider simulator for this test (the module docstring)."""
    with _simulator_thread() as sim:
        yield sim


@pytest.fixture(scope="session")
def mmsp_simulator_session() -> Iterator[Simulator]:
    """One provider simulator for the whole session (the module docstring)."""
    with _simulator_thread() as sim:
        yield sim


@pytest.fixture
def mmsp_client(request: pytest.FixtureRequest) -> Callable[..., AutoLLMClient]:
    """A factory of ``AutoLLMClient`` pointed at a simulator (the module docstring).

    The factory raises ``ValueError`` for a client type whose protocol the simulator does not
    serve, and whatever ``AutoLLMClient`` raises for the options given.
    """
    import adapters
    from mmsp_io.client import AutoLLMClient

    def make(
        model: str = "sim-model",
        *,
        client_type: str = "openai-chat",
        simulator: Simulator | None = None,
        **options: Any,
    ) -> AutoLLMClient:
        sim: Simulator = simulator or request.getfixturevalue("mmsp_simulator")
        _, record, _ = adapters.resolve(client_type, model=model)
        options.setdefault("api_key", sim.api_key)
        options.setdefault("base_url", sim.base_url(record.name))
        return AutoLLMClient(model, client_type=client_type, **options)

    return make
