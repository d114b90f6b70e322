"""Vertex AI on google-genai: the route, its credential sources and its calls (08 D72), pure.

A google-genai client is a Vertex client (D66's rule, kept by D72) when its base URL's host is
``aiplatform.googleapis.com`` or ends in ``-aiplatform.googleapis.com``, or its key is a
service-account JSON key (``is_vertex``). Its base URL is the one given in code, else
``https://aiplatform.googleapis.com``; any other origin (a proxy, the simulator) keeps
Vertex's paths under it (issue 23 item 6). ``vertex_source`` says which credential applies, in
this order:

1. ``api_key`` given in code: a service-account JSON key (an API key is refused: Vertex's
   paths take OAuth tokens);
2. ``GOOGLE_APPLICATION_CREDENTIALS``: the path of a service-account key file (or any file
   Application Default Credentials read);
3. Application Default Credentials' well-known file, which ``gcloud auth
   application-default login`` writes: ``$CLOUDSDK_CONFIG``, else ``%APPDATA%\\gcloud`` (Windows),
   else ``~/.config/gcloud``, then ``application_default_credentials.json``.

No metadata service is ever probed. 04 §3's key-safety rule is about a vendor key reaching a
host the caller did not mean: a Vertex route names the cloud itself, so these sources apply
with a base URL given in code, and ``GEMINI_API_KEY`` is never read for it (08 D72).

The I/O layer reads the file (in a worker thread), ``read_vertex_credential`` reads its public
fields (``service_account``: ``project_id``, ``client_email``, ``token_uri``;
``authorized_user``: ``client_id``, ``quota_project_id``), ``vertex_project`` picks the project
(the key's, else ``GOOGLE_CLOUD_PROJECT``, else the user credentials' quota project),
``vertex_location`` the location (``global``, or a regional host's region) and ``on_vertex``
turns a call into Vertex's (``v1beta1`` paths under the project and location, 04 §4). Signing
the token request and exchanging it are the I/O layer's (``mmsp_io._vertex``). Nothing here
reads the environment: the caller passes it. No error quotes a key.
"""

from __future__ import annotations

import enum
import urllib.parse
from collections.abc import Mapping
from typing import Any, Final, final

import attrs

from mmsp_core.errors import ApiKeyRequiredError, UnsupportedOperationError

from ._json import BadField, loads
from ._plan import CallPlan
from ._rows import client_spec
from ._spec import ServiceAccountKeys
from .google_embedding import PROTOCOL as EMBEDDING
from .google_embedding.profiles import EmbeddingProfile
from .google_genai import PROTOCOL as GENERATE_CONTENT
from .google_genai.profiles import vertex

__all__ = [
    "GOOGLE_TOKEN_URI",
    "VERTEX_EXTRA",
    "VERTEX_SCOPE",
    "VERTEX_URL",
    "AuthorizedUser",
    "ServiceAccountKey",
    "VertexCredential",
    "VertexSource",
    "VertexSourceKind",
    "is_vertex",
    "is_vertex_host",
    "on_vertex",
    "read_vertex_credential",
    "vertex_location",
    "vertex_project",
    "vertex_source",
]

#: Vertex AI's global endpoint (04 §4).
VERTEX_URL: Final = "https://aiplatform.googleapis.com"
#: What installs google-auth, which reads and signs with Vertex's credentials (08 D72).
VERTEX_EXTRA: Final = "pip install 'mmsp-sansio[vertex]'"
#: The OAuth scope of every Vertex token (04 §3).
VERTEX_SCOPE: Final = "https://www.googleapis.com/auth/cloud-platform"
#: Google's token endpoint, for credentials that name none.
GOOGLE_TOKEN_URI: Final = "https://oauth2.googleapis.com/token"
KEY_FILE_VARIABLE: Final = "GOOGLE_APPLICATION_CREDENTIALS"
PROJECT_VARIABLE: Final = "GOOGLE_CLOUD_PROJECT"
_ADC_FILE: Final = "application_default_credentials.json"
_HOW: Final = (
    "Vertex AI takes a service-account JSON key as api_key, the path of one in "
    f"{KEY_FILE_VARIABLE}, or Application Default Credentials (gcloud auth "
    "application-default login)"
)


