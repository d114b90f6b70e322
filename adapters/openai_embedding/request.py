"""OpenAI embeddings requests: config mapping and inputs (spec 04 §4, 05 §4.5, §5).

``POST /embeddings`` with ``model``, ``input`` (one string per message: its ``text.done``
texts joined), ``dimensions`` from ``embedding_config.dimensions`` and
``encoding_format: "base64"`` (08 D28). The config is read first (02 §8): ``fast_mode: true``
is refused, every other key ignored (05 §4.5). Messages are walked with
``adapters._build.walk_messages``: a text item is the only one an embedding input takes, so
every other kind, thinking included, is ``UnsupportedContentError``; a message whose joined
text is empty is ``InvalidMessageError(message_index)`` (05 §5). Roles do not matter: every
message is one input. The profile is not read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from adapters._build import Converters, MessageContext, item_kind, walk_messages
from adapters._sampling import NO_SAMPLING, check_sampling
from mmsp_core.errors import InvalidMessageError, UnsupportedContentError, UnsupportedParameterError
from mmsp_core.model import ITEM_CLASSES, Item, TextDone, UniConfig, UniMessage
from mmsp_core.request import HTTPRequest, encode_json_body

__all__ = ["HEADERS", "PATH", "build_request", "check_config"]

PATH: Final = "/embeddings"
HEADERS: Final = (("content-type", "application/json"), ("accept", "application/json"))
PROTOCOL_LABEL: Final = "OpenAI embeddings"


def check_config(client: str, profile: None, model: str, config: UniConfig) -> None:
    """Raise what ``build_request`` would raise for ``config`` alone (05 §4.5, 08 D37).

    Raises:
        UnsupportedParameterError: ``fast_mode: true`` (embeddings have no fast mode); any
            key of 08 D74 (an embedding is not sampled and has no answer format).
    """
    if config.fast_mode:
        raise UnsupportedParameterError(
            client, "fast_mode", detail="an embedding endpoint has no fast mode"
        )
    check_sampling(client, config, NO_SAMPLING)


def _text(context: MessageContext, item: Item) -> str:
    assert isinstance(item, TextDone)
    return item.text


def _refused(context: MessageContext, item: Item) -> str:
    """Any item but text: an embedding input is text only (05 §5)."""
    raise UnsupportedContentError(
        context.client, item_kind(item),
        detail=f"an {PROTOCOL_LABEL} input takes text only",
    )


_CONVERTERS: Final[Converters[str]] = {
    cls: _text if cls is TextDone else _refused
    for cls in ITEM_CLASSES.values()
    if cls.type.endswith(".done")
}


def inputs(client: str, messages: Sequence[UniMessage]) -> list[str]:
    """One input string per message: its text items joined (05 §5).

    Raises:
        UnsupportedContentError: a non-text item (``item_type`` = its kind).
        InvalidMessageError: a message whose joined text is empty (``message_index``).
    """
    texts = []
    for walked in walk_messages(client, messages, _CONVERTERS, protocol_label=PROTOCOL_LABEL):
        text = "".join(walked.parts)
        if not text:
            raise InvalidMessageError(
                client, None, walked.index, detail="an embedding input needs non-empty text"
            )
        texts.append(text)
    return texts


def build_request(
    client: str, profile: None, model: str, messages: Sequence[UniMessage], config: UniConfig
) -> HTTPRequest:
    """Build the ``POST /embeddings`` request (spec 04 §4); headers carry no key.

    Raises:
        UnsupportedParameterError: see ``check_config`` (checked first, 02 §8).
        UnsupportedContentError, InvalidMessageError: see ``inputs``.
    """
    check_config(client, profile, model, config)
    body: dict[str, Any] = {"model": model, "input": inputs(client, messages)}
    dimensions = config.embedding_config.dimensions if config.embedding_config else None
    if dimensions is not None:
        body["dimensions"] = dimensions
    body["encoding_format"] = "base64"
    return HTTPRequest("POST", PATH, HEADERS, encode_json_body(body))
