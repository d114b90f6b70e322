"""Credentials, auth headers and endpoints (spec 04 §3, §4; 08 D16, D23, D25, D40), all pure.

``credentials`` is the key-safety rule of 04 §3 (which key may go to which base URL), given the
environment as a mapping; ``auth_headers`` says how a key travels; ``check_endpoint`` refuses
the endpoints and keys this project leaves out; ``join_url`` joins a base URL and a path.
Nothing here reads the environment or does I/O: the caller passes what it read.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping

from mmsp_core.errors import ApiKeyRequiredError, RoutingError, UnsupportedOperationError

from ._rows import client_spec
from ._spec import AuthForm, ClientSpec, ServiceAccountKeys

__all__ = [
    "auth_headers",
    "check_endpoint",
    "credentials",
    "environment_key_allowed",
    "join_url",
]


def credentials(
    client_type: str, api_key: str | None, base_url: str | None, environ: Mapping[str, str]
) -> tuple[str | None, str]:
    """Resolve ``(key, base URL)`` of a client under the key-safety rule (spec 04 §3, 08 D25).

    ``api_key`` and ``base_url`` are those given in code (``None`` for none); ``environ`` is
    the environment, read for the client's ``<P>_API_KEY`` and ``<P>_BASE_URL`` only (an empty
    value counts as unset). The base URL is the one given, else ``<P>_BASE_URL``, else the
    default endpoint. A key given in code always goes; the environment's key goes only where
    ``environment_key_allowed`` says; an open server runs keyless otherwise (08 D40).

    Raises:
        ApiKeyRequiredError: a ``base_url`` given in code without ``api_key`` (unless the
            environment's key may go there), or no key at all on a client that needs one; the
            error names the variables, never a key (08 D16).
        RoutingError: an unknown client type.
    """
    spec = client_spec(client_type)
    url = base_url or environ.get(spec.base_url_env) or spec.default_base_url
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


def auth_headers(client_type: str, api_key: str | None) -> tuple[tuple[str, str], ...]:
    """Return the credential headers ``client_type`` sends with ``api_key`` (spec 04 §3, §4).

    Bearer clients send ``Authorization: Bearer <key>``; anthropic-official ``x-api-key``
    only; ant-messages both; the Google clients ``x-goog-api-key`` (never the URL, 08 D17).
    An open server (mmsp, the vLLM adapter) without a key sends nothing (08 D40). An empty key
    counts as none.

    Raises:
        ApiKeyRequiredError: no key on a client that needs one (08 D25), or a key an HTTP header
            cannot carry (a control character or a non-ASCII one); the key is never quoted
            (08 D16).
        RoutingError: an unknown client type.
    """
    spec = client_spec(client_type)
    if not api_key:
        if spec.open_server:
            return ()
        raise _key_error(spec, detail=None)
    if not all(" " <= char <= "~" for char in api_key):
        raise _key_error(spec, detail="the api_key holds characters an HTTP header cannot carry")
    bearer = ("Authorization", f"Bearer {api_key}")
    if spec.auth is AuthForm.BEARER:
        return (bearer,)
    if spec.auth is AuthForm.X_API_KEY:
        return (("x-api-key", api_key),)
    if spec.auth is AuthForm.X_API_KEY_AND_BEARER:
        return (("x-api-key", api_key), bearer)
    return (("x-goog-api-key", api_key),)


def _key_error(spec: ClientSpec, *, detail: str | None) -> ApiKeyRequiredError:
    return ApiKeyRequiredError(
        spec.client_type, spec.client_type, spec.api_key_env, spec.base_url_env, None,
        detail=detail,
    )


def environment_key_allowed(client_type: str, base_url: str | None) -> bool:
    """Whether the environment's key (``<P>_API_KEY``) may go to ``base_url`` (spec 04 §3).

    ``base_url`` is the one passed in code (``None`` when none was; ``<P>_BASE_URL`` is not
    passed here, since the environment's key may always go where the environment points).
    True when none was passed, or when it equals the client's default endpoint: scheme and
    host compared case-insensitively, trailing slashes of the path ignored, everything else
    (user info, port, query, fragment) verbatim, so ``https://api.openai.com:443/v1`` is *not*
    the default. False on an open server given any base URL: it runs keyless (08 D40); and
    False otherwise, where the caller must pass ``api_key`` (``ApiKeyRequiredError``).

    Raises:
        RoutingError: an unknown client type.
    """
    spec = client_spec(client_type)
    if base_url is None:
        return True
    if spec.open_server:
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
    (``?alt=sse``); ``base_url`` must not.
    """
    return f"{base_url.rstrip('/')}/{path.lstrip('/')}"


def check_endpoint(client_type: str, model: str, base_url: str | None, api_key: str | None) -> None:
    """Refuse the endpoints and keys this project leaves out (08 D23, spec 04 §3).

    Call with the resolved base URL and key, before anything is sent. The key is never quoted
    in an error (08 D16).

    Raises:
        UnsupportedOperationError: a ``bedrock://`` base URL (Amazon Bedrock); on a client for
            which Vertex AI is a case (the Gemini API clients), a base URL whose host is
            ``aiplatform.googleapis.com`` or ends in ``-aiplatform.googleapis.com`` (08 D66),
            or a service-account JSON key (one starting with ``{``) on google-genai.
        RoutingError: a service-account JSON key on google-official, which only takes API keys
            (04 §3), or an unknown client type.
    """
    spec = client_spec(client_type)
    if base_url is not None and base_url.lower().startswith("bedrock://"):
        raise UnsupportedOperationError(
            spec.client_type, "Amazon Bedrock",
            detail="bedrock:// endpoints (SigV4 signing, AWS event streams) are out of scope",
        )
    if spec.service_account_keys is not ServiceAccountKeys.NOT_A_CASE and _vertex_host(base_url):
        raise UnsupportedOperationError(
            spec.client_type, "Vertex AI",
            detail="Vertex AI endpoints (aiplatform.googleapis.com) are out of scope",
        )
    if api_key is None or not api_key.lstrip().startswith("{"):
        return
    if spec.service_account_keys is ServiceAccountKeys.REFUSED:
        raise RoutingError(
            model, spec.client_type,
            detail=f"{spec.client_type} takes an API key, not a service-account JSON key; "
            "such keys select Vertex AI, which is out of scope",
        )
    if spec.service_account_keys is ServiceAccountKeys.VERTEX:
        raise UnsupportedOperationError(
            spec.client_type, "Vertex AI",
            detail="service-account JSON keys (Vertex AI) are out of scope",
        )


def _vertex_host(base_url: str | None) -> bool:
    """Whether ``base_url``'s host is Vertex AI's: ``aiplatform.googleapis.com`` or a regional
    ``<location>-aiplatform.googleapis.com`` (08 D66)."""
    try:
        host = urllib.parse.urlsplit(base_url or "").hostname or ""
    except ValueError:
        return False
    return host == "aiplatform.googleapis.com" or host.endswith("-aiplatform.googleapis.com")
