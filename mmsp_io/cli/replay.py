"""The ``replay`` command: a recorded provider body, or a cassette, decoded through
``adapters.decode`` (the package docstring).

The file is a cassette when its content is one (``mmsp_io._cassettes.is_cassette``): its
protocol is the source unless ``--source`` names another, and its chunks are fed as they were
recorded (``--chunk-size`` re-cuts the body), after their ``gzip`` or ``deflate`` content
coding is decoded in steps; a cassette of a non-2xx answer raises the error the client would
have raised. Any other file is a body, fed whole or in ``--chunk-size`` pieces, and needs
``--source``.
"""

from __future__ import annotations

import argparse
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import adapters
from mmsp_core.errors import MMSPError

from .._cassettes import CassetteError, cassette_headers, is_cassette, read_cassette
from .._decoding import DECODED_STEP
from .printer import StreamPrinter


def run(args: argparse.Namespace, printer: StreamPrinter) -> int:
    """Decode the body or cassette file ``args.file`` (module doc); return the exit status, 0.

    Raises:
        OSError: the file cannot be read.
        CassetteError: a cassette that cannot be read, in a content coding not decoded, or a
            body file without ``--source``.
        MMSPError: the body does not decode, or the cassette holds an error answer.
    """
    data = Path(args.file).read_bytes()
    source = args.source
    chunks: Iterable[bytes] = [data]
    if is_cassette(data):
        cassette = read_cassette(args.file)
        source = source or cassette.protocol
        if not 200 <= cassette.status <= 299:
            raise _answer_error(cassette.client_type, cassette.protocol, cassette.status,
                                cassette_headers(cassette), cassette.body)
        chunks = _decoded([chunk.data for chunk in cassette.chunks],
                          cassette.header("content-encoding"), args.file)
    elif source is None:
        raise CassetteError(f"{args.file} is no cassette: a recorded body needs --source")
    if args.chunk_size is not None:
        chunks = _recut(chunks, args.chunk_size)
    for event in adapters.decode(source, chunks, strict=args.strict):
        printer.event(event)
    return 0


def _answer_error(
    client: str, protocol: str, status: int, headers: Mapping[str, str], body: bytes
) -> MMSPError:
    """The error a client of ``protocol`` raises for this non-2xx answer (a gateway's
    ``UpstreamError``, else ``ProviderHTTPError``)."""
    if adapters.protocol_traits(protocol).upstream_errors:
        return adapters.upstream_http_error(client, status, body)
    return adapters.provider_http_error(client, status, headers, body, now=time.time())


def _recut(chunks: Iterable[bytes], size: int) -> Iterator[bytes]:
    """``chunks`` cut again into pieces of ``size`` bytes (the last one shorter), holding no
    more than one chunk and one piece at a time."""
    pending = b""
    for chunk in chunks:
        data = pending + chunk
        whole = len(data) - len(data) % size
        yield from (data[i : i + size] for i in range(0, whole, size))
        pending = data[whole:]
    if pending:
        yield pending


def _decoded(chunks: list[bytes], coding: str | None, name: str) -> Iterator[bytes]:
    """``chunks`` with their content ``coding`` (``gzip`` or ``deflate`` in zlib's format)
    decoded in steps of at most ``DECODED_STEP`` bytes, as they are read.

    Raises:
        CassetteError: another coding, or a broken compressed stream.
    """
    coding = (coding or "identity").strip().lower()
    if coding == "identity":
        yield from chunks
        return
    if coding not in ("gzip", "x-gzip", "deflate"):
        raise CassetteError(f"{name}: the body's content coding {coding!r} is not decoded")
    decompressor = zlib.decompressobj(zlib.MAX_WBITS | 32)  # a gzip or a zlib header
    try:
        for chunk in chunks:
            data = chunk
            while data:
                yield decompressor.decompress(data, DECODED_STEP)
                data = decompressor.unconsumed_tail
        yield decompressor.flush()
    except zlib.error as exc:
        raise CassetteError(f"{name}: the body's {coding} stream is broken: {exc}") from exc
