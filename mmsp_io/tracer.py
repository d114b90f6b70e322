"""The tracer: the files of one traced turn (spec 07 §7, 08 D14, D24, D27, D78).

Which calls are traced (08 D78): a call whose config has a non-empty ``trace_id``, always; and
every call, when the trace directory was given explicitly (``trace_dir`` or ``MMSP_TRACE_DIR``,
``traces_every_call``), one without a ``trace_id`` under an id made as
``<UTC time>-<model>-<6 hex>`` (``new_trace_id``). A traced call saves, before its ``stop`` is
yielded, the request messages (legacy-normalised; for a stateful call the whole history plus
the new message) and the assembled assistant message; a call that fails after its request was
built saves them with its error and what had arrived (an aborted call saves nothing, 08 D20).
Two files in the trace directory:

- ``<dir>/<trace_id>.json``: ``{"history": [message, ...], "config": {<config> + "model"},
  "base_url": <the client's base URL>, "timestamp": <local ISO-8601>}``, indent 2, UTF-8 with
  non-ASCII kept, bytes as base64 (the trace page prices a turn by its model and base URL,
  08 D75; a file without ``base_url`` has no cost there); and the turn's keys (``TURN_KEYS``;
  a file without them is read as before):

  - ``outcome``: ``"stop"``, or ``"error"`` for a failed call;
  - ``error`` (failed calls only): the error's wire form, the object inside 03 §3's
    ``{"error": ...}`` (``type``, ``message`` and the class's fields);
  - ``partial`` (failed calls only): the item that was arriving when the call failed, as
    wire delta items, the fragments of one item joined (the text or thinking so far, a tool
    call's arguments so far); the items completed before it are the assistant message of
    ``history``, which has neither usage nor finish reason then (none, when nothing
    completed);
  - ``attempts``: one object per attempt, ``{"started_s": <seconds since the call began>,
    "error": <wire form, or null for the attempt that streamed>}`` (08 D21);
  - ``first_event_s``: seconds from the call's start to its first event (null: none came);
  - ``duration_s``: seconds from the call's start to its stop or its error.

- ``<dir>/<trace_id>.txt``: a human transcript (its wording is cosmetic).

The suffix is appended to the whole id, so ``a/run.2`` gives ``a/run.2.json`` (08 D14); ``/``
makes sub-directories. The id must stay inside the directory: an absolute id, a ``..``
segment, or a symbolic link that leads out are refused with
``UnsupportedParameterError(parameter="trace_id")`` before the request (08 D24), and checked
again when writing. Any caller of a gateway chooses the id, so its shape is bounded too, by the
same refusal: at most ``MAX_TRACE_ID_SEGMENTS`` path segments and ``MAX_TRACE_ID_LENGTH``
characters, each segment at most ``MAX_SEGMENT_BYTES`` bytes of UTF-8 (no surrogate code
point), so that its directories and file names (with their suffix and temporary name) fit
what file systems allow and a deep id never costs a turn its stop (08 D27).

Both files are written to a temporary name and renamed (``write_atomically``), so a reader
never sees half a trace; they are overwritten on every turn.

A caller of a gateway does not choose a path: its ``trace_id`` becomes ``trace_label(id)``,
one file name in the gateway's trace directory (08 D78).
"""

from __future__ import annotations

import base64
import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from secrets import token_hex
from typing import Any, Final

import attrs

from mmsp_core.errors import UnsupportedParameterError, preview, redact
from mmsp_core.model import Item, UniConfig, UniMessage, UsageMetadata
from mmsp_core.wire import to_wire

__all__ = [
    "MAX_LABEL_LENGTH",
    "MAX_SEGMENT_BYTES",
    "MAX_TRACE_ID_LENGTH",
    "MAX_TRACE_ID_SEGMENTS",
    "TURN_KEYS",
    "joined_deltas",
    "new_trace_id",
    "trace_dir",
    "trace_files",
    "trace_label",
    "traces_every_call",
    "with_trace_label",
    "write_atomically",
    "write_trace",
]

