"""The pytest plugin (``mmsp_io.pytest_plugin``, the ``pytest11`` entry point ``mmsp_sansio``):
a user's test file run with ``pytester`` gets a simulator per test or per session and clients
pointed at it, under asyncio and trio, with no conftest of its own (issue 26 item 4)."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import textwrap

import pytest

from mmsp_io import pytest_plugin

pytest_plugins = ["pytester"]

#: A user's test module: only the plugin's fixtures, and pytest's anyio plugin for the loops.
USER_TESTS = '''
import httpx
import pytest

from mmsp_core.model import TextDone, UniMessage
from mmsp_io import IncompleteStreamError
from mmsp_io.pytest_plugin import assert_stream_grammar
from mmsp_io.simulator import Reply, faults


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param


@pytest.mark.anyio
async def test_a_scripted_answer(mmsp_simulator, mmsp_client):
    mmsp_simulator.script.append(Reply.text("Hi there", thinking="Greet back."))
    async with mmsp_client() as client:
        events = [e async for e in client.streaming_response([UniMessage.user("hi")])]
    assert_stream_grammar(events)
    assert [i for e in events for i in e.content_items if i.type == "text.done"] == [
        TextDone("Hi there")]
    [request] = mmsp_simulator.requests
    assert (request.path, request.json["model"]) == ("/v1/chat/completions", "sim-model")


@pytest.mark.anyio
async def test_a_fault_on_another_client_type(mmsp_simulator, mmsp_client):
    mmsp_simulator.script.append(Reply.text("cut", fault=faults.cut(after_events=1)))
    async with mmsp_client("claude-test", client_type="ant-messages", max_retries=0) as client:
        with pytest.raises(IncompleteStreamError):
            async for _ in client.streaming_response([UniMessage.user("hi")]):
                pass


@pytest.mark.anyio
async def test_the_session_simulator_with_a_client(mmsp_simulator_session, mmsp_client):
    async with mmsp_client(simulator=mmsp_simulator_session) as client:
        events = [e async for e in client.streaming_response([UniMessage.user("hello")])]
    assert events[-1].event_type == "stop"


def test_a_synchronous_test_reaches_the_same_session_simulator(mmsp_simulator_session):
    answer = httpx.get(mmsp_simulator_session.url + "/v1/models",
                       headers={"authorization": f"Bearer {mmsp_simulator_session.api_key}"})
    assert answer.status_code == 200
    # Both runs of the test above (asyncio and trio) went to this one simulator.
    assert len(mmsp_simulator_session.requests) == 3


def test_each_test_has_a_fresh_simulator(mmsp_simulator):
    assert mmsp_simulator.requests == [] and not mmsp_simulator.script
'''


def test_a_users_test_file_runs_with_the_plugins_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=8)


def test_the_plugin_is_the_packages_pytest11_entry_point() -> None:
    [entry] = [entry for entry in importlib.metadata.entry_points(group="pytest11")
               if entry.name == "mmsp_sansio"]
    assert entry.load() is pytest_plugin


def test_the_plugin_defines_only_its_own_fixtures() -> None:
    """No fixture of pytest-anyio's (``anyio_backend``) or the project's: each of the plugin's
    is named ``mmsp_...``."""
    fixtures = [name for name in dir(pytest_plugin)
                if hasattr(getattr(pytest_plugin, name), "_fixture_function_marker")
                or type(getattr(pytest_plugin, name)).__name__ == "FixtureFunctionDefinition"]
    assert sorted(fixtures) == ["mmsp_client", "mmsp_simulator", "mmsp_simulator_session"]


def test_loading_the_plugin_and_a_simulator_needs_no_trio() -> None:
    code = textwrap.dedent("""
        import sys
        from mmsp_io import pytest_plugin
        with pytest_plugin._simulator_thread() as sim:
            assert sim.url.startswith("http://127.0.0.1:")
        assert "trio" not in sys.modules, "trio was imported"
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
