"""Per-client data of the Chat Completions protocol (08 D63): one profile per client type.

The builder reads these fields; it knows no client names. The registry rows in
``adapters._rows`` name the profile of each client type. The machine reads none: one
machine serves every Chat client (08 D32).

A profile says what a client's endpoint takes (05 §4.3): how the config maps to body fields,
what it refuses, and per generation of models (rows of lower-cased id tokens, first match
wins, 05 §1, 08 D9) how a thinking level is sent (05 §2.4, §2.5, §2.8), which tool choices
and caching values are accepted, and whether the models read images (05 §5).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, final

import attrs

from adapters._sampling import ALL_SAMPLING, Sampling, TopP
from mmsp_core.model import PromptCaching, ThinkingLevel

__all__ = ["COMPATIBLE", "MOONSHOT", "VLLM", "ZAI", "ChatGeneration", "ChatProfile"]

_L = ThinkingLevel
_JSON = Mapping[str, Any]
#: thinking level -> the body fields that carry it (every level spelled out).
ThinkingFields = Mapping[ThinkingLevel, _JSON]
#: Accepted ``prompt_caching`` values -> the body fields each sends; others are refused.
CachingFields = Mapping[PromptCaching, _JSON]

#: Only the default policy, which sends nothing (05 §4.3).
ONLY_ENABLE: Final[CachingFields] = {PromptCaching.ENABLE: {}}
#: ``fast_mode`` as OpenAI's priority tier (05 §4.3).
PRIORITY_TIER: Final[_JSON] = {"service_tier": "priority"}


@final
@attrs.frozen
class ChatGeneration:
    """What the models of one generation row accept (05 §2, §4.3, §5)."""

    #: How a thinking level is sent; ``None``: it is not sent at all (05 §2.8).
    thinking: ThinkingFields | None = None
    #: The string ``tool_choice`` values accepted (lists of names are refused too);
    #: ``None``: every value, and lists as ``allowed_tools``.
    tool_choices: tuple[str, ...] | None = None
    caching: CachingFields = ONLY_ENABLE
    #: ``trace_id`` is sent as ``prompt_cache_key``.
    trace_id_as_cache_key: bool = False
    #: The models read images (also those of tool results); else ``UnsupportedContentError``.
    images: bool = True


@final
@attrs.frozen
class ChatProfile:
    """What differs between the clients of the Chat Completions protocol.

    The defaults describe a plain Chat Completions endpoint.
    """

    #: ``(token, generation)`` rows: the first token the lower-cased model id contains wins.
    generations: tuple[tuple[str, ChatGeneration], ...] = ()
    #: The generation of ids no row matches.
    default_generation: ChatGeneration = ChatGeneration()
    #: The body field ``max_tokens`` is sent in.
    max_tokens_field: str = "max_completion_tokens"
    #: ``stream_options.include_usage`` is sent (every client but zai-official, 08 D36).
    include_usage: bool = True
    #: The one ``temperature`` accepted, and then never sent; ``None``: any, sent.
    only_temperature: float | None = None
    #: The body fields ``fast_mode`` sends; ``None``: it is refused.
    fast_mode: _JSON | None = PRIORITY_TIER
    #: Which keys of 08 D74 are sent (as ``top_p``, ``stop``, ``seed`` and
    #: ``response_format``, OpenAI's Chat Completions reference); the others are refused.
    sampling: Sampling = ALL_SAMPLING
    #: ``tool_stream: true`` is sent (GLM streams tool arguments only when asked).
    tool_stream: bool = False
    #: Ids containing this token get ``detail: "high"`` on oversized data-URI images (the
    #: GPT-5.6 rule, 05 §1, §5); ``None``: ``detail`` is never sent.
    high_detail_token: str | None = None
    #: Once a message carried thinking, later tool-call turns without any get the reasoning
    #: field(s) seen so far as ``""`` (DeepSeek-style servers demand it, 05 §5).
    empty_reasoning_on_tool_turns: bool = False
    #: Gateway encrypted reasoning is replayed as ``reasoning_details`` (05 §5).
    replays_reasoning_details: bool = False
    #: ``detail`` of the refusals; ``{client}``, ``{model}``, ``{caching}``, ``{accepted}``
    #: (the accepted tool choices) and ``{temperature}`` are filled in.
    temperature_detail: str = "{client} accepts only {temperature}"
    tool_choice_detail: str = "{client} accepts only {accepted}"
    caching_detail: str = "{client} accepts only 'enable'"

    def generation(self, key: str) -> ChatGeneration:
        """The generation of a lower-cased model id (05 §1, 08 D9)."""
        return next(
            (row for token, row in self.generations if token in key), self.default_generation
        )


# --------------------------------------------------------------------------------------------
# openai-chat: any Chat Completions endpoint, no thinking level sent (05 §2.8)
# --------------------------------------------------------------------------------------------

_GPT_5_6: Final = "gpt-5.6"

#: openai-chat: any Chat Completions endpoint (the protocol name as a decode source too).
COMPATIBLE: Final = ChatProfile(
    high_detail_token=_GPT_5_6,
    empty_reasoning_on_tool_turns=True,
    replays_reasoning_details=True,
)

# --------------------------------------------------------------------------------------------
# openai-chat-vllm-adapter (05 §2.8): ``chat_template_kwargs`` per profile row
# --------------------------------------------------------------------------------------------


def _template_kwargs(table: Mapping[ThinkingLevel, _JSON | None]) -> ThinkingFields:
    """Send each level's kwargs as ``chat_template_kwargs``; ``None``: nothing is sent."""
    return {
        level: {} if kwargs is None else {"chat_template_kwargs": kwargs}
        for level, kwargs in table.items()
    }


