"""The Anthropic Messages wire protocol, for ``anthropic-official`` and ``ant-messages``.

- ``machine``: the event stream -> client-stream UniEvents (spec 06 §1);
- ``request``: UniConfig and messages -> ``POST /v1/messages`` (spec 04 §4, 05);
- ``render``: done items -> the event stream a server would send, and what this protocol
  cannot carry (08 D49).

The protocol name ``ant-messages``, used as a ``decode`` source, behaves as the ant-messages
client (09).
"""

from __future__ import annotations

import json
from typing import Final

from adapters._spec import WireProtocol
from mmsp_core.errors import MalformedEventError

from .machine import AnthropicMessagesMachine
from .render import render
from .request import build_request, check_config

__all__ = ["PROTOCOL", "AnthropicMessagesMachine", "build_request", "check_config", "render"]


def _model_ids(body: bytes) -> list[str]:
    """Read ``data[].id`` from one page of ``GET /v1/models`` (spec 04 §5).

    Raises:
        MalformedEventError: the page is not ``{"data": [{"id": ...}, ...]}``.
    """
    try:
        page = json.loads(body)
        return [str(entry["id"]) for entry in page["data"]]
    except (ValueError, RecursionError, KeyError, TypeError) as exc:
        raise MalformedEventError(
            "ant-messages", body.decode("utf-8", "replace"), detail="not a model list page"
        ) from exc


PROTOCOL: Final = WireProtocol(
    name="ant-messages",
    new_machine=AnthropicMessagesMachine,
    build_request=build_request,
    check_config=check_config,
    render=render,
    list_models_path="/v1/models",
    parse_model_list=_model_ids,
)
