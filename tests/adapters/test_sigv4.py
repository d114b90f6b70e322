"""SigV4 signing: AWS's published vectors, botocore's ``SigV4Auth`` on generated requests, and
botocore's own Bedrock client as the oracle (botocore is a test dependency only)."""

from __future__ import annotations

import datetime
import json
import math
import subprocess
import sys
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters._sigv4 import sign

ROOT = Path(__file__).resolve().parents[2]
UTC = datetime.UTC
#: The credentials and moment of AWS's SigV4 test suite (get-vanilla, post-vanilla).
SUITE = {"access_key": "AKIDEXAMPLE", "secret_key": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
         "region": "us-east-1", "service": "service"}
SUITE_NOW = datetime.datetime(2015, 8, 30, 12, 36, tzinfo=UTC).timestamp()
MODEL_ID = "global.anthropic.claude-sonnet-4-5-20250929-v1:0"


def _authorization(added: Sequence[tuple[str, str]]) -> str:
    return dict(added)["Authorization"]


@pytest.mark.parametrize(("method", "signature"), [
    ("GET", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
    ("POST", "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"),
])
def test_the_aws_test_suite_vanilla_vectors(method: str, signature: str) -> None:
    added = sign(method, "https://example.amazonaws.com/", [], b"", now=SUITE_NOW, **SUITE)
    assert added == (
        ("X-Amz-Date", "20150830T123600Z"),
        ("Authorization",
         "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
         f"SignedHeaders=host;x-amz-date, Signature={signature}"),
    )


# --- botocore as the oracle --------------------------------------------------------------------


def botocore_sign(
    method: str,
    url: str,
    headers: Sequence[tuple[str, str]],
    body: bytes,
    *,
    now: float,
    access_key: str,
    secret_key: str,
    session_token: str | None,
    region: str,
    service: str,
    params: Sequence[tuple[str, str]] = (),
) -> list[tuple[str, str]]:
    """The headers botocore's ``SigV4Auth`` leaves on the request, in order, its clock
    (``botocore.auth.get_current_datetime``) set to ``now``."""
    auth = pytest.importorskip("botocore.auth")
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    request = AWSRequest(method=method, url=url, data=body, params=list(params))
    for name, value in headers:
        request.headers[name] = value  # HTTPHeaders appends: a repeated name stays repeated
    signer = auth.SigV4Auth(Credentials(access_key, secret_key, session_token), service, region)
    with _botocore_clock(now):
        signer.add_auth(request)
    return list(request.headers.items())


def _botocore_clock(now: float) -> Any:
    """Set botocore's clock to ``now`` (seconds since the Unix epoch) within a ``with``; the
    fraction is cut to whole microseconds, never rounded up to the next second."""
    seconds = math.floor(now)
    moment = datetime.datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None) + (
        datetime.timedelta(microseconds=int((now - seconds) * 1e6))
    )
    return mock.patch("botocore.auth.get_current_datetime", return_value=moment)


def applied(headers: Sequence[tuple[str, str]], added: Sequence[tuple[str, str]]) -> list[
    tuple[str, str]
]:
    """``headers`` with the signer's ``added`` headers replacing those of the same name."""
    names = {name.lower() for name, _ in added}
    return [(n, v) for n, v in headers if n.lower() not in names] + list(added)


_SEGMENTS = st.sampled_from([".", "..", "", MODEL_ID, "invoke-with-response-stream", "a~b"]) | (
    st.text(max_size=8).map(lambda text: urllib.parse.quote(text, safe=""))
)
_QUERY_TEXT = st.text(max_size=6).map(lambda text: urllib.parse.quote(text, safe="-_.~"))
_HEADER_NAMES = st.sampled_from([
    "Content-Type", "content-type", "Accept", "X-Amzn-Bedrock-Accept", "X-Amz-Content-Sha256",
    "Host", "User-Agent", "X-Amzn-Trace-Id", "Connection", "Authorization", "X-Amz-Date",
    "X-Amz-Security-Token", "anthropic-beta", "X-Custom",
])
# Header values as HTTP carries them: visible characters, spaces and tabs, runs of them.
_HEADER_VALUES = st.text(st.sampled_from("ab:/=;,.-é \t"), max_size=12)


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    """A request and credentials; the URL's path and query encoded as botocore sends them."""
    scheme = draw(st.sampled_from(["https", "http"]))
    host = draw(st.sampled_from([
        "bedrock-runtime.us-east-1.amazonaws.com", "Example.AmazonAWS.com", "127.0.0.1:8443",
        "[::1]:9000", "example.com:443", "example.com:80",
    ]))
    path = "/" + "/".join(draw(st.lists(_SEGMENTS, max_size=5)))
    query = "&".join(
        f"{name}={value}" for name, value in draw(st.lists(st.tuples(_QUERY_TEXT, _QUERY_TEXT),
                                                           max_size=4))
    )
    return {
        "method": draw(st.sampled_from(["GET", "POST", "PUT", "DELETE", "post"])),
        "url": f"{scheme}://{host}{path}" + (f"?{query}" if query else ""),
        "headers": draw(st.lists(st.tuples(_HEADER_NAMES, _HEADER_VALUES), max_size=6)),
        "body": draw(st.binary(max_size=40)),
        "now": draw(st.integers(0, 253402300799) | st.floats(0, 4e9)),
        "access_key": draw(st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=1,
                                   max_size=20)),
        "secret_key": draw(st.text(min_size=1, max_size=40)),
        "session_token": draw(st.none() | st.text("abc123+/=", min_size=1, max_size=30)),
        "region": draw(st.sampled_from(["us-east-1", "eu-west-3", "ap-southeast-2"])),
        "service": draw(st.sampled_from(["bedrock", "service", "execute-api"])),
    }


