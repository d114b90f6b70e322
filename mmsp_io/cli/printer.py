"""How every command prints a public stream: fragments as they arrive, each ``.done`` item and
the ``stop`` on a line of their own (``StreamPrinter``)."""

from __future__ import annotations

import json
from typing import TextIO

from mmsp_core.model import (
    DeltaItem,
    DoneItem,
    EmbeddingDelta,
    EmbeddingDone,
    InlineDataDone,
    InlineThinkingDone,
    TextDelta,
    TextDone,
    ThinkingDelta,
    ThinkingDone,
    ToolCallDelta,
    ToolCallDone,
    UniEvent,
    UsageMetadata,
)


class StreamPrinter:
    """Print a public stream as it arrives (the rendering every command shares).

    Fragments are written live after a ``kind>`` prefix; a ``.done`` item and the ``stop``
    each get a summary line.
    """

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._streaming: str | None = None

    def line(self, text: str) -> None:
        """Print ``text`` on a line of its own."""
        self._end_fragments()
        self._out.write(text + "\n")
        self._out.flush()

    def event(self, event: UniEvent) -> None:
        """Print one public event."""
        if event.event_type == "stop":
            self.line(
                f"  [stop] finish_reason={event.finish_reason} "
                f"usage: {_usage(event.usage_metadata)}"
            )
            return
        item = event.content_items[0]
        if not isinstance(item, DeltaItem):
            self.line(f"  [{item.type}] {_summary(item)}")
            return
        kind = item.type.partition(".")[0]
        if self._streaming != kind:
            self._end_fragments()
            self._out.write(f"{kind}> ")
            self._streaming = kind
        self._out.write(_fragment(item))
        self._out.flush()

    def end_line(self) -> None:
        """End a line of fragments still open, so that what comes next starts a line."""
        self._end_fragments()
        self._out.flush()

    def _end_fragments(self) -> None:
        if self._streaming is not None:
            self._out.write("\n")
            self._streaming = None


def _usage(usage: UsageMetadata | None) -> str:
    if usage is None:
        return "none"
    counts = (
        ("prompt", usage.prompt_tokens),
        ("cached", usage.cached_tokens),
        ("thoughts", usage.thoughts_tokens),
        ("response", usage.response_tokens),
    )
    return " ".join(f"{name}={'-' if n is None else n}" for name, n in counts)


def _fragment(item: DeltaItem) -> str:
    if isinstance(item, ToolCallDelta):
        header = f"{item.name}(id={item.tool_call_id}) " if item.name else ""
        return header + item.arguments
    if isinstance(item, TextDelta):
        return item.text
    if isinstance(item, ThinkingDelta):
        return item.thinking
    if isinstance(item, EmbeddingDelta):
        return f"<{len(item.embedding)} floats>"
    return f"<{len(item.data)} bytes {item.mime_type}>"


def _summary(item: DoneItem) -> str:
    if isinstance(item, ToolCallDone):
        return f"{item.name} {json.dumps(item.arguments)} (id={item.tool_call_id})"
    if isinstance(item, TextDone | ThinkingDone):
        text = item.text if isinstance(item, TextDone) else item.thinking
        fidelity = f", fidelity {sorted(item.fidelity)}" if item.fidelity else ""
        return f"{len(text)} characters{fidelity}"
    if isinstance(item, InlineDataDone | InlineThinkingDone):
        return f"{len(item.data)} bytes of {item.mime_type}"
    if isinstance(item, EmbeddingDone):
        return f"{len(item.embedding)} dimensions"
    return item.type  # tool results and image URLs: user input, never streamed
