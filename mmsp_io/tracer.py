"""The tracer: the files of one traced turn (spec 07 §7, 08 D14, D24, D27).

A call whose config has a non-empty ``trace_id`` saves, before its ``stop`` is yielded, the
request messages (legacy-normalised; for a stateful call the whole history plus the new
message) and the assembled assistant message, as two files in the trace directory:

- ``<dir>/<trace_id>.json``: ``{"history": [message, ...], "config": {<config> + "model"},
  "timestamp": <local ISO-8601>}``, indent 2, UTF-8 with non-ASCII kept, bytes as base64;
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

Both files are written to a temporary name and renamed, so a reader never sees half a trace;
they are overwritten on every turn.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from mmsp_core.errors import UnsupportedParameterError, preview, redact
from mmsp_core.model import UniConfig, UniMessage, UsageMetadata
from mmsp_core.wire import to_wire

__all__ = [
    "MAX_SEGMENT_BYTES",
    "MAX_TRACE_ID_LENGTH",
    "MAX_TRACE_ID_SEGMENTS",
    "trace_dir",
    "trace_files",
    "write_trace",
]

#: The most path segments (``/``-separated names) a ``trace_id`` may have.
MAX_TRACE_ID_SEGMENTS: Final = 8
#: The longest ``trace_id``, in characters.
MAX_TRACE_ID_LENGTH: Final = 200
#: The longest segment of a ``trace_id`` in UTF-8 bytes: with ``.json`` and the temporary
#: name's ``.<name>.XXXXXXXX.tmp`` it stays under the 255 bytes a file name may have.
MAX_SEGMENT_BYTES: Final = 200

_RULE_WIDTH: Final = 80
#: Values of an embedding shown in the transcript.
_EMBEDDING_SHOWN: Final = 5


def trace_dir(configured: str | os.PathLike[str] | None) -> Path:
    """The trace directory: ``configured``, else ``MMSP_CACHE_DIR``, else ``./cache``; absolute.

    It is created when the first trace is written, not here.
    """
    chosen = configured if configured is not None else os.environ.get("MMSP_CACHE_DIR") or "cache"
    return Path(chosen).absolute()


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
    secret: str | None = None,
) -> None:
    """Write the two files of one turn (blocking: run it in a worker thread).

    ``history`` is the request messages followed by the assistant message. ``secret`` (the
    client's key) is redacted from both files, whole and in part, should a message quote it
    (08 D61).

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
        "timestamp": now.isoformat(),
    }
    secret = secret or ""
    _replace(json_path, redact(json.dumps(document, indent=2, ensure_ascii=False), secret))
    _replace(txt_path, redact("\n".join(_transcript(history, config_json, now)) + "\n", secret))


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory."""
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
    history: Sequence[UniMessage], config: Mapping[str, Any], now: datetime
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
