"""HTTPRequest never shows a credential in its repr (08 D16); JSON bodies are deterministic."""

from __future__ import annotations

from mmsp_core.request import HTTPRequest, encode_json_body


def test_repr_hides_every_credential_header() -> None:
    canary = "sk-canary-0123456789"
    request = HTTPRequest(
        "POST",
        "/v1/messages",
        (
            ("content-type", "application/json"),
            ("Authorization", f"Bearer {canary}"),
            ("x-api-key", canary),
            ("X-Goog-Api-Key", canary),
            ("api-key", canary),  # Azure OpenAI
            ("X-Amz-Security-Token", canary),  # an AWS session token (SigV4)
        ),
        b'{"a":1}',
    )
    text = repr(request)
    assert canary not in text
    assert "application/json" in text
    assert text.count("[redacted]") == 5


def test_json_body_is_compact_keeps_key_order_and_unicode() -> None:
    assert encode_json_body({"b": 1, "a": ["é", None]}) == '{"b":1,"a":["é",null]}'.encode()
