"""Vertex AI in the simulator (08 D72; issue 23 item 7): a token endpoint and its tokens.

Vertex's endpoints (the protocols' ``vertex`` dialects: ``/v1beta1/projects/<p>/locations/
<l>/publishers/google/models/<m>:streamGenerateContent`` and ``:embedContent``) take no key:
only an ``Authorization: Bearer`` token this simulator's token endpoint issued, else Google's
401 body. ``VertexIssuer`` is that token endpoint, ``POST /token`` (``TOKEN_PATH``; a test's
service-account key names ``<simulator URL>/token`` as its ``token_uri``):

- the grant ``urn:ietf:params:oauth:grant-type:jwt-bearer`` with an ``assertion``: a JWT
  signed RS256 by a key registered with ``trust_key(client_email, public_key_pem)`` (tests
  make a throwaway RSA key), whose ``iss`` is that email, whose ``aud`` is this endpoint and
  whose ``scope`` holds cloud-platform; the signature is checked with ``cryptography`` (a
  google-auth dependency), the times are not (tests move clocks);
- the grant ``refresh_token`` with a ``client_id``, ``client_secret`` and ``refresh_token``
  registered with ``trust_user``.

Either answers ``{"access_token", "expires_in": lifetime, "token_type": "Bearer"}``; anything
else answers 400 with OAuth's ``{"error", "error_description"}``. ``revoke()`` forgets every
token issued (a 401 follows, as after a real revocation); ``exchanges`` counts the tokens
issued. ``throwaway_key`` makes a service-account key the endpoint trusts (the demo's).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import secrets
import urllib.parse
from typing import Any, Final

import adapters

from .script import RecordedRequest

__all__ = ["TOKEN_PATH", "VertexIssuer"]

#: The token endpoint's path on the simulator.
TOKEN_PATH: Final = "/token"
_JWT_GRANT: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_SCOPE: Final = "https://www.googleapis.com/auth/cloud-platform"


def _vertex_dialects() -> list[adapters.SimulatorDialect]:
    """The dialects of Vertex's endpoints, read from the protocol records at call time."""
    dialects = []
    for record in adapters.PROTOCOLS.values():
        dialect = record.traits.dialect
        if dialect is not None and dialect.vertex is not None:
            dialects.append(dialect.vertex)
    return dialects


def _unbase64(text: str) -> bytes:
    """Base64url without padding, as JWT writes it. Raises ``ValueError``."""
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error as exc:
        raise ValueError("not base64url") from exc


class VertexIssuer:
    """The simulator's token endpoint and the tokens it issued (module docstring)."""

    def __init__(self, lifetime: int = 3600) -> None:
        #: ``expires_in`` of every token issued.
        self.lifetime = lifetime
        #: How many tokens were issued.
        self.exchanges = 0
        self._keys: dict[str, bytes] = {}
        self._users: dict[str, tuple[str, str]] = {}
        self._tokens: set[str] = set()

    def trust_key(self, client_email: str, public_key_pem: bytes) -> None:
        """Accept assertions from ``client_email`` signed by the key of ``public_key_pem``."""
        self._keys[client_email] = public_key_pem

    def trust_user(self, client_id: str, client_secret: str, refresh_token: str) -> None:
        """Accept the refresh token of user credentials with their OAuth client."""
        self._users[client_id] = (client_secret, refresh_token)

    def throwaway_key(self, url: str, project: str = "sim-project") -> str:
        """A new service-account key (JSON text) for ``project``, trusted here, whose
        ``token_uri`` is this endpoint at the simulator's origin ``url``."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        email = f"simulator@{project}.iam.gserviceaccount.com"
        self.trust_key(email, key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        private = key.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()).decode("ascii")
        return json.dumps({"type": "service_account", "project_id": project,
                           "private_key": private, "client_email": email,
                           "token_uri": url + TOKEN_PATH})

    def revoke(self) -> None:
        """Forget every token issued."""
        self._tokens.clear()

    def issued(self, request: RecordedRequest, dialect: adapters.SimulatorDialect) -> bool:
        """Whether ``dialect`` is a Vertex endpoint's and ``request`` carries a token issued
        here."""
        if dialect not in _vertex_dialects():
            return False
        scheme, _, token = (request.header("authorization") or "").partition(" ")
        return scheme.lower() == "bearer" and token in self._tokens

    def token(self, request: RecordedRequest, url: str) -> tuple[int, dict[str, Any]]:
        """The token endpoint's answer to ``request``: status and JSON body. ``url`` is the
        simulator's origin (an assertion's audience is ``<url>/token``)."""
        form = dict(urllib.parse.parse_qsl(request.body.decode("utf-8", "replace")))
        grant = form.get("grant_type")
        if grant == _JWT_GRANT:
            problem = self._assertion_problem(form.get("assertion", ""), url + TOKEN_PATH)
        elif grant == "refresh_token":
            problem = self._refresh_problem(form)
        else:
            problem = "unsupported_grant_type"
        if problem is not None:
            return 400, {"error": "invalid_grant", "error_description": problem}
        token = f"ya29.sim-{secrets.token_urlsafe(24)}"
        self._tokens.add(token)
        self.exchanges += 1
        return 200, {"access_token": token, "expires_in": self.lifetime, "token_type": "Bearer"}

    def _refresh_problem(self, form: dict[str, str]) -> str | None:
        """Why a refresh-token grant is refused; ``None`` when it is not."""
        known = self._users.get(form.get("client_id", ""))
        given = (form.get("client_secret", ""), form.get("refresh_token", ""))
        if known is None or not all(hmac.compare_digest(a.encode(), b.encode())
                                    for a, b in zip(known, given, strict=True)):
            return "Bad Request: unknown client or refresh token"
        return None

    def _assertion_problem(self, assertion: str, audience: str) -> str | None:
        """Why a JWT assertion is refused; ``None`` when it is not."""
        try:
            head, payload, signature = assertion.split(".")
            header = json.loads(_unbase64(head))
            claims = json.loads(_unbase64(payload))
            signed = _unbase64(signature)
        except ValueError:
            return "Invalid JWT: not a JWT"
        if not isinstance(header, dict) or header.get("alg") != "RS256":
            return "Invalid JWT: not signed with RS256"
        if not isinstance(claims, dict):
            return "Invalid JWT: its claims are not an object"
        key = self._keys.get(str(claims.get("iss")))
        if key is None:
            return "Invalid JWT: unknown issuer"
        if claims.get("aud") != audience or _SCOPE not in str(claims.get("scope", "")).split():
            return "Invalid JWT: wrong audience or scope"
        if not _verified(key, f"{head}.{payload}".encode("ascii"), signed):
            return "Invalid JWT Signature."
        return None


def _verified(public_key_pem: bytes, message: bytes, signature: bytes) -> bool:
    """Whether ``signature`` is the RS256 signature of ``message`` by the key."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    key = serialization.load_pem_public_key(public_key_pem)
    if not isinstance(key, rsa.RSAPublicKey):
        return False
    try:
        key.verify(signature, message, padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        return False
    return True