def is_vertex_host(base_url: str | None) -> bool:
    """Whether ``base_url``'s host is Vertex AI's: ``aiplatform.googleapis.com`` or a regional
    ``<location>-aiplatform.googleapis.com`` (08 D66)."""
    try:
        host = urllib.parse.urlsplit(base_url or "").hostname or ""
    except ValueError:
        return False
    return host == "aiplatform.googleapis.com" or host.endswith("-aiplatform.googleapis.com")


def vertex_location(base_url: str | None) -> str:
    """The location of a Vertex base URL's calls: a regional host's region
    (``europe-west4-aiplatform.googleapis.com``: ``europe-west4``), else ``global`` (04 §4)."""
    if not is_vertex_host(base_url):
        return "global"
    host = urllib.parse.urlsplit(base_url or "").hostname or ""
    region = host.removesuffix("-aiplatform.googleapis.com")
    return "global" if region == host else region


def _is_key_json(api_key: str | None) -> bool:
    return api_key is not None and api_key.lstrip().startswith("{")


def is_vertex(client_type: str, base_url: str | None, api_key: str | None) -> bool:
    """Whether a client of ``client_type`` with this base URL and key is a Vertex client:
    on a client row that reaches Vertex (google-genai), a Vertex host or a service-account
    JSON key (08 D66, D72).

    Raises:
        RoutingError: an unknown client type.
    """
    spec = client_spec(client_type)
    return spec.service_account_keys is ServiceAccountKeys.VERTEX and (
        is_vertex_host(base_url) or _is_key_json(api_key)
    )


class VertexSourceKind(enum.Enum):
    """Where a Vertex client's credential comes from (module docstring, in order)."""

    KEY = "the api_key"
    KEY_FILE = KEY_FILE_VARIABLE
    DEFAULT = "the Application Default Credentials file"


@final
@attrs.frozen
class VertexSource:
    """A Vertex client's credential source: the key given in code, or the file to read."""

    kind: VertexSourceKind
    #: The service-account JSON key of ``KEY``.
    key: str | None = attrs.field(default=None, repr=False)
    #: The file of ``KEY_FILE`` and ``DEFAULT``.
    path: str | None = None
    #: ``GOOGLE_CLOUD_PROJECT``, if set.
    project: str | None = None


def vertex_source(
    client_type: str, api_key: str | None, environ: Mapping[str, str]
) -> VertexSource:
    """The credential source of a Vertex client (module docstring, in order).

    Raises:
        UnsupportedOperationError: ``api_key`` is not a service-account JSON key (an API key).
        ApiKeyRequiredError: no source at all: no key, no ``GOOGLE_APPLICATION_CREDENTIALS``
            and no home directory to find Application Default Credentials in.
        RoutingError: an unknown client type.
    """
    spec = client_spec(client_type)
    project = environ.get(PROJECT_VARIABLE) or None
    if api_key is not None:
        if not _is_key_json(api_key):
            raise UnsupportedOperationError(
                spec.client_type, "Vertex AI",
                detail=f"an API key is no Vertex AI credential: {_HOW}",
            )
        return VertexSource(VertexSourceKind.KEY, key=api_key, project=project)
    if path := environ.get(KEY_FILE_VARIABLE):
        return VertexSource(VertexSourceKind.KEY_FILE, path=path, project=project)
    folder = environ.get("CLOUDSDK_CONFIG") or _gcloud_folder(environ)
    if folder is None:
        raise ApiKeyRequiredError(spec.client_type, spec.client_type, KEY_FILE_VARIABLE,
                                  spec.base_url_env, None, detail=_HOW)
    path = f"{folder.rstrip('/')}/{_ADC_FILE}"
    return VertexSource(VertexSourceKind.DEFAULT, path=path, project=project)


def _gcloud_folder(environ: Mapping[str, str]) -> str | None:
    """gcloud's configuration folder: ``%APPDATA%\\gcloud`` on Windows, else
    ``~/.config/gcloud``; ``None`` without either variable."""
    if appdata := environ.get("APPDATA"):
        return f"{appdata}\\gcloud"
    if home := environ.get("HOME"):
        return f"{home.rstrip('/')}/.config/gcloud"
    return None


@final
@attrs.frozen
class ServiceAccountKey:
    """A service-account key's public fields, and the key (``info``) to sign with."""

    client_email: str
    token_uri: str
    project_id: str | None
    info: Mapping[str, Any] = attrs.field(repr=False)


