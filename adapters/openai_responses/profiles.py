"""Per-client data of the Responses protocol (08 D63): one profile per client type.

The machine and the builder read these fields; neither knows client names. The registry rows
in ``adapters._rows`` name the profile of each client type.

What depends on the model is a list of generation rows: the first row whose tokens the
lower-cased model id contains (and none of whose refused tokens) applies (05 §1, 08 D9). The
last row of every profile matches every id.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from typing import Final, final

import attrs

from adapters._sampling import Sampling, TopP
from mmsp_core.model import ThinkingLevel

__all__ = [
    "COMPATIBLE",
    "DEEPSEEK",
    "MINIMAX",
    "OPENAI",
    "Generation",
    "ReasoningReplay",
    "ResponsesProfile",
    "Summary",
    "Temperature",
]

_L = ThinkingLevel

#: Each level sent as itself.
_IDENTITY: Final[Mapping[ThinkingLevel, str]] = {level: level.value for level in ThinkingLevel}

#: Every string ``tool_choice`` of the Responses API.
_ALL_CHOICES: Final = frozenset({"auto", "none", "required"})

#: The keys of 08 D74 on the Responses API (OpenAI's Responses reference): ``top_p`` and
#: ``text.format`` (``json_schema`` with name, schema and strict, or ``json_object``); it has
#: no stop sequences and no seed, so those are refused on every client.
_RESPONSES_SAMPLING: Final = Sampling(stop_sequences=0, seed=None,
                                      detail="the Responses API has no {key}")


class Temperature(enum.Enum):
    """Which ``temperature`` a client takes (05 §4.2)."""

    #: Any value, sent as given.
    SENT = "sent"
    #: 0 to 1, sent; anything else raises ``UnsupportedParameterError``.
    ZERO_TO_ONE = "zero-to-one"
    #: Only 1.0, the API's default, which is not sent; anything else raises.
    ONLY_DEFAULT = "only-default"


class Summary(enum.Enum):
    """When ``thinking_summary`` sends ``reasoning.summary = "concise"`` (05 §3)."""

    ALWAYS = "always"
    #: Only together with a thinking level: OpenRouter reads an effort-less reasoning object
    #: as "disabled".
    WITH_EFFORT = "with-effort"
    #: ``thinking_summary`` is ignored.
    NEVER = "never"


class ReasoningReplay(enum.Enum):
    """How a thinking item of the history is sent back as a reasoning item (05 §5)."""

    #: Through the channel that carried it (``fidelity["channel"]``, text as reasoning content
    #: when there is none), with the recorded ``encrypted_content``, ``signature``, ``format``.
    BY_CHANNEL = "by-channel"
    #: As ``BY_CHANNEL``, and a history with no channel but encrypted content is a summary.
    BY_CHANNEL_ENCRYPTED_AS_SUMMARY = "by-channel-encrypted-as-summary"
    #: Rebuilt from the text alone: an empty ``summary`` and the text as reasoning content.
    REBUILT = "rebuilt"
    #: Rebuilt from the text alone, without ``summary``.
    REBUILT_WITHOUT_SUMMARY = "rebuilt-without-summary"


@final
@attrs.frozen
class Generation:
    """One generation row: what a group of model ids takes (05 §1, §2, §4.2)."""

    #: The row applies when the lower-cased id contains every one of these tokens ...
    needs: tuple[str, ...]
    #: ... and none of these.
    refuses: tuple[str, ...]
    #: ``thinking_level`` -> ``reasoning.effort`` (05 §2).
    efforts: Mapping[ThinkingLevel, str]
    #: The string ``tool_choice`` values it takes (05 §4.2, 08 D10).
    tool_choices: frozenset[str]
    #: ``fast_mode`` is sent as ``service_tier: "priority"``; ``False``: it raises.
    priority_tier: bool = True

    def matches(self, key: str) -> bool:
        """Whether the row applies to the lower-cased model id ``key``."""
        return all(token in key for token in self.needs) and not any(
            token in key for token in self.refuses
        )


@final
@attrs.frozen
class ResponsesProfile:
    """What differs between the clients of the Responses protocol."""

    #: The vendor as the error details name it.
    vendor: str
    #: First match wins; the last row matches every id.
    generations: tuple[Generation, ...]
    temperature: Temperature
    summary: Summary
    replay: ReasoningReplay
    #: Values of the request's ``include`` list (openai-official asks for encrypted reasoning).
    include: tuple[str, ...] = ()
    #: A list of tool names is sent as ``allowed_tools`` (08 D10); ``False``: it raises.
    tool_name_lists: bool = False
    #: Assistant text is split by its ``fidelity["phase"]`` into message items with that phase.
    phases: bool = False
    #: Ids containing this token get ``detail: "high"`` on large data-URI images (05 §5).
    high_detail_token: str | None = None
    #: Ids whose last ``/``-segment (lower-cased) fully matches this take text only (05 §1).
    text_only_ids: re.Pattern[str] | None = None
    #: Function calls are read only from their done items, whole (02 §11, 08 D32).
    whole_calls: bool = False
    #: Which keys of 08 D74 are sent; ``top_p`` follows the temperature rule (08 D74).
    sampling: Sampling = _RESPONSES_SAMPLING
    #: ``(prefix, protocol)``: lower-cased model ids starting with ``prefix`` are models of
    #: another wire protocol (openai-official's ``text-embedding-*`` ids are embedding models,
    #: 04 §2), so no Responses request is built for them.
    foreign_models: tuple[tuple[str, str], ...] = ()

    def generation(self, key: str) -> Generation:
        """Return the first generation row for the lower-cased model id ``key``."""
        return next(row for row in self.generations if row.matches(key))

    def foreign_protocol(self, key: str) -> str | None:
        """The protocol the lower-cased model id ``key`` belongs to when it is not this one."""
        return next((name for prefix, name in self.foreign_models if key.startswith(prefix)), None)

    def text_only(self, key: str) -> bool:
        """Whether the lower-cased model id ``key`` takes no images (05 §1)."""
        pattern = self.text_only_ids
        return pattern is not None and bool(pattern.fullmatch(key.rsplit("/", 1)[-1]))


#: 05 §2.2: GPT-6 except Luna rejects "none" and runs at its lowest effort instead.
_OPENAI_GENERATIONS: Final = (
    Generation(("gpt-6",), ("gpt-6-luna",), {**_IDENTITY, _L.NONE: "low"}, _ALL_CHOICES),
    Generation((), (), _IDENTITY, _ALL_CHOICES),
)

#: openai-official: OpenAI's own API.
OPENAI: Final = ResponsesProfile(
    vendor="OpenAI",
    generations=_OPENAI_GENERATIONS,
    temperature=Temperature.ONLY_DEFAULT,
    summary=Summary.ALWAYS,
    replay=ReasoningReplay.BY_CHANNEL_ENCRYPTED_AS_SUMMARY,
    include=("reasoning.encrypted_content",),
    tool_name_lists=True,
    phases=True,
    high_detail_token="gpt-5.6",
    sampling=attrs.evolve(_RESPONSES_SAMPLING, top_p=TopP.ONLY_DEFAULT),
    foreign_models=(("text-embedding-", "openai-embedding"),),
)
#: openai-responses: any Responses endpoint.
COMPATIBLE: Final = ResponsesProfile(
    vendor="OpenAI",
    generations=_OPENAI_GENERATIONS,
    temperature=Temperature.SENT,
    summary=Summary.WITH_EFFORT,
    replay=ReasoningReplay.BY_CHANNEL,
    tool_name_lists=True,
    phases=True,
    high_detail_token="gpt-5.6",
)
#: deepseek-official: 05 §2.6, every model has one effort row.
DEEPSEEK: Final = ResponsesProfile(
    vendor="DeepSeek",
    generations=(
        Generation(
            (), (), {**_IDENTITY, _L.MEDIUM: "high", _L.XHIGH: "high"},
            frozenset({"auto", "none"}), priority_tier=False,
        ),
    ),
    temperature=Temperature.ONLY_DEFAULT,
    summary=Summary.ALWAYS,
    replay=ReasoningReplay.REBUILT,
    text_only_ids=re.compile(r"deepseek-v4-(flash|pro)(-\d{4})?"),
    # DeepSeek's API documents JSON output (json_object) and no schema-following mode.
    sampling=attrs.evolve(_RESPONSES_SAMPLING, top_p=TopP.ONLY_DEFAULT,
                          formats=("json_object",)),
)
#: minimax-official: 05 §2.7, M3.1-Flash (``m3.1``) always reasons; M3 stops at high.
MINIMAX: Final = ResponsesProfile(
    vendor="MiniMax",
    generations=(
        Generation(
            ("m3.1",), (), {**_IDENTITY, _L.NONE: "low"}, frozenset({"auto"}),
            priority_tier=False,
        ),
        Generation(
            (), (), {**_IDENTITY, _L.XHIGH: "high", _L.MAX: "high"}, frozenset({"auto", "none"})
        ),
    ),
    temperature=Temperature.ZERO_TO_ONE,
    summary=Summary.NEVER,
    replay=ReasoningReplay.REBUILT_WITHOUT_SUMMARY,
    whole_calls=True,
    # MiniMax documents top_p in (0, 1] and no structured output on its Responses endpoint.
    sampling=attrs.evolve(_RESPONSES_SAMPLING, formats=()),
)
