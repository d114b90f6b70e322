"""Cassettes: each HTTP exchange of a client saved as one file, replayed by the simulator
(08 D61, D78).

``AutoLLMClient(record_to=DIR)`` (or ``MMSP_RECORD_DIR``) gives its attempt loop a
``Recorder``; each attempt then starts a ``Recording``, whose ``tap`` the driver puts between
the transport's raw body chunks and the reader (``open_stream(tap=...)``), and which is saved
when the attempt's response is closed. Without ``record_to`` nothing is wrapped: a chunk costs
nothing more, and an attempt one test.

The file, ``<DIR>/<UTC time>-<model>-<6 hex>.json`` (named like a made trace id), is one JSON
object, indent 2, UTF-8::

    {
      "mmsp_cassette": 1,
      "created_at": "<UTC ISO-8601 time of the request>",
      "client_type": "openai-chat", "protocol": "openai-chat", "model": "gpt-6",
      "base_url": "https://api.openai.com/v1",
      "request": {"method": "POST", "url": "...", "headers": [["name", "value"], ...],
                  "body": "<the body as UTF-8 text>"},
      "response": {"status": 200, "headers": [["name", "value"], ...], "headers_s": 0.21,
                   "chunks": [{"s": 0.25, "data": "<base64>"}, ...],
                   "end": "complete"}
    }

- ``request``: as it was sent (the transport's own headers included), without a secret: the
  credential headers (``CREDENTIAL_HEADERS``: ``authorization``, ``x-api-key``,
  ``x-goog-api-key``, ``api-key``, ``x-amz-security-token``) and any header or query parameter
  whose value holds the key are left out, and the key is redacted wherever else it appears
  (08 D61: whole, and any run of 12 characters of it after its first 8). A body that is not
  UTF-8 is ``body_base64`` instead of ``body``.
- ``response``: the status and headers; the raw body bytes as the transport handed them over
  (before any content coding is decoded), one entry per chunk with the seconds since the
  request was sent (``s``; ``headers_s`` for the head); ``end`` says how the body ended:
  ``complete`` (it ended), ``closed`` (the client stopped reading: after the stream's terminal
  event, 08 D56, or on an error or an abort), ``cut`` (the connection broke) or ``truncated``
  (the recording reached ``MAX_RECORDED_BYTES``, ``Recorder.limit``: the chunks stop there,
  and a replay closes the connection there). A key the provider
  echoes in the body is redacted from it too, chunk by chunk, or from the body as one chunk
  when it straddles two (the only case where the chunking is not the one received).

An attempt that got no response (a failure to connect) writes no cassette. A cassette that
cannot be written is a logged warning: the call goes on (as a trace, 08 D27).
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal, final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio
import anyio.to_thread
import attrs
import httpx

from mmsp_core.errors import redact
from mmsp_core.request import CREDENTIAL_HEADERS

from . import tracer
from ._decoding import BODY_CUT

__all__ = [
    "FORMAT_VERSION",
    "MAX_RECORDED_BYTES",
    "Cassette",
    "CassetteError",
    "Chunk",
    "Recorder",
    "Recording",
    "cassette_headers",
    "is_cassette",
    "read_cassette",
]

#: The value of a cassette's ``mmsp_cassette`` key: the version of the format.
FORMAT_VERSION: Final = 1
#: The most body bytes one exchange records; the rest is not kept (``end``: ``truncated``).
MAX_RECORDED_BYTES: Final = 32 * 1024 * 1024
#: The largest cassette file ``read_cassette`` reads (base64 and JSON around the body).
_MAX_FILE_BYTES: Final = 2 * MAX_RECORDED_BYTES

_logger = logging.getLogger("mmsp_io")

End = Literal["complete", "closed", "cut", "truncated"]
_ENDS: Final = ("complete", "closed", "cut", "truncated")


class CassetteError(ValueError):
    """A file that is no cassette, or one that cannot be read; the message names the file."""


@final
@attrs.frozen
class Chunk:
    """One chunk of a recorded body: its bytes and the seconds since the request."""

    data: bytes
    seconds: float


@final
@attrs.frozen
class Cassette:
    """A cassette as read (module doc): what the simulator replays and the CLI decodes."""

    path: Path
    client_type: str
    protocol: str
    model: str
    method: str
    url: str
    request_headers: tuple[tuple[str, str], ...]
    request_body: bytes
    status: int
    headers: tuple[tuple[str, str], ...]
    headers_seconds: float
    chunks: tuple[Chunk, ...]
    end: End

    @property
    def body(self) -> bytes:
        """The recorded body, its chunks joined."""
        return b"".join(chunk.data for chunk in self.chunks)

    def header(self, name: str) -> str | None:
        """The first value of the response header ``name`` (case-insensitive), or ``None``."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)


