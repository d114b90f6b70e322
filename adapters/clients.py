"""The client registry, routing, credentials and the model catalog (spec 04), all pure.

``CLIENTS`` holds one ``ClientSpec`` per client type of spec 04 §1: the wire protocol it speaks
(the key of the protocol table in ``adapters._protocols``), its environment variable names and
default endpoint, how its key travels, the model-id prefixes that route to it (04 §2), whether
the I/O layer must fetch remote images for its builder (05 §5, 08 D37) and how its endpoint
lists models (04 §5).

Nothing here reads the environment or does I/O: the caller passes ``CLIENT_TYPE``, the key and
the base URL it resolved, and sends the requests these functions describe. Functions that take
a client type accept any spelling ``canonical_client_type`` accepts (case, aliases) and raise
``RoutingError(model="", client_type=...)`` for an unknown one.
"""

from __future__ import annotations

import enum
import json
import types
import urllib.parse
from typing import Any, Final, final

import attrs

from mmsp_core.errors import (
    ApiKeyRequiredError,
    MalformedEventError,
    RoutingError,
    UnsupportedOperationError,
)

from . import _registry
from ._catalog import CATALOG
from ._convert import model_key
from ._preflight import check_model_id
from ._registry import CLIENTS, canonical_client_type
from ._spec import AuthForm, ClientSpec, ListingForm, ModelClass, ServiceAccountKeys
from .anthropic_messages import profiles as anthropic_profiles
from .anthropic_messages.request import ANTHROPIC_VERSION
from .google_genai import profiles as genai_profiles
from .google_interactions import profiles as interactions_profiles
from .mmsp import profiles as mmsp_profiles
from .openai_chat import profiles as chat_profiles
from .openai_responses import profiles as responses_profiles

__all__ = [
    "CLIENTS",
    "AuthForm",
    "ClientSpec",
    "ListingForm",
    "Modality",
    "ModelPage",
    "ModelPricing",
    "SupportedModel",
    "auth_headers",
    "canonical_client_type",
    "check_endpoint",
    "client_spec",
    "environment_key_allowed",
    "join_url",
    "list_models_headers",
    "list_models_path",
    "list_supported_models",
    "needs_image_bytes",
    "parse_model_page",
    "route",
]


#: The query parameter that asks for the next page, per paged listing form (spec 04 §5).
_PAGE_PARAMETER: Final = {ListingForm.ANTHROPIC: "after_id", ListingForm.GOOGLE: "pageToken"}


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
            profile=responses_profiles.OPENAI),
    _anthropic("anthropic-official", official=True, auth=AuthForm.X_API_KEY,
               model_prefixes=("claude-",), profile=anthropic_profiles.OFFICIAL),
    _google("google-official", "google-interactions", official=True,
            aliases=("gemini-official",), model_prefixes=("gemini-",),
            service_account_keys=ServiceAccountKeys.REFUSED, inlines_remote_images=True,
            profile=interactions_profiles.OFFICIAL,
            model_classes=(ModelClass("embedding", "google-embedding"),)),
    _bearer("zai-official", "openai-chat", official=True, env="ZAI",
            default_base_url="https://api.z.ai/api/paas/v4/", model_prefixes=("glm-",),
            profile=chat_profiles.ZAI),
    _bearer("moonshot-official", "openai-chat", official=True, env="MOONSHOT",
            default_base_url="https://api.moonshot.cn/v1", model_prefixes=("kimi-",),
            inlines_remote_images=True, profile=chat_profiles.MOONSHOT),
    _bearer("deepseek-official", "openai-responses", official=True, env="DEEPSEEK",
            default_base_url="https://api.deepseek.com", model_prefixes=("deepseek-",),
            profile=responses_profiles.DEEPSEEK),
    _bearer("minimax-official", "openai-responses", official=True, env="MINIMAX",
            default_base_url="https://api.minimax.io/v1", model_prefixes=("minimax-",),
            profile=responses_profiles.MINIMAX),
    # Compatible clients.
    _bearer("openai-responses", "openai-responses", official=False, env="OPENAI",
            default_base_url=_OPENAI_URL, profile=responses_profiles.COMPATIBLE),
    _bearer("openai-chat", "openai-chat", official=False, env="OPENAI",
            default_base_url=_OPENAI_URL, aliases=("openai",), inlines_remote_images=True,
            profile=chat_profiles.COMPATIBLE),
    _bearer("openai-chat-vllm-adapter", "openai-chat", official=False, env="VLLM",
            default_base_url="http://127.0.0.1:8000/v1", open_server=True,
            measures_remote_images=True, profile=chat_profiles.VLLM),
    _bearer("openai-embedding", "openai-embedding", official=False, env="OPENAI",
            default_base_url=_OPENAI_URL),
    _anthropic("ant-messages", official=False, auth=AuthForm.X_API_KEY_AND_BEARER,
               profile=anthropic_profiles.COMPATIBLE),
    _google("google-genai", "google-genai", official=False, aliases=("gemini-generate-content",),
            service_account_keys=ServiceAccountKeys.VERTEX, inlines_remote_images=True,
            profile=genai_profiles.GEMINI_API,
            model_classes=(ModelClass("embedding", "google-embedding"),)),
    _bearer("mmsp", "mmsp", official=False, env="MMSP",
            default_base_url="http://127.0.0.1:25752/v1", open_server=True,
            profile=mmsp_profiles.MMSP),
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


