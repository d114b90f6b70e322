"""What the simulator answers: ``Reply`` (what to send for one request, and how), the
``RecordedRequest`` it is chosen for, and ``demo_script``, the default behaviour that answers
like a small tool-using model (the package docstring says how to script the simulator)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final, TypeAlias, final

import attrs

import adapters
from mmsp_core.model import (
    DoneItem,
    EmbeddingDone,
    FinishReason,
    TextDone,
    ThinkingDone,
    ToolCallDone,
    UsageMetadata,
)
from mmsp_core.request import CREDENTIAL_HEADERS

from .. import httpserver
from .faults import Fault
from .routing import dialect_of

#: The content type of an event stream (a recorded ``.sse`` body, a dialect's stream).
EVENT_STREAM: Final = "text/event-stream"
_DEFAULT_USAGE: Final = UsageMetadata(cached_tokens=0, prompt_tokens=12, response_tokens=8)
#: The vector size of the demo's embeddings when the request asks for none, and the largest
#: one it answers (a bound on what one request can make it build).
_DEMO_DIMENSIONS: Final = 8
_MAX_DIMENSIONS: Final = 65_536


def _without_credentials(headers: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """``headers`` with the value of each credential header replaced (08 D16, D61)."""
    return tuple(
        (name, "[redacted]" if name.lower() in CREDENTIAL_HEADERS else value)
        for name, value in headers
    )


@final
@attrs.frozen
class RecordedRequest:
    """One request the simulator received, as the tests assert on it.

    ``headers`` are as they arrived, so that a test can check where a client put its key
    (``header("x-api-key")``) and the simulator can check signatures; ``safe_headers`` and the
    ``repr`` (what an assertion failure prints) show every credential header as
    ``[redacted]``.
    """

    method: str
    #: The request target without its query string.
    path: str
    query: str
    #: Header names lower-cased, in arrival order.
    headers: tuple[tuple[str, str], ...] = attrs.field(
        repr=lambda headers: repr(_without_credentials(headers))
    )
    body: bytes
    #: The body parsed as JSON, or ``None`` when it is empty or not JSON.
    json: Any
    #: The wire protocol whose generation endpoint was asked, ``None`` for other routes.
    protocol: str | None

    def header(self, name: str) -> str | None:
        """Return the first value of header ``name`` (case-insensitive), or ``None``."""
        return httpserver.first_header(self.headers, name)

    @property
    def safe_headers(self) -> tuple[tuple[str, str], ...]:
        """``headers`` with every credential's value (``authorization``, ``x-api-key``,
        ``x-goog-api-key``, ``api-key``, ``x-amz-security-token``) replaced by
        ``[redacted]``: what to print, log or compare with a snapshot."""
        return _without_credentials(self.headers)


def _items(items: Iterable[DoneItem]) -> tuple[DoneItem, ...]:
    return tuple(items)


@final
@attrs.frozen(kw_only=True)
class Reply:
    """What the simulator sends for one request, and how (see the package docstring)."""

    items: tuple[DoneItem, ...] = attrs.field(default=(), converter=_items)
    usage: UsageMetadata = _DEFAULT_USAGE
    finish_reason: FinishReason = FinishReason.STOP
    fragment_size: int | None = None
    #: A recorded body sent instead of rendering ``items``.
    body: bytes | None = None
    #: ``None``: the content type of the protocol's dialect.
    content_type: str | None = None
    #: A status other than 200 sends the provider's JSON error body instead.
    status: int = 200
    message: str | None = None
    retry_after: float | None = None
    headers: tuple[tuple[str, str], ...] = ()
    #: Delivery: ``None`` means the simulator's default.
    chunk_size: int | None = None
    delay: float | None = None
    error_after: int | None = None
    cut_after: int | None = None
    stall_at: int | None = None
    stall_before_headers: bool = False
    keepalive: float | None = None
    #: How the answer goes wrong on the wire (``mmsp_io.simulator.faults``): its writes
    #: replace those of ``chunk_size``, ``cut_after`` and ``stall_at``;
    #: ``None``: it does not.
    fault: Fault | None = None

    @classmethod
    def recorded(cls, path: str | Path, **delivery: Any) -> Reply:
        """Replay the body file at ``path`` (a fixture ``.sse`` or ``.json``) as it is."""
        path = Path(path)
        content_type = (
            "application/json" if path.suffix == ".json" else f"{EVENT_STREAM}; charset=utf-8"
        )
        return cls(body=path.read_bytes(), content_type=content_type, **delivery)

    @classmethod
    def text(cls, text: str, *, thinking: str | None = None, **options: Any) -> Reply:
        """A text answer, after ``thinking`` when given; ``options`` are any other fields
        (``usage``, ``finish_reason``, ``fault``, ...)."""
        thought = [ThinkingDone(thinking=thinking)] if thinking is not None else []
        return cls(items=[*thought, TextDone(text=text)], **options)

    @classmethod
    def tool_call(
        cls,
        name: str,
        arguments: Mapping[str, Any],
        *,
        tool_call_id: str = "call_1",
        thinking: str | None = None,
        **options: Any,
    ) -> Reply:
        """A call of the tool ``name`` with ``arguments``, after ``thinking`` when given,
        finish ``tool_call``; ``options`` are any other fields."""
        thought = [ThinkingDone(thinking=thinking)] if thinking is not None else []
        call = ToolCallDone(name=name, tool_call_id=tool_call_id, arguments=arguments)
        return cls(items=[*thought, call], finish_reason=FinishReason.TOOL_CALL, **options)

    @classmethod
    def error(
        cls,
        status: int,
        *,
        body: bytes | None = None,
        message: str | None = None,
        retry_after: float | None = None,
        **options: Any,
    ) -> Reply:
        """A non-2xx answer: ``body`` as given (JSON unless ``content_type`` says otherwise),
        else the provider's own error body holding ``message``; a ``Retry-After`` header of
        ``retry_after`` seconds when given.

        Raises:
            ValueError: ``status`` is not an error status (400-599).
        """
        if not 400 <= status <= 599:
            raise ValueError(f"an error status is 400-599, got {status}")
        return cls(status=status, body=body, message=message, retry_after=retry_after,
                   **options)


Behaviour: TypeAlias = Reply | Callable[[RecordedRequest], Reply]


def _tool_arguments(schema: Mapping[str, Any], question: str) -> dict[str, Any]:
    """Fill the first string parameter of ``schema`` with the question's last word."""
    words = re.findall(r"[^\W\d_]+", question)
    for name, spec in (schema.get("properties") or {}).items():
        if isinstance(spec, Mapping) and spec.get("type") == "string":
            return {name: words[-1] if words else ""}
    return {}


