"""``list_models`` paging (spec 04 §5): every page of an endpoint's model list, each request
and page by the pure ``adapters.clients`` functions, bounded in size and in number."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import httpx

from adapters.clients import join_url, list_models_path, parse_model_page

from .driver import ErrorForStatus, Timeouts, fetch_body

__all__ = ["model_ids"]

#: The largest ``list_models`` page read, and how many pages are followed (spec 04 §5).
_MODEL_PAGE_LIMIT: Final = 16 * 1024 * 1024
_MAX_MODEL_PAGES: Final = 100


async def model_ids(
    http: httpx.AsyncClient,
    client: str,
    base_url: str,
    *,
    headers: Sequence[tuple[str, str]],
    timeouts: Timeouts,
    error_for_status: ErrorForStatus | None,
) -> list[str]:
    """The model ids of every page of ``client``'s model list at ``base_url``, in order: at
    most ``_MAX_MODEL_PAGES`` pages of at most ``_MODEL_PAGE_LIMIT`` bytes each, each sent
    with ``headers`` (the credentials included).

    Raises:
        ProviderHTTPError, ProviderConnectionError, StreamTimeoutError: a request failed (what
            ``error_for_status`` builds for a non-2xx answer, when given).
        StreamLimitError: a page larger than the limit.
        MalformedEventError: a page is not a model list.
    """
    ids: list[str] = []
    token: str | None = None
    for _ in range(_MAX_MODEL_PAGES):
        url = join_url(base_url, list_models_path(client, token))
        body, _headers = await fetch_body(http, url, client=client, timeouts=timeouts,
                                          limit=_MODEL_PAGE_LIMIT, headers=tuple(headers),
                                          error_for_status=error_for_status)
        page = parse_model_page(client, body)
        ids.extend(page.ids)
        token = page.next_page_token
        if token is None:
            break
    return ids
