"""A toy wire protocol that lives entirely inside the test suite (the kernel issue's proof).

The wire format is made up. A response is an event stream of four event names::

    event: say      data: {"text": "Hel"}                       a fragment of answer text
    event: call     data: {"id": "t1", "name": "get_weather"}   a tool call begins
    event: args     data: {"json": "{\\"city\\":"}              a fragment of its arguments
    event: bye      data: {"why": "done"|"tool"|"cut", "in": 3, "out": 9}   the end
    event: oops     data: {"kind": "overloaded", "text": "busy"}          an in-stream error

A request is ``POST /toy/v1/generate`` with ``{"model", "turns": [{"who", "say"|"call"|
"result"}], "tools": [...]}``, the key travels as ``Authorization: Bearer``, models are listed
as ``{"data": [{"id"}]}``, and errors read
``{"problem": {"kind", "text"}}``. (The model list sits at ``GET /v1/models``, the one path
the provider simulator lists models at.)

``TOY`` is its protocol record and ``TOY_CLIENT`` its one client row; ``adapters.register(TOY,
[TOY_CLIENT])`` makes every layer speak it. Nothing outside this package knows it exists.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

import attrs

from adapters._build import MessageContext, walk_messages
from adapters._json import integer, string
from adapters._render import fragment_size, fragments, sse_event
from adapters._spec import (
    AuthForm,
    ClientSpec,
    ErrorShape,
    SimulatorDialect,
    Traits,
    Turn,
    WireProtocol,
)
from adapters._table import TableMachine, Transitions
from mmsp_core.errors import ProviderStreamError, UnsupportedParameterError
from mmsp_core.model import (
    DoneItem,
    FinishReason,
    Item,
    TextDelta,
    TextDone,
    ToolCallDelta,
    ToolCallDone,
    ToolResultDone,
    UniConfig,
    UniEvent,
    UniMessage,
    UsageMetadata,
)
from mmsp_core.request import HTTPRequest, encode_json_body

__all__ = ["TOY", "TOY_CLIENT", "ToyProfile"]

PATH: Final = "/toy/v1/generate"


@attrs.frozen
class ToyProfile:
    """The toy client's per-client data: the largest ``max_tokens`` it takes."""

    max_tokens_limit: int


# -- machine --------------------------------------------------------------------------------

_WHY: Final = {
    "done": FinishReason.STOP, "tool": FinishReason.TOOL_CALL, "cut": FinishReason.LENGTH,
}


def _on_say(m: ToyMachine, data: Mapping[str, Any]) -> UniEvent:
    if not m.saying:  # a run of say events is one text item
        m.items, m.saying = m.items + 1, True
    return UniEvent("delta", (TextDelta(string(data, "text"), {"item_id": f"say{m.items}"}),))


def _on_call(m: ToyMachine, data: Mapping[str, Any]) -> UniEvent:
    m.items, m.saying = m.items + 1, False
    item_id = {"item_id": f"call{m.items}"}
    call = ToolCallDelta(string(data, "name"), string(data, "id"), "", item_id)
    return UniEvent("delta", (call,))


def _on_args(m: ToyMachine, data: Mapping[str, Any]) -> UniEvent:
    fragment = ToolCallDelta("", "", string(data, "json"), {"item_id": f"call{m.items}"})
    return UniEvent("delta", (fragment,))


def _on_bye(m: ToyMachine, data: Mapping[str, Any]) -> UniEvent:
    usage = UsageMetadata(0, integer(data, "in"), 0, integer(data, "out"))
    return UniEvent("stop", usage_metadata=usage, finish_reason=_WHY.get(string(data, "why")))


def _on_oops(m: ToyMachine, data: Mapping[str, Any]) -> UniEvent:
    raise ProviderStreamError(m.client, error_type=string(data, "kind"),
                              provider_message=string(data, "text"))


class ToyMachine(TableMachine):
    """Two states: ``open`` until ``bye``, then ``over`` (terminal), where nothing has a row."""

    __slots__ = ("items", "saying")
    INITIAL = "open"
    TERMINAL = frozenset({"over"})
    TRANSITIONS: ClassVar[Transitions] = {
        ("open", "say"): (_on_say, "open"),
        ("open", "call"): (_on_call, "open"),
        ("open", "args"): (_on_args, "open"),
        ("open", "bye"): (_on_bye, "over"),
        ("open", "oops"): (_on_oops, "open"),
    }

    def __init__(self, client: str, profile: Any, *, strict: bool) -> None:
        super().__init__(client, profile, strict=strict)
        #: Items begun so far (their ids), and whether the open one is text.
        self.items = 0
        self.saying = False


def _new_machine(client: str, profile: Any, *, strict: bool, base_url: str | None) -> ToyMachine:
    return ToyMachine(client, profile, strict=strict)