#: The most path segments (``/``-separated names) a ``trace_id`` may have.
MAX_TRACE_ID_SEGMENTS: Final = 8
#: The longest ``trace_id``, in characters.
MAX_TRACE_ID_LENGTH: Final = 200
#: The longest segment of a ``trace_id`` in UTF-8 bytes: with ``.json`` and the temporary
#: name's ``.<name>.XXXXXXXX.tmp`` it stays under the 255 bytes a file name may have.
MAX_SEGMENT_BYTES: Final = 200

#: The longest label ``trace_label`` makes, and the longest model part of a made id.
MAX_LABEL_LENGTH: Final = 120
#: The keys a trace file holds about its turn besides the spec's three (module doc).
TURN_KEYS: Final = ("outcome", "error", "partial", "attempts", "first_event_s", "duration_s")

_RULE_WIDTH: Final = 80
#: Values of an embedding shown in the transcript.
_EMBEDDING_SHOWN: Final = 5
#: What a label keeps; every run of other characters becomes one ``_``.
_NOT_LABEL: Final = re.compile(r"[^A-Za-z0-9._-]+")
#: The text field of each delta item whose fragments ``joined_deltas`` joins.
_JOINED_FIELD: Final = {"text.delta": "text", "thinking.delta": "thinking",
                        "tool_call.delta": "arguments", "inline_data.delta": "data",
                        "inline_thinking.delta": "data"}


def trace_dir(configured: str | os.PathLike[str] | None) -> Path:
    """The trace directory: ``configured``, else ``MMSP_TRACE_DIR``, else ``MMSP_CACHE_DIR``,
    else ``./cache``; absolute (07 §7, 08 D78).

    It is created when the first trace is written, not here.
    """
    chosen = configured if configured is not None else (
        os.environ.get("MMSP_TRACE_DIR") or os.environ.get("MMSP_CACHE_DIR") or "cache")
    return Path(chosen).absolute()


def traces_every_call(configured: str | os.PathLike[str] | None) -> bool:
    """Whether the trace directory was given explicitly, as ``configured`` or
    ``MMSP_TRACE_DIR``, so that every call is traced (08 D78); never by default."""
    return configured is not None or bool(os.environ.get("MMSP_TRACE_DIR"))


def trace_label(text: str) -> str:
    """``text`` made one file name: each run of characters other than ASCII letters, digits,
    ``.``, ``_`` and ``-`` (``/`` included) becomes ``_``, leading dots are dropped (no hidden
    file, no ``..``) and it is cut to ``MAX_LABEL_LENGTH`` characters; ``""`` stays ``""``.

    A gateway's caller's ``trace_id`` is this label in the gateway's trace directory, never a
    path the caller chooses (08 D78).
    """
    return _NOT_LABEL.sub("_", text).lstrip(".")[:MAX_LABEL_LENGTH] or ("_" if text else "")


def with_trace_label(
    config: UniConfig | Mapping[str, Any] | None,
) -> UniConfig | Mapping[str, Any] | None:
    """``config`` (a ``UniConfig`` or its wire mapping) with its ``trace_id`` made a label
    (``trace_label``); one without a ``trace_id`` string is returned as it is (a value of
    another type is left for the client to refuse)."""
    if isinstance(config, UniConfig):
        return attrs.evolve(config, trace_id=trace_label(config.trace_id)) if config.trace_id \
            else config
    if isinstance(config, Mapping) and isinstance(config.get("trace_id"), str):
        return {**config, "trace_id": trace_label(config["trace_id"])}
    return config


