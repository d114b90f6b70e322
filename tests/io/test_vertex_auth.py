"""Vertex AI's OAuth token (``mmsp_io._vertex``) against the simulator's token endpoint, under
asyncio and trio (08 D72, D61; issue 23 items 4 and 7).

A throwaway RSA service-account key (``vertexkit``) whose ``token_uri`` is the simulator's:
the token is fetched with a signed assertion through the client's own HTTP client, cached,
fetched again shortly before it expires (an injected clock moves time, nothing waits) and once
more after a 401; user credentials use their refresh token; files are read from
``GOOGLE_APPLICATION_CREDENTIALS`` or Application Default Credentials' folder. The token
answer is read with a bound, and no secret (the private key, the refresh token, the token) is
in any error. No metadata service is ever asked: nothing here reaches past loopback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpfakes import mock_client
from vertexkit import PROJECT, USER, key_text, private_key_pem, service_account, trust

import adapters
from mmsp_core.errors import (
    ApiKeyRequiredError,
    MalformedEventError,
    MMSPError,
    ProviderHTTPError,
    StreamLimitError,
    UnsupportedOperationError,
)
from mmsp_core.model import UniMessage
from mmsp_core.request import HTTPRequest
from mmsp_io import Timeouts, fast_http_client
from mmsp_io._vertex import REFRESH_MARGIN, TOKEN_LIMIT, VertexAuth, vertex_auth
from mmsp_io.simulator import Simulator

pytestmark = pytest.mark.anyio

RELAXED = Timeouts(connect=5, first_event=10, idle=10, total=30)
REQUEST = HTTPRequest("POST", "/x", (("content-type", "application/json"),), b"{}")
QUESTION = UniMessage.user("Hi")


class Clock:
    """A wall clock the test moves."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def auth_for(sim: Simulator, http: httpx.AsyncClient, api_key: str | None,
             environ: dict[str, str] | None = None, clock: Clock | None = None) -> VertexAuth:
    auth = vertex_auth("google-genai", "https://aiplatform.googleapis.com", api_key,
                       environ or {}, http=http, timeouts=RELAXED,
                       **({"clock": clock} if clock is not None else {}))
    assert auth is not None
    return auth


def bearer(request: HTTPRequest) -> str:
    [value] = [v for name, v in request.headers if name.lower() == "authorization"]
    scheme, _, token = value.partition(" ")
    assert scheme == "Bearer"
    return token


def texts_of(error: BaseException) -> str:
    """Every text an error shows, its chain's included."""
    shown = []
    current: BaseException | None = error
    while current is not None:
        shown += [str(current), repr(current), repr(current.args)]
        current = current.__cause__ or current.__context__
    return "\n".join(shown)


def secret_runs(secret: str) -> list[str]:
    """Every run of 12 characters of ``secret`` after its first 8 (08 D61)."""
    tail = secret[8:]
    return [tail[i : i + 12] for i in range(0, max(len(tail) - 11, 0), 6)]


def assert_hidden(error: BaseException, *secrets: str) -> None:
    shown = texts_of(error)
    for secret in secrets:
        assert not any(run in shown for run in secret_runs(secret)), secret[:12]


async def test_a_service_account_key_gets_a_token_once_and_reuses_it() -> None:
    async with Simulator.running() as sim, fast_http_client() as http:
        trust(sim)
        auth = auth_for(sim, http, key_text(sim))
        first = await auth.authorize(REQUEST, "unused")
        second = await auth.authorize(REQUEST, "unused")
        assert bearer(first) == bearer(second)
        assert sim.vertex.exchanges == 1
        [exchange] = sim.requests
        assert (exchange.method, exchange.path) == ("POST", "/token")
        assert exchange.header("content-type") == "application/x-www-form-urlencoded"
        assert private_key_pem()[40:80] not in exchange.body.decode()
        assert bearer(first) in auth.secrets


