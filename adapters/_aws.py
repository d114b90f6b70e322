"""Amazon Bedrock's endpoint and credential sources (08 D72; issue 23 items 3 and 6), pure.

anthropic-official reaches Claude on Bedrock through the base URL ``bedrock://<region>``
(its row's ``Route``): a name of the cloud, not an address. ``bedrock_endpoint`` says where
its requests go: ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, else ``AWS_ENDPOINT_URL`` (as AWS's
SDKs read them), else ``https://bedrock-runtime.<region>.amazonaws.com``; SigV4 keeps the
region and the service ``bedrock`` whatever the endpoint.

``aws_credentials`` says which credential source applies, in this order:

1. ``api_key`` given in code: ``"<access key>,<secret key>"``, with a third comma-separated
   part the session token; without a comma, a Bedrock API key;
2. ``AWS_BEARER_TOKEN_BEDROCK``: a Bedrock API key;
3. ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY`` (and ``AWS_SESSION_TOKEN``);
4. otherwise botocore's credential chain (profiles, SSO, instance roles), which the I/O layer
   runs (extra ``aws``).

A Bedrock API key is sent as a bearer token, unsigned; access keys sign each request (SigV4,
``adapters._sigv4``). 04 §3's key-safety rule is about a vendor key reaching a host the caller
did not mean: ``bedrock://<region>`` names the cloud itself, so the cloud's own sources above
are allowed with a base URL given in code, and ``ANTHROPIC_API_KEY`` is never read for it
(08 D72). Nothing here reads the environment: the caller passes it.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from typing import Final, final

import attrs

from mmsp_core.errors import ApiKeyRequiredError, UnsupportedParameterError

__all__ = [
    "AWS_EXTRA",
    "BEDROCK_SCHEME",
    "SIGNING_SERVICE",
    "AwsCredentials",
    "AwsSource",
    "BedrockEndpoint",
    "aws_credentials",
    "bedrock_endpoint",
]

#: The scheme of a Bedrock base URL: ``bedrock://<region>``.
BEDROCK_SCHEME: Final = "bedrock"
#: The SigV4 service name of Bedrock's runtime API.
SIGNING_SERVICE: Final = "bedrock"
#: What installs botocore, which the credential chain needs (08 D72).
AWS_EXTRA: Final = "pip install 'mmsp-sansio[aws]'"
#: The endpoint variables, first set wins (item 6: as AWS's SDKs read them).
ENDPOINT_VARIABLES: Final = ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL")
BEARER_VARIABLE: Final = "AWS_BEARER_TOKEN_BEDROCK"
ACCESS_KEY_VARIABLE: Final = "AWS_ACCESS_KEY_ID"
SECRET_KEY_VARIABLE: Final = "AWS_SECRET_ACCESS_KEY"
SESSION_TOKEN_VARIABLE: Final = "AWS_SESSION_TOKEN"
#: An AWS region name: ``us-east-1``, ``eu-central-2``, ``us-gov-west-1``...
_REGION: Final = re.compile(r"[a-z]{2}(-[a-z0-9]+)+")
_API_KEY_FORMS: Final = (
    "a Bedrock api_key is '<access key>,<secret key>' (with an optional ',<session token>'), "
    "or a Bedrock API key without a comma"
)


@final
@attrs.frozen
class BedrockEndpoint:
    """Where a Bedrock client's requests go, and the region SigV4 signs for."""

    #: The origin (and path) request paths are joined to.
    url: str
    region: str


def bedrock_endpoint(client: str, base_url: str, environ: Mapping[str, str]) -> BedrockEndpoint:
    """The endpoint of the base URL ``bedrock://<region>`` (module docstring).

    Raises:
        UnsupportedParameterError: ``parameter="base_url"`` when the base URL names no region,
            or an endpoint variable is not an http(s) URL.
    """
    region = base_url.partition("://")[2].rstrip("/")
    if not _REGION.fullmatch(region):
        raise UnsupportedParameterError(
            client, "base_url",
            detail=f"a Bedrock base URL is bedrock://<region>, such as bedrock://us-east-1, "
            f"not {base_url[:80]!r}",
        )
    for name in ENDPOINT_VARIABLES:
        url = environ.get(name)
        if not url:
            continue
        if not url.lower().startswith(("http://", "https://")):
            raise UnsupportedParameterError(
                client, "base_url", detail=f"{name} must be an http(s) URL, not {url[:80]!r}"
            )
        return BedrockEndpoint(url, region)
    return BedrockEndpoint(f"https://bedrock-runtime.{region}.amazonaws.com", region)