_P0_QWEN3: Final = _template_kwargs(
    {
        _L.NONE: {"enable_thinking": False},
        _L.LOW: {"enable_thinking": True},
        _L.MEDIUM: {"enable_thinking": True},
        _L.HIGH: {"enable_thinking": True},
        _L.XHIGH: {"enable_thinking": True},
        _L.MAX: {"enable_thinking": True},
    }
)
_P1_QWEN3_8: Final = _template_kwargs(
    {
        _L.NONE: {"enable_thinking": False},
        _L.LOW: {"reasoning_effort": "low"},
        _L.MEDIUM: {"reasoning_effort": "medium"},
        _L.HIGH: {"reasoning_effort": "xhigh"},
        _L.XHIGH: {"reasoning_effort": "xhigh"},
        _L.MAX: {"reasoning_effort": "xhigh"},
    }
)
_P2_DEEPSEEK_V4: Final = _template_kwargs(
    {
        _L.NONE: None,
        _L.LOW: {"thinking": True, "reasoning_effort": "high"},
        _L.MEDIUM: {"thinking": True, "reasoning_effort": "high"},
        _L.HIGH: {"thinking": True, "reasoning_effort": "high"},
        _L.XHIGH: {"thinking": True, "reasoning_effort": "high"},
        _L.MAX: {"thinking": True, "reasoning_effort": "max"},
    }
)
_P3_DEEPSEEK_V4_VISION: Final = _template_kwargs(
    {
        _L.NONE: None,
        _L.LOW: {"thinking": True, "reasoning_effort": "low"},
        _L.MEDIUM: {"thinking": True, "reasoning_effort": "high"},
        _L.HIGH: {"thinking": True, "reasoning_effort": "high"},
        _L.XHIGH: {"thinking": True, "reasoning_effort": "high"},
        _L.MAX: {"thinking": True, "reasoning_effort": "max"},
    }
)
_QWEN3_8: Final = ChatGeneration(thinking=_P1_QWEN3_8)
_QWEN3: Final = ChatGeneration(thinking=_P0_QWEN3)
_DEEPSEEK_V4: Final = ChatGeneration(thinking=_P2_DEEPSEEK_V4)

#: openai-chat-vllm-adapter: openai-chat plus the chat-template thinking switch; an id no
#: row matches gets the Qwen3 switch (P0).
VLLM: Final = attrs.evolve(
    COMPATIBLE,
    generations=(
        ("qwen3.8-flash-next", _QWEN3_8),
        ("qwen3.8-27b", _QWEN3_8),
        ("qwen3.6-35b-a3b", _QWEN3),
        ("qwen3.5-0.8b", _QWEN3),
        ("qwen3.5-9b", _QWEN3),
        ("deepseek-v4-flash-vision-exp", ChatGeneration(thinking=_P3_DEEPSEEK_V4_VISION)),
        ("deepseek-v4-pro", _DEEPSEEK_V4),
        ("deepseek-v4-flash", _DEEPSEEK_V4),
    ),
    default_generation=_QWEN3,
)

# --------------------------------------------------------------------------------------------
# zai-official (05 §2.4, §4.3): extra ``thinking`` and a top-level ``reasoning_effort``
# --------------------------------------------------------------------------------------------

_GLM_ON: Final = {"type": "enabled", "clear_thinking": False}
_GLM_OFF: Final = {"type": "disabled"}

