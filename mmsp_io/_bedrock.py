"""Amazon Bedrock's credentials at request time (08 D72; issue 23 items 3 and 6).

A client whose base URL is ``bedrock://<region>`` (anthropic-official's Bedrock route) gets a
``BedrockAuth`` from ``bedrock_auth``: the pure layer decided where its requests go and which
credential source applies (``adapters.clients.bedrock_endpoint``, ``aws_credentials``); this
module authorizes each attempt's final request with it:

- a Bedrock API key (``api_key`` without a comma, or ``AWS_BEARER_TOKEN_BEDROCK``) is sent as
  ``Authorization: Bearer <key>``, unsigned;
- access keys (``api_key="<access key>,<secret key>[,<session token>]"``, or the ``AWS_*``
  variables) sign the request with SigV4 for the service ``bedrock`` in the route's region
  (``adapters.clients.sigv4_sign``), at the wall clock's time of the attempt;
- otherwise botocore's credential chain (profiles, SSO, instance roles; the extra ``aws``)
  is loaded once, in a worker thread since it may read files and probe the instance metadata
  service, and its frozen credentials are taken again, in a worker thread too, whenever
  botocore says they need a refresh. Without botocore the client cannot be built:
  ``UnsupportedOperationError`` naming the extra.

No secret leaves here in a text: ``secrets`` lists what the client redacts (08 D61).
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Mapping
from typing import Any, Final, final

import anyio
import anyio.to_thread
import attrs

from adapters.clients import (
    AWS_EXTRA,
    SIGNING_SERVICE,
    AwsCredentials,
    AwsSource,
    BedrockEndpoint,
    aws_credentials,
    bedrock_endpoint,
    client_spec,
    sigv4_sign,
)
from mmsp_core.errors import ApiKeyRequiredError, UnsupportedOperationError
from mmsp_core.request import HTTPRequest

__all__ = ["BedrockAuth", "bedrock_auth"]

#: What the error of an empty credential chain says to do.
_NO_CREDENTIALS: Final = (
    "no AWS credentials were found: pass api_key (a Bedrock API key, or '<access key>,<secret "
    "key>'), set AWS_BEARER_TOKEN_BEDROCK or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
    "configure a profile botocore finds"
)


def bedrock_auth(
    client_type: str, base_url: str, api_key: str | None, environ: Mapping[str, str]
) -> BedrockAuth | None:
    """The ``BedrockAuth`` of a client whose resolved ``base_url`` is its Bedrock route, else
    ``None``.

    Raises:
        UnsupportedParameterError: ``parameter="base_url"``: a Bedrock base URL without a
            region, or an endpoint variable that is not an http(s) URL.
        ApiKeyRequiredError: credentials that cannot be read (``aws_credentials``).
        UnsupportedOperationError: the credential chain is needed and botocore is not
            installed (08 D72).
    """
    spec = client_spec(client_type)
    if spec.route_for(base_url) is None:
        return None
    endpoint = bedrock_endpoint(spec.client_type, base_url, environ)
    found = aws_credentials(spec.client_type, api_key, environ)
    if found.source is AwsSource.CHAIN and importlib.util.find_spec("botocore") is None:
        raise UnsupportedOperationError(
            spec.client_type, "Amazon Bedrock",
            detail=f"no credentials were given and AWS's credential chain needs botocore: "
            f"{AWS_EXTRA}",
        )
    return BedrockAuth(spec.client_type, endpoint, found)


@final
@attrs.define(eq=False)
class BedrockAuth:
    """Authorizes every attempt of one Bedrock client (module docstring)."""

    client: str
    endpoint: BedrockEndpoint
    credentials: AwsCredentials
    #: botocore's credentials object, once the chain has been loaded.
    _chain: Any = attrs.field(default=None, init=False, repr=False)
    _lock: anyio.Lock = attrs.field(factory=anyio.Lock, init=False, repr=False)

    @property
    def base_url(self) -> str:
        """Where the requests go: request paths are joined to it."""
        return self.endpoint.url

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every secret this client holds now, for redaction (08 D61)."""
        return self.credentials.secrets

    async def authorize(self, request: HTTPRequest, url: str) -> HTTPRequest:
        """``request`` (to be sent to ``url``, its final bytes) with its credentials: the
        bearer key, or a SigV4 signature of this moment.

        Raises:
            ApiKeyRequiredError: the credential chain found no credentials.
        """
        found = self.credentials
        if found.source is AwsSource.CHAIN:
            found = await self._from_chain()
        if found.source is AwsSource.API_KEY:
            added: tuple[tuple[str, str], ...] = (("Authorization", f"Bearer {found.key}"),)
        else:
            assert found.key is not None and found.secret_key is not None
            added = sigv4_sign(
                request.method, url, request.headers, request.body, access_key=found.key,
                secret_key=found.secret_key, session_token=found.session_token,
                region=self.endpoint.region, service=SIGNING_SERVICE, now=time.time(),
            )
        replaced = {name.lower() for name, _ in added}
        kept = tuple(header for header in request.headers if header[0].lower() not in replaced)
        return attrs.evolve(request, headers=(*kept, *added))

    def unauthorized(self) -> bool:
        """Nothing to renew: each attempt is signed anew, so a 401 is the caller's to see."""
        return False

    async def _from_chain(self) -> AwsCredentials:
        """The chain's current access keys: loaded once, and taken again when botocore says
        they need a refresh, each time in a worker thread (the module docstring).

        Raises:
            ApiKeyRequiredError: the chain found no credentials.
        """
        async with self._lock:
            if self._chain is None:
                self._chain = await anyio.to_thread.run_sync(_load_chain)
                if self._chain is None:
                    raise ApiKeyRequiredError(self.client, self.client, "AWS_ACCESS_KEY_ID",
                                              "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", None,
                                              detail=_NO_CREDENTIALS)
                self.credentials = await self._frozen()
            elif _refresh_needed(self._chain):
                self.credentials = await self._frozen()
            return self.credentials

    async def _frozen(self) -> AwsCredentials:
        """botocore's frozen credentials as access keys; botocore refreshes them first when
        they are about to expire."""
        frozen = await anyio.to_thread.run_sync(self._chain.get_frozen_credentials)
        return AwsCredentials(AwsSource.CHAIN, "botocore's credential chain", frozen.access_key,
                              frozen.secret_key, frozen.token or None)


def _load_chain() -> Any:
    """botocore's credentials from its whole chain, or ``None`` when it found none; run in a
    worker thread (it may read files and query the instance metadata service)."""
    # The optional extra (no type information): imported only when the chain is needed.
    import botocore.session  # type: ignore[import-untyped]

    return botocore.session.Session().get_credentials()


def _refresh_needed(chain: Any) -> bool:
    """Whether botocore's ``chain`` says its credentials are about to expire (only refreshable
    credentials ever do)."""
    import botocore.credentials  # type: ignore[import-untyped]

    return isinstance(chain, botocore.credentials.RefreshableCredentials) and (
        chain.refresh_needed()
    )
