"""The Anthropic Messages wire protocol, for ``anthropic-official`` and ``ant-messages``.

- ``machine``: the event stream -> client-stream UniEvents (spec 06 §1);
- ``request``: UniConfig and messages -> ``POST /v1/messages`` (spec 04 §4, 05);
- ``render``: done items -> the event stream a server would send, and what this protocol
  cannot carry (08 D49), a fold over the writer;
- ``reader`` and ``writer``: the front door of ``POST /v1/messages`` on the gateway (08 D73):
  a caller's request body -> messages and config, the public stream -> the event stream
  event by event, the whole ``message`` object, the HTTP error body;
- ``usage``: the one mapping between the wire's usage JSON and ``UsageMetadata`` (06 §1),
  read by the machine and written by the renderer;
- ``profiles``: what differs between the two client types, read by the builder (08 D63);
- ``bedrock``: the same protocol on Amazon Bedrock, in the AWS event-stream framing, the
  protocol ``ant-messages-bedrock`` of anthropic-official's ``bedrock://<region>`` route
  (``BEDROCK``, 08 D72).

The protocol name ``ant-messages``, used as a ``decode`` source, behaves as the ant-messages
client (09); ``ant-messages-bedrock`` as anthropic-official on Bedrock. Model listing lives
with the client registry (``adapters._listing``).
"""

from __future__ import annotations

from typing import Final

from adapters._front import FrontDoor
from adapters._spec import Traits, WireProtocol

from . import bedrock, simulate
from .machine import AnthropicMessagesMachine
from .reader import read_request
from .render import normalize, render
from .request import PATH, build_request, check_config
from .writer import MessagesWriter, error_body, response

__all__ = [
    "BEDROCK",
    "PROTOCOL",
    "AnthropicMessagesMachine",
    "build_request",
    "check_config",
    "render",
]


PROTOCOL: Final = WireProtocol(
    name="ant-messages",
    new_machine=AnthropicMessagesMachine,
    build_request=build_request,
    check_config=check_config,
    render=render,
    traits=Traits(display_name="Anthropic Messages", dialect=simulate.DIALECT),
    normalize=normalize,
    front=FrontDoor(
        path=PATH,
        id_prefix="msg_",
        read_request=read_request,
        new_writer=MessagesWriter,
        response=response,
        error_body=error_body,
    ),
)

#: Anthropic Messages on Amazon Bedrock (08 D72): the request variant and the event-stream
#: framing; AWS's error bodies (``{"message"}``) read with the default ``ErrorShape``.
BEDROCK: Final = WireProtocol(
    name=bedrock.PROTOCOL_NAME,
    new_machine=bedrock.BedrockMachine,
    build_request=bedrock.build_request,
    check_config=check_config,
    render=bedrock.render,
    traits=Traits(
        display_name="Anthropic Messages on Amazon Bedrock",
        dialect=simulate.BEDROCK_DIALECT,
        framing=bedrock.FRAMING,
    ),
    normalize=normalize,
    new_decoder=bedrock.BedrockDecoder,
    compatible_client="anthropic-official",
)