async def test_the_call_goes_to_the_keys_project() -> None:
    async with Simulator.running() as sim, fast_http_client() as http:
        auth = auth_for(sim, http, key_text(sim))
        plan = await auth.prepare(adapters.prepare("google-genai", "gemini-3.8-flash",
                                                   [QUESTION], None))
        assert plan.request({}).path.startswith(f"/v1beta1/projects/{PROJECT}/locations/global/")
        assert not sim.requests  # reading the key fetches no token


async def test_the_token_is_fetched_again_shortly_before_it_expires() -> None:
    clock = Clock()
    async with Simulator.running() as sim, fast_http_client() as http:
        trust(sim)
        sim.vertex.lifetime = 3600
        auth = auth_for(sim, http, key_text(sim), clock=clock)
        first = bearer(await auth.authorize(REQUEST, ""))
        clock.now += 3600 - REFRESH_MARGIN - 1
        assert bearer(await auth.authorize(REQUEST, "")) == first
        assert sim.vertex.exchanges == 1
        clock.now += 2
        assert bearer(await auth.authorize(REQUEST, "")) != first
        assert sim.vertex.exchanges == 2


async def test_after_a_401_the_token_is_dropped_and_fetched_anew() -> None:
    async with Simulator.running() as sim, fast_http_client() as http:
        trust(sim)
        auth = auth_for(sim, http, key_text(sim))
        assert auth.unauthorized() is False  # no token held: a retry would not help
        first = bearer(await auth.authorize(REQUEST, ""))
        assert auth.unauthorized() is True
        assert auth.unauthorized() is False  # once per token
        assert bearer(await auth.authorize(REQUEST, "")) != first
        assert sim.vertex.exchanges == 2


async def test_concurrent_calls_share_one_exchange() -> None:
    import anyio

    async with Simulator.running() as sim, fast_http_client() as http:
        trust(sim)
        auth = auth_for(sim, http, key_text(sim))
        tokens: list[str] = []

        async def one() -> None:
            tokens.append(bearer(await auth.authorize(REQUEST, "")))

        async with anyio.create_task_group() as group:
            for _ in range(5):
                group.start_soon(one)
        assert len(set(tokens)) == 1 and sim.vertex.exchanges == 1


async def test_user_credentials_from_the_default_file_use_their_refresh_token(
    tmp_path: Path,
) -> None:
    async with Simulator.running() as sim, fast_http_client() as http:
        trust(sim)
        folder = tmp_path / ".config" / "gcloud"
        folder.mkdir(parents=True)
        user = {**USER, "token_uri": f"{sim.url}/token"}
        (folder / "application_default_credentials.json").write_text(json.dumps(user))
        environ = {"HOME": str(tmp_path), "GOOGLE_CLOUD_PROJECT": "env-project"}
        auth = auth_for(sim, http, None, environ)
        token = bearer(await auth.authorize(REQUEST, ""))
        plan = await auth.prepare(adapters.prepare("google-genai", "gemini-3.8-flash",
                                                   [QUESTION], None))
        assert "/projects/env-project/" in plan.request({}).path
        assert token and sim.vertex.exchanges == 1
        assert USER["refresh_token"] in auth.secrets and USER["client_secret"] in auth.secrets


async def test_a_key_file_named_by_google_application_credentials(tmp_path: Path) -> None:
    async with Simulator.running() as sim, fast_http_client() as http:
        trust(sim)
        path = tmp_path / "sa.json"
        path.write_text(key_text(sim))
        auth = auth_for(sim, http, None, {"GOOGLE_APPLICATION_CREDENTIALS": str(path),
                                          "HOME": "/nonexistent"})
        assert bearer(await auth.authorize(REQUEST, ""))
        assert private_key_pem() in auth.secrets


@pytest.mark.parametrize("content", [None, b"{not json", b"x" * (1024 * 1024 + 1)])
async def test_a_missing_or_unusable_file_is_a_typed_error(tmp_path: Path,
                                                           content: bytes | None) -> None:
    path = tmp_path / "sa.json"
    if content is not None:
        path.write_bytes(content)
    async with Simulator.running() as sim, fast_http_client() as http:
        auth = auth_for(sim, http, None, {"GOOGLE_APPLICATION_CREDENTIALS": str(path)})
        with pytest.raises(ApiKeyRequiredError) as caught:
            await auth.authorize(REQUEST, "")
    assert "GOOGLE_APPLICATION_CREDENTIALS" in str(caught.value)
    assert not sim.requests


