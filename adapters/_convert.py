"""Small conversions the protocol modules share: request building (spec 05 §1, §5) and the
one rule of usage reading that every protocol applies (08 D52).

Protocol modules import these instead of writing their own copies. Add here only what at
least two protocol modules need.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from mmsp_core.errors import InvalidMessageError, UnsupportedParameterError
from mmsp_core.model import UniConfig

__all__ = [
    "arguments_json",
    "check_tool_choice_list",
    "model_key",
    "parse_data_uri",
    "response_tokens",
]


def model_key(model: str) -> str:
    """Return the id that generation rows are matched against: lower-cased (08 D9).

    The id itself is always sent exactly as given; only matching uses this form.
    """
    return model.lower()


def check_tool_choice_list(client: str, config: UniConfig) -> None:
    """Raise ``UnsupportedParameterError(tool_choice)`` for an empty list of names (08 D10)."""
    if isinstance(config.tool_choice, tuple) and not config.tool_choice:
        raise UnsupportedParameterError(client, "tool_choice", detail="an empty list of tools")


def arguments_json(arguments: Mapping[str, Any]) -> str:
    """Encode tool-call arguments as the JSON string providers expect (non-ASCII kept)."""
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


def parse_data_uri(client: str, uri: str, message_index: int) -> tuple[str, bytes] | None:
    """Split a ``data:<mime>;base64,<b64>`` URI into its MIME type and bytes.

    Returns ``None`` for anything that is not a ``data:`` URI (an http(s) URL).

    Raises:
        InvalidMessageError: a ``data:`` URI that is not base64 or whose payload does not
            decode (``item_type="image_url"``, spec 03 §2).
    """
    if not uri.startswith("data:"):
        return None
    header, sep, payload = uri[5:].partition(",")
    mime, _, encoding = header.partition(";")
    if not sep or encoding != "base64" or not mime:
        raise InvalidMessageError(
            client, "image_url", message_index, detail="a data URI must be data:<mime>;base64,..."
        )
    try:
        return mime, base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidMessageError(
            client, "image_url", message_index, detail=f"bad base64 in data URI: {exc}"
        ) from exc


def response_tokens(output: int | None, thoughts: int | None) -> int | None:
    """The response part of an output count that includes the thinking: ``output - thoughts``.

    An endpoint whose output count is smaller than its thinking count left the thinking out
    of it (xAI, OpenRouter), so the output count is the response itself, and a negative count
    is never reported; the caller keeps ``thoughts`` as reported. A ``None`` thinking count
    subtracts nothing; a ``None`` output count gives ``None``. This is 08 D52, which subsumes
    06 §7's OpenRouter fix, on every protocol.
    """
    if output is None or thoughts is None:
        return output
    response = output - thoughts
    return output if response < 0 else response
