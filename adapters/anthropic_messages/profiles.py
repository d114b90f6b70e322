"""Per-client data of the Anthropic Messages protocol (08 D63): one profile per client type.

The machine and the builder read these fields; neither knows client names. The registry rows
in ``adapters._rows`` name the profile of each client type, and ``BEDROCK`` is the profile of
anthropic-official's Amazon Bedrock route (``bedrock://<region>``, 08 D72). They differ only
in what the request may carry (05 §2.1, §2.8, §4.1, §5); the stream reads the same on every
one (08 D32).
"""

from __future__ import annotations

import enum
from typing import Final, NamedTuple, final

import attrs

from adapters._sampling import Sampling, TopP

__all__ = [
    "BEDROCK",
    "COMPATIBLE",
    "OFFICIAL",
    "AnthropicProfile",
    "CacheControl",
    "Generation",
    "Thinking",
]


class Thinking(NamedTuple):
    """What one thinking level sends: the ``thinking.type`` and the ``output_config.effort``."""

    type: str
    effort: str | None


_DISABLED: Final = Thinking("disabled", None)
_BETWEEN_TOOLS: Final = Thinking("between_tools", None)
_LOW: Final = Thinking("adaptive", "low")

#: The keys of 08 D74 on the Messages API (Anthropic's Messages reference and "Structured
#: outputs"): ``top_p``, ``stop_sequences``, and ``output_config.format`` as ``json_schema``
#: (Claude 4.5 and later, so every generation here; always enforced, whatever ``strict``
#: says). There is no seed and no plain JSON mode, so those are refused.
_MESSAGES_SAMPLING: Final = Sampling(seed=None, formats=("json_schema",),
                                     detail="the Messages API has no {key}")


class CacheControl(enum.Enum):
    """Where ``prompt_caching`` goes in the request (05 §4.1)."""

    #: A top-level ``cache_control`` (anthropic-official on Anthropic's API).
    TOP_LEVEL = "top-level"
    #: On the last content block of the last user message, with a ``ttl`` (Bedrock).
    LAST_USER_BLOCK = "last-user-block"
    #: Nowhere: the endpoint takes only the default, any other value is refused
    #: (ant-messages).
    DEFAULT_ONLY = "default-only"


class Generation(NamedTuple):
    """One row of 05 §2.1 and §4.1: a model generation and what it accepts."""

    #: Which models the row is for.
    name: str
    #: The version token matched on the lower-cased id (``None``: the row every other id uses).
    token: str | None
    #: What ``thinking_level: none`` sends: the off switch, or the least thinking allowed.
    none: Thinking
    #: The effort ``xhigh`` runs at.
    xhigh_effort: str
    #: Whether ``tool_choice`` ``"required"`` and lists of names are accepted.
    forced_tool_choice: bool
    #: Whether ``fast_mode`` is accepted.
    fast_mode: bool


@final
@attrs.frozen
class AnthropicProfile:
    """What differs between the clients of the Anthropic Messages protocol."""

    #: Generation rows, matched by their version token on the lower-cased model id, first
    #: match wins; family names ("claude") decide nothing (RFC-0003 §6.1, 08 D9).
    generations: tuple[Generation, ...]
    #: The row of every model id that no row of ``generations`` matches.
    other_models: Generation
    #: Claude models only run at temperature 1.0: unset or 1.0 is accepted and not sent, any
    #: other value raises. Otherwise ``temperature`` is sent as given (05 §4.1).
    temperature_fixed: bool
    #: Where ``prompt_caching`` is sent (05 §4.1).
    cache_control: CacheControl
    #: Thinking without a signature is replayed without a ``signature`` key; otherwise it is
    #: left out of the request (05 §5, 08 D30).
    replays_unsigned_thinking: bool
    #: Whether the endpoint takes ``fast_mode`` at all; where it does, the generation row
    #: decides (05 §4.1: Bedrock refuses it on every model).
    fast_mode: bool = True
    #: Which keys of 08 D74 are sent; ``top_p`` follows the temperature rule (08 D74).
    sampling: Sampling = _MESSAGES_SAMPLING


#: anthropic-official: Anthropic's own API and its model generations (05 §1, §2.1, §4.1).
#: ``fable-5-1`` comes before ``fable-5`` because its tool-choice and fast-mode rules differ.
#: Every id without a token of its own is Claude 4.7 or later (Opus 4.8, Opus 5, Sonnet 5),
#: whose off switch is ``disabled``.
OFFICIAL: Final = AnthropicProfile(
    generations=(
        Generation(
            "Claude 4.6", "4-6", _DISABLED, "high", forced_tool_choice=True, fast_mode=False
        ),
        Generation("Opus 5.5", "opus-5-5", _LOW, "xhigh", forced_tool_choice=False, fast_mode=True),
        Generation(
            "Fable 5.1", "fable-5-1", _LOW, "xhigh", forced_tool_choice=False, fast_mode=False
        ),
        Generation("Fable 5", "fable-5", _LOW, "xhigh", forced_tool_choice=True, fast_mode=True),
        Generation(
            "Haiku 5.5", "haiku-5-5", _LOW, "xhigh", forced_tool_choice=False, fast_mode=False
        ),
        Generation(
            "Sonnet 5.5",
            "sonnet-5-5",
            _BETWEEN_TOOLS,
            "xhigh",
            forced_tool_choice=False,
            fast_mode=False,
        ),
    ),
    other_models=Generation(
        "Claude 4.7 and later", None, _DISABLED, "xhigh", forced_tool_choice=True, fast_mode=True
    ),
    temperature_fixed=True,
    cache_control=CacheControl.TOP_LEVEL,
    replays_unsigned_thinking=False,
    sampling=attrs.evolve(_MESSAGES_SAMPLING, top_p=TopP.ONLY_DEFAULT),
)
#: anthropic-official on Amazon Bedrock (08 D72): the same generations, but prompt caching
#: marks the last block of the last user message, and fast mode is refused (05 §4.1).
BEDROCK: Final = attrs.evolve(
    OFFICIAL, cache_control=CacheControl.LAST_USER_BLOCK, fast_mode=False
)
#: ant-messages: any endpoint that speaks the Messages API. It sends whatever the caller asks
#: for, whatever the model: the endpoint decides how a level runs (05 §2.8).
COMPATIBLE: Final = AnthropicProfile(
    generations=(),
    other_models=Generation(
        "any model", None, _DISABLED, "xhigh", forced_tool_choice=True, fast_mode=True
    ),
    temperature_fixed=False,
    cache_control=CacheControl.DEFAULT_ONLY,
    replays_unsigned_thinking=True,
)
