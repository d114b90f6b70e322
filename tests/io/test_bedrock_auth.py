"""``mmsp_io._bedrock``: each attempt of a Bedrock client gets its credentials (08 D72).

The credential chain is botocore's, stood in for here by a ``RefreshableCredentials`` whose
expiry the test decides: it is loaded once, its frozen credentials are taken again only when
it says they need a refresh, and both happen in a worker thread, never on the event loop.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mmsp_core import ApiKeyRequiredError
from mmsp_core.request import HTTPRequest
from mmsp_io import _bedrock

botocore_credentials = pytest.importorskip("botocore.credentials")

pytestmark = pytest.mark.anyio

REQUEST = HTTPRequest("POST", "/model/m/invoke-with-response-stream",
                      (("content-type", "application/json"),), b"{}")
URL = "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/invoke-with-response-stream"


class Chain(botocore_credentials.RefreshableCredentials):  # type: ignore[misc,name-defined]
    """botocore's refreshable credentials whose keys and expiry the test sets."""

    def __init__(self, keys: list[str]) -> None:  # no botocore state: only what is read
        self.keys = keys
        self.expired = False
        self.threads: list[bool] = []  # for each take: whether it ran off the main thread

    def refresh_needed(self, refresh_in: Any = None) -> bool:
        return self.expired

    def get_frozen_credentials(self) -> Any:
        self.threads.append(threading.current_thread() is not threading.main_thread())
        self.expired = False
        key = self.keys.pop(0)
        return botocore_credentials.ReadOnlyCredentials(key, f"secret-of-{key}", None, None)


def authorizer(environ: dict[str, str]) -> _bedrock.BedrockAuth:
    auth = _bedrock.bedrock_auth("anthropic-official", "bedrock://us-east-1", None, environ)
    assert auth is not None
    return auth


def signing_key(request: HTTPRequest) -> str:
    authorization = dict(request.headers)["Authorization"]
    return authorization.split("Credential=")[1].split("/")[0]


async def test_the_chain_is_loaded_once_and_refreshed_when_it_expires(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    chain = Chain(["AKIAFIRST", "AKIASECOND"])
    loads: list[bool] = []

    def load() -> Chain:
        loads.append(threading.current_thread() is not threading.main_thread())
        return chain

    monkeypatch.setattr(_bedrock, "_load_chain", load)
    auth = authorizer({})
    assert signing_key(await auth.authorize(REQUEST, URL)) == "AKIAFIRST"
    assert signing_key(await auth.authorize(REQUEST, URL)) == "AKIAFIRST"  # still fresh
    chain.expired = True
    assert signing_key(await auth.authorize(REQUEST, URL)) == "AKIASECOND"
    assert loads == [True]  # once, in a worker thread
    assert chain.threads == [True, True]  # two takes, both in a worker thread
    assert auth.secrets == ("secret-of-AKIASECOND",)


async def test_an_empty_chain_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_bedrock, "_load_chain", lambda: None)
    with pytest.raises(ApiKeyRequiredError) as caught:
        await authorizer({}).authorize(REQUEST, URL)
    assert "AWS_BEARER_TOKEN_BEDROCK" in str(caught.value)


async def test_a_bearer_key_is_sent_unsigned_and_access_keys_sign() -> None:
    bearer = await authorizer({"AWS_BEARER_TOKEN_BEDROCK": "ABSKkey"}).authorize(REQUEST, URL)
    assert dict(bearer.headers)["Authorization"] == "Bearer ABSKkey"
    keys = authorizer({"AWS_ACCESS_KEY_ID": "AKIAENV", "AWS_SECRET_ACCESS_KEY": "s3cr3t-key",
                       "AWS_SESSION_TOKEN": "tok"})
    signed = dict((await keys.authorize(REQUEST, URL)).headers)
    assert signing_key(await keys.authorize(REQUEST, URL)) == "AKIAENV"
    assert signed["X-Amz-Security-Token"] == "tok"
    assert "/us-east-1/bedrock/aws4_request" in signed["Authorization"]
    assert keys.secrets == ("s3cr3t-key", "tok")


def test_only_a_bedrock_base_url_gets_an_authorizer() -> None:
    assert _bedrock.bedrock_auth("anthropic-official", "https://api.anthropic.com", "k", {}) is None
    auth = _bedrock.bedrock_auth("anthropic-official", "bedrock://eu-west-3", "a,b",
                                 {"AWS_ENDPOINT_URL": "http://127.0.0.1:9"})
    assert auth is not None and auth.base_url == "http://127.0.0.1:9"
