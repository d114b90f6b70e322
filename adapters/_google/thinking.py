"""Gemini model classes and thinking levels, for both Google client types (spec 05 §1, §2.3).

Both Google clients (google-official on the Interactions API, google-genai on
generateContent) decide the same two things from the model id, by explicit tokens on the
lower-cased id (05 §1, 08 D9; the id itself is sent as given):

1. the **mode** (``model_mode``), decided before any thinking row: an id containing
   ``embedding`` is an embedding model, then one containing ``tts`` a speech model, else a
   generation model (so ``gemini-3.8-flash-tts`` never reaches the ``gemini-3.8`` row: a TTS
   request with a thinking key is refused with HTTP 400);
2. for generation models, the **thinking level** sent for a ``ThinkingLevel``
   (``thinking_level_for``): the base map none->minimal, low->low, medium->medium,
   high/xhigh/max->high, then, when the model's generation row does not support that level,
   the nearest supported one in the order minimal < low < medium < high, ties rounding up.
   It never raises for a ``ThinkingLevel`` (RFC-0003 §6.3, 05 §1 rule 4).

Generation rows, first match wins (05 §2.3): ``-image`` {minimal, high}; ``gemini-3-pro``
{low, high}; ``-pro`` {low, medium, high}; ``gemini-3.7`` / ``gemini-3.8`` /
``gemini-4-argon`` {low, medium, high}; anything else (an unknown ``gemini-9-flash``
included) all four.

Values are lower-case (google-official sends ``generation_config.thinking_level`` so);
google-genai sends them upper-cased (``generationConfig.thinkingConfig.thinkingLevel``).
Pure: no I/O, no state.
"""

from __future__ import annotations

import enum
from typing import Final

from adapters._convert import model_key
from mmsp_core.model import ThinkingLevel

__all__ = [
    "GEMINI_LEVELS",
    "GENERATIONS",
    "Mode",
    "model_mode",
    "supported_levels",
    "thinking_level_for",
]


class Mode(enum.Enum):
    """What a Gemini model id asks for, decided before any thinking row (05 §2.3)."""

    #: lc id contains ``embedding``: the embedding path; config conversion never runs.
    EMBEDDING = "embedding"
    #: lc id contains ``tts``: speech; no thinking key is ever sent.
    TTS = "tts"
    #: Everything else: text, image and multimodal generation, through the thinking rows.
    GENERATE = "generate"


#: Gemini's thinking levels, least thinking first (the order clamping walks).
GEMINI_LEVELS: Final = ("minimal", "low", "medium", "high")

#: The base map of 05 §2.3, before clamping to what the model supports.
_BASE: Final = {
    ThinkingLevel.NONE: "minimal",
    ThinkingLevel.LOW: "low",
    ThinkingLevel.MEDIUM: "medium",
    ThinkingLevel.HIGH: "high",
    ThinkingLevel.XHIGH: "high",
    ThinkingLevel.MAX: "high",
}

#: ``(tokens, supported levels)``: the first row one of whose tokens the lower-cased id
#: contains wins (05 §2.3); ids no row matches support every level.
GENERATIONS: Final[tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]] = (
    (("-image",), ("minimal", "high")),
    (("gemini-3-pro",), ("low", "high")),
    (("-pro",), ("low", "medium", "high")),
    (("gemini-3.7", "gemini-3.8", "gemini-4-argon"), ("low", "medium", "high")),
)


def model_mode(model: str) -> Mode:
    """Return the class of ``model``: embedding first, then TTS, else generation (05 §2.3)."""
    key = model_key(model)
    if "embedding" in key:
        return Mode.EMBEDDING
    if "tts" in key:
        return Mode.TTS
    return Mode.GENERATE


def supported_levels(model: str) -> tuple[str, ...]:
    """Return the thinking levels the generation row of ``model`` supports, least first.

    Meaningful for generation models only (``model_mode`` is ``GENERATE``); the rows are
    matched on the lower-cased id (05 §2.3, 08 D9).
    """
    key = model_key(model)
    for tokens, levels in GENERATIONS:
        if any(token in key for token in tokens):
            return levels
    return GEMINI_LEVELS


def thinking_level_for(model: str, level: ThinkingLevel | str) -> str | None:
    """Return the lower-case Gemini thinking level sent for ``level`` on ``model``.

    ``None`` means no thinking key is sent at all: ``model`` is an embedding or TTS model
    (05 §2.3: modes are decided before any thinking row). Otherwise the base map of 05 §2.3
    is clamped to the model's generation row: the nearest supported level in the order
    minimal < low < medium < high, a tie rounding up (``gemini-3-pro-preview`` medium ->
    ``"high"``; ``gemini-3.8-flash`` none -> ``"low"``).

    ``level`` is a ``ThinkingLevel`` or its string value (the preflight has already refused
    anything else, 08 D68). Never raises for such a value (RFC-0003 §6.3).

    Raises:
        ValueError: ``level`` is not a ``ThinkingLevel`` value (a caller's bug: validate
            first).
    """
    wanted = _BASE[ThinkingLevel(level)]
    if model_mode(model) is not Mode.GENERATE:
        return None
    supported = supported_levels(model)
    if wanted in supported:
        return wanted
    rank = GEMINI_LEVELS.index(wanted)
    # Nearest by rank; on a tie the higher level wins (05 §2.3: "ties round up").
    return min(supported, key=lambda name: _distance(GEMINI_LEVELS.index(name), rank))


def _distance(candidate: int, wanted: int) -> tuple[int, int]:
    """Sort key of clamping: nearer first, then the higher of two equally near levels."""
    return abs(candidate - wanted), -candidate