def needs_image_bytes(client_type: str, model: str) -> bool:
    """Whether the I/O layer must fetch http(s) images into data URIs before building (08 D37).

    True for the clients whose builder inlines every remote image, openai-chat and
    moonshot-official (05 §5: "openai-chat and moonshot send http images as data URIs") and
    google-official (Gemini takes no arbitrary image URLs, so they go as inline data), and
    for openai-chat-vllm-adapter on ids whose lower-cased form contains ``gpt-5.6``, where the
    ``detail`` rule measures remote images (05 §5: "openai-chat and the vLLM adapter apply the
    same GPT-5.6 rule ...; since http images are fetched into data URIs first, they are
    measured"). False for openai-official and openai-responses: their rule measures data URIs
    only (05 §5: "http URLs are passed through unmeasured"). False for every other client.

    Raises:
        RoutingError: an unknown client type.
    """
    spec = client_spec(client_type)
    return spec.inlines_remote_images or (
        spec.measures_remote_images and "gpt-5.6" in model_key(model)
    )


def auth_headers(client_type: str, api_key: str | None) -> tuple[tuple[str, str], ...]:
    """Return the credential headers ``client_type`` sends with ``api_key`` (spec 04 §3, §4).

    Bearer clients send ``Authorization: Bearer <key>``; anthropic-official ``x-api-key``
    only; ant-messages both; the Google clients ``x-goog-api-key`` (never the URL, 08 D17).
    An open server (mmsp, the vLLM adapter) without a key sends nothing (08 D40). An empty key
    counts as none.

    Raises:
        ApiKeyRequiredError: no key on a client that needs one (08 D25), or a key an HTTP header
            cannot carry (a control character or a non-ASCII one); the key is never quoted
            (08 D16).
        RoutingError: an unknown client type.
    """
    spec = client_spec(client_type)
    if not api_key:
        if spec.open_server:
            return ()
        raise _key_error(spec, detail=None)
    if not all(" " <= char <= "~" for char in api_key):
        raise _key_error(spec, detail="the api_key holds characters an HTTP header cannot carry")
    bearer = ("Authorization", f"Bearer {api_key}")
    if spec.auth is AuthForm.BEARER:
        return (bearer,)
    if spec.auth is AuthForm.X_API_KEY:
        return (("x-api-key", api_key),)
    if spec.auth is AuthForm.X_API_KEY_AND_BEARER:
        return (("x-api-key", api_key), bearer)
    return (("x-goog-api-key", api_key),)


