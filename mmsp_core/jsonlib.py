"""The one place that chooses how provider JSON is parsed: orjson when importable, else ``json``.

orjson (the optional extra ``fast``) parses the small objects of a stream several times
faster than the standard library, but it is stricter, and in one case different: it refuses
lone surrogate escapes (``"\\ud800"``), ``NaN`` / ``Infinity`` and numbers out of the double
range, and reads an integer beyond 64 bits as a float. The rule is that the backend never
changes an outcome, so each text is given to orjson only when orjson cannot differ, and to
``json`` otherwise, one text at a time:

- a text that does not encode as UTF-8 (it holds a lone surrogate) goes to ``json``;
- a text with a run of 19 or more digits (the shortest integer that may be beyond 64 bits;
  a long mantissa too) goes to ``json``;
- anything orjson refuses goes to ``json``, which accepts it or raises its own error, so the
  errors are the standard library's too.

Everything else orjson reads exactly as ``json`` does (objects, arrays, strings, ``true`` /
``false`` / ``null``, integers within 64 bits and correctly rounded doubles; the last of
duplicate keys wins in both).

The standard library's backend calls its scanner directly (``_loads_std``), without the two
Python layers and the two whitespace matches ``json.loads`` puts around it; any text the
scanner does not read exactly to its end is handed to ``json.loads`` itself.

The switch: ``use_backend("json")`` or ``use_backend("orjson")`` (tests run the parser and
adapter suites in both modes); ``backend()`` says which is in use. Callers read
``jsonlib.loads`` at call time, so a switch applies at once.

orjson is imported when a backend is first needed (the first ``loads``, ``available``,
``backend`` or ``use_backend``), not with this module: its import (with the standard modules
it loads to serialize dates, UUIDs and dataclasses) is a sizeable part of ``import mmsp_core``
(docs/architecture.md "Import cost"). The first ``loads`` then puts the default backend in its
own place, so later calls cost nothing more.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import orjson

#: Whether orjson is importable; ``None`` until first looked for (``_have_orjson``).
_HAVE_ORJSON: bool | None = None

__all__ = ["available", "backend", "loads", "use_backend"]

#: Every ASCII digit to ``9``: a run of digits becomes a run of nines, found with ``in``.
_DIGITS_TO_NINE: Final = bytes.maketrans(b"0123456789", b"9" * 10)
#: 19 digits: the shortest integer literal that may not fit in 64 bits.
_LONG_RUN: Final = b"9" * 19


#: The standard library's own scanner (its C one where built) with ``json.loads``'s defaults:
#: what ``JSONDecoder.__init__`` sets (typeshed does not declare the attribute).
_scan_once: Final[Callable[[str, int], tuple[Any, int]]] = (
    json.decoder.JSONDecoder().scan_once  # type: ignore[attr-defined]
)


def _loads_std(text: str) -> Any:
    """``json.loads(text)`` without the layers around the scanner: the scanner reads one value
    from the first character, and a text it reads to its very end is that value. Anything
    else (leading or trailing whitespace, a BOM, an error) goes to ``json.loads`` itself, so
    the value or the error is always the standard library's. Raises what ``json.loads``
    raises."""
    try:
        value, end = _scan_once(text, 0)
    except Exception:  # the error is whatever json.loads raises, below
        return json.loads(text)
    if end != len(text):
        return json.loads(text)
    return value


def _loads_fast(text: str) -> Any:
    """Parse ``text`` with orjson where it cannot differ from ``json``, else with ``json``
    (module doc). Raises what ``json.loads`` raises (``ValueError``, ``RecursionError``)."""
    try:
        data = text.encode()
    except UnicodeEncodeError:  # a lone surrogate: orjson refuses what json may read
        return json.loads(text)
    if _LONG_RUN in data.translate(_DIGITS_TO_NINE):
        return json.loads(text)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _have_orjson() -> bool:
    """Whether orjson is importable, importing it into this module the first time (module
    doc)."""
    global _HAVE_ORJSON, orjson
    if _HAVE_ORJSON is None:
        try:
            import orjson
        except ImportError:  # pragma: no cover - the "fast" extra is optional
            _HAVE_ORJSON = False
        else:
            _HAVE_ORJSON = True
    return _HAVE_ORJSON


def _loads_first(text: str) -> Any:
    """The first ``loads``: put the default backend (orjson when importable) in its place,
    then parse ``text`` with it. Raises what ``json.loads`` raises."""
    _choose_default()
    return loads(text)


def _choose_default() -> None:
    """Install the default backend if none is chosen yet."""
    global loads
    if loads is _loads_first:
        loads = _loads_fast if _have_orjson() else _loads_std


#: ``loads(text)``: parse one JSON text, with the standard library's results and errors.
loads: Callable[[str], Any] = _loads_first


def available() -> tuple[str, ...]:
    """The backends that can be used here: ``("json",)`` or ``("json", "orjson")``."""
    return ("json", "orjson") if _have_orjson() else ("json",)


def backend() -> str:
    """The backend in use: ``"json"`` or ``"orjson"``."""
    _choose_default()
    return "json" if loads is _loads_std else "orjson"


def use_backend(name: str) -> None:
    """Choose the backend: ``"json"`` always works, ``"orjson"`` needs orjson installed.

    Raises:
        ValueError: an unknown name, or ``"orjson"`` without orjson.
    """
    global loads
    if name not in available():
        raise ValueError(f"JSON backend {name!r} is not available here: {available()}")
    loads = _loads_std if name == "json" else _loads_fast