def new_trace_id(model: str) -> str:
    """A new id, ``<UTC time>-<model>-<6 hex>`` (08 D78), the model made a label
    (``trace_label``), for example ``20261204T003012Z-gpt-6-3fa9c1``."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{trace_label(model)}-{token_hex(3)}"


def trace_files(root: Path, trace_id: str, client: str) -> tuple[Path, Path]:
    """Return the ``.json`` and ``.txt`` paths of ``trace_id`` inside ``root`` (08 D14).

    Raises:
        UnsupportedParameterError: ``parameter="trace_id"`` for an id that is absolute, holds a
            ``..`` segment, a NUL character or a surrogate code point, resolves outside
            ``root`` (08 D24), or is longer or deeper than the module's bounds.
    """

    def refuse(reason: str) -> UnsupportedParameterError:
        return UnsupportedParameterError(client, "trace_id", detail=reason)

    if len(trace_id) > MAX_TRACE_ID_LENGTH:
        raise refuse(f"a trace_id has at most {MAX_TRACE_ID_LENGTH} characters")
    if "\0" in trace_id:
        raise refuse("a trace_id cannot hold a NUL character")
    relative = Path(trace_id)
    if relative.is_absolute() or relative.anchor:
        raise refuse("a trace_id must be a path relative to the trace directory")
    if ".." in relative.parts:
        raise refuse("a trace_id cannot hold '..' segments")
    if len(relative.parts) > MAX_TRACE_ID_SEGMENTS:
        raise refuse(f"a trace_id has at most {MAX_TRACE_ID_SEGMENTS} '/'-separated segments")
    for segment in relative.parts:
        try:
            size = len(segment.encode("utf-8"))
        except UnicodeEncodeError:
            raise refuse("a trace_id cannot hold a surrogate code point") from None
        if size > MAX_SEGMENT_BYTES:
            raise refuse(f"a trace_id segment has at most {MAX_SEGMENT_BYTES} bytes of UTF-8")
    json_path = root / f"{trace_id}.json"
    if not json_path.resolve().is_relative_to(root.resolve()):
        raise refuse("the trace_id leads outside the trace directory")
    return json_path, root / f"{trace_id}.txt"


def write_trace(
    root: Path,
    trace_id: str,
    client: str,
    model: str,
    history: Sequence[UniMessage],
    config: UniConfig,
    *,
    base_url: str | None = None,
    secrets: Iterable[str | None] = (),
    turn: Mapping[str, Any] | None = None,
) -> None:
    """Write the two files of one turn (blocking: run it in a worker thread).

    ``history`` is the request messages followed by the assistant message; ``base_url`` is
    the client's (``None``: not written). ``turn`` holds the
    turn's keys (``TURN_KEYS``, module doc), already JSON values. Each of ``secrets`` (the
    client's key, a cloud's tokens) is redacted from both files, whole and in part, should a
    message or an error quote it (08 D61).

    Raises:
        UnsupportedParameterError: the id escapes ``root`` (checked again here).
        OSError: the files cannot be written; the caller logs it and goes on (08 D27).
    """
    json_path, txt_path = trace_files(root, trace_id, client)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    now = datetime.now().astimezone()
    config_json = {**to_wire(config), "model": model}
    document = {
        "history": [to_wire(message) for message in history],
        "config": config_json,
        **({} if base_url is None else {"base_url": base_url}),
        "timestamp": now.isoformat(),
        **(turn or {}),
    }
    json_text = json.dumps(document, indent=2, ensure_ascii=False)
    txt_text = "\n".join(_transcript(history, config_json, now, turn or {})) + "\n"
    for secret in secrets:
        json_text, txt_text = redact(json_text, secret or ""), redact(txt_text, secret or "")
    write_atomically(json_path, json_text)
    write_atomically(txt_path, txt_text)


def joined_deltas(items: Iterable[Item]) -> list[dict[str, Any]]:
    """The wire form of the delta ``items`` of a stream, each item's fragments joined into
    one delta: a ``text.delta``, ``thinking.delta`` or inline delta continues the one before
    it of its type, a ``tool_call.delta`` continues when it carries no ``tool_call_id``
    (08 D29); any other item stands alone."""
    joined: list[tuple[Item, list[Any]]] = []
    for item in items:
        field = _JOINED_FIELD.get(item.type)
        continues = (field is not None and joined and joined[-1][0].type == item.type
                     and not getattr(item, "tool_call_id", ""))
        if continues:
            joined[-1][1].append(getattr(item, str(field)))
        else:
            joined.append((item, [getattr(item, field)] if field is not None else []))
    out = []
    for first, pieces in joined:
        wire = to_wire(first)
        field = _JOINED_FIELD.get(first.type)
        if field is not None:
            wire[field] = ("".join(pieces) if isinstance(pieces[0], str)
                           else base64.b64encode(b"".join(pieces)).decode("ascii"))
        out.append(wire)
    return out


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (UTF-8) through a temporary file in the same directory,
    renamed over it, so a reader never sees half of it.

    Raises:
        OSError: the file cannot be written.
    """
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------------------------
# The human transcript (spec 07 §7; cosmetic)
# --------------------------------------------------------------------------------------------