def _key_error(spec: ClientSpec, *, detail: str | None) -> ApiKeyRequiredError:
    return ApiKeyRequiredError(
        spec.client_type, spec.client_type, spec.api_key_env, spec.base_url_env, None,
        detail=detail,
    )


def environment_key_allowed(client_type: str, base_url: str | None) -> bool:
    """Whether the environment's key (``<P>_API_KEY``) may go to ``base_url`` (spec 04 §3).

    ``base_url`` is the one passed in code (``None`` when none was; ``<P>_BASE_URL`` is not
    passed here, since the environment's key may always go where the environment points).
    True when none was passed, or when it equals the client's default endpoint: scheme and
    host compared case-insensitively, trailing slashes of the path ignored, everything else
    (user info, port, query, fragment) verbatim, so ``https://api.openai.com:443/v1`` is *not*
    the default. False on an open server given any base URL: it runs keyless (08 D40); and
    False otherwise, where the caller must pass ``api_key`` (``ApiKeyRequiredError``).

    Raises:
        RoutingError: an unknown client type.
    """
    spec = client_spec(client_type)
    if base_url is None:
        return True
    if spec.open_server:
        return False
    return _endpoint_form(base_url) == _endpoint_form(spec.default_base_url)


def _endpoint_form(url: str) -> tuple[str, ...] | None:
    """``url`` in the form spec 04 §3 compares; ``None`` when it does not parse."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return None
    user_info, at, host = parts.netloc.rpartition("@")
    return (parts.scheme.lower(), user_info + at + host.lower(), parts.path.rstrip("/"),
            parts.query, parts.fragment)


def join_url(base_url: str, path: str) -> str:
    """Append ``path`` to ``base_url`` with exactly one ``/`` between them (08 D26, 04 §4).

    ``https://api.z.ai/api/paas/v4/`` + ``/chat/completions`` is
    ``https://api.z.ai/api/paas/v4/chat/completions``. ``path`` may carry a query
    (``?alt=sse``); ``base_url`` must not.
    """
    return f"{base_url.rstrip('/')}/{path.lstrip('/')}"


def check_endpoint(client_type: str, model: str, base_url: str | None, api_key: str | None) -> None:
    """Refuse the endpoints and keys this project leaves out (08 D23, spec 04 §3).

    Call with the resolved base URL and key, before anything is sent. The key is never quoted
    in an error (08 D16).

    Raises:
        UnsupportedOperationError: a ``bedrock://`` base URL (Amazon Bedrock); on a client for
            which Vertex AI is a case (the Gemini API clients), a base URL whose host is
            ``aiplatform.googleapis.com`` or ends in ``-aiplatform.googleapis.com`` (08 D66),
            or a service-account JSON key (one starting with ``{``) on google-genai.
        RoutingError: a service-account JSON key on google-official, which only takes API keys
            (04 §3), or an unknown client type.
    """
    spec = client_spec(client_type)
    if base_url is not None and base_url.lower().startswith("bedrock://"):
        raise UnsupportedOperationError(
            spec.client_type, "Amazon Bedrock",
            detail="bedrock:// endpoints (SigV4 signing, AWS event streams) are out of scope",
        )
    if spec.service_account_keys is not ServiceAccountKeys.NOT_A_CASE and _vertex_host(base_url):
        raise UnsupportedOperationError(
            spec.client_type, "Vertex AI",
            detail="Vertex AI endpoints (aiplatform.googleapis.com) are out of scope",
        )
    if api_key is None or not api_key.lstrip().startswith("{"):
        return
    if spec.service_account_keys is ServiceAccountKeys.REFUSED:
        raise RoutingError(
            model, spec.client_type,
            detail=f"{spec.client_type} takes an API key, not a service-account JSON key; "
            "such keys select Vertex AI, which is out of scope",
        )
    if spec.service_account_keys is ServiceAccountKeys.VERTEX:
        raise UnsupportedOperationError(
            spec.client_type, "Vertex AI",
            detail="service-account JSON keys (Vertex AI) are out of scope",
        )


def _vertex_host(base_url: str | None) -> bool:
    """Whether ``base_url``'s host is Vertex AI's: ``aiplatform.googleapis.com`` or a regional
    ``<location>-aiplatform.googleapis.com`` (08 D66)."""
    try:
        host = urllib.parse.urlsplit(base_url or "").hostname or ""
    except ValueError:
        return False
    return host == "aiplatform.googleapis.com" or host.endswith("-aiplatform.googleapis.com")


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


class Modality(enum.StrEnum):
    """A kind of content a catalog model takes or produces (spec 01 §1, registry)."""

    TEXT = "Text"
    IMAGE = "Image"
    VIDEO = "Video"
    AUDIO = "Audio"
    EMBED = "Embed"


@final
@attrs.frozen
class ModelPricing:
    """List price per million tokens (spec 01 §10); ``cached_tokens`` is None where unpublished.

    ``thoughts_tokens`` and ``response_tokens`` both carry the vendor's output price.
    """

    currency: str
    prompt_tokens: float
    thoughts_tokens: float
    response_tokens: float
    cached_tokens: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of spec 01 §10 (``cached_tokens`` left out when absent)."""
        return {k: v for k, v in attrs.asdict(self).items() if v is not None}


@final
@attrs.frozen
class SupportedModel:
    """One catalog entry (spec 01 §10); ``(model, base_url, client)`` feed ``AutoLLMClient``."""

    model: str
    base_url: str
    client: str
    input_modalities: tuple[Modality, ...]
    output_modalities: tuple[Modality, ...]
    context_window: int | None = None
    pricing: ModelPricing | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of spec 01 §10 (``context_window``, ``pricing`` left out when absent)."""
        result: dict[str, Any] = {
            "model": self.model,
            "base_url": self.base_url,
            "client": self.client,
            "input_modalities": [str(m) for m in self.input_modalities],
            "output_modalities": [str(m) for m in self.output_modalities],
        }
        if self.context_window is not None:
            result["context_window"] = self.context_window
        if self.pricing is not None:
            result["pricing"] = self.pricing.to_dict()
        return result


#: Currencies ``list_supported_models`` answers in, with the factor applied to stored USD
#: (spec 04 §7: "CNY" multiplies by 7.0, rounded to 6 decimals).
_CURRENCY_RATES: Final = types.MappingProxyType({"USD": 1.0, "CNY": 7.0})


def list_supported_models(currency: str = "USD") -> list[SupportedModel]:
    """Return a fresh list of the 125 catalog entries of spec 04 §7, in table order.

    Prices are USD per million tokens; ``"CNY"`` multiplies them by 7 and rounds to 6 decimals
    (spec 01 §10). The currency code is matched case-insensitively.

    Raises:
        ValueError: any other currency. A plain ``ValueError`` (the error of a bad argument to
            a pure function): no ``MMSPError`` class describes a catalog query, and every
            ``MMSPError`` is a ``ValueError`` too, so callers catch both the same way.
    """
    code = currency.upper()
    rate = _CURRENCY_RATES.get(code)
    if rate is None:
        raise ValueError(
            f"unsupported currency {currency!r}: list_supported_models answers in "
            f"{' or '.join(_CURRENCY_RATES)}"
        )

    def price(usd: float) -> float:
        return usd if rate == 1.0 else round(usd * rate, 6)

    models = []
    for row in CATALOG:
        pricing = None
        if row.prices is not None:
            prompt, cached, output = row.prices
            pricing = ModelPricing(
                code, price(prompt), price(output), price(output),
                None if cached is None else price(cached),
            )
        models.append(SupportedModel(
            row.model, row.base_url, row.client,
            tuple(Modality(m) for m in row.inputs.split(",")),
            tuple(Modality(m) for m in row.outputs.split(",")),
            row.context_window, pricing,
        ))
    return models
