"""Vertex AI credentials for the tests: a throwaway RSA service-account key and user
credentials, each registered with a simulator's token endpoint (08 D72; issue 23 item 7).

The key is made once per test session (RSA key generation is the slow part) and is never a
real credential: its ``token_uri`` points at the simulator given.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from mmsp_io.simulator import Simulator

__all__ = ["CLIENT_EMAIL", "PROJECT", "USER", "key_text", "private_key_pem", "service_account",
           "trust"]

PROJECT = "sim-project"
CLIENT_EMAIL = f"runner@{PROJECT}.iam.gserviceaccount.com"
#: gcloud's user credentials (``gcloud auth application-default login``), without token_uri.
USER: dict[str, Any] = {
    "type": "authorized_user",
    "client_id": "764086051850-sim.apps.googleusercontent.com",
    "client_secret": "d-FL95Q19q7MQmFpd7hHD0Ty",
    "refresh_token": "1//0sim-refresh-token-Zq7Xw2Vb9Nm4Lk8Jh3Gf6Ds1",
}


@functools.cache
def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def private_key_pem() -> str:
    """The throwaway key's private half, PKCS#8 PEM, as a key file holds it."""
    return _key().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode("ascii")


def service_account(sim: Simulator, **fields: Any) -> dict[str, Any]:
    """A service-account key whose token_uri is ``sim``'s token endpoint; ``fields`` replace
    its own."""
    return {
        "type": "service_account",
        "project_id": PROJECT,
        "private_key_id": "0123456789abcdef",
        "private_key": private_key_pem(),
        "client_email": CLIENT_EMAIL,
        "client_id": "1234567890",
        "token_uri": f"{sim.url}/token",
        **fields,
    }


def trust(sim: Simulator) -> None:
    """Register the throwaway key and the user credentials with ``sim``'s token endpoint."""
    public = _key().public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    sim.vertex.trust_key(CLIENT_EMAIL, public)
    sim.vertex.trust_user(USER["client_id"], USER["client_secret"], USER["refresh_token"])


def key_text(sim: Simulator, **fields: Any) -> str:
    """``service_account(sim, **fields)`` as the JSON text a key file holds."""
    return json.dumps(service_account(sim, **fields), indent=2)