@given(requests())
def test_generated_requests_are_signed_as_botocore_signs_them(request: dict[str, Any]) -> None:
    added = sign(**request)
    assert applied(request["headers"], added) == botocore_sign(**request)


# What a URL's query can carry unencoded: no control character (urlsplit drops them), no "#"
# (a fragment), no space (stripped at the end of a URL), and "&", "=" and "%" only as syntax.
_RAW_QUERY_TEXT = st.text(
    st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="#&=% "), max_size=6
)


@given(st.lists(st.tuples(_RAW_QUERY_TEXT, _RAW_QUERY_TEXT), min_size=1, max_size=4))
def test_a_query_given_unencoded_is_signed_in_its_canonical_encoding(
    pairs: list[tuple[str, str]],
) -> None:
    # botocore encodes the parameters it is given; the URL's query then only carries them.
    raw = "&".join(f"{name}={value}" for name, value in pairs)
    common = {"headers": [], "body": b"", "now": 1_700_000_000, "access_key": "AKID",
              "secret_key": "secret", "session_token": None, "region": "us-east-1",
              "service": "bedrock"}
    mine = sign("GET", f"https://h.example/p?{raw}", **common)
    theirs = botocore_sign("GET", "https://h.example/p", params=pairs, **common)
    assert _authorization(mine) == dict(theirs)["Authorization"]


def test_a_bedrock_request_is_signed_as_botocores_own_client_signs_it() -> None:
    session = pytest.importorskip("botocore.session")
    awsrequest = pytest.importorskip("botocore.awsrequest")
    now = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp()
    sent: list[Any] = []

    def answer(request: Any, **_: Any) -> Any:  # no request leaves the process
        sent.append(request)
        return awsrequest.AWSResponse(request.url, 200, {}, mock.Mock(stream=lambda **_: []))

    client = session.Session().create_client(
        "bedrock-runtime", region_name="eu-west-3", aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="secret/key", aws_session_token="session-token",
    )
    client.meta.events.register("before-send", answer)
    body = b'{"anthropic_version":"bedrock-2023-05-31","messages":[]}'
    with _botocore_clock(now):
        client.invoke_model_with_response_stream(
            modelId=MODEL_ID, body=body, contentType="application/json",
            accept="application/json",
        )
    (request,) = sent
    # The model id's ":" is sent as "%3A" (and so signed as "%253A").
    assert request.url == (
        "https://bedrock-runtime.eu-west-3.amazonaws.com/model/"
        "global.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream"
    )
    added = sign(
        "POST", request.url,
        [("Content-Type", "application/json"), ("X-Amzn-Bedrock-Accept", "application/json")],
        body, access_key="AKIDEXAMPLE", secret_key="secret/key", session_token="session-token",
        region="eu-west-3", service="bedrock", now=now,
    )
    sent_headers = {name: value.decode() if isinstance(value, bytes) else value
                    for name, value in request.headers.items()}
    assert dict(added) == {name: sent_headers[name] for name, _ in added}
    assert "X-Amz-Content-Sha256" not in sent_headers


# --- the signing moment and bad input ----------------------------------------------------------


@given(st.integers(0, 253402300799) | st.floats(0, 253402300799.5))
def test_the_amz_date_is_the_utc_date_and_whole_seconds_of_the_moment(now: float) -> None:
    added = dict(sign("GET", "https://h.example/", [], b"", now=now, **SUITE))
    moment = datetime.datetime.fromtimestamp(int(now), UTC)
    assert added["X-Amz-Date"] == moment.strftime("%Y%m%dT%H%M%SZ")


@pytest.mark.parametrize("now", [-1, 253402300800, float("nan"), float("inf")])
def test_a_moment_outside_1970_to_9999_is_refused(now: float) -> None:
    with pytest.raises(ValueError, match="signing moment"):
        sign("GET", "https://h.example/", [], b"", now=now, **SUITE)


@pytest.mark.parametrize(("url", "match"), [
    ("/model/x/invoke", "names no host"),
    ("https://h.example:99999/", "out of range"),
])
def test_a_url_with_no_host_or_a_bad_port_is_refused(url: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        sign("GET", url, [], b"", now=SUITE_NOW, **SUITE)


def test_signing_loads_no_aws_sdk_and_no_io_library() -> None:
    code = (
        "import json, sys\n"
        "import adapters._sigv4, mmsp_core.eventstream\n"
        "print(json.dumps(sorted({name.split('.')[0] for name in sys.modules}"
        " & {'botocore', 'boto3', 'httpx', 'anyio', 'asyncio', 'trio', 'h11'})))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT, timeout=60)
    assert json.loads(done.stdout) == []
