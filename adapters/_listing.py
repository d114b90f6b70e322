"""The ``list_models`` request and its pages (spec 04 §5), all pure.

``list_models_path`` and ``list_models_headers`` describe each page's request (paged by
``after_id`` on Anthropic, ``pageToken`` on Google); ``parse_model_page`` reads one answer into
a ``ModelPage``. The caller sends the requests and bounds the number of pages it follows.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Final, final

import attrs

from mmsp_core.errors import MalformedEventError, UnsupportedOperationError

from ._rows import client_spec
from ._spec import ListingForm

__all__ = ["ModelPage", "list_models_headers", "list_models_path", "parse_model_page"]


#: The query parameter that asks for the next page, per paged listing form (spec 04 §5).
_PAGE_PARAMETER: Final = {ListingForm.ANTHROPIC: "after_id", ListingForm.GOOGLE: "pageToken"}



@final
@attrs.frozen
class ModelPage:
    """The model ids of one ``list_models`` response page, and the token of the next page."""

    ids: tuple[str, ...]
    #: Pass to ``list_models_path`` for the next page; ``None`` on the last page.
    next_page_token: str | None = None


def list_models_path(client_type: str, page_token: str | None = None) -> str:
    """Return the ``list_models`` request path (relative to the base URL, for ``join_url``).

    The first page is requested with ``page_token=None``; later ones with the token
    ``parse_model_page`` returned (``after_id`` on Anthropic, ``pageToken`` on Google; spec
    04 §5). The caller bounds the number of pages it follows.

    Raises:
        UnsupportedOperationError: a page token for a client whose list is a single page.
        RoutingError: an unknown client type.
    """
    spec = client_spec(client_type)
    if page_token is None:
        return spec.list_models_path
    parameter = _PAGE_PARAMETER.get(spec.listing)
    if parameter is None:
        raise UnsupportedOperationError(
            spec.client_type, "list_models paging", detail="its model list is a single page"
        )
    return f"{spec.list_models_path}?{urllib.parse.urlencode({parameter: page_token})}"


def list_models_headers(client_type: str) -> tuple[tuple[str, str], ...]:
    """Return the non-credential headers of the ``list_models`` request (spec 04 §5).

    The Anthropic API wants its version header on every request, listing included (08 D12).

    Raises:
        RoutingError: an unknown client type.
    """
    return client_spec(client_type).list_models_headers


def parse_model_page(client_type: str, body: bytes) -> ModelPage:
    """Read the model ids out of one ``list_models`` response body (spec 04 §5).

    OpenAI-SDK clients and mmsp: ``data[].id`` in endpoint order, one page. Anthropic:
    ``data[].id``, and ``last_id`` as the next token while ``has_more``. Google: each
    ``models[].name`` reduced to its last ``/``-segment (``models/gemini-3.7-flash`` ->
    ``gemini-3.7-flash``), entries without a name skipped, ``nextPageToken`` as the next token.

    Raises:
        MalformedEventError: the body is not JSON of that shape (``client`` = the client type,
            ``event`` = a preview of the body).
        RoutingError: an unknown client type.
    """
    spec = client_spec(client_type)

    def malformed(reason: str) -> MalformedEventError:
        return MalformedEventError(
            spec.client_type, body.decode("utf-8", "replace"), detail=f"list_models: {reason}"
        )

    try:
        page = json.loads(body)
    except ValueError as exc:
        raise malformed("the response is not JSON") from exc
    if not isinstance(page, dict):
        raise malformed("the response is not a JSON object")
    if spec.listing is ListingForm.GOOGLE:
        models = page.get("models", [])
        token = page.get("nextPageToken") or None
        if not isinstance(models, list) or not all(isinstance(m, dict) for m in models):
            raise malformed("'models' is not a list of objects")
        if token is not None and not isinstance(token, str):
            raise malformed("'nextPageToken' is not a string")
        names = (m.get("name") for m in models)
        return ModelPage(tuple(n.rsplit("/", 1)[-1] for n in names if isinstance(n, str) and n),
                         token)
    data = page.get("data")
    if not isinstance(data, list) or not all(
        isinstance(entry, dict) and isinstance(entry.get("id"), str) for entry in data
    ):
        raise malformed("'data' is not a list of objects with a string 'id'")
    ids = tuple(entry["id"] for entry in data)
    if spec.listing is ListingForm.DATA_IDS or page.get("has_more") is not True:
        return ModelPage(ids)
    last_id = page.get("last_id")
    if not isinstance(last_id, str) or not last_id:
        raise malformed("'has_more' is true but 'last_id' is not a string")
    return ModelPage(ids, last_id)
