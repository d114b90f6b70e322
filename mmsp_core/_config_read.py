"""Config JSON back to a ``UniConfig``: the reader ``mmsp_core.wire`` exports (08 D58, D68, D74).

Each key is checked as ``_wire_read``'s readers check theirs: a wrong value raises
``WireFormatError(path, reason)`` naming the key's path (``config.tools[0].name``), and nothing
else, whatever JSON value it is given (08 D59).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

import attrs

from ._wire_read import _fail, _float, _list_of, _obj, _opt_int, _shown, _str, _typed
from .model import (
    EmbeddingConfig,
    ImageConfig,
    PromptCaching,
    ResponseFormat,
    SpeakerConfig,
    ThinkingLevel,
    ToolSchema,
    UniConfig,
)

__all__ = ["MAX_STOP_SEQUENCES", "MAX_TOKENS_LIMIT", "SEED_RANGE", "config_from_wire"]

_S = TypeVar("_S", bound=enum.StrEnum)


def _enum(kind: type[_S], value: Any, path: str) -> _S:
    """A member of the string enum ``kind``; the reason lists every accepted value."""
    if isinstance(value, str):  # a member of the enum is a str too
        try:
            return kind(value)
        except ValueError:
            pass
    accepted = ", ".join(member.value for member in kind)
    raise _fail(path, f"unknown value {_shown(value)}; accepted: {accepted}")


def _tool(d: Any, path: str) -> ToolSchema:
    obj = _obj(d, path)
    parameters = obj.get("parameters")
    if parameters is not None and type(parameters) is not dict:
        raise _fail(f"{path}.parameters", "expected a JSON-Schema object")
    description = obj.get("description", "")
    if type(description) is not str:
        raise _fail(f"{path}.description", "expected a string")
    return ToolSchema(_str(obj, "name", path), description, parameters)


def _tool_choice(value: Any, path: str) -> str | tuple[str, ...]:
    if value in ("auto", "required", "none"):
        return str(value)
    if isinstance(value, list) and all(type(x) is str for x in value):
        return tuple(value)
    raise _fail(path, "expected 'auto', 'required', 'none' or a list of tool names")


def _opt_str(obj: Mapping[str, Any], key: str, path: str) -> str | None:
    value = obj.get(key)
    if value is None or type(value) is str:
        return value
    raise _fail(f"{path}.{key}", "expected a string or null")


def _speaker(d: Any, path: str) -> SpeakerConfig:
    obj = _obj(d, path)
    return SpeakerConfig(_str(obj, "voice", path), _opt_str(obj, "speaker", path))


def _image_config(d: Any, path: str) -> ImageConfig:
    obj = _obj(d, path)
    return ImageConfig(_opt_str(obj, "aspect_ratio", path), _opt_str(obj, "image_size", path))


def _embedding_config(d: Any, path: str) -> EmbeddingConfig:
    return EmbeddingConfig(_opt_int(_obj(d, path), "dimensions", path))


#: The largest ``max_tokens`` (08 D58): a signed 32-bit count, which every provider takes.
MAX_TOKENS_LIMIT: Final = 2**31 - 1


def _max_tokens(value: Any, path: str) -> int:
    """An integer from 1 to ``MAX_TOKENS_LIMIT``; a bool is not one (08 D58)."""
    if type(value) is not int or not 1 <= value <= MAX_TOKENS_LIMIT:
        raise _fail(path, f"expected an integer from 1 to {MAX_TOKENS_LIMIT}, got {_shown(value)}")
    return value


def _temperature(value: Any, path: str) -> float:
    """A finite number: NaN and the infinities are not JSON, so no request can carry them."""
    number = _float(value, path) if type(value) in (int, float) else None
    if number is None or not math.isfinite(number):
        raise _fail(path, f"expected a finite number, got {_shown(value)}")
    return number


def _json_object(value: Any, path: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise _fail(path, f"expected a JSON object, got {_shown(value)}")
    return value


def _top_p(value: Any, path: str) -> float:
    """A number in (0, 1] (08 D74); a bool is not one."""
    number = _float(value, path) if type(value) in (int, float) else None
    if number is None or not 0 < number <= 1:
        raise _fail(path, f"expected a number greater than 0 and at most 1, got {_shown(value)}")
    return number


#: How many stop sequences a config may hold (08 D74: the fewest any provider takes).
MAX_STOP_SEQUENCES: Final = 4


def _stop_sequences(value: Any, path: str) -> tuple[str, ...]:
    """A list of 1 to ``MAX_STOP_SEQUENCES`` non-empty strings (08 D74)."""
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_STOP_SEQUENCES:
        raise _fail(path, f"expected a list of 1 to {MAX_STOP_SEQUENCES} non-empty strings")
    for i, text in enumerate(value):
        if type(text) is not str or not text:
            raise _fail(f"{path}[{i}]", f"expected a non-empty string, got {_shown(text)}")
    return tuple(value)


#: The range of ``seed``: a signed 64-bit integer, the widest any provider takes (08 D74).
SEED_RANGE: Final = range(-(2**63), 2**63)


def _seed(value: Any, path: str) -> int:
    """A signed 64-bit integer (08 D74); a bool is not one."""
    if type(value) is not int or value not in SEED_RANGE:
        raise _fail(path, f"expected a signed 64-bit integer, got {_shown(value)}")
    return value


def _response_format(d: Any, path: str) -> ResponseFormat:
    """``{"type": "json_schema", "name", "schema", "strict"?}`` with a non-empty name and a
    JSON-Schema object, or ``{"type": "json_object", "strict"?}`` (08 D74)."""
    obj = _obj(d, path)
    kind = obj.get("type")
    strict = obj.get("strict", True)
    if type(strict) is not bool:
        raise _fail(f"{path}.strict", f"expected a boolean, got {_shown(strict)}")
    if kind == "json_object":
        for key in ("name", "schema"):
            if obj.get(key) is not None:
                raise _fail(f"{path}.{key}", "a json_object format takes no name or schema")
        return ResponseFormat("json_object", strict=strict)
    if kind != "json_schema":
        raise _fail(f"{path}.type", f"expected 'json_schema' or 'json_object', got "
                                    f"{_shown(kind)}")
    name = _str(obj, "name", path)
    if not name:
        raise _fail(f"{path}.name", "expected a non-empty string")
    schema = obj.get("schema")
    if type(schema) is not dict:
        raise _fail(f"{path}.schema", f"expected a JSON-Schema object, got {_shown(schema)}")
    return ResponseFormat("json_schema", name, schema, strict)


_CONFIG_READERS: Final[Mapping[str, Callable[[Any, str], Any]]] = {
    "max_tokens": _max_tokens,
    "temperature": _temperature,
    "top_p": _top_p,
    "stop_sequences": _stop_sequences,
    "seed": _seed,
    "response_format": _response_format,
    "tools": lambda v, p: _list_of(v, p, _tool),
    "tool_choice": _tool_choice,
    "thinking_level": lambda v, p: _enum(ThinkingLevel, v, p),
    "thinking_summary": _typed(bool, "a boolean"),
    "system_prompt": _typed(str, "a string"),
    "prompt_caching": lambda v, p: _enum(PromptCaching, v, p),
    "fast_mode": _typed(bool, "a boolean"),
    "image_config": _image_config,
    "tts_config": lambda v, p: _list_of(v, p, _speaker),
    "embedding_config": _embedding_config,
    "trace_id": _typed(str, "a string"),
    "extra_body": _json_object,
}


def config_from_wire(d: Any) -> UniConfig:
    """Read a ``UniConfig``; unknown keys go to ``extra``, ``null`` values count as unset.

    Each known key is checked as 08 D58 says: ``max_tokens`` an integer from 1 to
    ``MAX_TOKENS_LIMIT`` (a bool is not one), ``temperature`` a finite number, an enum key one
    of its members (the reason lists them, 08 D68), ``extra_body`` a JSON object; 08 D74's
    ``top_p`` a number in (0, 1], ``stop_sequences`` 1 to ``MAX_STOP_SEQUENCES`` non-empty
    strings, ``seed`` a signed 64-bit integer and ``response_format`` one of its two shapes.

    A known key's value may also be the library's own value (``ToolSchema``, ``ImageConfig``,
    ``ResponseFormat``, a tuple of them, ...): it is read from its JSON form (``_as_json``),
    with the same checks (issue 24).

    Raises:
        WireFormatError: a known key with a value of the wrong type, with the key's path.
    """
    obj = _obj(d, "config")
    known: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in obj.items():
        reader = _CONFIG_READERS.get(key)
        if reader is None:
            extra[key] = value
        elif value is not None:
            known[key] = reader(_as_json(value), f"config.{key}")
    return UniConfig(**known, extra=extra)


def _as_json(value: Any) -> Any:
    """A config value given as the library's own value, as the JSON it stands for: an attrs
    value as the object of its set fields, a tuple as a list, and each attrs value of a list
    or tuple so too. Anything else is returned as it is, never walked, so no nesting of plain
    JSON costs more than one look (08 D59)."""
    if attrs.has(type(value)):
        fields = ((f.name, getattr(value, f.name)) for f in attrs.fields(type(value)))
        return {name: field for name, field in fields if field is not None}
    if isinstance(value, list | tuple):
        return [_as_json(item) if attrs.has(type(item)) else item for item in value]
    return value
