"""adapters: the pure wire protocols of MMSP: stream machines, request builders, renderers.

Each wire protocol is one module with a machine (provider bytes to client events), a request
builder and a renderer (the mirror of the machine), registered in ``adapters._protocols``.
The client registry (``CLIENTS``, ``route``) says which protocol each client type speaks.
No I/O, no clock, no environment: ``mmsp_io`` does those.
"""

from __future__ import annotations

from . import _protocols  # noqa: F401  (installs the built-in protocols)
from ._errors import provider_http_error, read_error_body, upstream_http_error
from ._front import FrontDoor, FrontRequest, StreamWriter
from ._json import BadField, loads_object
from ._plan import CallPlan, prepare
from ._pricing import catalog_pricing, price
from ._registry import PROTOCOLS, Registration, protocol_traits, register
from ._requests import build_request, check_config, coerce_config, coerce_messages
from ._resolve import resolve
from ._schema_answer import answer_for
from ._spec import ClientSpec, ModelClass, SimulatorDialect, Traits, WireProtocol
from ._streams import decode, new_pipeline, render
from .clients import (
    CLIENTS,
    ModelPricing,
    SupportedModel,
    auth_headers,
    check_endpoint,
    client_spec,
    environment_key_allowed,
    join_url,
    list_models_headers,
    list_models_path,
    list_supported_models,
    needs_image_bytes,
    parse_model_page,
    route,
)

__all__ = [
    "CLIENTS",
    "PROTOCOLS",
    "BadField",
    "CallPlan",
    "ClientSpec",
    "FrontDoor",
    "FrontRequest",
    "ModelClass",
    "ModelPricing",
    "Registration",
    "SimulatorDialect",
    "StreamWriter",
    "SupportedModel",
    "Traits",
    "WireProtocol",
    "answer_for",
    "auth_headers",
    "build_request",
    "catalog_pricing",
    "check_config",
    "check_endpoint",
    "client_spec",
    "coerce_config",
    "coerce_messages",
    "decode",
    "environment_key_allowed",
    "join_url",
    "list_models_headers",
    "list_models_path",
    "list_supported_models",
    "loads_object",
    "needs_image_bytes",
    "new_pipeline",
    "parse_model_page",
    "prepare",
    "price",
    "protocol_traits",
    "provider_http_error",
    "read_error_body",
    "register",
    "render",
    "resolve",
    "route",
    "upstream_http_error",
]
