"""The bodies the loopback server sends, and what a consumer must find in each.

Every body is written by ``adapters.render`` (08 D49) for one protocol of the registry: a text
answer of N deltas of 4 characters, or one tool call whose arguments arrive in N fragments of
4 characters. Beside each body the manifest records what any consumer can check without the
library: its length and last bytes (the floor), its ``data:`` lines (``aiter_lines``) and N,
the content deltas a public stream or an SDK stream must carry. ``build`` verifies that the
rendered body really carries N non-empty content fragments by decoding it once; a protocol
that sends a tool call whole (one fragment whatever N) is skipped for that shape, and a
protocol whose body is one JSON document (no event stream) is skipped altogether, each with
the reason in the manifest.

Rendering imports the library, inside the functions that render: the server and the peer
consumers (which may run in another virtual environment, ``--peer-python``) import this module
for ``frames``, ``load`` and the checks only, so it needs nothing beyond the standard library.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

#: Characters per text delta and per tool-call argument fragment ("about 4 bytes").
FRAGMENT: Final = 4
#: The packed delivery: HTTP chunks of this many bytes.
PACKED_SIZE: Final = 64 * 1024
SHAPES: Final = ("text", "tool")
CHUNKINGS: Final = ("event", "packed")
#: The arguments document of the tool call without its payload: ``{"blob":""}``.
_ARGUMENTS_FRAME: Final = len('{"blob":""}')
#: How many of a body's last bytes the floor compares.
TAIL: Final = 64


@dataclasses.dataclass(frozen=True)
class Body:
    """One pre-built body and what a consumer of it must see (see the module docstring)."""

    #: ``<protocol>.<shape>.<n>``: the first segment of the server path.
    id: str
    protocol: str
    shape: str
    n: int
    path: str
    length: int
    #: The body's last bytes, hex: the floor checks that it read to the end.
    tail: str
    #: How many ``data:`` lines the body has, and the last one (without ``data:``).
    data_lines: int
    last_data: str
    #: The first content arrives with the SSE event that ends at this byte, on this ``data:``
    #: line (1-based): where the floor and ``aiter_lines`` mark their first event, so that
    #: every consumer's first event is the time to the first content.
    first_content_bytes: int
    first_content_line: int

    @property
    def deltas(self) -> int:
        """The non-empty content deltas a public or SDK stream of this body carries."""
        return self.n


@dataclasses.dataclass(frozen=True)
class Skipped:
    """A protocol and shape with no body, and why."""

    protocol: str
    shape: str
    reason: str


def body_id(protocol: str, shape: str, n: int) -> str:
    """The id of a body: also the first path segment the server routes on."""
    return f"{protocol}.{shape}.{n}"


def text_of(n: int) -> str:
    """``n`` tokens of ``FRAGMENT`` characters: ``"000 001 002 "``..."""
    return "".join(f"{i % 1000:03d} " for i in range(n))


def frames(body: bytes, chunking: str) -> list[bytes]:
    """Cut ``body`` into the HTTP chunks of ``chunking``: one per SSE event (``"event"``, as
    the real APIs send) or ``PACKED_SIZE`` bytes each (``"packed"``).

    Raises:
        ValueError: an unknown chunking.
    """
    if chunking == "packed":
        return [body[i : i + PACKED_SIZE] for i in range(0, len(body), PACKED_SIZE)]
    if chunking != "event":
        raise ValueError(f"unknown chunking {chunking!r}; known: {', '.join(CHUNKINGS)}")
    events = body.split(b"\n\n")
    chunks = [event + b"\n\n" for event in events[:-1]]
    if events[-1]:
        chunks.append(events[-1])
    return chunks


def data_lines(body: bytes) -> list[bytes]:
    """The payloads of the body's ``data:`` lines, in order (the same lines the pipeline and
    the ``aiter_lines`` consumer parse)."""
    lines = []
    for line in body.splitlines():
        if line.startswith(b"data:"):
            payload = line[5:]
            lines.append(payload[1:] if payload.startswith(b" ") else payload)
    return lines


def fragments(event: Any) -> int:
    """How many non-empty content fragments (text, arguments) a public event carries."""
    count = 0
    for item in event.content_items:
        if item.type.endswith(".delta") and (
            getattr(item, "text", "") or getattr(item, "arguments", "")
        ):
            count += 1
    return count


def content_deltas(events: Iterable[Any]) -> tuple[int, str]:
    """Count the non-empty content fragments of public events; return the count and the last
    event's type (``"stop"`` for a whole stream)."""
    count = 0
    last = "none"
    for event in events:
        last = str(event.event_type)
        count += fragments(event)
    return count, last


