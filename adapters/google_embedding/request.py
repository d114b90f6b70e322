"""Gemini embeddings requests: one ``batchEmbedContents`` call for every message (08 D64), or
on Vertex AI one ``embedContent`` call of one message (08 D72).

``POST /v1/models/{model}:batchEmbedContents`` (spec 04 §4) with ``{"requests": [{"model":
"models/<id>", "content": {"role", "parts"}, "outputDimensionality"?}, ...]}``: one request
entry per message, in order, the model repeated in each, ``embedding_config.dimensions`` as
each entry's ``outputDimensionality``, nothing else at top level. Both Google client types
send this one call (08 D64).

Config conversion never runs for an embedding model (05 §2.3, §4.4): no key is refused, and
only ``embedding_config.dimensions`` is read. Messages are walked with
``adapters._build.walk_messages`` (05 §5): a message's ``text.done`` items are ``text`` parts
(empty text is left out), its images and inline data ``inlineData`` parts; a ``data:`` URI is
decoded (``InvalidMessageError(item_type="image_url")`` when malformed). Gemini takes no
arbitrary image URL, so the Google client rows have the I/O layer fetch http(s) images into data
URIs first (08 D37), and one that still reaches the builder is
``InvalidMessageError(item_type="image_url")``, as on generateContent. Any other kind is
``InvalidMessageError(item_type)``, and a message with no part
``InvalidMessageError(message_index)``. Role ``user``, or ``model`` for an assistant
message.

On Vertex AI (an ``EmbeddingProfile``, 08 D72) the endpoint embeds one content per call:
``POST /v1beta1/projects/<project>/locations/global/publishers/google/models/<model>:
embedContent`` with ``{"content": {"role", "parts"}, "outputDimensionality"?}``; since one
request keeps one pipeline (08 D64), more than one message is
``UnsupportedParameterError(parameter="messages")`` naming the limit, before any request.
"""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import Sequence
from typing import Any, Final

from adapters._build import Converters, MessageContext, walk_messages
from adapters._convert import parse_data_uri
from adapters._google.vertex import vertex_path
from adapters._sampling import NO_SAMPLING, check_sampling
from mmsp_core.errors import InvalidMessageError, UnsupportedParameterError
from mmsp_core.model import ImageUrlDone, InlineDataDone, Item, TextDone, UniConfig, UniMessage
from mmsp_core.request import HTTPRequest, encode_json_body

from .profiles import EmbeddingProfile

__all__ = ["API_VERSION", "HEADERS", "build_request", "check_config", "path"]

#: The Gemini API version of the request path (08 D12: a module constant).
API_VERSION: Final = "v1"
#: The Vertex AI version of the request path (04 §4, 08 D72).
VERTEX_API_VERSION: Final = "v1beta1"
HEADERS: Final = (("content-type", "application/json"), ("accept", "application/json"))
PROTOCOL_LABEL: Final = "Gemini embeddings"

JSON = dict[str, Any]


def path(model: str, profile: EmbeddingProfile | None = None) -> str:
    """The request path of ``model``: the id quoted whole, so no character of it can change
    the path; on Vertex AI (``profile``) its ``embedContent`` under the project."""
    segment = urllib.parse.quote(model, safe="")
    if profile is not None:
        base = vertex_path(VERTEX_API_VERSION, profile.vertex_project, profile.vertex_location)
        return f"{base}/models/{segment}:embedContent"
    return f"/{API_VERSION}/models/{segment}:batchEmbedContents"


def check_config(
    client: str, profile: EmbeddingProfile | None, model: str, config: UniConfig
) -> None:
    """Raise what ``build_request`` would raise for ``config`` alone: config conversion never
    runs for an embedding model (05 §2.3, §4.4), but the keys of 08 D74 are refused, never
    dropped (RFC-0003 §6).

    Raises:
        UnsupportedParameterError: any key of 08 D74 (an embedding is not sampled and has no
            answer format).
    """
    check_sampling(client, config, NO_SAMPLING)


def _text(context: MessageContext, item: Item) -> JSON | None:
    assert isinstance(item, TextDone)
    return {"text": item.text} if item.text else None


def _image(context: MessageContext, item: Item) -> JSON:
    assert isinstance(item, ImageUrlDone)
    inline = parse_data_uri(context.client, item.image_url, context.index)
    if inline is None:
        raise InvalidMessageError(
            context.client, "image_url", context.index,
            detail="Gemini takes images as inline data: fetch an http(s) image first",
        )
    mime, data = inline
    return _inline(mime, data)


def _inline_data(context: MessageContext, item: Item) -> JSON:
    assert isinstance(item, InlineDataDone)
    return _inline(item.mime_type, item.data)


def _inline(mime: str, data: bytes) -> JSON:
    return {"inlineData": {"mimeType": mime, "data": base64.b64encode(data).decode("ascii")}}


_CONVERTERS: Final[Converters[JSON]] = {
    TextDone: _text,
    ImageUrlDone: _image,
    InlineDataDone: _inline_data,
}


def build_request(
    client: str,
    profile: EmbeddingProfile | None,
    model: str,
    messages: Sequence[UniMessage],
    config: UniConfig,
) -> HTTPRequest:
    """Build the one ``batchEmbedContents`` request of every message (04 §4, 08 D64), or on
    Vertex AI the ``embedContent`` request of the one message (08 D72); headers carry no key.

    Raises:
        UnsupportedParameterError: ``parameter="messages"``: other than one message on
            Vertex AI, which embeds one content per call.
        InvalidMessageError: an item an embedding cannot take (``item_type``), an image that
            is not a well-formed ``data:`` URI (``item_type="image_url"``), or a message with
            nothing to send (``message_index``).
    """
    if profile is not None and len(messages) != 1:
        raise UnsupportedParameterError(
            client, "messages",
            detail=f"Vertex AI embeds one content per call: send one message, not "
            f"{len(messages)}",
        )
    dimensions = config.embedding_config.dimensions if config.embedding_config else None
    entries = []
    for walked in walk_messages(client, messages, _CONVERTERS, protocol_label=PROTOCOL_LABEL):
        role = "model" if walked.message.role == "assistant" else "user"
        entry: JSON = {"model": f"models/{model}", "content": {"role": role, "parts": walked.parts}}
        if dimensions is not None:
            entry["outputDimensionality"] = dimensions
        entries.append(entry)
    if profile is not None:
        vertex = {key: value for key, value in entries[0].items() if key != "model"}
        return HTTPRequest("POST", path(model, profile), HEADERS, encode_json_body(vertex))
    return HTTPRequest("POST", path(model), HEADERS, encode_json_body({"requests": entries}))