def _demo_vector(text: str, size: int) -> tuple[float, ...]:
    """``size`` values in [-1, 1) drawn from ``text``'s SHAKE-256: the same text, the same
    vector (each exact in float32, so every embedding wire carries it unchanged)."""
    return tuple((byte - 128) / 128 for byte in hashlib.shake_256(text.encode()).digest(size))


def _answer(schema: Mapping[str, Any] | None, text: str) -> str:
    """The answer's text: ``text``, or JSON valid for ``schema`` when the request asks the
    answer to follow one (its turn's ``answer_schema``, 08 D74; ``{}``: any JSON object)."""
    return text if schema is None else adapters.answer_for(schema)


def demo_script(request: RecordedRequest) -> Reply:
    """Answer like a small tool-using model (see the package docstring).

    Tools offered and no tool result since the last user text: thinking, then a call to the
    first tool whose first string parameter holds the question's last word (``"... in
    Paris?"`` → ``"Paris"``), finish ``tool_call``. A tool result since the last user text: a
    text answer quoting the last result (an earlier question's results are not quoted again).
    No tools: thinking and a text answer repeating the question. A request for structured
    output (08 D74) gets JSON valid for its schema as that text answer instead
    (``adapters.answer_for``). An embedding request (its turn has ``inputs``): one vector per
    input, the same for the same text, of the size the request asks for (``dimensions``,
    ``outputDimensionality``), else of eight values; a 400 for more than 65,536. The request
    is read by its protocol's dialect (``read_turn``).

    Raises:
        ValueError: the request is not one to a model endpoint the simulator serves.
    """
    if request.protocol is None:
        raise ValueError("demo_script answers requests to model endpoints only")
    dialect = dialect_of(request.protocol)
    turn = dialect.read_turn(request.json)
    if turn.inputs:
        size = turn.dimensions or _DEMO_DIMENSIONS
        if size > _MAX_DIMENSIONS:
            return Reply.error(400, message=f"The simulator answers at most {_MAX_DIMENSIONS} "
                               f"dimensions, not {size}.")
        vectors: list[DoneItem] = [EmbeddingDone(_demo_vector(text, size)) for text in turn.inputs]
        return Reply(items=vectors, usage=UsageMetadata(prompt_tokens=len(request.body) // 4))
    if turn.tool_results:
        found = f"Here is what I found: {turn.tool_results[-1]}"
        items: list[DoneItem] = [TextDone(text=_answer(turn.answer_schema, found))]
        finish = FinishReason.STOP
    elif turn.tools:
        name, schema = turn.tools[0]
        call_id = f"{dialect.tool_call_id_prefix}1"
        items = [
            ThinkingDone(thinking=f"The user asks: {turn.question!r}. I will call {name}."),
            ToolCallDone(
                name=name, tool_call_id=call_id, arguments=_tool_arguments(schema, turn.question)
            ),
        ]
        finish = FinishReason.TOOL_CALL
    else:
        items = [
            ThinkingDone(thinking="No tools here; I will answer directly."),
            TextDone(text=_answer(turn.answer_schema, f"You asked: {turn.question}")),
        ]
        finish = FinishReason.STOP
    # Rough counts, like a tokenizer would give: four bytes of request per prompt token.
    usage = UsageMetadata(
        cached_tokens=0, prompt_tokens=len(request.body) // 4, response_tokens=8 * len(items)
    )
    return Reply(items=items, usage=usage, finish_reason=finish)


# --------------------------------------------------------------------------------------------
# The simulator
