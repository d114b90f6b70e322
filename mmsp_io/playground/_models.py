"""The models the playground offers (``mmsp_io.playground``, package doc, "Models"): the
in-process simulator's, the catalog's whose key is in the environment, and a gateway's; and
the client each choice is called with."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

import httpx

import adapters
from adapters.clients import Modality, client_spec, environment_key_allowed

from ..client import AutoLLMClient
from ..simulator import Simulator, simulated_protocols

__all__ = ["SOURCES", "BadChoice", "catalog_models", "client_for", "gateway_client",
           "simulator_models"]

#: Where a model may come from.
SOURCES: Final = ("simulator", "catalog", "gateway")
#: The client type of an MMSP gateway (spec 07 §6).
_GATEWAY_CLIENT: Final = "mmsp"
#: The model id a gateway's client is built with only to list the gateway's models.
_LISTING_MODEL: Final = "models"


class BadChoice(ValueError):
    """A model choice the playground cannot call, with the reason shown to the user."""


def simulator_models(sim: Simulator | None) -> list[dict[str, Any]]:
    """One entry per wire protocol the simulator speaks: the protocol's demo model on its
    compatible client (none without a simulator)."""
    if sim is None:
        return []
    models = []
    for protocol in simulated_protocols():
        spec, record, _ = adapters.resolve(protocol)
        dialect = record.traits.dialect
        model = dialect.demo_model if dialect is not None else "sim-model"
        models.append({"source": "simulator", "id": model, "protocol": protocol,
                       "client_type": spec.client_type,
                       "label": f"{model} · {record.traits.display_name} (simulator)"})
    return models


def catalog_models(environ: Mapping[str, str]) -> list[dict[str, Any]]:
    """The catalog's text models whose client's key is set in ``environ`` and may go to the
    model's endpoint (spec 04 §3, 04 §7)."""
    models = []
    for entry in adapters.list_supported_models():
        if Modality.TEXT not in entry.output_modalities or not _usable(entry.client, entry.base_url,
                                                               environ):
            continue
        models.append({"source": "catalog", "id": entry.model, "client_type": entry.client,
                       "base_url": entry.base_url,
                       "label": f"{entry.model} · {entry.client} ({entry.base_url})"})
    return models


def _usable(client_type: str, base_url: str, environ: Mapping[str, str]) -> bool:
    """Whether the environment holds the key of ``client_type`` and it may go to
    ``base_url``."""
    return bool(environ.get(client_spec(client_type).api_key_env)) and \
        environment_key_allowed(client_type, base_url)


def gateway_client(base_url: str, api_key: str | None, http: httpx.AsyncClient,
                   model: str = _LISTING_MODEL, **options: Any) -> AutoLLMClient:
    """A client of the MMSP gateway at ``base_url`` (its ``/v1``), with the gateway's token.

    Raises:
        BadChoice: ``base_url`` is no http(s) URL.
        MMSPError: the client cannot be built (spec 07 §6).
    """
    if not base_url.startswith(("http://", "https://")):
        raise BadChoice(f"A gateway's URL is an http(s) URL ending in /v1, not {base_url!r}.")
    return AutoLLMClient(model, client_type=_GATEWAY_CLIENT, base_url=base_url,
                         api_key=api_key or None, http_client=http, **options)


def client_for(choice: Mapping[str, Any], sim: Simulator | None, http: httpx.AsyncClient,
               **options: Any) -> AutoLLMClient:
    """The client that calls ``choice`` (an entry of the models list, with ``base_url`` and
    ``api_key`` for a gateway), on ``http``; ``options`` go to ``AutoLLMClient``.

    Raises:
        BadChoice: a choice of no known source, or one the playground does not offer.
        MMSPError: the client cannot be built (a key missing, a bad base URL).
    """
    source, model = choice.get("source"), choice.get("id")
    if not isinstance(model, str) or not model:
        raise BadChoice("Pick a model first.")
    if source == "simulator":
        protocol = choice.get("protocol")
        if sim is None or protocol not in simulated_protocols():
            raise BadChoice(f"The simulator serves no protocol {protocol!r}.")
        spec, _, _ = adapters.resolve(protocol)
        return AutoLLMClient(model, client_type=spec.client_type, api_key=sim.api_key,
                             base_url=sim.base_url(protocol), http_client=http, **options)
    if source == "catalog":
        client_type, base_url = choice.get("client_type"), choice.get("base_url")
        offered = any(entry["client_type"] == client_type and entry["base_url"] == base_url
                      and entry["id"] == model for entry in catalog_models(os.environ))
        if not offered:
            raise BadChoice(f"{model} is no catalog model whose key is in the environment.")
        return AutoLLMClient(model, client_type=client_type, base_url=base_url,
                             http_client=http, **options)
    if source == "gateway":
        base_url, key = choice.get("base_url"), choice.get("api_key")
        if not isinstance(base_url, str) or not (key is None or isinstance(key, str)):
            raise BadChoice("A gateway needs its URL and, if it has keys, a token (strings).")
        return gateway_client(base_url, key, http, model, **options)
    raise BadChoice(f"A model comes from one of {', '.join(SOURCES)}, not {source!r}.")
