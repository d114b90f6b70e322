"""How an MMSP server speaks, for the provider simulator (07 §1-§4, 08 D63), so that the mmsp
client is tested over loopback HTTP without a server.

``POST /v1/stream`` (the base URL ends in ``/v1``), the key as a Bearer token, refusals as
``{"error": {"type", "message"}}`` (07 §3, §4), and an upstream overload as the server reports
it: one error event holding the upstream client's ``ProviderStreamError``, then ``[DONE]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mmsp_core.errors import ProviderStreamError

from .._schema_answer import answer_schema, member
from .._simulate import text_parts
from .._spec import SimulatorDialect, Turn
from .render import error_event

__all__ = ["DIALECT", "error_body", "read_turn"]

#: HTTP status -> the ``type`` of the server's refusal (03 §3, 07 §3, §4).
_REFUSALS: Final = {
    400: "InvalidRequestError",
    401: "AuthenticationError",
    404: "NotFoundError",
    413: "InvalidRequestError",
}


def error_body(status: int, message: str) -> dict[str, Any]:
    """The JSON body an MMSP server refuses a request with (07 §3, §4); a status the server
    never sends itself (a 5xx of a proxy in front of it) gets the type ``ServerError``."""
    return {"error": {"type": _REFUSALS.get(status, "ServerError"), "message": message}}


def read_turn(body: Mapping[str, Any]) -> Turn:
    """The last user text, the tools of the config, the tool results since that text and the
    schema of the answer (the config's ``response_format``) of a ``/v1/stream`` request (its
    messages and config in MMSP JSON, 07 §4)."""
    question, results = "", list[str]()
    for message in body.get("messages") or ():
        items = message.get("content_items")
        if message.get("role") == "user" and (texts := text_parts(items, ("text.done",))):
            question, results = "".join(texts), []
        results += text_parts(items, ("tool_result.done",))
    config = body.get("config") or {}
    tools = tuple(
        (tool["name"], tool.get("parameters") or {})
        for tool in config.get("tools") or ()
        if "name" in tool
    )
    answer_format = member(config, "response_format")
    schema = answer_schema(
        answer_format.get("type") in ("json_schema", "json_object"), answer_format.get("schema")
    )
    return Turn(question, tools, tuple(results), answer_schema=schema)


#: What the server sends when the upstream provider reports an overload mid-stream (08 D4).
_OVERLOAD: Final = ProviderStreamError(
    "openai-chat", "overloaded", "server_error", "The server is overloaded."
)

DIALECT: Final = SimulatorDialect(
    route=("POST", r"/v1/stream"),
    base_path="/v1",
    key_headers=("authorization",),
    request_id_header="x-request-id",
    error_body=error_body,
    bad_key_message="Invalid or missing API key.",
    stream_error=error_event(_OVERLOAD),
    read_turn=read_turn,
    tool_call_id_prefix="call_sim_",
    content_type="text/event-stream; charset=utf-8",
)
