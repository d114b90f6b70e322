"""Embedding vectors on the OpenAI wire: base64 of little-endian float32 (08 D28).

The builder asks for ``encoding_format: "base64"``, so a vector arrives as the base64 text of
its float32 values in little-endian order; ``decode`` reads it, ``encode`` writes it (the
renderer), and ``float32`` is what of a Python float survives the trip: the nearest float32,
infinite beyond its range, as IEEE 754 rounding gives.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from collections.abc import Sequence

from adapters._json import BadField

__all__ = ["decode", "encode", "float32"]


def decode(text: str) -> tuple[float, ...]:
    """The float32 values of a base64 vector, in order.

    Raises:
        BadField: the text is not base64, or its bytes are not a whole number of float32.
    """
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise BadField("'embedding' is not base64") from None
    if len(raw) % 4:
        raise BadField("'embedding' is not a whole number of float32 values")
    return struct.unpack(f"<{len(raw) // 4}f", raw)


def _packable(value: float) -> float:
    """``value`` itself, or the infinity of its sign when it is beyond float32's range."""
    try:
        struct.pack("<f", value)
    except OverflowError:
        return math.copysign(math.inf, value)
    return value


def encode(values: Sequence[float]) -> str:
    """The base64 text of ``values`` as little-endian float32 (``float32`` of each)."""
    packed = struct.pack(f"<{len(values)}f", *(_packable(value) for value in values))
    return base64.b64encode(packed).decode("ascii")


def float32(values: Sequence[float]) -> tuple[float, ...]:
    """What ``decode(encode(values))`` gives: each value rounded to the nearest float32."""
    return decode(encode(values))
