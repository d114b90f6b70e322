"""A front door's ``stream: false`` (08 D73): the protocol's whole JSON response, built from the
call's done items and stop only (never a second upstream call), or its error as an HTTP status
and the protocol's error body (``doors.door_error``)."""

from __future__ import annotations

from contextlib import aclosing
from typing import TYPE_CHECKING

import anyio

from mmsp_core.errors import AbortedError, IncompleteStreamError
from mmsp_core.messages import concat_uni_events_to_uni_message
from mmsp_core.model import DoneItem, UniEvent

from ..httpserver import Request
from .answers import Answer, json_answer
from .doors import as_mmsp_error, door_error, fresh_response_id, ignored_fields_header

if TYPE_CHECKING:
    from .calls import Flight, FrontCall, Output
    from .handler import Gateway

__all__ = ["whole"]


async def whole(gateway: Gateway, call: FrontCall, out: Output, request: Request) -> None:
    """Answer ``call`` whole through ``out`` (module docstring), tracked by ``gateway``
    (``Gateway._flight``) as ``request``'s. A caller that takes nothing of it for the gateway's
    ``idle_timeout`` seconds is cut off.

    Raises:
        anyio.BrokenResourceError, anyio.ClosedResourceError: the caller went away while the
            answer was being sent.
    """
    async with gateway._flight(call.row, out, call.key, request) as flight:
        answer = await _collect(gateway, call, flight)
        flight.status = answer.status
        with anyio.move_on_after(gateway.idle_timeout) as timer:
            await out.respond(answer.status, answer.headers, answer.body)
        if timer.cancelled_caught:
            flight.error_type = AbortedError.__name__
            flight.tally.failed(f"the caller read nothing for {gateway.idle_timeout:g} s")
            await out.cut()
        flight.delivered = not timer.cancelled_caught


async def _collect(gateway: Gateway, call: FrontCall, flight: Flight) -> Answer:
    """The answer of ``call`` (``whole``)."""
    row, read = call.row, call.request
    client_type = gateway._clients[row].client_type
    kept: list[UniEvent] = []  # the done items' events and the stop, no delta
    try:
        async with aclosing(gateway._call(row, read.messages, read.config, flight)) as events:
            async for event in events:
                flight.tally.event(stop=event.event_type == "stop",
                                   usage=event.usage_metadata)
                if event.event_type == "stop" or isinstance(event.content_items[0], DoneItem):
                    kept.append(event)
        message = concat_uni_events_to_uni_message(kept)
        usage, finish = message.usage_metadata, message.finish_reason
        if usage is None or finish is None:  # the public stream always ends with both
            raise IncompleteStreamError(client_type, ("usage", "finish_reason"))
        document = call.door.response(message.content_items, usage, finish,
                                      model=row.server_model_id,
                                      response_id=fresh_response_id(call.door))
    except Exception as exc:
        gateway._failed(flight.row, exc, flight)
        return door_error(call.door, as_mmsp_error(exc, client_type, row.api_key))
    return json_answer(200, document, ignored_fields_header(read.ignored))
