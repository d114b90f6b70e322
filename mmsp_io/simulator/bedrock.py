"""The simulator's Amazon Bedrock side (08 D72): it checks SigV4 signatures.

Bedrock's endpoint itself (its route, error bodies, event-stream answers) is the
``ant-messages-bedrock`` record's dialect, served as any other. A request to a dialect with a
``signing_service`` is authorised by its key (a Bedrock API key as a Bearer token: the
simulator's ``api_key``) or by a SigV4 signature made with the simulator's AWS test key
(``TEST_ACCESS_KEY``, ``TEST_SECRET_KEY``): ``signed`` recomputes the signature with the same
pure signer the client uses, over the headers the request says it signed, its exact path,
query and body, and compares. A wrong secret, a tampered body or a header changed after
signing gets AWS's 403.

A client reaches it with its base URL ``bedrock://<region>`` and the endpoint variable set to
the simulator (``client_environment``), as AWS's SDKs are pointed at a local endpoint.
"""

from __future__ import annotations

import calendar
import hmac
import re
import time
from typing import Final

import adapters
from adapters.clients import sigv4_sign

from .script import RecordedRequest

__all__ = ["TEST_ACCESS_KEY", "TEST_SECRET_KEY", "client_environment", "signed"]

#: The AWS test key the simulator knows: a request signed with it is authorised.
TEST_ACCESS_KEY: Final = "AKIASIMULATOR0000000"
TEST_SECRET_KEY: Final = "simulator/Secret/Key/0000000000000000000"

#: ``AWS4-HMAC-SHA256 Credential=<key>/<day>/<region>/<service>/aws4_request,
#: SignedHeaders=<names>, Signature=<hex>``.
_AUTHORIZATION: Final = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/\d{8}/(?P<region>[^/]+)/(?P<service>[^/]+)"
    r"/aws4_request, ?SignedHeaders=(?P<names>[a-z0-9;-]+), ?Signature=[0-9a-f]{64}"
)


def signed(request: RecordedRequest, dialect: adapters.SimulatorDialect) -> bool:
    """Whether ``request`` carries a valid SigV4 signature of the simulator's test key for
    ``dialect``'s signing service (none when it has none)."""
    authorization = request.header("authorization") or ""
    match = _AUTHORIZATION.fullmatch(authorization)
    stamp = request.header("x-amz-date") or ""
    if dialect.signing_service is None or match is None or match["key"] != TEST_ACCESS_KEY:
        return False
    if match["service"] != dialect.signing_service:
        return False
    try:
        now = calendar.timegm(time.strptime(stamp, "%Y%m%dT%H%M%SZ"))
    except ValueError:
        return False
    headers = [(name, request.header(name)) for name in match["names"].split(";")]
    host = request.header("host")
    if host is None or any(value is None for _name, value in headers):
        return False
    query = f"?{request.query}" if request.query else ""
    try:
        expected = sigv4_sign(
            request.method, f"http://{host}{request.path}{query}",
            [(name, value) for name, value in headers if value is not None], request.body,
            access_key=TEST_ACCESS_KEY, secret_key=TEST_SECRET_KEY,
            session_token=request.header("x-amz-security-token"), region=match["region"],
            service=match["service"], now=now,
        )
    except ValueError:  # a host header no URL can hold
        return False
    computed = dict((name.lower(), value) for name, value in expected)["authorization"]
    return hmac.compare_digest(computed.encode(), authorization.encode())


def client_environment(url: str) -> dict[str, str]:
    """The environment that points a Bedrock client at the simulator's origin ``url`` and
    signs with its test key (item 6: the endpoint variable AWS's SDKs read)."""
    return {
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": url,
        "AWS_ACCESS_KEY_ID": TEST_ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": TEST_SECRET_KEY,
    }
