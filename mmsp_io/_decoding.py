"""Content codings (08 D18): a response body's ``Content-Encoding`` decoded in bounded steps.

A body with a ``Content-Encoding`` is decoded here, in one place for every transport (a
caller's ``http_client`` and the MMSP server's upstream clients included); httpx's content
decoder is never used, as it inflates each read whole and nested codings one into the other
(592 bytes of ``gzip, gzip`` became 2.58 GB). The transport's raw chunks go through a zlib
decompressor in steps of at most ``DECODED_STEP`` decoded bytes, each handed on (by the driver,
``mmsp_io.driver``, to the pipeline, ``fetch_body``'s body or the error preview) before the next
is decoded, so the limits of a body count decoded bytes (the SSE decoder's line and event, a
one-body decoder's body, ``fetch_body``'s ``limit``) and a decompression bomb meets them, with
their ``StreamLimitError``, while memory holds one step of it. Requests ask for what is decoded
(``Accept-Encoding: gzip, deflate``, over the client's own list): one coding, ``gzip`` or
``deflate`` (zlib's format, or raw deflate as some servers send it). An answer in any other
coding, or in several (``gzip, gzip``), cannot be read: ``ProviderConnectionError`` once its
status is known to be 2xx (08 D19: no usable response came, as when the transport refuses a
head; ``MalformedEventError`` names an event, and no event was read). A compressed stream that
breaks, ends before its end (a gzip body cut short) or has bytes after it is a cut body
(``BODY_CUT``, the driver's module doc, step 4). A body without ``Content-Encoding``, the common
case, goes from the transport to the pipeline with nothing in between.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator
from typing import Final, final

import httpx

from mmsp_core.errors import ProviderConnectionError

__all__ = ["ACCEPT_ENCODING", "BODY_CUT", "DECODED_STEP", "decoded_chunks", "refuse_coding"]

#: The content codings decoded (module doc), as requests ask for them.
ACCEPT_ENCODING: Final = "gzip, deflate"
#: The most decoded bytes one step of a content decoder hands out.
DECODED_STEP: Final = 64 * 1024
#: zlib's window bits for each content coding decoded: the gzip format, the zlib format.
_WINDOW_BITS: Final = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS,
                       "deflate": zlib.MAX_WBITS}

#: What reading a body's chunks raises when the body was cut: httpx's transport failures, and
#: the decoder's ``httpx.DecodingError`` for a broken compressed stream (08 D19).
BODY_CUT: Final = (httpx.TransportError, httpx.DecodingError)


def decoded_chunks(raw: AsyncIterator[bytes], content_encoding: str | None) -> AsyncIterator[bytes]:
    """The chunks to read of a body whose transport chunks are ``raw``: ``raw`` itself when
    ``content_encoding`` names no coding (absent, empty or ``identity``), else ``_Decoded``
    from them (module doc)."""
    if content_encoding is None:
        return raw
    tokens = (token.strip().lower() for token in content_encoding.split(","))
    coding = ", ".join(token for token in tokens if token not in ("", "identity"))
    return _Decoded(raw, coding) if coding else raw


def refuse_coding(chunks: AsyncIterator[bytes], client: str) -> None:
    """Refuse a body in a content coding that is not decoded (module doc).

    Raises:
        ProviderConnectionError: ``chunks`` are ``_Decoded`` from a refused coding.
    """
    if isinstance(chunks, _Decoded) and chunks.refused is not None:
        raise ProviderConnectionError(client, chunks.refused)


@final
class _Decoded:
    """The chunks of a body with a content coding, decoded in steps of at most
    ``DECODED_STEP`` bytes (module doc), from the transport's ``raw`` ones.

    Attributes:
        raw: the transport's iterator of the raw body.
        refused: why the coding cannot be decoded (not ``gzip`` or ``deflate``, or several),
            ``None`` when it can.

    Raises (iterating):
        httpx.DecodingError: the coding is refused, or its compressed stream broke, ended
            before its end or has bytes after it (a cut body).
        Whatever ``raw`` raises.
    """

    __slots__ = ("_coding", "_decompressor", "_fed", "_more", "_opening", "raw", "refused")

    def __init__(self, raw: AsyncIterator[bytes], coding: str) -> None:
        self.raw = raw
        self._coding = coding
        bits = _WINDOW_BITS.get(coding)
        self._decompressor = None if bits is None else zlib.decompressobj(bits)
        self.refused = None if bits is not None else (
            f"the answer's Content-Encoding is {coding!r}; only one of {ACCEPT_ENCODING} "
            "is read")
        #: Whether compressed bytes were given to the decompressor (an empty body is empty).
        self._fed = False
        #: A ``deflate`` body's first bytes while they are fewer than a zlib header's two:
        #: read again as raw deflate if zlib refuses the header; ``None`` once past it.
        self._opening: bytes | None = b"" if coding == "deflate" else None
        #: Whether the last step may have left decoded bytes to hand out before reading on.
        self._more = False

    def __aiter__(self) -> _Decoded:
        return self

    async def __anext__(self) -> bytes:
        while True:
            decompressor = self._decompressor
            if decompressor is None:
                raise httpx.DecodingError(str(self.refused))
            if self._more:  # what the last step left: no read
                data = decompressor.unconsumed_tail
            else:
                try:
                    data = await self.raw.__anext__()
                except StopAsyncIteration:
                    if self._fed and not decompressor.eof:
                        raise httpx.DecodingError(
                            f"the body ended inside its {self._coding} stream") from None
                    raise
                if not data:
                    continue
                if decompressor.eof:
                    raise httpx.DecodingError(f"bytes after the end of the {self._coding} "
                                              "stream")
            decoded = self._step(decompressor, data)
            if decoded:
                return decoded

    def _step(self, decompressor: zlib._Decompress, data: bytes) -> bytes:
        """At most ``DECODED_STEP`` bytes decoded from ``data`` (``b""`` when they only
        complete what came before); a ``deflate`` body that does not start with a zlib header
        is read again as raw deflate, as some servers send it (and httpx reads it).

        Raises:
            httpx.DecodingError: the compressed stream is broken, or bytes follow its end.
        """
        self._fed = True
        opening = self._opening
        try:
            decoded = decompressor.decompress(data, DECODED_STEP)
        except zlib.error as exc:
            if opening is None:
                raise httpx.DecodingError(f"the {self._coding} stream is broken: {exc}") from exc
            self._opening = None
            self._decompressor = zlib.decompressobj(-zlib.MAX_WBITS)
            return self._step(self._decompressor, opening + data)
        if opening is not None:
            opening += data
            self._opening = opening if len(opening) < 2 else None
        if decompressor.unused_data:
            raise httpx.DecodingError(f"bytes after the end of the {self._coding} stream")
        self._more = not decompressor.eof and (
            len(decoded) == DECODED_STEP or bool(decompressor.unconsumed_tail))
        return decoded
