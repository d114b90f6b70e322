"""Everything one client decides before a call's first byte (steps 1-3 of ``mmsp_io.client``'s
module doc; spec 02 §8, 08 D24, D37, D78, D79): the one pure call (``adapters.prepare``), the
abort check, the trace's name, the remote images, and the request with its credentials and
``default_headers``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs
import httpx

import adapters
from adapters.clients import join_url
from mmsp_core.errors import AbortedError
from mmsp_core.model import UniConfig, UniMessage

from . import tracer
from ._attempts import Authorizer, Call, StopStep, TraceStep, now_ms
from ._images import fetch_images
from ._vertex import VertexAuth
from .abort import AbortSignal
from .driver import Timeouts
from .remote_images import RemoteImages

__all__ = ["CallMaker", "merge_headers"]


def merge_headers(*layers: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Later layers replace earlier headers of the same name, case-insensitively."""
    merged: dict[str, tuple[str, str]] = {}
    for layer in layers:
        for name, value in layer:
            merged[name.lower()] = (name, value)
    return tuple(merged.values())


@attrs.frozen(kw_only=True)
class CallMaker:
    """What every call of one client is prepared with (the client's settings)."""

    client: str
    model: str
    base_url: str
    #: Where requests go: the base URL, or a cloud route's endpoint (Bedrock, 08 D72).
    endpoint: str
    api_key: str | None
    #: The client's credential headers (04 §3) and the caller's ``default_headers``.
    auth: tuple[tuple[str, str], ...]
    default_headers: tuple[tuple[str, str], ...]
    #: The caller's key wins over ``default_headers`` (a gateway's bearer token).
    key_wins: bool
    strict: bool
    http: httpx.AsyncClient
    timeouts: Timeouts
    remote_images: RemoteImages
    trace_root: Path
    #: Every call is traced, a call without a ``trace_id`` under a made id (08 D78).
    trace_every_call: bool
    vertex: VertexAuth | None
    authorizer: Authorizer | None

    def with_credentials(
        self, headers: Sequence[tuple[str, str]]
    ) -> tuple[tuple[str, str], ...]:
        """``headers`` with the credentials and ``default_headers`` over them: the defaults
        win, except on a protocol whose key wins over them (a gateway's bearer token)."""
        if self.key_wins:
            return merge_headers(headers, self.default_headers, self.auth)
        return merge_headers(headers, self.auth, self.default_headers)

    async def make(
        self,
        messages: Sequence[UniMessage | Mapping[str, Any]],
        config: UniConfig | Mapping[str, Any] | None,
        signal: AbortSignal | None,
        timeouts: Timeouts | None,
        at_stop: tuple[StopStep, ...],
    ) -> Call:
        """The call, ready to send; ``at_stop`` runs at the stop after the trace is written.

        Raises:
            InvalidMessageError: a message that cannot be read or sent, or one without items.
            UnsupportedParameterError: a config the client cannot send, or a ``trace_id``
                outside the trace directory (08 D24).
            AbortedError: ``signal`` was already aborted, or fired while fetching images.
            UnsupportedContentError: an item the model cannot take.
        """
        started = anyio.current_time()
        plan = adapters.prepare(self.client, self.model, messages, config,
                                base_url=self.base_url, strict=self.strict, created_at=now_ms())
        if self.vertex is not None:
            plan = await self.vertex.prepare(plan)
        if signal is not None and signal.aborted:
            raise AbortedError(self.client, signal.reason)
        trace = self._trace(plan)
        call_timeouts = timeouts if timeouts is not None else self.timeouts
        images = await fetch_images(self.http, self.remote_images, plan.image_urls,
                                    client=self.client, signal=signal, timeouts=call_timeouts,
                                    started=started)
        request = plan.request(images)
        request = attrs.evolve(request, headers=self.with_credentials(request.headers))
        return Call(plan, request, join_url(self.endpoint, request.path), call_timeouts,
                    signal, started, at_stop, trace)

    def _trace(self, plan: adapters.CallPlan) -> TraceStep | None:
        """The call's trace step, ``None`` for an untraced call. A gateway's client (no base
        preflight) leaves its calls to the gateway's traces, as it forwards their trace_id
        (07 §7, ``CallPlan.trace_id``).

        Raises:
            UnsupportedParameterError: a ``trace_id`` outside the trace directory (08 D24).
        """
        every_call = self.trace_every_call and plan.protocol.traits.base_preflight
        trace_id = plan.trace_id or (tracer.new_trace_id(self.model) if every_call else None)
        if not trace_id:
            return None
        tracer.trace_files(self.trace_root, trace_id, self.client)
        return TraceStep(self.trace_root, trace_id, self.client, self.model, self.base_url,
                         self.api_key, self.authorizer)