@final
@attrs.frozen
class AuthorizedUser:
    """User credentials (``gcloud auth application-default login``): their public fields, and
    the refresh token with its client (``info``)."""

    client_id: str
    token_uri: str
    quota_project_id: str | None
    info: Mapping[str, Any] = attrs.field(repr=False)


VertexCredential = ServiceAccountKey | AuthorizedUser


def read_vertex_credential(
    client_type: str, text: str | bytes, source: VertexSourceKind
) -> VertexCredential:
    """Read a credential file's (or key's) JSON ``text``: a service-account key or user
    credentials, with the public fields the call needs checked. The text is never quoted.

    Raises:
        ApiKeyRequiredError: not a JSON object, or a field missing or of the wrong type; the
            detail names ``source`` and the field.
        UnsupportedOperationError: credentials of another ``type`` (external accounts,
            impersonation), which this library does not exchange.
        RoutingError: an unknown client type.
    """
    spec = client_spec(client_type)

    def bad(what: str) -> ApiKeyRequiredError:
        return ApiKeyRequiredError(spec.client_type, spec.client_type, KEY_FILE_VARIABLE,
                                   spec.base_url_env, None,
                                   detail=f"{source.value} is not a usable credential: {what}")

    try:
        info = loads(text if isinstance(text, str) else text.decode("utf-8"))
    except (BadField, UnicodeDecodeError):
        raise bad("it is not JSON") from None
    if type(info) is not dict:
        raise bad("it is not a JSON object")

    def field(name: str, *, required: bool = True) -> str | None:
        value = info.get(name)
        if value is None and not required:
            return None
        if type(value) is not str or not value:
            raise bad(f"{name!r} is missing or not a string")
        return value

    kind = info.get("type")
    token_uri = field("token_uri", required=False) or GOOGLE_TOKEN_URI
    if not token_uri.lower().startswith(("https://", "http://")):
        raise bad("'token_uri' is not an http(s) URL")
    if kind == "service_account":
        field("private_key")
        return ServiceAccountKey(str(field("client_email")), token_uri,
                                 field("project_id", required=False), info)
    if kind == "authorized_user":
        field("client_secret")
        field("refresh_token")
        return AuthorizedUser(str(field("client_id")), token_uri,
                              field("quota_project_id", required=False), info)
    shown = kind if type(kind) is str and len(kind) <= 40 else "unknown"
    raise UnsupportedOperationError(
        spec.client_type, "Vertex AI",
        detail=f"credentials of type {shown!r} are not supported: {_HOW}",
    )


def vertex_project(client_type: str, credential: VertexCredential, source: VertexSource) -> str:
    """The project of a Vertex client's calls: the service-account key's ``project_id``,
    else ``GOOGLE_CLOUD_PROJECT``, else the user credentials' ``quota_project_id``.

    Raises:
        ApiKeyRequiredError: none of them, naming ``GOOGLE_CLOUD_PROJECT``.
        RoutingError: an unknown client type.
    """
    key_project = credential.project_id if isinstance(credential, ServiceAccountKey) else None
    quota = credential.quota_project_id if isinstance(credential, AuthorizedUser) else None
    project = key_project or source.project or quota
    if project is None:
        spec = client_spec(client_type)
        raise ApiKeyRequiredError(
            spec.client_type, spec.client_type, PROJECT_VARIABLE, spec.base_url_env, None,
            detail=f"Vertex AI needs a project: {source.kind.value} names none",
        )
    return project


def on_vertex(plan: CallPlan, project: str, location: str = "global") -> CallPlan:
    """``plan`` as Vertex AI's call for ``project`` in ``location`` (04 §4, 08 D72):
    generateContent at ``v1beta1`` under the project, an embedding as one ``embedContent``
    call.

    Raises:
        UnsupportedOperationError: the call's protocol is not one Vertex serves.
    """
    if plan.protocol.name == GENERATE_CONTENT.name:
        return attrs.evolve(plan, profile=vertex(project, location))
    if plan.protocol.name == EMBEDDING.name:
        return attrs.evolve(plan, profile=EmbeddingProfile(project, location))
    raise UnsupportedOperationError(
        plan.client, "Vertex AI",
        detail=f"{plan.protocol.traits.display_name} is not served on Vertex AI",
    )