async def test_a_refused_exchange_is_a_provider_error_without_any_secret() -> None:
    async with Simulator.running() as sim, fast_http_client() as http:
        # The key is not registered with the simulator: its assertion is refused.
        key = key_text(sim)
        auth = auth_for(sim, http, key)
        with pytest.raises(ProviderHTTPError) as caught:
            await auth.authorize(REQUEST, "")
    assert caught.value.status == 400
    assert "token exchange" in str(caught.value)
    assert_hidden(caught.value, private_key_pem(), key)


def answering(status: int, body: bytes) -> httpx.AsyncClient:
    def serve(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=body, headers={"content-type": "application/json"})

    return mock_client(serve)


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b'{"access_token": "' + b"t" * TOKEN_LIMIT + b'"}', StreamLimitError),
        (b"[]", MalformedEventError),
        (b'{"access_token": ""}', MalformedEventError),
        (b'{"access_token": "ok", "expires_in": -5}', MalformedEventError),
        (b'{"access_token": "bad token\\n"}', MalformedEventError),
        (b"[" * 60_000, MalformedEventError),
    ],
)
async def test_token_answers_are_bounded_and_checked(body: bytes, error: type[MMSPError]) -> None:
    async with Simulator.running() as sim, answering(200, body) as http:
        auth = auth_for(sim, http, key_text(sim))
        with pytest.raises(error):
            await auth.authorize(REQUEST, "")


async def test_an_error_echoing_the_refresh_token_shows_none_of_it(tmp_path: Path) -> None:
    echo = json.dumps({"error": "invalid_grant",
                       "error_description": f"bad token {USER['refresh_token']}"}).encode()
    path = tmp_path / "adc.json"
    path.write_text(json.dumps(USER))
    async with Simulator.running() as sim, answering(400, echo) as http:
        auth = auth_for(sim, http, None, {"GOOGLE_APPLICATION_CREDENTIALS": str(path),
                                          "GOOGLE_CLOUD_PROJECT": "p"})
        with pytest.raises(ProviderHTTPError) as caught:
            await auth.authorize(REQUEST, "")
    assert_hidden(caught.value, USER["refresh_token"], USER["client_secret"])


def test_without_google_auth_a_vertex_client_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "google.auth.jwt", None)
    with pytest.raises(UnsupportedOperationError) as caught:
        vertex_auth("google-genai", "https://aiplatform.googleapis.com", None,
                    {"HOME": "/home/u"}, http=httpx.AsyncClient(), timeouts=RELAXED)
    assert "pip install 'mmsp-sansio[vertex]'" in str(caught.value)


@pytest.mark.parametrize(
    ("client_type", "base_url", "api_key"),
    [("google-genai", "https://generativelanguage.googleapis.com", "AIza-key"),
     ("google-official", "https://aiplatform.googleapis.com", None),
     ("openai-chat", "https://api.openai.com/v1", "sk-x")],
)
def test_other_clients_get_no_vertex_auth(client_type: str, base_url: str,
                                          api_key: str | None) -> None:
    assert vertex_auth(client_type, base_url, api_key, {}, http=httpx.AsyncClient(),
                       timeouts=RELAXED) is None


async def test_a_key_google_auth_cannot_read_is_a_typed_error_without_it() -> None:
    async with Simulator.running() as sim, fast_http_client() as http:
        broken: dict[str, Any] = service_account(sim, private_key="-----BEGIN PRIVATE KEY-----"
                                                 "\nnot-a-key-at-all-0123456789\n")
        auth = auth_for(sim, http, json.dumps(broken))
        with pytest.raises(ApiKeyRequiredError) as caught:
            await auth.authorize(REQUEST, "")
    assert "not-a-key-at-all" not in texts_of(caught.value)
    assert not sim.requests