class AwsSource(enum.Enum):
    """Which credential source a Bedrock client uses (module docstring)."""

    #: A Bedrock API key, sent as a bearer token.
    API_KEY = "api-key"
    #: An access key and its secret (and a session token), signing each request.
    ACCESS_KEYS = "access-keys"
    #: botocore's credential chain, run by the I/O layer.
    CHAIN = "chain"


@final
@attrs.frozen
class AwsCredentials:
    """A Bedrock client's credentials, as far as the pure layer can tell; no secret shows in
    its ``repr``."""

    source: AwsSource
    #: Where they came from: ``"api_key"`` or the variable's name.
    origin: str
    #: The Bedrock API key (``API_KEY``) or the access key id (``ACCESS_KEYS``).
    key: str | None = attrs.field(default=None, repr=False)
    secret_key: str | None = attrs.field(default=None, repr=False)
    session_token: str | None = attrs.field(default=None, repr=False)

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every secret held, for redaction (08 D61): the API key, the secret key and the
        session token; the access key id is no secret."""
        held = (self.key if self.source is AwsSource.API_KEY else None, self.secret_key,
                self.session_token)
        return tuple(secret for secret in held if secret)


def aws_credentials(
    client: str, api_key: str | None, environ: Mapping[str, str]
) -> AwsCredentials:
    """The credential source of a Bedrock client, in the order of the module docstring; an
    empty value counts as unset.

    Raises:
        ApiKeyRequiredError: ``api_key`` with commas that is not ``<access key>,<secret
            key>[,<session token>]``, ``AWS_ACCESS_KEY_ID`` without ``AWS_SECRET_ACCESS_KEY``
            (or the reverse), or a key an HTTP header cannot carry; no key is ever quoted.
    """
    if api_key:
        return _checked(client, _from_api_key(client, api_key), ACCESS_KEY_VARIABLE)
    bearer = environ.get(BEARER_VARIABLE)
    if bearer:
        return _checked(client, AwsCredentials(AwsSource.API_KEY, BEARER_VARIABLE, bearer),
                        BEARER_VARIABLE)
    access_key = environ.get(ACCESS_KEY_VARIABLE)
    secret_key = environ.get(SECRET_KEY_VARIABLE)
    if access_key and secret_key:
        keys = AwsCredentials(AwsSource.ACCESS_KEYS, ACCESS_KEY_VARIABLE, access_key, secret_key,
                              environ.get(SESSION_TOKEN_VARIABLE) or None)
        return _checked(client, keys, ACCESS_KEY_VARIABLE)
    if access_key or secret_key:
        missing = SECRET_KEY_VARIABLE if access_key else ACCESS_KEY_VARIABLE
        raise _key_error(client, missing, f"{missing} must be set with "
                         f"{ACCESS_KEY_VARIABLE if secret_key else SECRET_KEY_VARIABLE}")
    return AwsCredentials(AwsSource.CHAIN, "botocore's credential chain")


def _from_api_key(client: str, api_key: str) -> AwsCredentials:
    """``api_key`` read as access keys (with commas) or a Bedrock API key (without).

    Raises:
        ApiKeyRequiredError: commas, but not two or three non-empty parts.
    """
    if "," not in api_key:
        return AwsCredentials(AwsSource.API_KEY, "api_key", api_key)
    parts = [part.strip() for part in api_key.split(",")]
    if len(parts) not in (2, 3) or not all(parts):
        raise _key_error(client, ACCESS_KEY_VARIABLE, _API_KEY_FORMS)
    token = parts[2] if len(parts) == 3 else None
    return AwsCredentials(AwsSource.ACCESS_KEYS, "api_key", parts[0], parts[1], token)


def _checked(client: str, found: AwsCredentials, variable: str) -> AwsCredentials:
    """``found``, whose every part an HTTP header can carry (printable ASCII); an error names
    ``variable``.

    Raises:
        ApiKeyRequiredError: a part holds another character (the key is not quoted).
    """
    parts = (found.key, found.secret_key, found.session_token)
    if all(part is None or all(" " < char <= "~" for char in part) for part in parts):
        return found
    raise _key_error(client, variable, f"the credentials from {found.origin} hold characters "
                     "an HTTP header cannot carry")


def _key_error(client: str, variable: str, detail: str) -> ApiKeyRequiredError:
    return ApiKeyRequiredError(client, client, variable, ENDPOINT_VARIABLES[0], None,
                               detail=detail)