#: GLM-5.3 always thinks: ``none`` runs at the lowest effort.
_GLM_5_3_THINKING: Final[ThinkingFields] = {
    _L.NONE: {"reasoning_effort": "low", "thinking": _GLM_ON},
    _L.LOW: {"reasoning_effort": "low", "thinking": _GLM_ON},
    _L.MEDIUM: {"reasoning_effort": "high", "thinking": _GLM_ON},
    _L.HIGH: {"reasoning_effort": "high", "thinking": _GLM_ON},
    _L.XHIGH: {"reasoning_effort": "max", "thinking": _GLM_ON},
    _L.MAX: {"reasoning_effort": "max", "thinking": _GLM_ON},
}
_GLM_EARLIER_THINKING: Final[ThinkingFields] = {
    _L.NONE: {"thinking": _GLM_OFF},
    _L.LOW: {"reasoning_effort": "low", "thinking": _GLM_ON},
    _L.MEDIUM: {"reasoning_effort": "medium", "thinking": _GLM_ON},
    _L.HIGH: {"reasoning_effort": "high", "thinking": _GLM_ON},
    _L.XHIGH: {"reasoning_effort": "xhigh", "thinking": _GLM_ON},
    _L.MAX: {"reasoning_effort": "max", "thinking": _GLM_ON},
}
_GLM_EARLIER: Final = ChatGeneration(
    thinking=_GLM_EARLIER_THINKING, tool_choices=("auto",), images=False
)
_GLM_5_3: Final = attrs.evolve(_GLM_EARLIER, thinking=_GLM_5_3_THINKING)

#: zai-official (GLM): usage comes unasked (08 D36); only glm-5.3-flash reads images (05 §5).
ZAI: Final = ChatProfile(
    generations=(
        ("glm-5.3-flash", attrs.evolve(_GLM_5_3, images=True)),
        ("glm-5.3", _GLM_5_3),
    ),
    default_generation=_GLM_EARLIER,
    max_tokens_field="max_tokens",
    include_usage=False,
    fast_mode=None,
    tool_stream=True,
    # Z.AI's chat API reference: top_p; one stop word; response_format json_object only; no
    # seed.
    sampling=Sampling(stop_sequences=1, seed=None, formats=("json_object",),
                      detail="GLM takes no {key}"),
    tool_choice_detail="GLM accepts only 'auto'",
)

# --------------------------------------------------------------------------------------------
# moonshot-official (05 §2.5, §4.3): K3 series ``reasoning_effort``, K2 (``k2.``) ``thinking``
# --------------------------------------------------------------------------------------------

_KIMI_K2_ON: Final = {"thinking": {"type": "enabled", "keep": "all"}}

_KIMI_K2: Final = ChatGeneration(
    thinking={
        _L.NONE: {"thinking": {"type": "disabled"}},
        _L.LOW: _KIMI_K2_ON,
        _L.MEDIUM: _KIMI_K2_ON,
        _L.HIGH: _KIMI_K2_ON,
        _L.XHIGH: _KIMI_K2_ON,
        _L.MAX: _KIMI_K2_ON,
    },
    tool_choices=("auto", "none"),
    trace_id_as_cache_key=True,
)
_KIMI_K3: Final = ChatGeneration(
    thinking={
        _L.NONE: {"reasoning_effort": "none"},
        _L.LOW: {"reasoning_effort": "low"},
        _L.MEDIUM: {"reasoning_effort": "high"},
        _L.HIGH: {"reasoning_effort": "high"},
        _L.XHIGH: {"reasoning_effort": "max"},
        _L.MAX: {"reasoning_effort": "max"},
    },
    tool_choices=("auto", "none", "required"),
    caching={
        PromptCaching.ENABLE: {},
        PromptCaching.ENHANCE: {"prompt_cache_options": {"mode": "implicit", "ttl": "1h"}},
    },
)

#: moonshot-official (Kimi): temperature 1.0 only, no fast mode.
MOONSHOT: Final = ChatProfile(
    generations=(("k2.", _KIMI_K2),),
    default_generation=_KIMI_K3,
    only_temperature=1.0,
    fast_mode=None,
    # Kimi's chat API reference: the platform fixes the sampling of kimi models (temperature,
    # top_p), so top_p is refused as temperature is (08 D74); stop is taken, seed is not, and
    # response_format only as json_object.
    sampling=Sampling(top_p=TopP.REFUSED, seed=None, formats=("json_object",),
                      detail="Kimi takes no {key}: the platform fixes its sampling"),
    temperature_detail="Kimi accepts only {temperature}",
    tool_choice_detail="this Kimi model accepts only {accepted}",
    caching_detail="{caching} on {model}",
)
