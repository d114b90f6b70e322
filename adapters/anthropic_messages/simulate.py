"""How an Anthropic Messages provider speaks, for the provider simulator (08 D63).

``POST /v1/messages`` at the origin (spec 04 §4), the key in ``x-api-key`` or as a Bearer token
(ant-messages sends both, 04 §3), ``{"type": "error", "error": {"type", "message"}}`` error
bodies with a ``request-id`` header, and ``event: error`` for an in-stream overload (08 D4).

Amazon Bedrock (``BEDROCK_DIALECT``, 08 D72): ``POST /model/<id>/invoke-with-response-stream``,
a request signed with SigV4 for ``bedrock`` or a Bedrock API key as a Bearer token, AWS's
``{"message"}`` error bodies with an ``x-amzn-RequestId`` header (403 for a wrong signature or
key), an event stream of chunk messages, and a ``serviceUnavailableException`` message for an
in-stream overload. Its clients reach it through ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` (their
base URL is ``bedrock://<region>``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._aws import ENDPOINT_VARIABLES, SIGNING_SERVICE
from .._schema_answer import answer_schema, member
from .._simulate import text_parts
from .._spec import SimulatorDialect, Turn
from .bedrock import CONTENT_TYPE, exception_message
from .writer import error_body

__all__ = ["BEDROCK_DIALECT", "DIALECT", "aws_error_body", "error_body", "read_turn"]

def read_turn(body: Mapping[str, Any]) -> Turn:
    """The last user text, the tools offered, the tool results since that text and the
    schema of the answer (``output_config.format``) of a Messages request."""
    question, results = "", list[str]()
    for message in body.get("messages") or ():
        content = message.get("content")
        if message.get("role") != "user":
            continue
        if texts := text_parts(content, ("text",)):
            question, results = "".join(texts), []
        for block in content if isinstance(content, list) else ():
            if block.get("type") == "tool_result":
                results.append("".join(text_parts(block.get("content"), ("text",))))
    tools = tuple(
        (tool["name"], tool.get("input_schema") or {})
        for tool in body.get("tools") or ()
        if "name" in tool
    )
    answer_format = member(body, "output_config", "format")
    schema = answer_schema(answer_format.get("type") == "json_schema", answer_format.get("schema"))
    return Turn(question, tools, tuple(results), answer_schema=schema)


DIALECT: Final = SimulatorDialect(
    route=("POST", r"/v1/messages"),
    base_path="",
    key_headers=("x-api-key", "authorization"),
    request_id_header="request-id",
    error_body=error_body,
    bad_key_message="invalid x-api-key",
    stream_error=b'event: error\ndata: {"type":"error","error":'
    b'{"type":"overloaded_error","message":"Overloaded"}}\n\n',
    read_turn=read_turn,
    tool_call_id_prefix="toolu_sim_",
    content_type="text/event-stream; charset=utf-8",
    ping=b'event: ping\ndata: {"type": "ping"}\n\n',
)


def aws_error_body(status: int, message: str) -> dict[str, Any]:
    """The JSON body AWS sends with a non-2xx ``status``: its message alone."""
    return {"message": message}


BEDROCK_DIALECT: Final = SimulatorDialect(
    route=("POST", r"/model/[^/]+/invoke-with-response-stream"),
    base_path="",
    key_headers=("authorization",),
    request_id_header="x-amzn-RequestId",
    error_body=aws_error_body,
    bad_key_message="The request signature we calculated does not match the signature you "
    "provided. Check your AWS Secret Access Key and signing method. Consult the service "
    "documentation for details.",
    stream_error=exception_message(
        "serviceUnavailableException", "Bedrock is unable to process your request."
    ),
    read_turn=read_turn,
    tool_call_id_prefix="toolu_bdrk_",
    content_type=CONTENT_TYPE,
    bad_key_status=403,
    signing_service=SIGNING_SERVICE,
    endpoint_variable=ENDPOINT_VARIABLES[0],
)
