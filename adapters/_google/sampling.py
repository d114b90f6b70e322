"""The keys of 08 D74 on both Gemini generation protocols (generateContent, Interactions).

What a Gemini model takes depends on its class, not on the client (05 §2.3): a generating
model takes ``top_p``, up to five stop sequences, a 32-bit ``seed`` and structured output
(JSON as the answer's MIME type, with a JSON Schema or without one: Gemini's "Structured
output" guide; generateContent's ``GenerationConfig`` and the Interactions API's
``generation_config`` and text ``response_format``); a speech model answers with audio and
takes none of them. ``temperature`` stays refused on both (05 §4.4): the API takes ``top_p``,
so it is sent. Pure.
"""

from __future__ import annotations

from typing import Final

from adapters._sampling import NO_SAMPLING, Sampling

from .thinking import Mode

__all__ = ["JSON_MIME_TYPE", "sampling_of"]

#: The answer's MIME type that asks Gemini for JSON.
JSON_MIME_TYPE: Final = "application/json"

#: A generating model: every key (the seed is a signed 32-bit integer).
_GENERATE: Final = Sampling(seed=range(-(2**31), 2**31))
#: A speech model: none of them.
_SPEECH: Final = Sampling(NO_SAMPLING.top_p, 0, None, (), detail="a speech model takes no {key}")


def sampling_of(mode: Mode) -> Sampling:
    """What a Gemini model of class ``mode`` takes of the keys of 08 D74."""
    return _SPEECH if mode is Mode.TTS else _GENERATE
