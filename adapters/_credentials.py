"""Credentials, auth headers and endpoints (spec 04 §3, §4; 08 D16, D23, D25, D40, D72), all
pure.

``credentials`` is the key-safety rule of 04 §3 (which key may go to which base URL), given the
environment as a mapping; ``auth_headers`` says how a key travels; ``check_endpoint`` refuses
the endpoints and keys this project leaves out; ``join_url`` joins a base URL and a path.
Nothing here reads the environment or does I/O: the caller passes what it read.

Azure OpenAI (08 D72) is a property of the base URL, not a client type: on a client row marked
``azure`` (openai-chat, openai-responses, openai-embedding), a base URL that ``is_azure`` is
reached as Azure. Its key goes as ``api-key``; it comes from ``api_key`` in code, else from
``AZURE_OPENAI_API_KEY``, which goes only to the endpoint ``AZURE_OPENAI_ENDPOINT`` names (the
04 §3 rule, as ``OPENAI_API_KEY`` goes only where ``OPENAI_BASE_URL`` points); ``OPENAI_API_KEY``
never goes to Azure, and ``AZURE_OPENAI_API_KEY`` never anywhere else. The base URL is the one
given in code (``"azure"`` stands for ``AZURE_OPENAI_ENDPOINT``: the caller opts in), else
``OPENAI_BASE_URL``, else OpenAI's: ``AZURE_OPENAI_ENDPOINT`` alone never turns a client into
an Azure one. A bare resource URL gets Azure's ``/openai/v1`` path, any other path is kept, and
``AZURE_OPENAI_API_VERSION`` is added as the ``api-version`` query when the URL gives none.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Final

from mmsp_core.errors import (
    ApiKeyRequiredError,
    RoutingError,
    UnsupportedOperationError,
    UnsupportedParameterError,
)

from ._aws import BEDROCK_SCHEME
from ._rows import client_spec
from ._spec import AuthForm, ClientSpec, ServiceAccountKeys
from ._vertex import VERTEX_URL, is_vertex, is_vertex_host

__all__ = [
    "auth_headers",
    "check_endpoint",
    "credentials",
    "environment_key_allowed",
    "is_azure",
    "join_url",
    "telemetry_provider",
]

#: Azure OpenAI's variables (08 D72): its key, its endpoint and its API version.
AZURE_KEY_ENV: Final = "AZURE_OPENAI_API_KEY"
AZURE_ENDPOINT_ENV: Final = "AZURE_OPENAI_ENDPOINT"
AZURE_VERSION_ENV: Final = "AZURE_OPENAI_API_VERSION"
#: The ``base_url`` that stands for ``AZURE_OPENAI_ENDPOINT`` (case-insensitive).
AZURE_FROM_ENVIRONMENT: Final = "azure"
#: ``gen_ai.provider.name`` of Azure OpenAI and Vertex AI calls (``telemetry_provider``).
_AZURE_PROVIDER: Final = "azure.ai.openai"
_VERTEX_PROVIDER: Final = "gcp.vertex_ai"
#: Host name endings of Azure OpenAI resources.
_AZURE_HOSTS: Final = (".openai.azure.com", ".cognitiveservices.azure.com")
#: The path of Azure's v1 API, added to a base URL that names only the resource.
_AZURE_PATH: Final = "/openai/v1"
_AZURE_KEY_RULE: Final = (
    f"an Azure OpenAI endpoint takes the api_key given in code, or {AZURE_KEY_ENV} when it is "
    f"the endpoint {AZURE_ENDPOINT_ENV} names; OPENAI_API_KEY is never sent to Azure"
)


def credentials(
    client_type: str, api_key: str | None, base_url: str | None, environ: Mapping[str, str]
) -> tuple[str | None, str]:
    """Resolve ``(key, base URL)`` of a client under the key-safety rule (spec 04 §3, 08 D25).

    ``api_key`` and ``base_url`` are those given in code (``None`` for none); ``environ`` is
    the environment, read for the client's ``<P>_API_KEY`` and ``<P>_BASE_URL`` only (an empty
    value counts as unset). The base URL is the one given, else ``<P>_BASE_URL``, else the
    default endpoint. A key given in code always goes; the environment's key goes only where
    ``environment_key_allowed`` says; an open server runs keyless otherwise (08 D40). A base
    URL of a cloud route (``bedrock://<region>``) comes back with ``api_key`` as given, even
    none: the cloud's own credential sources apply there (``adapters._aws``, 08 D72); so does
    a Vertex client's (``adapters._vertex.is_vertex``), with the base URL given in code, else
    a Vertex host the environment names, else ``https://aiplatform.googleapis.com``. On a
    client row marked ``azure``, an Azure base URL follows Azure's rule (module docstring,
    08 D72): the URL comes back with its ``/openai/v1`` path and ``api-version`` query.

    Raises:
        ApiKeyRequiredError: a ``base_url`` given in code without ``api_key`` (unless the
            environment's key may go there), or no key at all on a client that needs one; the
            error names the variables, never a key (08 D16). On Azure it names
            ``AZURE_OPENAI_API_KEY`` and ``AZURE_OPENAI_ENDPOINT``.
        UnsupportedParameterError: ``base_url="azure"`` (``parameter="base_url"``) with
            ``AZURE_OPENAI_ENDPOINT`` unset or naming no Azure endpoint.
        RoutingError: an unknown client type.
    """
    spec = client_spec(client_type)
    if spec.azure:
        azure = _azure_credentials(spec, api_key, base_url, environ)
        if azure is not None:
            return azure
    url = base_url or environ.get(spec.base_url_env) or spec.default_base_url
    if spec.route_for(url) is not None:
        # A cloud route takes the cloud's own credentials, never <P>_API_KEY (08 D72).
        return api_key, url
    if is_vertex(client_type, url, api_key):
        # So does Vertex AI, at the origin given in code or its own (adapters._vertex).
        return api_key, base_url or (url if is_vertex_host(url) else VERTEX_URL)
    if api_key is not None:
        return api_key, url
    if environment_key_allowed(client_type, base_url):
        key = environ.get(spec.api_key_env) or None
        if key is None and not spec.open_server:
            raise ApiKeyRequiredError(spec.client_type, spec.client_type, spec.api_key_env,
                                      spec.base_url_env, None)
        return key, url
    if spec.open_server:
        return None, url
    raise ApiKeyRequiredError(spec.client_type, spec.client_type, spec.api_key_env,
                              spec.base_url_env, base_url)


def auth_headers(
    client_type: str, api_key: str | None, base_url: str | None = None
) -> tuple[tuple[str, str], ...]:
    """Return the credential headers ``client_type`` sends with ``api_key`` to ``base_url``
    (spec 04 §3, §4; 08 D72).

    Bearer clients send ``Authorization: Bearer <key>``; anthropic-official ``x-api-key``
    only; ant-messages both; the Google clients ``x-goog-api-key`` (never the URL, 08 D17).
    A client row marked ``azure`` whose ``base_url`` ``is_azure`` sends ``api-key: <key>``
    only (08 D72). A cloud route's base URL (``bedrock://<region>``) and a Vertex client
    (``adapters._vertex.is_vertex``) send nothing here: the I/O layer signs each request for
    the cloud, or adds its OAuth token (08 D72). An open server (mmsp, the vLLM
    adapter) without a key sends nothing (08 D40). An empty key counts as none.

    Raises:
        ApiKeyRequiredError: no key on a client that needs one (08 D25), or a key an HTTP header
            cannot carry (a control character or a non-ASCII one); the key is never quoted
            (08 D16).
        RoutingError: an unknown client type.
    """
    spec = client_spec(client_type)
    if spec.route_for(base_url) is not None or is_vertex(client_type, base_url, api_key):
        return ()
    azure = spec.azure and is_azure(base_url)
    if not api_key:
        if spec.open_server:
            return ()
        raise _key_error(spec, azure, detail=_AZURE_KEY_RULE if azure else None)
    if not all(" " <= char <= "~" for char in api_key):
        raise _key_error(spec, azure,
                         detail="the api_key holds characters an HTTP header cannot carry")
    if azure:
        return (("api-key", api_key),)
    bearer = ("Authorization", f"Bearer {api_key}")
    if spec.auth is AuthForm.BEARER:
        return (bearer,)
    if spec.auth is AuthForm.X_API_KEY:
        return (("x-api-key", api_key),)
    if spec.auth is AuthForm.X_API_KEY_AND_BEARER:
        return (("x-api-key", api_key), bearer)
    return (("x-goog-api-key", api_key),)


def _key_error(spec: ClientSpec, azure: bool, *, detail: str | None) -> ApiKeyRequiredError:
    """The error of a missing or unusable key, naming the variables of the key's endpoint."""
    key_env, url_env = (
        (AZURE_KEY_ENV, AZURE_ENDPOINT_ENV) if azure else (spec.api_key_env, spec.base_url_env)
    )
    return ApiKeyRequiredError(spec.client_type, spec.client_type, key_env, url_env, None,
                               detail=detail)


def environment_key_allowed(client_type: str, base_url: str | None) -> bool:
    """Whether the environment's key (``<P>_API_KEY``) may go to ``base_url`` (spec 04 §3).

    ``base_url`` is the one passed in code (``None`` when none was; ``<P>_BASE_URL`` is not
    passed here, since the environment's key may always go where the environment points).
    True when none was passed, or when it equals the client's default endpoint: scheme and
    host compared case-insensitively, trailing slashes of the path ignored, everything else
    (user info, port, query, fragment) verbatim, so ``https://api.openai.com:443/v1`` is *not*
    the default. False on an open server given any base URL: it runs keyless (08 D40); False
    on an Azure base URL of a row marked ``azure``, where only Azure's own key may go (08 D72);
    and False otherwise, where the caller must pass ``api_key`` (``ApiKeyRequiredError``).

    Raises:
        RoutingError: an unknown client type.
    """
    spec = client_spec(client_type)
    if base_url is None:
        return True
    if spec.open_server or (spec.azure and is_azure(base_url)):
        return False
    return _endpoint_form(base_url) == _endpoint_form(spec.default_base_url)


def _endpoint_form(url: str) -> tuple[str, ...] | None:
    """``url`` in the form spec 04 §3 compares; ``None`` when it does not parse."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return None
    user_info, at, host = parts.netloc.rpartition("@")
    return (parts.scheme.lower(), user_info + at + host.lower(), parts.path.rstrip("/"),
            parts.query, parts.fragment)


def join_url(base_url: str, path: str) -> str:
    """Append ``path`` to ``base_url`` with exactly one ``/`` between them (08 D26, 04 §4).

    ``https://api.z.ai/api/paas/v4/`` + ``/chat/completions`` is
    ``https://api.z.ai/api/paas/v4/chat/completions``. ``path`` may carry a query
    (``?alt=sse``), and so may ``base_url`` (Azure's ``?api-version=...``, 08 D72): the path
    goes before it, and a query of both is the path's, then the base URL's.
    """
    base, _, query = base_url.partition("?")
    joined = f"{base.rstrip('/')}/{path.lstrip('/')}"
    if not query:
        return joined
    return f"{joined}{'&' if '?' in joined else '?'}{query}"


def is_azure(base_url: str | None) -> bool:
    """Whether ``base_url`` is an Azure OpenAI endpoint (08 D72): its host ends in
    ``.openai.azure.com`` or ``.cognitiveservices.azure.com``, or its query gives an
    ``api-version`` (a private endpoint in front of Azure). Raises nothing: a URL that does
    not parse is no Azure endpoint."""
    parts = _split(base_url or "")
    if parts is None:
        return False
    return (parts.hostname or "").endswith(_AZURE_HOSTS) or _api_version(parts.query) is not None


def telemetry_provider(client_type: str, base_url: str | None, api_key: str | None) -> str:
    """``gen_ai.provider.name`` of the calls of a ``client_type`` client at ``base_url`` with
    ``api_key`` (issue 25, the OpenTelemetry GenAI conventions): a cloud route's (Bedrock),
    ``azure.ai.openai`` on an Azure endpoint, ``gcp.vertex_ai`` on Vertex AI (08 D72), else
    the row's ``telemetry_provider``, else the client type.

    Raises:
        RoutingError: an unknown client type.
    """
    spec = client_spec(client_type)
    route = spec.route_for(base_url)
    if route is not None and route.telemetry_provider is not None:
        return route.telemetry_provider
    if spec.azure and is_azure(base_url):
        return _AZURE_PROVIDER
    if is_vertex(spec.client_type, base_url, api_key):
        return _VERTEX_PROVIDER
    return spec.telemetry_provider or spec.client_type


def _split(url: str) -> urllib.parse.SplitResult | None:
    """``url`` split, or ``None`` when it does not parse."""
    try:
        return urllib.parse.urlsplit(url)
    except ValueError:
        return None


def _api_version(query: str) -> str | None:
    """The ``api-version`` a URL query gives, or ``None``."""
    versions = urllib.parse.parse_qs(query).get("api-version")
    return versions[0] if versions else None


def _azure_credentials(
    spec: ClientSpec, api_key: str | None, base_url: str | None, environ: Mapping[str, str]
) -> tuple[str, str] | None:
    """``credentials`` of an Azure base URL (module docstring, 08 D72), or ``None`` when the
    base URL is not Azure's (the 04 §3 rule then applies as on any client).

    Raises:
        ApiKeyRequiredError: neither ``api_key`` nor an ``AZURE_OPENAI_API_KEY`` that may go to
            this endpoint.
        UnsupportedParameterError: ``base_url="azure"`` without a usable
            ``AZURE_OPENAI_ENDPOINT``.
    """
    version = environ.get(AZURE_VERSION_ENV) or None
    endpoint = environ.get(AZURE_ENDPOINT_ENV) or None
    from_environment = base_url is not None and base_url.lower() == AZURE_FROM_ENVIRONMENT
    if from_environment:
        if endpoint is None:
            raise UnsupportedParameterError(
                spec.client_type, "base_url",
                detail=f"base_url {AZURE_FROM_ENVIRONMENT!r} stands for {AZURE_ENDPOINT_ENV}, "
                "which is not set",
            )
        url = endpoint
    else:
        url = base_url or environ.get(spec.base_url_env) or ""
        if not is_azure(url):
            return None
    url = _azure_url(url, version)
    if not is_azure(url):
        raise UnsupportedParameterError(
            spec.client_type, "base_url",
            detail=f"{AZURE_ENDPOINT_ENV} names no Azure OpenAI endpoint: its host is not "
            f"*{' or *'.join(_AZURE_HOSTS)} and it gives no api-version (add one to it, or set "
            f"{AZURE_VERSION_ENV})",
        )
    if api_key is not None:
        return api_key, url
    key = environ.get(AZURE_KEY_ENV) or None
    if key is not None and endpoint is not None and (
        _azure_endpoint(url) == _azure_endpoint(_azure_url(endpoint, version))
    ):
        return key, url
    given = None if from_environment else base_url
    raise ApiKeyRequiredError(spec.client_type, spec.client_type, AZURE_KEY_ENV,
                              AZURE_ENDPOINT_ENV, given, detail=_AZURE_KEY_RULE)


def _azure_url(url: str, api_version: str | None) -> str:
    """``url`` with Azure's ``/openai/v1`` path when it names only the resource, and
    ``api_version`` as its ``api-version`` query when it gives none; ``url`` as it is when it
    does not parse."""
    parts = _split(url)
    if parts is None:
        return url
    path = parts.path if parts.path.strip("/") else _AZURE_PATH
    query = parts.query
    if api_version and _api_version(query) is None:
        version = urllib.parse.urlencode({"api-version": api_version})
        query = f"{query}&{version}" if query else version
    if (path, query) == (parts.path, parts.query):
        return url
    return urllib.parse.urlunsplit(parts._replace(path=path, query=query))


def _azure_endpoint(url: str) -> tuple[str, ...] | None:
    """``url`` in the form Azure's key rule compares: 04 §3's, without the ``api-version``
    parameter, which picks an API version, not an endpoint."""
    form = _endpoint_form(url)
    if form is None:
        return None
    pairs = urllib.parse.parse_qsl(form[3], keep_blank_values=True)
    query = urllib.parse.urlencode([pair for pair in pairs if pair[0] != "api-version"])
    return (*form[:3], query, form[4])


def check_endpoint(client_type: str, model: str, base_url: str | None, api_key: str | None) -> None:
    """Refuse the endpoints and keys this project leaves out (08 D23, D72, spec 04 §3).

    Call with the resolved base URL and key, before anything is sent. The key is never quoted
    in an error (08 D16).

    Raises:
        UnsupportedOperationError: a ``bedrock://`` base URL on a client without a Bedrock
            route (08 D72: only anthropic-official reaches Bedrock); a Vertex AI host on
            google-official (08 D72: Vertex is google-genai's, ``adapters._vertex``).
        RoutingError: a service-account JSON key on google-official, which only takes API keys
            (04 §3), or an unknown client type.
    """
    spec = client_spec(client_type)
    bedrock = base_url is not None and base_url.lower().startswith(f"{BEDROCK_SCHEME}://")
    if bedrock and spec.route_for(base_url) is None:
        raise UnsupportedOperationError(
            spec.client_type, "Amazon Bedrock",
            detail="only anthropic-official reaches Bedrock (bedrock://<region>)",
        )
    if spec.service_account_keys is not ServiceAccountKeys.REFUSED:
        return
    if is_vertex_host(base_url):
        raise UnsupportedOperationError(
            spec.client_type, "Vertex AI", detail="Vertex AI serves Gemini through google-genai"
        )
    if api_key is not None and api_key.lstrip().startswith("{"):
        raise RoutingError(
            model, spec.client_type,
            detail=f"{spec.client_type} takes an API key, not a service-account JSON key; "
            "such keys select Vertex AI, which google-genai reaches",
        )
