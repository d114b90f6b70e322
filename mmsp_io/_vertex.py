"""Vertex AI's credentials at request time (08 D72; issue 23 items 4 and 6).

A google-genai client that is a Vertex client (``adapters.clients.is_vertex``) gets a
``VertexAuth`` from ``vertex_auth``: the pure layer decided which credential source applies
(``vertex_source``: the service-account key given as ``api_key``, the file
``GOOGLE_APPLICATION_CREDENTIALS`` names, or Application Default Credentials' file). This
module holds one OAuth access token for that credential:

- the credential is read once, on the first call: a file in a worker thread (no file read on
  the event loop), its public fields by ``read_vertex_credential``, the project by
  ``vertex_project``; ``prepare`` then turns each call into Vertex's (``on_vertex``);
- the token comes from the credential's ``token_uri`` (Google's, or the one the key names):
  a service-account key signs a JWT assertion with google-auth's public API
  (``service_account.Credentials.from_service_account_info``, its ``signer``,
  ``google.auth.jwt.encode``) for the grant ``urn:ietf:params:oauth:grant-type:jwt-bearer``;
  user credentials send their refresh token (the grant ``refresh_token``). The exchange is a
  ``POST`` through the client's own async HTTP client (``fetch_body``: its timeouts, at most
  ``TOKEN_LIMIT`` bytes of answer), so no blocking request runs under the event loop, and
  trio works as asyncio does;
- the token is cached and fetched again ``REFRESH_MARGIN`` seconds before ``expires_in`` runs
  out; ``unauthorized`` drops it after a 401, so that the call is tried once more with a new
  one. Concurrent calls share one exchange (a lock).

google-auth is the optional extra ``vertex``, imported only when a Vertex client is built;
without it ``UnsupportedOperationError`` names ``pip install 'mmsp-sansio[vertex]'``. No secret
leaves here in a text: ``secrets`` lists what the client redacts (08 D61), the key, its
private key, the refresh token and client secret, and the token.
"""

from __future__ import annotations

import json
import math
import time
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Final, final

import anyio
import anyio.to_thread
import attrs
import httpx

from adapters import CallPlan
from adapters.clients import (
    VERTEX_EXTRA,
    VERTEX_SCOPE,
    ServiceAccountKey,
    VertexCredential,
    VertexSource,
    VertexSourceKind,
    client_spec,
    is_vertex,
    on_vertex,
    read_vertex_credential,
    vertex_location,
    vertex_project,
    vertex_source,
)
from mmsp_core.errors import (
    ApiKeyRequiredError,
    MalformedEventError,
    MMSPError,
    ProviderHTTPError,
    UnsupportedOperationError,
    redact_error,
)
from mmsp_core.request import HTTPRequest

from .driver import Timeouts, fetch_body

__all__ = ["REFRESH_MARGIN", "TOKEN_LIMIT", "VertexAuth", "vertex_auth"]

#: A token is fetched again this many seconds before it expires.
REFRESH_MARGIN: Final = 300.0
#: The largest token answer read, in bytes (an answer is a few hundred).
TOKEN_LIMIT: Final = 64 * 1024
#: The largest credential file read, in bytes (a key is about 2 KiB).
CREDENTIAL_FILE_LIMIT: Final = 1024 * 1024
#: The lifetime asked for a signed assertion, in seconds (Google's maximum).
ASSERTION_LIFETIME: Final = 3600
_JWT_GRANT: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_FORM: Final = (("content-type", "application/x-www-form-urlencoded"),
                ("accept", "application/json"))


def vertex_auth(
    client_type: str,
    base_url: str,
    api_key: str | None,
    environ: Mapping[str, str],
    *,
    http: httpx.AsyncClient,
    timeouts: Timeouts,
    clock: Callable[[], float] = time.time,
) -> VertexAuth | None:
    """The ``VertexAuth`` of a Vertex client (its resolved ``base_url`` and ``api_key``),
    else ``None``. Token exchanges go through ``http`` under ``timeouts``; ``clock`` is the
    wall clock of assertions and expiries.

    Raises:
        UnsupportedOperationError: google-auth is not installed (naming the extra), or
            ``api_key`` is an API key rather than a service-account key.
        ApiKeyRequiredError: no credential source at all (``vertex_source``).
    """
    spec = client_spec(client_type)
    if not is_vertex(spec.client_type, base_url, api_key):
        return None
    source = vertex_source(spec.client_type, api_key, environ)
    _google_auth(spec.client_type)
    return VertexAuth(spec.client_type, source, vertex_location(base_url), http, timeouts, clock)


