"""The client rows and routing (spec 04 §1, §2), all pure.

``CLIENTS`` holds one ``ClientSpec`` per client type of spec 04 §1, registered here: the wire
protocol it speaks (the key of the protocol table in ``adapters._protocols``), its environment
variable names and default endpoint, how its key travels, the model-id prefixes that route to
it (04 §2), whether the I/O layer must fetch remote images for its builder (05 §5, 08 D37) and
how its endpoint lists models (04 §5). ``route`` picks a model's client type, and
``same_family`` keeps the listed models of a routed client's family.

Nothing here reads the environment or does I/O. Functions that take a client type accept any
spelling ``canonical_client_type`` accepts (case, aliases) and raise
``RoutingError(model="", client_type=...)`` for an unknown one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from mmsp_core.errors import RoutingError

from . import _registry
from ._aws import BEDROCK_SCHEME
from ._convert import model_key
from ._preflight import check_model_id
from ._registry import CLIENTS, canonical_client_type
from ._spec import AuthForm, ClientSpec, ListingForm, ModelClass, Route, ServiceAccountKeys
from .anthropic_messages import profiles as anthropic_profiles
from .anthropic_messages.bedrock import PROTOCOL_NAME as BEDROCK_PROTOCOL
from .anthropic_messages.request import ANTHROPIC_VERSION
from .google_genai import profiles as genai_profiles
from .google_interactions import profiles as interactions_profiles
from .mmsp import profiles as mmsp_profiles
from .openai_chat import profiles as chat_profiles
from .openai_responses import profiles as responses_profiles

__all__ = ["client_spec", "needs_image_bytes", "route", "same_family"]


_OPENAI_URL: Final = "https://api.openai.com/v1"
_ANTHROPIC_URL: Final = "https://api.anthropic.com"
_GEMINI_URL: Final = "https://generativelanguage.googleapis.com"


def _bearer(
    client_type: str, protocol: str, *, official: bool, env: str, default_base_url: str,
    open_server: bool = False, **options: Any,
) -> ClientSpec:
    """A client whose key is a Bearer token and whose models are ``GET /models`` (04 §3, §5)."""
    return ClientSpec(
        client_type, protocol, official, f"{env}_API_KEY", f"{env}_BASE_URL", default_base_url,
        open_server=open_server, auth=AuthForm.BEARER, **options,
    )


def _anthropic(client_type: str, *, official: bool, auth: AuthForm, **options: Any) -> ClientSpec:
    """A client of the Anthropic Messages API (04 §1, §3, §5: ``GET /v1/models``, paged)."""
    return ClientSpec(
        client_type, "ant-messages", official, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
        _ANTHROPIC_URL, open_server=False, auth=auth, list_models_path="/v1/models",
        listing=ListingForm.ANTHROPIC,
        list_models_headers=(("anthropic-version", ANTHROPIC_VERSION),), **options,
    )


def _google(client_type: str, protocol: str, *, official: bool, **options: Any) -> ClientSpec:
    """A client of the Gemini API (04 §1, §4: key in ``x-goog-api-key``; §5 paged listing)."""
    return ClientSpec(
        client_type, protocol, official, "GEMINI_API_KEY", "GEMINI_BASE_URL", _GEMINI_URL,
        open_server=False, auth=AuthForm.GOOG_API_KEY, list_models_path="/v1/models",
        listing=ListingForm.GOOGLE, **options,
    )


_SPECS: Final = (
    # Official clients (spec 04 §1), in the order of the routing table of 04 §2.
    _bearer("openai-official", "openai-responses", official=True, env="OPENAI",
            default_base_url=_OPENAI_URL, model_prefixes=("gpt-", "text-embedding-"),
            redirects=(("text-embedding-", "openai-embedding"),),
            profile=responses_profiles.OPENAI, telemetry_provider="openai"),
    _anthropic("anthropic-official", official=True, auth=AuthForm.X_API_KEY,
               model_prefixes=("claude-",), profile=anthropic_profiles.OFFICIAL,
               telemetry_provider="anthropic",
               routes=(Route(BEDROCK_SCHEME, BEDROCK_PROTOCOL, anthropic_profiles.BEDROCK,
                             inlines_remote_images=True, telemetry_provider="aws.bedrock"),)),
    _google("google-official", "google-interactions", official=True,
            aliases=("gemini-official",), model_prefixes=("gemini-",),
            service_account_keys=ServiceAccountKeys.REFUSED, inlines_remote_images=True,
            profile=interactions_profiles.OFFICIAL, telemetry_provider="gcp.gemini",
            model_classes=(ModelClass("embedding", "google-embedding"),)),
    _bearer("zai-official", "openai-chat", official=True, env="ZAI",
            default_base_url="https://api.z.ai/api/paas/v4/", model_prefixes=("glm-",),
            profile=chat_profiles.ZAI, telemetry_provider="z_ai"),
    _bearer("moonshot-official", "openai-chat", official=True, env="MOONSHOT",
            default_base_url="https://api.moonshot.cn/v1", model_prefixes=("kimi-",),
            inlines_remote_images=True, profile=chat_profiles.MOONSHOT,
            telemetry_provider="moonshot_ai"),
    _bearer("deepseek-official", "openai-responses", official=True, env="DEEPSEEK",
            default_base_url="https://api.deepseek.com", model_prefixes=("deepseek-",),
            profile=responses_profiles.DEEPSEEK, telemetry_provider="deepseek"),
    _bearer("minimax-official", "openai-responses", official=True, env="MINIMAX",
            default_base_url="https://api.minimax.io/v1", model_prefixes=("minimax-",),
            profile=responses_profiles.MINIMAX, telemetry_provider="minimax"),
    # Compatible clients.
    _bearer("openai-responses", "openai-responses", official=False, env="OPENAI",
            default_base_url=_OPENAI_URL, azure=True, profile=responses_profiles.COMPATIBLE,
            telemetry_provider="openai"),
    _bearer("openai-chat", "openai-chat", official=False, env="OPENAI",
            default_base_url=_OPENAI_URL, aliases=("openai",), inlines_remote_images=True,
            azure=True, profile=chat_profiles.COMPATIBLE, telemetry_provider="openai"),
    _bearer("openai-chat-vllm-adapter", "openai-chat", official=False, env="VLLM",
            default_base_url="http://127.0.0.1:8000/v1", open_server=True,
            measures_remote_images=True, profile=chat_profiles.VLLM, telemetry_provider="vllm"),
    _bearer("openai-embedding", "openai-embedding", official=False, env="OPENAI",
            default_base_url=_OPENAI_URL, azure=True, telemetry_provider="openai"),
    _anthropic("ant-messages", official=False, auth=AuthForm.X_API_KEY_AND_BEARER,
               profile=anthropic_profiles.COMPATIBLE, telemetry_provider="anthropic"),
    _google("google-genai", "google-genai", official=False, aliases=("gemini-generate-content",),
            service_account_keys=ServiceAccountKeys.VERTEX, inlines_remote_images=True,
            profile=genai_profiles.GEMINI_API, telemetry_provider="gcp.gemini",
            model_classes=(ModelClass("embedding", "google-embedding"),)),
    _bearer("mmsp", "mmsp", official=False, env="MMSP",
            default_base_url="http://127.0.0.1:25752/v1", open_server=True,
            profile=mmsp_profiles.MMSP, telemetry_provider="mmsp"),
)

_registry.register(None, _SPECS)


def client_spec(client_type: str) -> ClientSpec:
    """Return the registry entry of ``client_type`` (any spelling ``canonical_client_type`` takes).

    Raises:
        RoutingError: an unknown client type (``model=""``: no model is involved).
    """
    canonical = canonical_client_type(client_type)
    if canonical is None:
        raise RoutingError("", client_type, detail=_unknown_type(client_type))
    return CLIENTS[canonical]


def _unknown_type(name: str) -> str:
    return f"Unknown client type {name!r}; known: {', '.join(CLIENTS)}"


def route(model: str, client_type: str | None = None) -> str:
    """Pick the client type for ``model`` (spec 04 §2 steps 2-4).

    A named ``client_type`` (the argument, or ``CLIENT_TYPE`` which the caller passes; an empty
    string counts as none, as ``client_type or env`` does in 04 §2 step 1) is canonicalised;
    otherwise the model id's lower-cased prefix picks an official client, first match wins.
    Either way, ``openai-official`` with a ``text-embedding-*`` id becomes ``openai-embedding``.

    Raises:
        RoutingError: a model id that is ``None``, empty or not a string, or a client type
            that is not a string (08 D69); an unknown client type (``client_type`` = the name
            given, the known ones in the detail), or no client type and a model id of no known
            family (``client_type=None``); gateway ids such as ``moonshotai/kimi-k3`` need a
            client type.
    """
    model = check_model_id(model, client_type)
    key = model_key(model)
    if client_type:
        routed = canonical_client_type(client_type)
        if routed is None:
            raise RoutingError(model, client_type, detail=_unknown_type(client_type))
    else:
        found = next(
            (client for prefix, client in _registry.prefix_table() if key.startswith(prefix)),
            None,
        )
        if found is None:
            raise RoutingError(model, None)
        routed = found
    for prefix, target in CLIENTS[routed].redirects:
        if key.startswith(prefix):
            return target
    return routed


def needs_image_bytes(client_type: str, model: str, base_url: str | None = None) -> bool:
    """Whether the I/O layer must fetch http(s) images into data URIs before building (08 D37).

    True for the clients whose builder inlines every remote image, openai-chat and
    moonshot-official (05 §5: "openai-chat and moonshot send http images as data URIs") and
    google-official (Gemini takes no arbitrary image URLs, so they go as inline data), and
    for openai-chat-vllm-adapter on ids whose lower-cased form contains ``gpt-5.6``, where the
    ``detail`` rule measures remote images (05 §5: "openai-chat and the vLLM adapter apply the
    same GPT-5.6 rule ...; since http images are fetched into data URIs first, they are
    measured"). False for openai-official and openai-responses: their rule measures data URIs
    only (05 §5: "http URLs are passed through unmeasured"). On a route (``base_url``), the
    route's ``inlines_remote_images`` decides (05 §5: Bedrock fetches them). False for every
    other client.

    Raises:
        RoutingError: an unknown client type.
    """
    spec = client_spec(client_type)
    route = spec.route_for(base_url)
    if route is not None:
        return route.inlines_remote_images
    return spec.inlines_remote_images or (
        spec.measures_remote_images and "gpt-5.6" in model_key(model)
    )


def same_family(model_ids: Iterable[str], client_type: str) -> list[str]:
    """The ids of ``model_ids`` whose own family routes to ``client_type``'s, in order (what
    ``list_models`` keeps for a client type deduced from the model id, spec 04 §5).

    A family is the client type an id routes to (04 §2), or the row that redirects some of its
    ids there (openai-official for openai-embedding's ``text-embedding-*``); an id that routes
    nowhere is left out.
    """
    own = _family(client_type)
    return [model for model in model_ids if _routed_family(model) == own]


def _family(client_type: str) -> str:
    """The client type whose family a routed type belongs to: the row that redirects some of
    its model ids to ``client_type`` (the ``redirects`` of spec 04 §2 step 4: openai-official's
    ``text-embedding-*`` ids), else ``client_type`` itself."""
    return next(
        (spec.client_type for spec in CLIENTS.values()
         for _prefix, target in spec.redirects if target == client_type),
        client_type,
    )


def _routed_family(model: str) -> str | None:
    """The family ``model`` routes to; ``None`` when it routes nowhere."""
    try:
        return _family(route(model))
    except RoutingError:
        return None
