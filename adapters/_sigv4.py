"""AWS Signature Version 4: ``sign`` a request for an AWS service (Bedrock: ``bedrock``; 08 D72).

A pure function of the request (method, URL, headers, body), the credentials (access key,
secret key, optional session token), the region, the service and the signing moment, which the
caller reads from its clock and passes in seconds since the Unix epoch. It computes what
botocore's ``SigV4Auth`` computes, step by step as AWS specifies:

1. the canonical request: the method; the URL's path, its dot segments and empty segments
   removed, URI-encoded once more (the path is taken as sent, already encoded, so each segment
   ends up encoded twice, as every service but S3 requires: a Bedrock model id's ``:`` is sent
   as ``%3A`` and signed as ``%253A``); the query's names and values URI-encoded (RFC 3986
   unreserved characters kept) and sorted; each signed header as ``name:value``, the name
   lower-cased, the value trimmed and its runs of whitespace made one space, the values of a
   repeated header joined by ``,``, sorted by name; the signed header names; the SHA-256 of the
   body (or the value of an ``X-Amz-Content-Sha256`` header given);
2. the string to sign: the algorithm, the moment, the scope ``<day>/<region>/<service>/
   aws4_request`` and the SHA-256 of the canonical request;
3. the signature: HMAC-SHA256 of the string to sign under the key derived from the secret key
   through the day, the region, the service and ``aws4_request``.

Every header given is signed but for the hop-by-hop and tracing ones an HTTP client or proxy may
add or change (botocore's list), with ``host`` taken from the URL when not given. Headers the
transport adds after signing (``Content-Length``, ``Accept-Encoding``, ``User-Agent``) need not
be signed. The signer adds ``X-Amz-Date``, ``X-Amz-Security-Token`` with a session token, and
``Authorization``; like botocore's ``SigV4Auth`` for Bedrock it adds no
``X-Amz-Content-Sha256``.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import urllib.parse
from collections.abc import Iterable
from typing import Final

__all__ = ["sign"]

_ALGORITHM: Final = "AWS4-HMAC-SHA256"
#: Header names never signed: hop-by-hop and tracing headers a client or proxy may change.
_UNSIGNED: Final = frozenset({
    "baggage",
    "connection",
    "expect",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "traceparent",
    "tracestate",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "x-amzn-trace-id",
})
_CONTENT_SHA256: Final = "x-amz-content-sha256"
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
#: The first second of the year 10000: the date of a signature has four digits for the year.
_YEAR_10000: Final = 253402300800
_DAY: Final = 86400


def sign(
    method: str,
    url: str,
    headers: Iterable[tuple[str, str]],
    body: bytes,
    *,
    access_key: str,
    secret_key: str,
    session_token: str | None = None,
    region: str,
    service: str,
    now: float,
) -> tuple[tuple[str, str], ...]:
    """Return the headers that sign the request for ``service`` in ``region`` (module doc).

    ``url`` is the absolute URL as sent (its path already percent-encoded), ``headers`` the
    headers sent with it and ``body`` its exact bytes; ``now`` is the signing moment in seconds
    since the Unix epoch (the fraction is dropped). The result, ``X-Amz-Date``,
    ``X-Amz-Security-Token`` when ``session_token`` is given, then ``Authorization``, replaces
    any header of the same name; an ``Authorization`` header given is never signed.

    Raises:
        ValueError: a URL with no host or a bad port, or a moment before 1970 or after 9999.
    """
    stamp = _amz_date(now)
    parts = urllib.parse.urlsplit(url)
    added = [("X-Amz-Date", stamp)]
    if session_token:
        added.append(("X-Amz-Security-Token", session_token))
    replaced = {"authorization", *(name.lower() for name, _ in added)}
    kept = [(name, value) for name, value in headers if name.lower() not in replaced]
    canonical, signed_names = _canonical_request(method, parts, kept, added, body)
    scope = f"{stamp[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join(
        (_ALGORITHM, stamp, scope, hashlib.sha256(canonical.encode("utf-8")).hexdigest())
    )
    key = f"AWS4{secret_key}".encode()
    for part in (stamp[:8], region, service, "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    authorization = (
        f"{_ALGORITHM} Credential={access_key}/{scope}, SignedHeaders={signed_names}, "
        f"Signature={signature}"
    )
    return (*added, ("Authorization", authorization))


def _canonical_request(
    method: str,
    parts: urllib.parse.SplitResult,
    kept: list[tuple[str, str]],
    added: list[tuple[str, str]],
    body: bytes,
) -> tuple[str, str]:
    """The canonical request of SigV4 and its signed header names, ``;``-joined: the headers
    kept from the caller's and the ones the signature adds, less the never-signed ones, with
    ``host`` from the URL when none was given; the payload hash a given
    ``X-Amz-Content-Sha256`` names, else the body's.

    Raises:
        ValueError: a URL with no host or a bad port.
    """
    signed: dict[str, list[str]] = {}
    for name, value in (*kept, *added):
        if name.lower() not in _UNSIGNED:
            signed.setdefault(name.lower(), []).append(value)
    signed.setdefault("host", [_host(parts)])
    names = sorted(signed)
    signed_names = ";".join(names)
    payload_hash = next(
        (value for name, value in kept if name.lower() == _CONTENT_SHA256),
        hashlib.sha256(body).hexdigest(),
    )
    canonical = "\n".join((
        method.upper(),
        _canonical_path(parts.path),
        _canonical_query(parts.query),
        "".join(f"{name}:{_canonical_value(signed[name])}\n" for name in names),
        signed_names,
        payload_hash,
    ))
    return canonical, signed_names


def _hmac(key: bytes, text: str) -> bytes:
    """HMAC-SHA256 of ``text`` (UTF-8) under ``key``: one step of the key derivation."""
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def _canonical_value(values: list[str]) -> str:
    """The values of one header, each trimmed with its whitespace runs made one space, joined
    by ``,``."""
    return ",".join(" ".join(value.split()) for value in values)


def _canonical_path(path: str) -> str:
    """The path with its ``.``, ``..`` and empty segments resolved (RFC 3986 §5.2.4), then
    URI-encoded with ``/`` and ``~`` kept; ``/`` for an empty path."""
    segments: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if segments:
                segments.pop()
        elif segment and segment != ".":
            segments.append(segment)
    if not segments:
        return "/"
    normalized = "/" + "/".join(segments) + ("/" if path.endswith("/") else "")
    return urllib.parse.quote(normalized, safe="/~")


def _canonical_query(query: str) -> str:
    """Each ``name=value`` pair of ``query`` decoded and URI-encoded again (RFC 3986
    unreserved characters kept; a pair without ``=`` has an empty value), sorted by name, then
    by value, and joined by ``&``; ``""`` for no query."""
    if not query:
        return ""
    pairs = []
    for piece in query.split("&"):
        name, _, value = piece.partition("=")
        pairs.append((_encode(name), _encode(value)))
    return "&".join(f"{name}={value}" for name, value in sorted(pairs))


def _encode(text: str) -> str:
    """``text`` percent-decoded, then URI-encoded with only the unreserved characters kept."""
    return urllib.parse.quote(urllib.parse.unquote(text), safe="-_.~")


def _host(parts: urllib.parse.SplitResult) -> str:
    """The ``host`` header of the URL: the host lower-cased (an IPv6 address in brackets), with
    the port unless it is the scheme's default; ``ValueError`` for no host or a bad port."""
    host = parts.hostname
    if not host:
        raise ValueError(f"the URL {parts.geturl()!r} names no host")
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    if port is not None and port != _DEFAULT_PORTS.get(parts.scheme):
        host = f"{host}:{port}"
    return host


def _amz_date(now: float) -> str:
    """``YYYYMMDDTHHMMSSZ``: the UTC date and the whole seconds of ``now``, seconds since the
    Unix epoch; ``ValueError`` for a moment before 1970 or from the year 10000 on."""
    if not 0 <= now < _YEAR_10000:
        raise ValueError(f"the signing moment must be in 1970-9999, not {now!r} s")
    days, second = divmod(math.floor(now), _DAY)
    year, month, day = _civil_date(days)
    hour, second = divmod(second, 3600)
    minute, second = divmod(second, 60)
    return f"{year:04d}{month:02d}{day:02d}T{hour:02d}{minute:02d}{second:02d}Z"


def _civil_date(days: int) -> tuple[int, int, int]:
    """The proleptic Gregorian ``(year, month, day)`` of ``days`` days after 1970-01-01 (H.
    Hinnant's ``civil_from_days``: years counted from March, in 400-year eras)."""
    era, day_of_era = divmod(days + 719468, 146097)
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096
    ) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_from_march = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * month_from_march + 2) // 5 + 1
    month = month_from_march + 3 if month_from_march < 10 else month_from_march - 9
    year = year_of_era + era * 400 + (month <= 2)
    return year, month, day
