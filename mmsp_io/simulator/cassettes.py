"""Cassette replay: the simulator answers from recorded exchanges (08 D78).

``Simulator.running(cassettes=DIR)`` (or ``cassettes=Cassettes(DIR, pacing=True)``) answers
every request to a model endpoint from the cassettes ``AutoLLMClient(record_to=DIR)`` wrote
(``mmsp_io._cassettes``), the key still checked as always; the script and the default
behaviour are not asked. A request is answered by a cassette whose request had the same
method, path and model (the body's ``model``; on Google's protocols the model is in the path):
first one whose request body was the same bytes, else the next one not used yet, in the order
of the file names (the order they were recorded in). The answer is the recorded status and
headers (the framing ones, ``content-length`` and ``transfer-encoding``, and hop-by-hop ones
made again) and the recorded chunks, byte for byte and one write each; with ``pacing`` each
write waits as long after the one before as it did when recorded. A cassette whose body was
``cut`` or ``truncated`` ends with the connection closed, as the recorded one did.

A request no cassette matches fails loudly: it is answered 404 with the provider's error body
naming the directory, the method, the path and the model (the client raises it as
``ProviderHTTPError``), and it is added to ``Cassettes.misses``. A file in the directory that
is no readable cassette raises ``CassetteError`` when the simulator starts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, final
from urllib.parse import urlsplit

import attrs

from .._cassettes import Cassette, CassetteError, read_cassette
from . import faults
from .script import RecordedRequest

__all__ = ["CassetteError", "Cassettes", "Playback"]

#: Response headers the server core writes itself, never replayed as recorded.
_FRAMING: Final = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive"})


@final
@attrs.frozen
class Playback:
    """What the simulator sends for one request: the head, and the body as fault steps
    (``faults.Step``). ``event_stream``: sent chunked (no ``content-length``)."""

    status: int
    headers: list[tuple[str, str]]
    steps: list[faults.Step]
    event_stream: bool


@final
class Cassettes:
    """The cassettes of ``directory`` (its ``*.json`` files), replayed as the module doc says.

    Raises:
        CassetteError: a file is no readable cassette, or ``directory`` is no directory.
    """

    def __init__(self, directory: str | os.PathLike[str], *, pacing: bool = False) -> None:
        self.directory = Path(directory)
        self.pacing = pacing
        if not self.directory.is_dir():
            raise CassetteError(f"{self.directory}: no such directory of cassettes")
        self.cassettes: tuple[Cassette, ...] = tuple(
            read_cassette(path) for path in sorted(self.directory.glob("*.json")))
        self._keys = [_key(c.method, urlsplit(c.url).path, _model(c.request_body))
                      for c in self.cassettes]
        self._used: set[int] = set()
        #: Each request no cassette matched: ``"<METHOD> <path> (model <model>)"``.
        self.misses: list[str] = []

    @classmethod
    def of(cls, given: Cassettes | str | os.PathLike[str]) -> Cassettes:
        """``given``, or the cassettes of the directory it names."""
        return given if isinstance(given, Cassettes) else cls(given)

    def find(self, request: RecordedRequest) -> Cassette | None:
        """The cassette that answers ``request`` (module doc), marked used; ``None``, noted
        in ``misses``, when none does."""
        key = _key(request.method, request.path, _model(request.body))
        matching = [i for i, k in enumerate(self._keys) if k == key]
        same = [i for i in matching if self.cassettes[i].request_body == request.body]
        unused = [i for i in matching if i not in self._used]
        chosen = next(iter(same or unused), None)
        if chosen is None:
            self.misses.append(f"{key[0]} {key[1]} (model {key[2]})")
            return None
        self._used.add(chosen)
        return self.cassettes[chosen]

    def answer(
        self, request: RecordedRequest, error_body: Callable[[int, str], Any]
    ) -> Playback:
        """The playback of the cassette that answers ``request``; without one, a 404 whose
        body is ``error_body(404, message)`` (the dialect's) naming what was asked."""
        cassette = self.find(request)
        if cassette is None:
            message = (f"No cassette in {self.directory} answers {self.misses[-1]}; "
                       "record one with AutoLLMClient(record_to=...).")
            body = json.dumps(error_body(404, message)).encode()
            return Playback(404, [("content-type", "application/json")], [body], False)
        return self.playback(cassette)

    def playback(self, cassette: Cassette) -> Playback:
        """``cassette``'s response as the simulator sends it (module doc)."""
        steps: list[faults.Step] = []
        before = cassette.headers_seconds
        for chunk in cassette.chunks:
            if self.pacing and chunk.seconds > before:
                steps.append(faults.Pause(chunk.seconds - before))
            steps.append(chunk.data)
            before = chunk.seconds
        if cassette.end in ("cut", "truncated"):
            steps.append(faults.Hangup())
        headers = [(name, value) for name, value in cassette.headers
                   if name.lower() not in _FRAMING]
        return Playback(cassette.status, headers, steps,
                        event_stream=cassette.header("content-length") is None)


def _model(body: bytes) -> str | None:
    """The ``model`` of a JSON request body, ``None`` when it has none."""
    try:
        document = json.loads(body) if body else None
    except (ValueError, RecursionError):
        return None
    model = document.get("model") if isinstance(document, dict) else None
    return model if isinstance(model, str) else None


def _key(method: str, path: str, model: str | None) -> tuple[str, str, str | None]:
    return method.upper(), path, model