def render_body(protocol: str, shape: str, n: int) -> bytes:
    """The body ``protocol`` sends for ``shape`` with ``n`` fragments."""
    import adapters
    from mmsp_core.model import DoneItem, FinishReason, TextDone, ToolCallDone, UsageMetadata

    item: DoneItem
    if shape == "text":
        item, finish = TextDone(text_of(n)), FinishReason.STOP
    else:
        payload = "y" * (n * FRAGMENT - _ARGUMENTS_FRAME)
        item, finish = ToolCallDone("save", "call_bench", {"blob": payload}), FinishReason.TOOL_CALL
    usage = UsageMetadata(cached_tokens=0, prompt_tokens=20, thoughts_tokens=0, response_tokens=n)
    return adapters.render(protocol, [item], usage, finish, model="bench", fragment_size=FRAGMENT)


def streamed_protocols() -> Iterator[tuple[str, str | None]]:
    """Every registered protocol with ``None``, or with why it gets no per-event rows (its
    simulator dialect serves one JSON document rather than an event stream)."""
    import adapters

    for name, record in adapters.PROTOCOLS.items():
        dialect = record.traits.dialect
        if dialect is not None and not dialect.content_type.startswith("text/event-stream"):
            yield name, f"one-body protocol ({dialect.content_type}): no per-event stream"
        else:
            yield name, None


def build(
    directory: Path, ns: Sequence[int], shapes: Sequence[str] = SHAPES,
    protocols: Sequence[str] | None = None,
) -> tuple[list[Body], list[Skipped]]:
    """Render every body of the matrix into ``directory`` and verify each (module docstring).

    Raises:
        ValueError: a protocol that is not registered.
    """
    import adapters
    from mmsp_core.errors import MMSPError

    known = dict(streamed_protocols())
    for name in protocols or ():
        if name not in known:
            raise ValueError(f"unknown protocol {name!r}; registered: {', '.join(known)}")
    bodies: list[Body] = []
    skipped: list[Skipped] = []
    for protocol, reason in known.items():
        if protocols and protocol not in protocols:
            continue
        for shape in shapes:
            if reason is not None:
                skipped.append(Skipped(protocol, shape, reason))
                continue
            for n in ns:
                try:
                    body = render_body(protocol, shape, n)
                    found, last = content_deltas(adapters.decode(protocol, frames(body, "packed")))
                except MMSPError as exc:
                    skipped.append(Skipped(protocol, shape, f"cannot render or decode: {exc}"))
                    break
                if (found, last) != (n, "stop"):
                    skipped.append(Skipped(protocol, shape, f"the body of {n} fragments "
                                           f"decodes to {found} content deltas ({last} last): "
                                           "the protocol does not fragment this shape"))
                    break
                bodies.append(_save(directory, protocol, shape, n, body))
    return bodies, skipped


def _save(directory: Path, protocol: str, shape: str, n: int, body: bytes) -> Body:
    ident = body_id(protocol, shape, n)
    path = directory / f"{ident}.body"
    path.write_bytes(body)
    lines = data_lines(body)
    first_content = _first_content_bytes(protocol, body)
    made = Body(
        id=ident, protocol=protocol, shape=shape, n=n, path=str(path), length=len(body),
        tail=body[-TAIL:].hex(), data_lines=len(lines),
        last_data=lines[-1].decode() if lines else "",
        first_content_bytes=first_content,
        first_content_line=len(data_lines(body[:first_content])),
    )
    Path(described(made)).write_text(json.dumps(dataclasses.asdict(made)))
    return made


def _first_content_bytes(protocol: str, body: bytes) -> int:
    """How many bytes of ``body``, cut one SSE event per chunk, the library needs before it
    hands out the first content delta.

    Raises:
        ValueError: the body carries no content.
    """
    import adapters
    from mmsp_core.pipeline import NEED_DATA

    pipeline = adapters.new_pipeline(protocol, clock=None)
    received = 0
    for frame in frames(body, "event"):
        received += len(frame)
        pipeline.receive_data(frame)
        while (event := pipeline.next_event()) is not NEED_DATA:
            if fragments(event):
                return received
    raise ValueError(f"the {protocol} body carries no content delta")


def described(body: Body) -> str:
    """The file, beside the body's, that describes it to a consumer process (its last data
    line can be far longer than one command-line argument may be: Responses repeats the
    whole answer in ``response.completed``)."""
    return str(Path(body.path).with_suffix(".json"))


def load(path: str) -> Body:
    """The ``Body`` a ``described`` file describes."""
    return Body(**json.loads(Path(path).read_text()))
