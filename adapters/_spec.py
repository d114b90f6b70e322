"""The protocol record and the client row: everything a layer above needs (08 D63).

A wire-protocol package (``adapters/anthropic_messages/``, ...) exports one
``PROTOCOL = WireProtocol(...)``; ``adapters._protocols`` lists those packages, one line each.
Every public function of ``adapters``, the I/O layer (``open_stream``, ``AutoLLMClient``), the
provider simulator and the command line take what they need of a protocol from its record:
no module outside a protocol's package compares protocol or client names.

A client type is a ``ClientSpec`` row (``adapters._rows``): the protocol it speaks, its
credentials and endpoints, and its ``profile``, the protocol's typed per-client data (capability
flags, generation rows, quirks). Machines and builders read the profile, never the name.

Both tables are read at call time through ``adapters._registry``; ``adapters.register`` adds a
protocol from outside the library (a plugin, a test's toy protocol), undoably.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Generic, Protocol, TypeVar, final

import attrs

from adapters._front import FrontDoor
from mmsp_core.items import StreamItems
from mmsp_core.model import DoneItem, FinishReason, UniConfig, UniMessage, UsageMetadata
from mmsp_core.pipeline import Decoder, Finalizer, Machine
from mmsp_core.request import HTTPRequest
from mmsp_core.sse import SSEDecoder

__all__ = [
    "AuthForm",
    "BuildRequest",
    "CheckConfig",
    "ClientSpec",
    "ErrorShape",
    "Finalizer",
    "Framing",
    "ListingForm",
    "Machine",
    "ModelClass",
    "NewFinalizer",
    "NewMachine",
    "Normalize",
    "ProfileT",
    "Render",
    "Route",
    "ServiceAccountKeys",
    "SimulatorDialect",
    "Traits",
    "Turn",
    "WireProtocol",
]


# --------------------------------------------------------------------------------------------
# Client rows
# --------------------------------------------------------------------------------------------


class AuthForm(enum.Enum):
    """How a client sends its key (spec 04 §3, §4)."""

    #: ``Authorization: Bearer <key>`` (OpenAI-SDK clients, mmsp, vLLM).
    BEARER = "bearer"
    #: ``x-api-key: <key>`` only; never ``Authorization`` (anthropic-official).
    X_API_KEY = "x-api-key"
    #: ``x-api-key: <key>`` and ``Authorization: Bearer <key>``: gateways differ (ant-messages).
    X_API_KEY_AND_BEARER = "x-api-key+bearer"
    #: ``x-goog-api-key: <key>``; a Gemini key never goes into the URL (08 D17).
    GOOG_API_KEY = "x-goog-api-key"


class ListingForm(enum.Enum):
    """The shape of a ``list_models`` response (spec 04 §5)."""

    #: ``{"data": [{"id"}, ...]}``, one page, endpoint order (OpenAI-SDK clients, mmsp).
    DATA_IDS = "data-ids"
    #: ``{"data": [{"id"}], "has_more", "last_id"}``; the next page is ``?after_id=<last_id>``.
    ANTHROPIC = "anthropic"
    #: ``{"models": [{"name"}], "nextPageToken"}``; the next page is ``?pageToken=<token>``;
    #: each name is reduced to its last ``/``-segment, entries without a name are skipped.
    GOOGLE = "google"


class ServiceAccountKeys(enum.Enum):
    """What a client does with a service-account JSON key (one starting with ``{``; 04 §3)."""

    #: Not a case for this client: the key is used as any other.
    NOT_A_CASE = "n/a"
    #: Refused with ``RoutingError``: the client only takes API keys (google-official).
    REFUSED = "refused"
    #: Selects Vertex AI, as a Vertex host does (google-genai, 08 D72; ``adapters._vertex``).
    VERTEX = "vertex"


@final
@attrs.frozen
class ModelClass:
    """Model ids whose lower-cased form contains ``token`` go to ``protocol`` with ``profile``."""

    token: str
    protocol: str
    #: The protocol's profile (its ``WireProtocol``'s profile type), read only by that
    #: protocol's functions.
    profile: object = None


@final
@attrs.frozen
class Route:
    """A cloud that serves a client type's models under base URLs of its own scheme (08 D72):
    ``bedrock://<region>`` on anthropic-official. The base URL names the cloud, not an
    address: its credentials and endpoint are the cloud's (``adapters._aws``)."""

    #: The base URL's scheme, matched case-insensitively: ``"bedrock"``.
    scheme: str
    #: The protocol the client speaks there: a framing variant of its own (08 D72).
    protocol: str
    #: The protocol's profile there.
    profile: object = None
    #: The builder sends remote images as bytes, so the I/O layer fetches them (05 §5).
    inlines_remote_images: bool = False
    #: ``gen_ai.provider.name`` of a call there in OpenTelemetry spans (``aws.bedrock``);
    #: ``None``: the client type's.
    telemetry_provider: str | None = None

    def serves(self, base_url: str | None) -> bool:
        """Whether ``base_url`` is one of this route's (``<scheme>://...``)."""
        return base_url is not None and base_url.lower().startswith(f"{self.scheme}://")


@final
@attrs.frozen
class ClientSpec:
    """Everything the pure and I/O layers need to know about one client type (spec 04 §1)."""

    client_type: str
    #: Wire protocol name, the key of the protocol table.
    protocol: str
    #: An official client speaks its vendor's own API; a compatible one any endpoint's.
    official: bool
    api_key_env: str
    base_url_env: str
    default_base_url: str
    #: An open server takes requests without a key: none is required or sent (08 D25, D40).
    open_server: bool
    auth: AuthForm
    #: Other accepted names, matched case-insensitively (spec 04 §1).
    aliases: tuple[str, ...] = ()
    #: Lower-case model-id prefixes that route here when no client type is named (04 §2).
    model_prefixes: tuple[str, ...] = ()
    #: The builder sends remote images as data URIs, so the I/O layer fetches every http(s)
    #: image first (05 §5: "openai-chat and moonshot send http images as data URIs").
    inlines_remote_images: bool = False
    #: The builder applies the GPT-5.6 ``detail`` rule to remote images too, so the I/O layer
    #: fetches them for ids containing ``gpt-5.6`` (05 §5, see ``needs_image_bytes``).
    measures_remote_images: bool = False
    #: ``list_models`` path relative to the base URL, and the response shape (04 §5).
    list_models_path: str = "/models"
    listing: ListingForm = ListingForm.DATA_IDS
    #: Non-credential headers of the ``list_models`` request (the Anthropic version, 08 D12).
    list_models_headers: tuple[tuple[str, str], ...] = ()
    #: The protocol's typed per-client data, read by its machine and builder (08 D63): an
    #: instance of its ``WireProtocol``'s profile type, which only that protocol's functions
    #: read; ``None`` for a protocol without one or a client whose protocol is not built yet.
    profile: object = None
    #: Model ids (lower-cased) starting with one of these prefixes are sent to another client
    #: type: ``(prefix, client type)`` (04 §2: openai-official's embedding ids).
    redirects: tuple[tuple[str, str], ...] = ()
    service_account_keys: ServiceAccountKeys = ServiceAccountKeys.NOT_A_CASE
    #: Model classes this client serves through another protocol, first match wins (08 D64:
    #: Gemini embedding models go to ``google-embedding`` on both Google client types); any
    #: other id uses ``protocol`` and ``profile``.
    model_classes: tuple[ModelClass, ...] = ()
    #: An Azure OpenAI base URL makes this client an Azure one (08 D72): the key goes as
    #: ``api-key`` and comes from ``AZURE_OPENAI_API_KEY`` (``adapters._credentials``).
    azure: bool = False
    #: Clouds that serve this client's models under base URLs of their own (08 D72).
    routes: tuple[Route, ...] = ()
    #: ``gen_ai.provider.name`` of its calls in OpenTelemetry spans (the GenAI conventions'
    #: well-known value where one exists: ``openai``, ``anthropic``, ``gcp.gemini``, ...);
    #: ``None``: the client type itself (``adapters.clients.telemetry_provider``).
    telemetry_provider: str | None = None

    def route_for(self, base_url: str | None) -> Route | None:
        """The route whose base URLs include ``base_url``, if any."""
        return next((route for route in self.routes if route.serves(base_url)), None)

    def speaks(self, model: str | None, base_url: str | None = None) -> tuple[str, object]:
        """The protocol and profile this client uses for ``model`` (its own for ``None``) at
        ``base_url``: a route's, else a model class's, else its own."""
        route = self.route_for(base_url)
        if route is not None:
            return route.protocol, route.profile
        if model is not None and self.model_classes:
            key = model.lower()
            for model_class in self.model_classes:
                if model_class.token in key:
                    return model_class.protocol, model_class.profile
        return self.protocol, self.profile


# --------------------------------------------------------------------------------------------
# What a protocol's functions look like
# --------------------------------------------------------------------------------------------


#: A protocol's profile type: the frozen attrs class of its ``profiles`` module, or ``None``
#: for a protocol that has no per-client data (the embedding protocols).
ProfileT = TypeVar("ProfileT")
#: The same, where a function only takes a profile.
_ProfileIn = TypeVar("_ProfileIn", contravariant=True)


class NewMachine(Protocol[_ProfileIn]):
    """Build a fresh machine for one response.

    ``client`` names the source in errors; ``profile`` is the client row's profile (per-client
    options such as MiniMax's whole calls, 08 D32). ``base_url`` is reserved: since 08 D52 no
    machine needs it.
    """

    def __call__(
        self, client: str, profile: _ProfileIn, *, strict: bool, base_url: str | None
    ) -> Machine: ...


class BuildRequest(Protocol[_ProfileIn]):
    """Build the HTTP request of ``client`` (a client type of this protocol, with its profile)."""

    def __call__(
        self,
        client: str,
        profile: _ProfileIn,
        model: str,
        messages: Sequence[UniMessage],
        config: UniConfig,
    ) -> HTTPRequest: ...


class CheckConfig(Protocol[_ProfileIn]):
    """Raise what ``BuildRequest`` would raise for the config alone (08 D37)."""

    def __call__(
        self, client: str, profile: _ProfileIn, model: str, config: UniConfig
    ) -> None: ...


class Render(Protocol):
    """Write the body a real server of this protocol would send for these done items (D49)."""

    def __call__(
        self,
        items: Sequence[DoneItem],
        usage: UsageMetadata,
        finish_reason: FinishReason,
        *,
        model: str,
        fragment_size: int | None,
    ) -> bytes: ...


class Normalize(Protocol):
    """Return what of ``(items, finish_reason)`` survives a render and decode round trip on
    this protocol: exactly the normalisation its renderer documents (09)."""

    def __call__(
        self, items: Sequence[DoneItem], finish_reason: FinishReason
    ) -> tuple[list[DoneItem], FinishReason]: ...


class NewFinalizer(Protocol):
    """Build the finalizer of one stream."""

    def __call__(self, *, client: str, clock: Callable[[], int]) -> Finalizer: ...


def _identity(
    items: Sequence[DoneItem], finish_reason: FinishReason
) -> tuple[list[DoneItem], FinishReason]:
    return list(items), finish_reason


def _same_usage(usage: UsageMetadata) -> UsageMetadata:
    return usage


# --------------------------------------------------------------------------------------------
# What the I/O layer, the simulator and the command line need
# --------------------------------------------------------------------------------------------


#: A path into a JSON document: object keys in order.
JsonPath = tuple[str, ...]


@final
@attrs.frozen
class ErrorShape:
    """Where a protocol's JSON error body keeps its fields (08 D19).

    Each field lists paths tried in order; the first that holds a non-empty scalar wins. A
    document that is a one-element list (Google) is read as its element. The defaults read
    OpenAI ``{"error": {"type", "code", "message"}}``, Anthropic
    ``{"type": "error", "error": {"type", "message"}, "request_id"}``, Google
    ``{"error": {"code", "status", "message"}}`` and the plain ``{"error": "<message>"}``,
    ``{"message"}`` and ``{"detail"}`` of gateways.
    """

    error_type: tuple[JsonPath, ...] = (("error", "type"), ("error", "status"), ("error", "code"))
    message: tuple[JsonPath, ...] = (("error", "message"), ("error",), ("message",), ("detail",))
    request_id: tuple[JsonPath, ...] = (("request_id",),)


@final
@attrs.frozen
class Turn:
    """What the simulator's demo script reads from a request body."""

    #: The text of the last user message.
    question: str
    #: ``(name, JSON schema of the parameters)`` of each tool offered, in order.
    tools: tuple[tuple[str, Mapping[str, Any]], ...]
    #: The text of every tool result that came after the last user text, in order (the
    #: results of an earlier question are not this turn's).
    tool_results: tuple[str, ...]
    #: The text of each input of an embedding request, one per message in order (its vectors
    #: are the answer); empty for a generation request.
    inputs: tuple[str, ...] = ()
    #: The vector size an embedding request asks for (``dimensions``,
    #: ``outputDimensionality``); ``None``: none, or not a positive integer.
    dimensions: int | None = None
    #: The JSON Schema the answer must follow when the request asks for structured output
    #: (08 D74; ``{}``: any JSON object); ``None``: a free text answer.
    answer_schema: Mapping[str, Any] | None = None


@final
@attrs.frozen
class SimulatorDialect:
    """How one protocol's provider speaks, as far as the provider simulator needs it."""

    #: ``(method, path regular expression)`` of the generation endpoint, without the query.
    route: tuple[str, str]
    #: What a client's base URL adds to the simulator's origin (spec 04 §4).
    base_path: str
    #: Header names that may carry the key; ``authorization`` means ``Bearer <key>``.
    key_headers: tuple[str, ...]
    request_id_header: str
    #: ``(status, message) -> JSON error body`` of a non-2xx answer.
    error_body: Callable[[int, str], dict[str, Any]]
    #: The message of a 401 (``bad_key_status``) for a wrong key.
    bad_key_message: str
    #: The in-stream error frame ``Reply.error_after`` and ``faults.error_event`` append (an
    #: overload, 08 D4).
    stream_error: bytes
    read_turn: Callable[[Mapping[str, Any]], Turn]
    tool_call_id_prefix: str
    #: Content type of the generation response.
    content_type: str = "text/event-stream"
    #: The model id the demo asks for: one that reaches this protocol on its compatible client
    #: (a protocol chosen by model class, 08 D64, needs an id of that class).
    demo_model: str = "sim-model"
    #: The keys this provider's model list adds to the one ``GET`` body the simulator sends at
    #: its client types' listing path, from the ids listed (Google's ``models[].name``, 04 §5);
    #: ``None``: the ``data[].id`` body already is its shape.
    model_list: Callable[[Sequence[str]], Mapping[str, Any]] | None = None
    #: The body as this provider sends it, from the rendered one (Azure's content-filter
    #: annotations on Chat chunks); ``None``: as rendered.
    annotate: Callable[[bytes], bytes] | None = None
    #: How Azure OpenAI serves this protocol too (08 D72): the dialect of its endpoint, which
    #: the simulator serves beside this one; ``None``: Azure does not serve it.
    azure: SimulatorDialect | None = None
    #: How Vertex AI serves this protocol too (08 D72): the dialect of its endpoint, which
    #: the simulator serves beside this one, its bearer tokens issued by the simulator's own
    #: token endpoint (``mmsp_io.simulator.vertex``); ``None``: Vertex does not serve it.
    vertex: SimulatorDialect | None = None
    #: The status of an answer to a wrong key or signature (AWS answers 403).
    bad_key_status: int = 401
    #: The SigV4 service a request may sign for instead of sending the key (08 D72: Bedrock's
    #: ``bedrock``), checked against the simulator's AWS test key; ``None``: none.
    signing_service: str | None = None
    #: The environment variable that points this protocol's clients at the simulator, for a
    #: cloud route whose base URL names the cloud rather than an address (08 D72: Bedrock's
    #: ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` with ``bedrock://<region>``); ``None``: a client is
    #: given ``Simulator.base_url``. ``simulated_protocols`` leaves such a protocol out.
    endpoint_variable: str | None = None
    #: The provider's own keep-alive event, which the machine skips (``faults.ping_flood``
    #: sends it: Anthropic's ``ping``, Responses' ``keepalive``); ``None``: it has none.
    ping: bytes | None = None


class Framing(Protocol):
    """A binary framing of a protocol's events (08 D72: Bedrock's AWS event stream), as the
    conformance checks (``adapters.testing``) cut, read and rewrite a body of it."""

    @property
    def unknown_frame(self) -> bytes:
        """A frame carrying an event no machine knows."""
        ...

    def frames(self, body: bytes) -> list[bytes]:
        """The whole frames of ``body`` in order, then its unfinished tail, if any."""
        ...

    def document(self, frame: bytes) -> bytes | None:
        """The JSON document ``frame`` carries (the event's data), ``None`` for none."""
        ...

    def reframe(self, frame: bytes, document: bytes) -> bytes:
        """``frame`` carrying ``document`` instead of its own."""
        ...


@final
@attrs.frozen
class Traits:
    """What the layers above the pure pipeline need of a protocol (08 D63)."""

    #: Shown by the command line: ``"Anthropic Messages"``, ...
    display_name: str
    #: The base preflight of spec 02 §8 (messages need items, traces are written here) applies;
    #: ``False`` for a gateway that checks them itself (mmsp, seed §7), whose builder forwards
    #: the config for the gateway's client to map: unknown keys unwarned, ``extra_body`` not
    #: merged (08 D57).
    base_preflight: bool = True
    #: Non-2xx answers are the gateway's own ``UpstreamError`` (08 D13), not ``ProviderHTTPError``.
    upstream_errors: bool = False
    #: The caller's key wins over ``default_headers`` (a gateway's bearer token).
    key_wins_over_default_headers: bool = False
    error_shape: ErrorShape = ErrorShape()
    #: How the provider simulator serves this protocol; ``None``: it does not.
    dialect: SimulatorDialect | None = None
    #: The binary framing of a protocol whose body is neither SSE nor one JSON document
    #: (its ``new_decoder`` reads it); ``None`` for those two.
    framing: Framing | None = None
    #: ``gen_ai.operation.name`` of a call in OpenTelemetry spans: ``chat``, or ``embeddings``
    #: for an embedding protocol.
    telemetry_operation: str = "chat"


@final
@attrs.frozen
class WireProtocol(Generic[ProfileT]):
    """Everything about one wire protocol (08 D63): see the module docstring.

    Generic in the protocol's profile type, so its machine, builder and check are checked
    against the profile they read; the registry and everything that handles any protocol hold
    ``WireProtocol[Any]``.
    """

    #: The protocol name used as a ``decode`` source: ``"ant-messages"``, ``"openai-chat"``, ...
    name: str
    new_machine: NewMachine[ProfileT]
    build_request: BuildRequest[ProfileT]
    check_config: CheckConfig[ProfileT]
    render: Render
    traits: Traits
    normalize: Normalize = _identity
    #: What of a usage survives a render and decode round trip: all four counts, except on a
    #: protocol whose wire carries fewer (an embedding endpoint reports only its input count).
    normalize_usage: Callable[[UsageMetadata], UsageMetadata] = _same_usage
    #: Bytes to SSE events: an event-stream decoder, a one-JSON-body decoder, or a binary
    #: frame decoder (whose framing ``traits.framing`` names).
    new_decoder: Callable[[], Decoder] = SSEDecoder
    #: ``StreamItems`` (the finalizer), or a checker that passes an already-public stream.
    new_finalizer: NewFinalizer = StreamItems
    #: The client type a protocol name stands for as a ``decode`` source (09); ``None``: the
    #: client type of the same name.
    compatible_client: str | None = None
    #: How the gateway speaks this protocol to a caller (08 D73); ``None``: it does not.
    front: FrontDoor | None = None


#: The traits of a protocol that has client rows but no package yet.
PENDING_TRAITS: Final = Traits(display_name="(not built yet)")
