"""Vertex AI's streamed function arguments as JSON text (08 D72; fixtures note 18).

With ``streamFunctionCallArguments`` Vertex sends one call over several parts: first
``functionCall: {name, willContinue: true}``, then parts of ``functionCall: {partialArgs:
[{jsonPath, stringValue | numberValue | boolValue | nullValue, willContinue?}],
willContinue: true}``, and at last a ``functionCall`` without ``willContinue`` (the
recordings send ``functionCall: {}``). ``StreamedArguments`` turns each part's partial
arguments into the next piece of the arguments' JSON text, so the call streams as
``tool_call.delta`` fragments whose join is the JSON object the parts build; the machine
(``machine``) puts the first fragment's name and id on it.

Rules, in the order the parts arrive:

* ``jsonPath`` is ``$`` followed by segments: ``.key``, ``['key']`` / ``["key"]`` (JSON's
  escapes inside, as RFC 9535 writes names) or ``[index]``; it names the leaf the value goes
  to, inside objects (a key) and arrays (an index). The root is an object.
* The containers a path needs are opened when its first value arrives and closed when a
  value arrives outside them or the call ends, so the paths must come in document order: a
  key written twice in one object, an array index other than the next one, or a path that
  goes back into a closed container is malformed (``BadField``), never a silently lost value.
* A ``stringValue`` with ``willContinue: true`` leaves its string open: the next partial
  argument of the same path continues it (the recordings end a string with an empty
  ``stringValue`` without ``willContinue``); a value for another path closes it first.
* ``numberValue``, ``boolValue`` and ``nullValue`` are whole values.

Separators are Python's defaults (``", "`` and ``": "``, non-ASCII kept), as for a call that
arrives whole (06 §4). The state kept is the stack of open containers with the keys each
holds, and whether a string is open.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Final

from adapters._json import BadField, opt_string

__all__ = ["StreamedArguments", "parse_json_path"]

#: One segment of a ``jsonPath``: ``.key``, ``['key']``, ``["key"]`` (with JSON's escapes, as
#: RFC 9535 writes names) or ``[index]``.
_SEGMENT: Final = re.compile(
    r"\.(?P<name>[^.\[\]]+)|\[(?P<single>'(?:[^'\\]|\\.)*')\]"
    r"|\[(?P<double>\"(?:[^\"\\]|\\.)*\")\]|\[(?P<index>\d+)\]"
)

Segment = str | int


def parse_json_path(path: str) -> tuple[Segment, ...]:
    """The segments of a ``jsonPath`` (module docstring): keys as ``str``, indices as ``int``.

    Raises:
        BadField: not ``$`` followed by segments, or ``$`` alone (the root is the arguments
            object, not a value).
    """
    if not path.startswith("$"):
        raise BadField("a partial argument's jsonPath must start with '$'")
    segments: list[Segment] = []
    position = 1
    while position < len(path):
        match = _SEGMENT.match(path, position)
        if match is None:
            raise BadField("a partial argument's jsonPath cannot be read")
        name, single, double, index = match.group("name", "single", "double", "index")
        if index is not None:
            segments.append(int(index))
        elif name is not None:
            segments.append(name)
        else:
            segments.append(_quoted(double or '"' + single[1:-1].replace("\\'", "'")
                                    .replace('"', '\\"') + '"'))
        position = match.end()
    if not segments:
        raise BadField("a partial argument's jsonPath names the root, not a value")
    return tuple(segments)


def _quoted(text: str) -> str:
    """The name a double-quoted ``jsonPath`` segment writes, its escapes read as JSON's.

    Raises:
        BadField: an escape JSON does not have, or a raw control character.
    """
    try:
        name = json.loads(text)
    except ValueError:
        raise BadField("a partial argument's jsonPath holds a malformed name") from None
    assert isinstance(name, str)
    return name


class _Container:
    """An open object or array: the segment it stands at, and what it already holds."""

    __slots__ = ("count", "is_array", "keys", "segment")

    def __init__(self, segment: Segment | None, is_array: bool) -> None:
        self.segment = segment
        self.is_array = is_array
        self.count = 0
        self.keys: set[str] = set()

    def member(self, segment: Segment) -> str:
        """The separator and key that put ``segment`` into this container next.

        Raises:
            BadField: a key in an array or an index in an object, a key already written, an
                index other than the next one.
        """
        if self.is_array:
            if type(segment) is not int or segment != self.count:
                raise BadField("a partial argument's array index is out of order")
            text = ""
        else:
            if type(segment) is not str or segment in self.keys:
                raise BadField("a partial argument writes a key twice or indexes an object")
            self.keys.add(segment)
            text = json.dumps(segment, ensure_ascii=False) + ": "
        separator = ", " if self.count else ""
        self.count += 1
        return separator + text


class StreamedArguments:
    """The JSON text of one streamed call's arguments, piece by piece (module docstring)."""

    __slots__ = ("_open", "_string_path")

    def __init__(self) -> None:
        #: The open containers, root first; empty until the first value.
        self._open: list[_Container] = []
        #: The path of the string left open by ``willContinue``, if any.
        self._string_path: tuple[Segment, ...] | None = None

    def push(self, partial: Mapping[str, Any]) -> str:
        """The JSON text that one partial argument adds.

        Raises:
            BadField: a malformed path, a path out of document order (module docstring), a
                value of the wrong JSON type, or no value at all.
        """
        path = parse_json_path(opt_string(partial, "jsonPath") or "")
        string = opt_string(partial, "stringValue")
        if string is not None and path == self._string_path:
            text = _string_body(string)
        else:
            text = self._close_string() + self._enter(path)
            text += _value(partial, string)
        continues = partial.get("willContinue") is True
        if string is not None and continues:
            self._string_path = path
        elif string is not None:
            self._string_path = None
            text += '"'
        return text

    def close(self) -> str:
        """The JSON text that ends the arguments: what is open is closed, ``{}`` when no value
        came."""
        if not self._open:
            return "{}"
        text = self._close_string()
        while self._open:
            text += "]" if self._open.pop().is_array else "}"
        return text

    def _close_string(self) -> str:
        if self._string_path is None:
            return ""
        self._string_path = None
        return '"'

    def _enter(self, path: tuple[Segment, ...]) -> str:
        """Close the containers ``path`` is not in, open those it needs, and return that text
        with the separator and key of its leaf."""
        text = ""
        if not self._open:
            self._open.append(_Container(None, is_array=False))
            text = "{"
        kept = 1
        while (kept < len(self._open) and kept < len(path)
               and self._open[kept].segment == path[kept - 1]):
            kept += 1
        while len(self._open) > kept:
            text += "]" if self._open.pop().is_array else "}"
        for depth in range(kept - 1, len(path) - 1):
            segment = path[depth]
            text += self._open[-1].member(segment)
            is_array = type(path[depth + 1]) is int
            self._open.append(_Container(segment, is_array))
            text += "[" if is_array else "{"
        return text + self._open[-1].member(path[-1])


def _string_body(value: str) -> str:
    """``value`` escaped as the inside of a JSON string."""
    return json.dumps(value, ensure_ascii=False)[1:-1]


def _value(partial: Mapping[str, Any], string: str | None) -> str:
    """The JSON text of a partial argument's value; a string's without its closing quote.

    Raises:
        BadField: no value, or a number or boolean of the wrong JSON type.
    """
    if string is not None:
        return '"' + _string_body(string)
    if "numberValue" in partial:
        number = partial["numberValue"]
        if type(number) not in (int, float) or not math.isfinite(number):
            raise BadField("'numberValue' must be a finite number")
        return json.dumps(number)
    if "boolValue" in partial:
        flag = partial["boolValue"]
        if type(flag) is not bool:
            raise BadField("'boolValue' must be a boolean")
        return "true" if flag else "false"
    if "nullValue" in partial:
        return "null"
    raise BadField("a partial argument without a value")
