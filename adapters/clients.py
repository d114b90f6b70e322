"""The client registry, routing, credentials and the model catalog (spec 04), all pure.

One name for what four modules hold, each of one concern:

* ``adapters._rows``: the client rows (``CLIENTS``), ``client_spec``, ``route``,
  ``needs_image_bytes`` and the family filter of ``list_models`` (04 §1, §2);
* ``adapters._credentials``: the key-safety rule, auth headers and endpoints (04 §3, §4);
* ``adapters._aws`` and ``adapters._sigv4``: Amazon Bedrock's endpoint, its credential
  sources and SigV4 signing (08 D72);
* ``adapters._vertex``: Vertex AI's route on google-genai, its credential sources and calls
  (08 D72);
* ``adapters._listing``: the ``list_models`` requests and pages (04 §5);
* ``adapters._supported``: the catalog's values and ``list_supported_models`` (04 §7).

Nothing here reads the environment or does I/O: the caller passes ``CLIENT_TYPE``, the key,
the base URL and the environment it read, and sends the requests these functions describe.
"""

from __future__ import annotations

from ._aws import (
    AWS_EXTRA,
    SIGNING_SERVICE,
    AwsCredentials,
    AwsSource,
    BedrockEndpoint,
    aws_credentials,
    bedrock_endpoint,
)
from ._credentials import (
    auth_headers,
    check_endpoint,
    credentials,
    environment_key_allowed,
    is_azure,
    join_url,
    telemetry_provider,
)
from ._listing import ModelPage, list_models_headers, list_models_path, parse_model_page
from ._registry import CLIENTS, canonical_client_type
from ._rows import client_spec, needs_image_bytes, route, same_family
from ._sigv4 import sign as sigv4_sign
from ._spec import AuthForm, ClientSpec, ListingForm
from ._supported import Modality, ModelPricing, SupportedModel, list_supported_models
from ._vertex import (
    VERTEX_EXTRA,
    VERTEX_SCOPE,
    AuthorizedUser,
    ServiceAccountKey,
    VertexCredential,
    VertexSource,
    VertexSourceKind,
    is_vertex,
    on_vertex,
    read_vertex_credential,
    vertex_location,
    vertex_project,
    vertex_source,
)

__all__ = [
    "AWS_EXTRA",
    "CLIENTS",
    "SIGNING_SERVICE",
    "VERTEX_EXTRA",
    "VERTEX_SCOPE",
    "AuthForm",
    "AuthorizedUser",
    "AwsCredentials",
    "AwsSource",
    "BedrockEndpoint",
    "ClientSpec",
    "ListingForm",
    "Modality",
    "ModelPage",
    "ModelPricing",
    "ServiceAccountKey",
    "SupportedModel",
    "VertexCredential",
    "VertexSource",
    "VertexSourceKind",
    "auth_headers",
    "aws_credentials",
    "bedrock_endpoint",
    "canonical_client_type",
    "check_endpoint",
    "client_spec",
    "credentials",
    "environment_key_allowed",
    "is_azure",
    "is_vertex",
    "join_url",
    "list_models_headers",
    "list_models_path",
    "list_supported_models",
    "needs_image_bytes",
    "on_vertex",
    "parse_model_page",
    "read_vertex_credential",
    "route",
    "same_family",
    "sigv4_sign",
    "telemetry_provider",
    "vertex_location",
    "vertex_project",
    "vertex_source",
]