def is_cassette(data: bytes) -> bool:
    """Whether ``data``, a file's content, is a cassette: a JSON object with
    ``mmsp_cassette``. Anything else (an SSE body, a provider's JSON body) is not."""
    if not data.lstrip().startswith(b"{"):
        return False
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        return False
    return isinstance(document, dict) and "mmsp_cassette" in document


def read_cassette(path: str | Path) -> Cassette:
    """Read the cassette file at ``path``.

    Raises:
        CassetteError: the file cannot be read, is larger than twice ``MAX_RECORDED_BYTES``,
            is not a cassette of this format, or a field has the wrong type.
    """
    path = Path(path)
    try:
        with path.open("rb") as file:
            data = file.read(_MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise CassetteError(f"{path}: cannot be read: {exc}") from exc
    if len(data) > _MAX_FILE_BYTES:
        raise CassetteError(f"{path}: larger than {_MAX_FILE_BYTES} bytes")
    try:
        document = json.loads(data)
        if document.get("mmsp_cassette") != FORMAT_VERSION:
            raise CassetteError(f"{path}: not a cassette of format {FORMAT_VERSION}")
        request, response = document["request"], document["response"]
        body = (base64.b64decode(request["body_base64"], validate=True)
                if "body_base64" in request else request["body"].encode("utf-8"))
        end = response["end"]
        if end not in _ENDS:
            raise CassetteError(f"{path}: unknown end {end!r}")
        return Cassette(
            path=path,
            client_type=_text(document["client_type"]),
            protocol=_text(document["protocol"]),
            model=_text(document["model"]),
            method=_text(request["method"]),
            url=_text(request["url"]),
            request_headers=_pairs(request["headers"]),
            request_body=body,
            status=_status(response["status"]),
            headers=_pairs(response["headers"]),
            headers_seconds=float(response["headers_s"]),
            chunks=tuple(Chunk(base64.b64decode(chunk["data"], validate=True),
                               float(chunk["s"])) for chunk in response["chunks"]),
            end=end,
        )
    except CassetteError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise CassetteError(f"{path}: not a readable cassette: {type(exc).__name__}: "
                            f"{exc}") from exc


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _status(value: object) -> int:
    if not isinstance(value, int) or not 100 <= value <= 599:
        raise ValueError(f"expected an HTTP status, got {value!r}")
    return value


def _pairs(value: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, list):
        raise TypeError(f"expected a list of headers, got {type(value).__name__}")
    return tuple((_text(name), _text(text)) for name, text in value)


# --------------------------------------------------------------------------------------------
# Recording
# --------------------------------------------------------------------------------------------


@final
@attrs.frozen
class Recorder:
    """Where and for which client the exchanges of a client are recorded."""

    directory: Path
    client: str
    base_url: str
    #: The most body bytes one exchange records (module doc, ``end``: ``truncated``).
    limit: int = MAX_RECORDED_BYTES

    def start(self, protocol: str, model: str) -> Recording:
        """A recording of one attempt of a call of ``model`` over ``protocol``, its clock
        starting now (before the request is sent)."""
        return Recording(self, protocol, model, anyio.current_time(),
                         datetime.now(UTC).isoformat())


@final
class Recording:
    """One exchange being recorded (module doc): ``tap`` sees the response, ``save`` writes
    it."""

    def __init__(
        self, recorder: Recorder, protocol: str, model: str, started: float, created_at: str
    ) -> None:
        self.recorder = recorder
        self.protocol = protocol
        self.model = model
        self.started = started
        self.created_at = created_at
        self.response: httpx.Response | None = None
        self.headers_seconds = 0.0
        self.chunks: list[Chunk] = []
        self.size = 0
        self.end: End = "closed"

    def tap(self, response: httpx.Response, raw: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """Note ``response``'s head and return ``raw``, each chunk recorded as it is read."""
        self.response = response
        self.headers_seconds = anyio.current_time() - self.started
        return _Tap(self, raw)

    def add(self, chunk: bytes) -> None:
        """Record ``chunk`` (its start, once the recorder's ``limit`` would be passed)."""
        if self.end == "truncated":
            return
        room = self.recorder.limit - self.size
        if len(chunk) > room:
            chunk, self.end = chunk[:room], "truncated"
        self.size += len(chunk)
        self.chunks.append(Chunk(chunk, anyio.current_time() - self.started))

    def ended(self, how: End) -> None:
        """The body ended ``how`` (``complete`` or ``cut``), unless the recording was cut
        short before."""
        if self.end != "truncated":
            self.end = how

    async def save(self, secrets: Sequence[str | None]) -> None:
        """Write the cassette, without ``secrets`` (module doc), in a worker thread, even when
        the call is being cancelled; nothing without a response. A failure is logged."""
        if self.response is None:
            return
        document = self.document([secret for secret in secrets if secret])
        directory = self.recorder.directory
        path = directory / f"{tracer.new_trace_id(self.model)}.json"
        text = json.dumps(document, indent=2, ensure_ascii=False)

        def write() -> None:
            directory.mkdir(parents=True, exist_ok=True)
            tracer.write_atomically(path, text)

        with anyio.CancelScope(shield=True):
            try:
                await anyio.to_thread.run_sync(write)
            except OSError as exc:
                _logger.warning("%s: could not write the cassette %s: %s",
                                self.recorder.client, path, exc)

    def document(self, secrets: Sequence[str]) -> dict[str, Any]:
        """The cassette's JSON document, without ``secrets`` (module doc)."""
        response = self.response
        assert response is not None
        request = response.request
        body = request.content
        try:
            request_body: dict[str, str] = {"body": _scrub(body.decode("utf-8"), secrets)}
        except UnicodeDecodeError:
            request_body = {"body_base64": _b64(_scrub_bytes(body, secrets))}
        return {
            "mmsp_cassette": FORMAT_VERSION,
            "created_at": self.created_at,
            "client_type": self.recorder.client,
            "protocol": self.protocol,
            "model": self.model,
            "base_url": _scrub(_without_secret_query(self.recorder.base_url, secrets), secrets),
            "request": {
                "method": request.method,
                "url": _scrub(_without_secret_query(str(request.url), secrets), secrets),
                "headers": _safe_headers(request.headers.multi_items(), secrets),
                **request_body,
            },
            "response": {
                "status": response.status_code,
                "headers": _safe_headers(response.headers.multi_items(), secrets),
                "headers_s": round(self.headers_seconds, 6),
                "chunks": [{"s": round(chunk.seconds, 6), "data": _b64(chunk.data)}
                           for chunk in _scrub_chunks(self.chunks, secrets)],
                "end": self.end,
            },
        }


@final
class _Tap:
    """The raw chunks of a body, each recorded as it is read (no generator: closing the
    response ends the transport's iterator, as the driver expects)."""

    __slots__ = ("_raw", "_recording")

    def __init__(self, recording: Recording, raw: AsyncIterator[bytes]) -> None:
        self._recording = recording
        self._raw = raw

    def __aiter__(self) -> _Tap:
        return self

    async def __anext__(self) -> bytes:
        try:
            chunk = await self._raw.__anext__()
        except StopAsyncIteration:
            self._recording.ended("complete")
            raise
        except BODY_CUT:
            self._recording.ended("cut")
            raise
        self._recording.add(chunk)
        return chunk


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each of ``secrets`` redacted, whole and in part (08 D61)."""
    for secret in secrets:
        text = redact(text, secret)
    return text


def _scrub_bytes(data: bytes, secrets: Iterable[str]) -> bytes:
    """``data`` with each of ``secrets`` redacted, byte for byte (read as Latin-1, where each
    byte is one character, so an ASCII key matches wherever it stands)."""
    return _scrub(data.decode("latin-1"), secrets).encode("latin-1")


def _holds(text: str, secrets: Iterable[str]) -> bool:
    return _scrub(text, secrets) != text


def _safe_headers(
    headers: Iterable[tuple[str, str]], secrets: Sequence[str]
) -> list[list[str]]:
    """``headers`` without the credential headers and without any header whose value holds
    one of ``secrets`` (08 D78)."""
    return [[name, value] for name, value in headers
            if name.lower() not in CREDENTIAL_HEADERS and not _holds(value, secrets)]


def _without_secret_query(url: str, secrets: Sequence[str]) -> str:
    """``url`` without the query parameters whose value holds one of ``secrets``."""
    parts = urlsplit(url)
    if not parts.query or not secrets:
        return url
    kept = [(name, value) for name, value in parse_qsl(parts.query, keep_blank_values=True)
            if not _holds(value, secrets)]
    return urlunsplit(parts._replace(query=urlencode(kept)))


def _scrub_chunks(chunks: Sequence[Chunk], secrets: Sequence[str]) -> Sequence[Chunk]:
    """``chunks`` with ``secrets`` redacted (module doc): each chunk alone, or, when a secret
    straddles two of them, the whole body as one chunk at the time of the last."""
    if not chunks or not secrets:
        return chunks
    whole = b"".join(chunk.data for chunk in chunks)
    scrubbed = _scrub_bytes(whole, secrets)
    if scrubbed == whole:
        return chunks
    each = [Chunk(_scrub_bytes(chunk.data, secrets), chunk.seconds) for chunk in chunks]
    if _scrub_bytes(b"".join(chunk.data for chunk in each), secrets) == b"".join(
            chunk.data for chunk in each):
        return each
    return [Chunk(scrubbed, chunks[-1].seconds)]


def cassette_headers(cassette: Cassette) -> Mapping[str, str]:
    """The response headers of ``cassette``, lower-cased names, the first value of each."""
    out: dict[str, str] = {}
    for name, value in cassette.headers:
        out.setdefault(name.lower(), value)
    return out