def _transcript(
    history: Sequence[UniMessage], config: Mapping[str, Any], now: datetime,
    turn: Mapping[str, Any],
) -> Iterator[str]:
    rule = "=" * _RULE_WIDTH
    yield rule
    yield f"Conversation History - {now:%Y-%m-%d %H:%M:%S}"
    yield rule
    yield ""
    yield "Configuration:"
    for key, value in config.items():
        if key == "trace_id":
            continue
        if key == "tools":
            shown = json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n  ")
        else:
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        yield f"  {key}: {shown}"
    for index, message in enumerate(history, 1):
        yield ""
        yield f"[{index}] {message.role.upper()}:"
        yield "-" * _RULE_WIDTH
        for item in message.content_items:
            yield from _item_lines(to_wire(item))
        if message.usage_metadata is not None:
            yield from _usage_lines(message.usage_metadata)
        if message.finish_reason is not None:
            yield f"Finish Reason: {message.finish_reason}"
    if turn:
        yield from _turn_lines(turn)


def _turn_lines(turn: Mapping[str, Any]) -> Iterator[str]:
    yield ""
    yield f"Outcome: {turn.get('outcome')}"
    error = turn.get("error")
    if error is not None:
        yield f"Error: {error.get('type')}: {error.get('message')}"
    for item in turn.get("partial") or ():
        shown = item.get("text", item.get("thinking", item.get("arguments")))
        if isinstance(shown, str):
            yield f"Partial {item['type']}: {shown}"
    attempts = turn.get("attempts") or ()
    yield f"Attempts: {len(attempts)}"
    for number, attempt in enumerate(attempts, 1):
        failed = attempt.get("error")
        outcome = "streamed" if failed is None else f"{failed.get('type')}: {failed.get('message')}"
        yield f"  {number}. at {attempt.get('started_s', 0):.3f} s: {outcome}"
    first = turn.get("first_event_s")
    yield f"First event: {'none' if first is None else f'{first:.3f} s'}"
    yield f"Duration: {turn.get('duration_s', 0):.3f} s"


def _item_lines(item: Mapping[str, Any]) -> Iterator[str]:
    kind = item["type"]
    if kind == "text.done":
        yield f"Text: {item['text']}"
    elif kind == "thinking.done":
        yield f"Thinking: {item['thinking']}"
    elif kind == "image_url.done":
        yield f"Image URL: {preview(item['image_url'])}"
    elif kind in ("inline_data.done", "inline_thinking.done"):
        label = "Inline Data" if kind == "inline_data.done" else "Inline Thinking"
        yield f"{label}: {item['mime_type']} ({len(item['data'])} base64 characters)"
    elif kind == "embedding.done":
        values = item["embedding"]
        shown = ", ".join(f"{v:.6g}" for v in values[:_EMBEDDING_SHOWN])
        more = ", ..." if len(values) > _EMBEDDING_SHOWN else ""
        yield f"Embedding: [{shown}{more}] ({len(values)} dimensions)"
    elif kind == "tool_call.done":
        yield f"Tool Call: {item['name']}"
        yield f"Arguments: {json.dumps(item['arguments'], ensure_ascii=False)}"
        yield f"Tool Call ID: {item['tool_call_id']}"
    elif kind == "tool_result.done":
        yield f"Tool Result (ID: {item['tool_call_id']}): {item['text']}"
        for number, url in enumerate(item.get("images") or (), 1):
            yield f"Image {number}: {preview(url)}"


def _usage_lines(usage: UsageMetadata) -> Iterator[str]:
    counts = {k: v for k, v in to_wire(usage).items() if v is not None}
    yield "Usage Metadata:"
    for key, value in counts.items():
        yield f"  {key}: {value}"
    yield f"  Total Tokens: {sum(counts.values())}"
