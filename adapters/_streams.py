"""The stream in both directions, pure: a response's bytes to the public stream
(``new_pipeline``, ``decode``), and done items to the body a server would send (``render``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from mmsp_core.errors import WireFormatError
from mmsp_core.model import DoneItem, FinishReason, UniEvent, UsageMetadata
from mmsp_core.pipeline import END, NEED_DATA, StreamPipeline

from ._resolve import resolve_named
from ._spec import WireProtocol

__all__ = ["decode", "new_pipeline", "render"]


def new_pipeline(
    source: str,
    *,
    strict: bool = False,
    clock: Callable[[], int] | None,
    base_url: str | None = None,
    model: str | None = None,
) -> StreamPipeline:
    """Return a fresh pipeline for one response of ``source`` (a client type or protocol).

    ``model`` and ``base_url`` select the protocol of a client type that speaks several: by
    model class (08 D64) or by route (``bedrock://<region>``, 08 D72); no machine reads the
    base URL itself (08 D52).

    ``clock=None`` stamps ``created_at=0`` (09); ``strict`` makes unknown events raise
    ``UnknownEventError`` (08 D8).

    Raises:
        RoutingError, UnsupportedOperationError: as ``resolve``.
    """
    client, profile, protocol = resolve_named(source, model, base_url)
    return pipeline_for(client, profile, protocol, strict=strict, clock=clock, base_url=base_url)


def pipeline_for(
    client: str,
    profile: Any,
    protocol: WireProtocol[Any],
    *,
    strict: bool,
    clock: Callable[[], int] | None,
    base_url: str | None,
) -> StreamPipeline:
    """``new_pipeline`` for a source resolved already (``resolve_named``)."""
    machine = protocol.new_machine(client, profile, strict=strict, base_url=base_url)
    return StreamPipeline(
        machine,
        client=client,
        clock=clock if clock is not None else _zero,
        decoder=protocol.new_decoder(),
        finalizer=protocol.new_finalizer,
    )


def _zero() -> int:
    return 0


def decode(
    source: str,
    chunks: Iterable[bytes],
    *,
    strict: bool = False,
    clock: Callable[[], int] | None = None,
    base_url: str | None = None,
) -> Iterator[UniEvent]:
    """Decode a response body given as byte chunks into the public stream.

    Errors are raised at their position in the stream, after every event before them. A
    whole body is one chunk: ``decode(source, [body])``.

    Raises:
        TypeError: ``chunks`` is one ``bytes`` (or ``str``) value rather than an iterable of
            chunks (08 D69: a wrong Python type for an argument).
        MMSPError: whatever the stream raises (``IncompleteStreamError``, ...).
    """
    if isinstance(chunks, bytes | bytearray | memoryview | str):
        raise TypeError(
            f"decode takes an iterable of byte chunks, not one {type(chunks).__name__} "
            "value: pass a whole body as decode(source, [body])"
        )
    pipeline = new_pipeline(source, strict=strict, clock=clock, base_url=base_url)
    return _events(pipeline, chunks)


def _events(pipeline: StreamPipeline, chunks: Iterable[bytes]) -> Iterator[UniEvent]:
    """The public events of ``chunks`` fed through ``pipeline``, then its end."""
    for chunk in chunks:
        pipeline.receive_data(chunk)
        while (event := pipeline.next_event()) is not NEED_DATA:
            yield event  # type: ignore[misc]
    pipeline.receive_eof()
    while (event := pipeline.next_event()) is not END:
        yield event  # type: ignore[misc]


def render(
    protocol: str,
    items: Sequence[DoneItem],
    usage: UsageMetadata,
    finish_reason: FinishReason | str,
    *,
    model: str = "model",
    fragment_size: int | None = None,
) -> bytes:
    """Write the body a real server of ``protocol`` would send for these done items (D49).

    Each item is split into fragments of ``fragment_size`` (characters of text, thinking and
    arguments; bytes of inline data); ``None`` picks a small provider-like size. What a
    protocol cannot carry is documented in its module.

    Raises:
        RoutingError, UnsupportedOperationError: an unknown or unbuilt protocol.
        WireFormatError: ``finish_reason`` is not a finish reason.
    """
    _, _, wire = resolve_named(protocol)
    try:
        finish = FinishReason(finish_reason)
    except ValueError:
        accepted = ", ".join(FinishReason)
        raise WireFormatError(
            "finish_reason", f"unknown value {finish_reason!r}; accepted: {accepted}"
        ) from None
    return wire.render(items, usage, finish, model=model, fragment_size=fragment_size)