# -- request builder ------------------------------------------------------------------------


def _text(context: MessageContext, item: Item) -> Any:
    assert isinstance(item, TextDone)
    return {"who": context.message.role, "say": item.text}


def _call(context: MessageContext, item: Item) -> Any:
    assert isinstance(item, ToolCallDone)
    return {"who": "assistant", "call": {"id": item.tool_call_id, "name": item.name,
                                         "args": dict(item.arguments)}}


def _result(context: MessageContext, item: Item) -> Any:
    assert isinstance(item, ToolResultDone)
    return {"who": "tool", "result": {"id": item.tool_call_id, "text": item.text}}


_CONVERTERS: Final = {TextDone: _text, ToolCallDone: _call, ToolResultDone: _result}


def _check_config(client: str, profile: ToyProfile, model: str, config: UniConfig) -> None:
    if config.max_tokens is not None and config.max_tokens > profile.max_tokens_limit:
        raise UnsupportedParameterError(client, "max_tokens", detail="too many for a toy")


def _build_request(
    client: str, profile: ToyProfile, model: str, messages: Sequence[UniMessage],
    config: UniConfig,
) -> HTTPRequest:
    _check_config(client, profile, model, config)
    walked = walk_messages(client, messages, _CONVERTERS, protocol_label="The toy protocol")
    body: dict[str, Any] = {"model": model, "turns": [p for w in walked for p in w.parts]}
    if config.tools:
        body["tools"] = [{"name": t.name, "schema": t.parameters or {}} for t in config.tools]
    headers = (("content-type", "application/json"), ("accept", "text/event-stream"))
    return HTTPRequest("POST", PATH, headers, encode_json_body(body))


# -- renderer -------------------------------------------------------------------------------

_REASONS: Final = {FinishReason.STOP: "done", FinishReason.TOOL_CALL: "tool",
                   FinishReason.LENGTH: "cut"}


def _render(
    items: Sequence[DoneItem], usage: UsageMetadata, finish_reason: FinishReason, *,
    model: str, fragment_size: int | None,
) -> bytes:
    size = _fragment_size(fragment_size)
    out = []
    for item in items:
        if isinstance(item, TextDone):
            out += [sse_event("say", {"text": piece}) for piece in fragments(item.text, size)]
        elif isinstance(item, ToolCallDone):
            out.append(sse_event("call", {"id": item.tool_call_id, "name": item.name}))
            arguments = json.dumps(dict(item.arguments))
            out += [sse_event("args", {"json": piece}) for piece in fragments(arguments, size)]
    why = _REASONS.get(finish_reason, "done")
    out.append(sse_event("bye", {"why": why, "in": usage.prompt_tokens or 0,
                                 "out": usage.response_tokens or 0}))
    return b"".join(out)


def _fragment_size(requested: int | None) -> int:
    return fragment_size(requested, 4)


# -- simulator dialect ----------------------------------------------------------------------


def _error_body(status: int, message: str) -> dict[str, Any]:
    return {"problem": {"kind": "toy_overload" if status >= 500 else "toy_refusal",
                        "text": message}}


def _read_turn(body: Mapping[str, Any]) -> Turn:
    turns = body.get("turns") or []
    questions = [t["say"] for t in turns if t.get("who") == "user" and "say" in t]
    results = [t["result"]["text"] for t in turns if "result" in t]
    tools = tuple((t["name"], t.get("schema") or {}) for t in body.get("tools") or [])
    return Turn(questions[-1] if questions else "", tools, tuple(results))


_DIALECT: Final = SimulatorDialect(
    route=("POST", PATH),
    base_path="",
    key_headers=("authorization",),
    request_id_header="x-toy-request",
    error_body=_error_body,
    bad_key_message="toy key refused",
    stream_error=b'event: oops\ndata: {"kind": "overloaded", "text": "busy"}\n\n',
    read_turn=_read_turn,
    tool_call_id_prefix="toy_call_",
)

TOY: Final = WireProtocol(
    name="toy",
    new_machine=_new_machine,
    build_request=_build_request,
    check_config=_check_config,
    render=_render,
    traits=Traits(
        display_name="Toy Protocol",
        error_shape=ErrorShape(error_type=(("problem", "kind"),), message=(("problem", "text"),),
                               request_id=()),
        dialect=_DIALECT,
    ),
    compatible_client="toy-client",
)

TOY_CLIENT: Final = ClientSpec(
    "toy-client", "toy", official=False, api_key_env="TOY_API_KEY",
    base_url_env="TOY_BASE_URL", default_base_url="http://127.0.0.1:9/toy",
    open_server=False, auth=AuthForm.BEARER, model_prefixes=("toy-",),
    list_models_path="/v1/models", profile=ToyProfile(max_tokens_limit=1000),
)