def _google_auth(client: str) -> tuple[ModuleType, ModuleType]:
    """google-auth's ``jwt`` and ``service_account`` modules (the optional extra).

    Raises:
        UnsupportedOperationError: google-auth is not installed, naming the extra.
    """
    try:
        import google.auth.jwt
        import google.oauth2.service_account
    except ImportError:
        raise UnsupportedOperationError(
            client, "Vertex AI", detail=f"Vertex AI needs google-auth: {VERTEX_EXTRA}"
        ) from None
    return google.auth.jwt, google.oauth2.service_account


@final
@attrs.define(eq=False)
class VertexAuth:
    """The OAuth token of one Vertex client's credential (module docstring)."""

    client: str
    source: VertexSource
    #: The calls' location (``vertex_location``).
    location: str
    http: httpx.AsyncClient = attrs.field(repr=False)
    timeouts: Timeouts = attrs.field(repr=False)
    clock: Callable[[], float] = attrs.field(default=time.time, repr=False)
    _credential: VertexCredential | None = attrs.field(default=None, init=False, repr=False)
    _project: str | None = attrs.field(default=None, init=False)
    _token: str | None = attrs.field(default=None, init=False, repr=False)
    _expires: float = attrs.field(default=-math.inf, init=False, repr=False)
    _lock: anyio.Lock | None = attrs.field(default=None, init=False, repr=False)

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every secret this client holds now, for redaction (08 D61)."""
        found = [self.source.key, self._token]
        if self._credential is not None:
            info = self._credential.info
            found += [info.get(name) for name in ("private_key", "refresh_token", "client_secret")]
        return tuple(value for value in found if isinstance(value, str) and value)

    async def prepare(self, plan: CallPlan) -> CallPlan:
        """``plan`` as Vertex's call under the credential's project and the location
        (``on_vertex``); the credential is read first if it was not yet.

        Raises:
            ApiKeyRequiredError: the credential cannot be read or names no project.
            UnsupportedOperationError: credentials of a type not supported, or a protocol
                Vertex does not serve.
        """
        await self._read_credential()
        assert self._project is not None
        return on_vertex(plan, self._project, self.location)

    async def authorize(self, request: HTTPRequest, url: str) -> HTTPRequest:
        """``request`` with ``Authorization: Bearer <token>`` (any such header it had
        replaced); the token is fetched when there is none or it is about to expire.
        ``url`` is where ``request`` goes, unused: a bearer token does not depend on it.

        Raises:
            ProviderHTTPError: the token endpoint refused (its status and message).
            ProviderConnectionError, StreamTimeoutError: the token endpoint could not be
                reached in time.
            MalformedEventError: its answer holds no token.
            StreamLimitError: its answer is longer than ``TOKEN_LIMIT``.
            ApiKeyRequiredError: the credential cannot be read.
        """
        token = await self._current_token()
        kept = tuple(header for header in request.headers if header[0].lower() != "authorization")
        return attrs.evolve(request, headers=(*kept, ("Authorization", f"Bearer {token}")))

    def unauthorized(self) -> bool:
        """Drop the token after the endpoint answered 401; whether a retry with a new one
        makes sense (a token was held: it may have been revoked or expired early)."""
        held = self._token is not None
        self._token, self._expires = None, -math.inf
        return held

    async def _read_credential(self) -> None:
        """Read the credential and its project once (a file in a worker thread).

        Raises:
            ApiKeyRequiredError: the file cannot be read, or the credential is not usable or
                names no project.
            UnsupportedOperationError: credentials of a type not supported.
        """
        if self._credential is not None:
            return
        source = self.source
        if source.kind is VertexSourceKind.KEY:
            text: str | bytes = source.key or ""
        else:
            assert source.path is not None
            text = await anyio.to_thread.run_sync(self._read_file, source.path)
        credential = read_vertex_credential(self.client, text, source.kind)
        self._project = vertex_project(self.client, credential, source)
        self._credential = credential

    def _read_file(self, path: str) -> bytes:
        """The credential file's bytes, at most ``CREDENTIAL_FILE_LIMIT``; run in a worker
        thread.

        Raises:
            ApiKeyRequiredError: it cannot be read or is larger (naming the source, not the
                path's content).
        """
        try:
            with Path(path).expanduser().open("rb") as file:
                data = file.read(CREDENTIAL_FILE_LIMIT + 1)
        except OSError as exc:
            raise self._unusable(f"it cannot be read ({type(exc).__name__})") from None
        if len(data) > CREDENTIAL_FILE_LIMIT:
            raise self._unusable(f"it is larger than {CREDENTIAL_FILE_LIMIT} bytes")
        return data

    def _unusable(self, what: str) -> ApiKeyRequiredError:
        spec = client_spec(self.client)
        return ApiKeyRequiredError(
            self.client, self.client, "GOOGLE_APPLICATION_CREDENTIALS", spec.base_url_env, None,
            detail=f"{self.source.kind.value} {self.source.path!r} is not a usable credential: "
            f"{what}",
        )

    async def _current_token(self) -> str:
        """The cached token, or a new one when it expires within ``REFRESH_MARGIN``."""
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._token is None or self.clock() >= self._expires - REFRESH_MARGIN:
                await self._read_credential()
                assert self._credential is not None
                try:
                    self._token, lifetime = await self._exchange(self._credential)
                except MMSPError as exc:
                    for secret in self.secrets:
                        redact_error(exc, secret)
                    raise
                self._expires = self.clock() + lifetime
            return self._token

    async def _exchange(self, credential: VertexCredential) -> tuple[str, float]:
        """Fetch a token at the credential's ``token_uri``: its text and lifetime in seconds.

        Raises:
            ProviderHTTPError, ProviderConnectionError, StreamTimeoutError,
            StreamLimitError, MalformedEventError: see ``authorize``.
        """
        if isinstance(credential, ServiceAccountKey):
            form = {"grant_type": _JWT_GRANT, "assertion": self._assertion(credential)}
        else:
            info = credential.info
            form = {"grant_type": "refresh_token", "client_id": credential.client_id,
                    "client_secret": info["client_secret"], "refresh_token": info["refresh_token"]}
        try:
            body, _headers = await fetch_body(
                self.http, credential.token_uri, client=self.client, timeouts=self.timeouts,
                limit=TOKEN_LIMIT, headers=_FORM, method="POST",
                content=urllib.parse.urlencode(form).encode("ascii"),
            )
        except ProviderHTTPError as exc:
            exc.detail = f"the token exchange at {credential.token_uri} was refused"
            raise
        return _read_token(self.client, body)

    def _assertion(self, key: ServiceAccountKey) -> str:
        """The signed JWT assertion of ``key`` for Vertex's scope, valid from now.

        Raises:
            ApiKeyRequiredError: google-auth cannot read the key's private key.
        """
        jwt, service_account = _google_auth(self.client)
        try:
            signing = service_account.Credentials.from_service_account_info(dict(key.info))
        except (ValueError, TypeError, KeyError):
            raise ApiKeyRequiredError(
                self.client, self.client, "GOOGLE_APPLICATION_CREDENTIALS",
                client_spec(self.client).base_url_env, None,
                detail=f"{self.source.kind.value} holds no private key google-auth can read",
            ) from None
        now = int(self.clock())
        payload = {"iss": key.client_email, "scope": VERTEX_SCOPE, "aud": key.token_uri,
                   "iat": now, "exp": now + ASSERTION_LIFETIME}
        token: bytes = jwt.encode(signing.signer, payload)
        return token.decode("ascii")


def _read_token(client: str, body: bytes) -> tuple[str, float]:
    """The ``access_token`` and ``expires_in`` of a token answer (``expires_in`` missing:
    an hour, as Google's tokens last).

    Raises:
        MalformedEventError: not a JSON object with a string token and a positive lifetime.
    """
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):
        answer = None
    if not isinstance(answer, dict):
        answer = {}
    token = answer.get("access_token")
    lifetime = answer.get("expires_in", ASSERTION_LIFETIME)
    if not isinstance(token, str) or not token or not all(" " < c <= "~" for c in token):
        raise MalformedEventError(client, "(the token answer)",
                                  detail="the token endpoint's answer holds no access_token")
    if type(lifetime) not in (int, float) or not 0 < lifetime < math.inf:
        raise MalformedEventError(client, "(the token answer)",
                                  detail="the token endpoint's expires_in is not a positive "
                                  "number")
    return token, float(lifetime)
