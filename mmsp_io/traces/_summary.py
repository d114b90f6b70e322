"""What the trace page's list says of a trace document (``mmsp_io.traces``, module doc): its
summary, and whether it matches a search. Both read the tracer's keys (``mmsp_io.tracer``)
as they may be found in any JSON: a key of another type is treated as absent."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator, Mapping
from typing import Any, Final

from adapters import catalog_pricing, price
from mmsp_core.errors import MMSPError
from mmsp_core.messages import normalize_legacy_messages
from mmsp_core.wire import usage_from_wire

__all__ = ["matches", "summary"]

#: The longest model id or error type a summary keeps, in characters.
_MAX_NAME: Final = 200
#: The counts of a usage object (spec 01 §6).
_USAGE_COUNTS: Final = ("cached_tokens", "prompt_tokens", "thoughts_tokens", "response_tokens")


def summary(document: Mapping[str, Any]) -> dict[str, Any]:
    """What the list shows of a trace document (the tracer's keys, ``mmsp_io.tracer``):
    ``model``, ``time`` (its timestamp), ``duration_s``, ``first_event_s``, ``attempts``
    (their count), ``tokens`` (the turn's usage: every count of the last assistant message of
    a turn that ended at its stop, added), ``cost`` (USD, ``adapters.price`` at the catalog's
    price of the model at the base URL, when the trace names both and the catalog prices it;
    08 D75) and ``outcome`` (``"ok"``, or the error's type). A key the trace does not hold, or
    holds as another type, is ``None``; a trace written before the tracer kept the turn's keys
    was written at a stop, so its outcome is ``"ok"``."""
    config = document.get("config")
    config = config if isinstance(config, Mapping) else {}
    model = _text(config.get("model"))
    base_url = _text(document.get("base_url")) or _text(config.get("base_url"))
    error = document.get("error")
    failed = document.get("outcome") == "error"
    usage = None
    history = document["history"]
    last = history[-1] if history else None
    if not failed and isinstance(last, Mapping) and last.get("role") == "assistant":
        usage = last.get("usage_metadata")
    tokens = cost = None
    if isinstance(usage, Mapping):
        counts = [usage.get(key) for key in _USAGE_COUNTS]
        tokens = sum(n for n in counts if isinstance(n, int) and not isinstance(n, bool))
        pricing = catalog_pricing(model, base_url) if model and base_url else None
        if pricing is not None:
            # A count of another type, or too large for a float: no cost.
            with contextlib.suppress(MMSPError, OverflowError):
                read = usage_from_wire(usage)
                cost = None if read is None else _finite(round(price(read, pricing), 6))
    attempts = document.get("attempts")
    return {
        "model": model[:_MAX_NAME] if model else None,
        "time": _text(document.get("timestamp")),
        "duration_s": _seconds(document.get("duration_s")),
        "first_event_s": _seconds(document.get("first_event_s")),
        "attempts": len(attempts) if isinstance(attempts, list) else None,
        "tokens": tokens,
        "cost": cost,
        "outcome": ((_text(error.get("type")) or "error")[:_MAX_NAME]
                    if failed and isinstance(error, Mapping) else "error" if failed else "ok"),
    }


def matches(trace_id: str, document: Mapping[str, Any] | None, words: list[str]) -> bool:
    """Whether every one of ``words`` (case-folded) is in the trace's id, its model, its
    error, its system prompt or the text of its messages (text, thinking, tool calls and
    results, and what arrived before an error); of a file that is no trace, only the id."""
    haystack = "\n".join(_searched(trace_id, document)).casefold()
    return all(word in haystack for word in words)


def _searched(trace_id: str, document: Mapping[str, Any] | None) -> Iterator[str]:
    """The texts of a trace a search looks into (``matches``)."""
    yield trace_id
    if document is None:
        return
    config = document.get("config")
    if isinstance(config, Mapping):
        yield from (value for value in (config.get("model"), config.get("system_prompt"))
                    if isinstance(value, str))
    error = document.get("error")
    if isinstance(error, Mapping):
        yield json.dumps(error, ensure_ascii=False)
    lists = [message.get("content_items") for message in
             normalize_legacy_messages(document["history"]) if isinstance(message, Mapping)]
    lists.append(document.get("partial"))
    items = [item for found in lists if isinstance(found, list)
             for item in found if isinstance(item, Mapping)]
    for item in items:
        for key in ("text", "thinking", "name"):
            if isinstance(item.get(key), str):
                yield item[key]
        arguments = item.get("arguments")
        if arguments is not None:
            yield arguments if isinstance(arguments, str) else json.dumps(arguments,
                                                                          ensure_ascii=False)


def _text(value: Any) -> str | None:
    """``value`` when it is a non-empty string, else ``None``."""
    return value if isinstance(value, str) and value else None


def _seconds(value: Any) -> float | None:
    """``value`` when it is a finite number of seconds (not a bool), else ``None``."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        return _finite(float(value))
    except OverflowError:  # an integer too large for a float
        return None


def _finite(value: float) -> float | None:
    """``value`` unless it is NaN or infinite (which JSON cannot carry)."""
    return value if math.isfinite(value) else None
