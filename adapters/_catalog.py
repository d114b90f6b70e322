# ruff: noqa: E501  (one catalog row per line, as in the spec table)
"""The model catalog of ``list_supported_models`` (spec 04 §7), as a Python data module (08 D15).

One row per model, copied verbatim from the table of spec 04 §7, in its order:
``(model, client, base_url, input modalities, output modalities, context window, prices)``.
Modalities are the table's comma-joined names (spec 01 §1 ``Modality``); the context window is
``None`` where unpublished; prices are USD per million tokens ``(prompt, cached, output)`` with
``cached`` ``None`` where unpublished, or ``None`` for the rows without pricing. The output price
is what both ``thoughts_tokens`` and ``response_tokens`` cost (spec 01 §10). CNY list prices are
stored pre-converted at 7 CNY/USD, rounded to 6 decimals.

Nothing here is read at run time from a file; ``adapters._supported.list_supported_models`` builds
the public values from these rows.
"""

from __future__ import annotations

from typing import Final, NamedTuple

__all__ = ["CATALOG", "CatalogRow"]


class CatalogRow(NamedTuple):
    """One row of the spec 04 §7 table."""

    model: str
    client: str
    base_url: str
    inputs: str
    outputs: str
    context_window: int | None
    prices: tuple[float, float | None, float] | None


GEMINI_API: Final = "https://generativelanguage.googleapis.com"
ANTHROPIC: Final = "https://api.anthropic.com"
OPENAI: Final = "https://api.openai.com/v1"
MINIMAX: Final = "https://api.minimax.io/v1"
ZAI: Final = "https://api.z.ai/api/paas/v4/"
MOONSHOT: Final = "https://api.moonshot.cn/v1"
DEEPSEEK: Final = "https://api.deepseek.com"
OPENROUTER: Final = "https://openrouter.ai/api/v1"
SILICONFLOW: Final = "https://api.siliconflow.cn/v1"
VERTEX: Final = "https://aiplatform.googleapis.com"
BEDROCK: Final = "bedrock://us-east-1"
TOKENDANCE: Final = "https://tokendance.space/gateway/v1"
TOKENDANCE_ANTHROPIC: Final = "https://tokendance.space/gateway"

_ROWS: Final = (
    ("gemini-4-argon", "google-official", GEMINI_API, "Text,Image,Video,Audio", "Text", 1048576, (4.0, 0.2, 20.0)),
    ("gemini-3.8-flash", "google-official", GEMINI_API, "Text,Image,Video,Audio", "Text", 1048576, (1.5, 0.15, 7.5)),
    ("gemini-3.7-flash", "google-official", GEMINI_API, "Text,Image,Video,Audio", "Text", 1048576, (1.5, 0.15, 7.5)),
    ("gemini-3.6-flash", "google-official", GEMINI_API, "Text,Image,Video,Audio", "Text", 1048576, (1.5, 0.15, 7.5)),
    ("gemini-3.5-flash-lite", "google-official", GEMINI_API, "Text,Image,Video,Audio", "Text", 1048576, (0.3, 0.03, 2.5)),
    ("gemini-3.5-flash", "google-official", GEMINI_API, "Text,Image,Video,Audio", "Text", 1048576, (1.5, 0.15, 9.0)),
    ("gemini-3.1-flash-lite-image", "google-official", GEMINI_API, "Text,Image", "Image", None, None),
    ("gemini-3.1-flash-image", "google-official", GEMINI_API, "Text,Image", "Image", None, None),
    ("gemini-3.8-flash-tts", "google-official", GEMINI_API, "Text", "Audio", None, None),
    ("gemini-3.8-flash-lite-tts", "google-official", GEMINI_API, "Text", "Audio", None, None),
    ("gemini-3.1-flash-tts-preview", "google-official", GEMINI_API, "Text", "Audio", None, None),
    ("gemini-embedding-2", "google-official", GEMINI_API, "Text", "Embed", None, None),
    ("claude-fable-5-1", "anthropic-official", ANTHROPIC, "Text,Image", "Text", 1000000, (10.0, 0.25, 50.0)),
    ("claude-opus-5-5", "anthropic-official", ANTHROPIC, "Text,Image", "Text", 1000000, (4.0, 0.2, 20.0)),
    ("claude-sonnet-5-5", "anthropic-official", ANTHROPIC, "Text,Image", "Text", 1000000, (2.0, 0.1, 10.0)),
    ("claude-haiku-5-5", "anthropic-official", ANTHROPIC, "Text,Image", "Text", 1000000, (0.1, 0.01, 0.5)),
    ("claude-fable-5", "anthropic-official", ANTHROPIC, "Text,Image", "Text", 1000000, (10.0, 1.0, 50.0)),
    ("claude-opus-5", "anthropic-official", ANTHROPIC, "Text,Image", "Text", 1000000, (5.0, 0.5, 25.0)),
    ("claude-sonnet-5", "anthropic-official", ANTHROPIC, "Text,Image", "Text", 1000000, (2.0, 0.2, 10.0)),
    ("claude-opus-4-8", "anthropic-official", ANTHROPIC, "Text,Image", "Text", 1000000, (5.0, 0.5, 25.0)),
    ("claude-sonnet-4-6", "anthropic-official", ANTHROPIC, "Text,Image", "Text", 1000000, (3.0, 0.3, 15.0)),
    ("gpt-6.1-sol", "openai-official", OPENAI, "Text,Image", "Text", 1050000, (2.5, 0.1, 10.0)),
    ("gpt-6-astra", "openai-official", OPENAI, "Text,Image", "Text", 1050000, (12.5, 1.0, 50.0)),
    ("gpt-6-luna", "openai-official", OPENAI, "Text,Image", "Text", 1050000, (0.125, 0.01, 0.5)),
    ("gpt-5.6-sol", "openai-official", OPENAI, "Text,Image", "Text", 1050000, (5.0, 0.5, 30.0)),
    ("gpt-5.6-terra", "openai-official", OPENAI, "Text,Image", "Text", 1050000, (2.0, 0.2, 12.0)),
    ("gpt-5.6-luna", "openai-official", OPENAI, "Text,Image", "Text", 1050000, (0.2, 0.02, 1.2)),
    ("gpt-5.5", "openai-official", OPENAI, "Text,Image", "Text", 1050000, (5.0, 0.5, 30.0)),
    ("MiniMax-M3", "minimax-official", MINIMAX, "Text,Image", "Text", 1000000, (0.3, 0.06, 1.2)),
    ("MiniMax-M3.1-Flash", "minimax-official", MINIMAX, "Text,Image", "Text", 1000000, (0.15, 0.015, 0.6)),
    ("text-embedding-3-large", "openai-official", OPENAI, "Text", "Embed", None, (0.13, None, 0.0)),
    ("glm-5.3", "zai-official", ZAI, "Text", "Text", 1000000, (1.4, 0.26, 4.4)),
    ("glm-5.3-flash", "zai-official", ZAI, "Text,Image", "Text", 1000000, (0.15, 0.03, 0.5)),
    ("glm-5.2", "zai-official", ZAI, "Text", "Text", 1000000, (1.4, 0.26, 4.4)),
    ("glm-5.1", "zai-official", ZAI, "Text", "Text", 200000, (1.4, 0.26, 4.4)),
    ("kimi-k3.1-pro", "moonshot-official", MOONSHOT, "Text,Image", "Text", 1048576, (1.857143, 0.185714, 9.714286)),
    ("kimi-k3.1-pro-highspeed", "moonshot-official", MOONSHOT, "Text,Image", "Text", 1048576, (3.714286, 0.185714, 19.428571)),
    ("kimi-k3", "moonshot-official", MOONSHOT, "Text,Image", "Text", 1048576, (2.857143, 0.285714, 14.285714)),
    ("kimi-k2.6", "moonshot-official", MOONSHOT, "Text,Image", "Text", 262144, (0.928571, 0.157143, 3.857143)),
    ("deepseek-flash", "deepseek-official", DEEPSEEK, "Text,Image", "Text", 1000000, (0.142857, 0.002857, 0.571429)),
    ("deepseek-v4-flash", "deepseek-official", DEEPSEEK, "Text", "Text", 1000000, (0.142857, 0.002857, 0.571429)),
    ("deepseek-v4-flash-vision-exp", "deepseek-official", DEEPSEEK, "Text,Image", "Text", 1000000, (0.142857, 0.002857, 0.571429)),
    ("deepseek-v4-pro", "deepseek-official", DEEPSEEK, "Text", "Text", 1000000, (0.642857, 0.021429, 1.928571)),
    ("anthropic/claude-fable-5.1", "openai-responses", OPENROUTER, "Text,Image", "Text", 1000000, (10.0, 0.25, 50.0)),
    ("anthropic/claude-opus-5.5", "openai-responses", OPENROUTER, "Text,Image", "Text", 1000000, (4.0, 0.2, 20.0)),
    ("anthropic/claude-sonnet-5.5", "openai-responses", OPENROUTER, "Text,Image", "Text", 1000000, (2.0, 0.1, 10.0)),
    ("anthropic/claude-haiku-5.5", "openai-responses", OPENROUTER, "Text,Image", "Text", 1000000, (0.1, 0.01, 0.5)),
    ("anthropic/claude-fable-5", "openai-responses", OPENROUTER, "Text,Image", "Text", 1000000, (10.0, 1.0, 50.0)),
    ("anthropic/claude-opus-5", "openai-responses", OPENROUTER, "Text,Image", "Text", 1000000, (5.0, 0.5, 25.0)),
    ("anthropic/claude-opus-4.8", "openai-responses", OPENROUTER, "Text,Image", "Text", 1000000, (5.0, 0.5, 25.0)),
    ("anthropic/claude-opus-4.7", "openai-responses", OPENROUTER, "Text,Image", "Text", 1000000, (5.0, 0.5, 25.0)),
    ("anthropic/claude-sonnet-5", "openai-responses", OPENROUTER, "Text,Image", "Text", 1000000, (2.0, 0.2, 10.0)),
    ("deepseek/deepseek-v4.1-flash", "deepseek-official", OPENROUTER, "Text,Image", "Text", 1048576, (0.028, 0.0016, 0.08)),
    ("deepseek/deepseek-v4.1-flash-1017", "deepseek-official", OPENROUTER, "Text,Image", "Text", 1048576, (0.15, 0.003, 0.6)),
    ("deepseek/deepseek-v4-flash", "deepseek-official", OPENROUTER, "Text", "Text", 1048576, (0.14, 0.028, 0.28)),
    ("deepseek/deepseek-v4-pro", "deepseek-official", OPENROUTER, "Text", "Text", 1048576, (1.74, 0.145, 3.48)),
    ("google/gemini-3.8-flash", "openai-responses", OPENROUTER, "Text,Image", "Text", 1048576, (1.5, 0.15, 7.5)),
    ("google/gemini-3.5-flash", "openai-responses", OPENROUTER, "Text,Image", "Text", 1048576, (1.5, 0.15, 9.0)),
    ("minimax/minimax-m3", "openai-responses", OPENROUTER, "Text,Image", "Text", 1048576, (0.3, 0.06, 1.2)),
    ("minimax/minimax-m3.1-flash:free", "openai-responses", OPENROUTER, "Text,Image", "Text", 1000000, (0.0, None, 0.0)),
    ("moonshotai/kimi-k3.1-pro", "moonshot-official", OPENROUTER, "Text,Image", "Text", 1048576, (2.0, 0.2, 10.0)),
    ("moonshotai/kimi-k3", "moonshot-official", OPENROUTER, "Text,Image", "Text", 1048576, (0.239, 0.21, 10.8)),
    ("moonshotai/kimi-k2.6", "moonshot-official", OPENROUTER, "Text,Image", "Text", 262144, (0.65, 0.15, 3.41)),
    ("nvidia/nemotron-3-ultra-550b-a55b:free", "openai-responses", OPENROUTER, "Text", "Text", 1000000, (0.0, None, 0.0)),
    ("openai/gpt-6.1-sol", "openai-responses", OPENROUTER, "Text,Image", "Text", 1050000, (2.5, 0.1, 10.0)),
    ("openai/gpt-6-astra", "openai-responses", OPENROUTER, "Text,Image", "Text", 1050000, (12.5, 1.0, 50.0)),
    ("openai/gpt-6-luna", "openai-responses", OPENROUTER, "Text,Image", "Text", 1050000, (0.125, 0.01, 0.5)),
    ("openai/gpt-5.6-sol", "openai-responses", OPENROUTER, "Text,Image", "Text", 1050000, (4.0, 0.4, 20.0)),
    ("openai/gpt-5.6-terra", "openai-responses", OPENROUTER, "Text,Image", "Text", 1050000, (2.0, 0.2, 12.0)),
    ("openai/gpt-5.6-luna", "openai-responses", OPENROUTER, "Text,Image", "Text", 1050000, (0.2, 0.02, 1.2)),
    ("openai/gpt-5.5", "openai-responses", OPENROUTER, "Text,Image", "Text", 1050000, (5.0, 0.5, 30.0)),
    ("qwen/qwen3.8-27b", "openai-responses", OPENROUTER, "Text,Image", "Text", 1000000, (0.24, 0.05, 2.2)),
    ("qwen/qwen3-embedding-4b", "openai-embedding", OPENROUTER, "Text", "Embed", 32768, (0.02, None, 0.0)),
    ("stepfun/step-3.7-flash", "openai-responses", OPENROUTER, "Text,Image", "Text", 262144, (0.2, 0.04, 1.15)),
    ("tencent/hy3", "openai-responses", OPENROUTER, "Text", "Text", 262144, (0.0825, 0.020625, 0.33)),
    ("x-ai/grok-4.5", "openai-responses", OPENROUTER, "Text,Image", "Text", 500000, (2.0, 0.3, 6.0)),
    ("xiaomi/mimo-v2.5", "openai-responses", OPENROUTER, "Text,Image", "Text", 1050000, (0.14, 0.0028, 0.28)),
    ("z-ai/glm-5.3", "zai-official", OPENROUTER, "Text", "Text", 1048576, (0.079, 0.078, 1.4)),
    ("z-ai/glm-5.2", "zai-official", OPENROUTER, "Text", "Text", 1048576, (0.62, 0.14, 2.42)),
    ("z-ai/glm-5.1", "zai-official", OPENROUTER, "Text", "Text", 204800, (1.4, 0.26, 4.4)),
    ("deepseek-ai/DeepSeek-V4.1-Flash", "openai-chat", SILICONFLOW, "Text,Image", "Text", 1048576, (0.142857, 0.002857, 0.571429)),
    ("deepseek-ai/DeepSeek-V4-Flash", "openai-chat", SILICONFLOW, "Text", "Text", 1048576, (0.214286, 0.021429, 0.642857)),
    ("deepseek-ai/DeepSeek-V4-Pro", "openai-chat", SILICONFLOW, "Text", "Text", 1048576, (1.714286, 0.142857, 3.428571)),
    ("meituan-longcat/LongCat-2.0", "openai-chat", SILICONFLOW, "Text", "Text", 1048576, (0.714286, 0.014286, 2.857143)),
    ("moonshotai/Kimi-K2.7-Code", "openai-chat", SILICONFLOW, "Text,Image", "Text", 262144, (0.928571, 0.185714, 3.857143)),
    ("zai-org/GLM-5.3", "zai-official", SILICONFLOW, "Text", "Text", 1048576, (1.142857, 0.285714, 4.0)),
    ("zai-org/GLM-5.3-Flash", "zai-official", SILICONFLOW, "Text,Image", "Text", 1048576, (0.114286, 0.032857, 0.4)),
    ("zai-org/GLM-5.2", "zai-official", SILICONFLOW, "Text", "Text", 1048576, (1.142857, 0.285714, 4.0)),
    ("Pro/zai-org/GLM-5.1", "zai-official", SILICONFLOW, "Text", "Text", 202752, (0.857143, 0.185714, 3.428571)),
    ("Pro/moonshotai/Kimi-K2.6", "moonshot-official", SILICONFLOW, "Text,Image", "Text", 262144, (0.928571, 0.157143, 3.857143)),
    ("Qwen/Qwen3.8-27B", "openai-chat", SILICONFLOW, "Text,Image", "Text", 262144, (0.428571, None, 1.714286)),
    ("tencent/Hy4-preview", "openai-chat", SILICONFLOW, "Text", "Text", 1048576, (0.857143, 0.042857, 2.571429)),
    ("Qwen/Qwen3-Embedding-8B", "openai-embedding", SILICONFLOW, "Text", "Embed", 32768, None),
    ("gemini-4-argon", "google-genai", VERTEX, "Text,Image,Video,Audio", "Text", 1048576, (4.0, 0.2, 20.0)),
    ("gemini-3.8-flash", "google-genai", VERTEX, "Text,Image,Video,Audio", "Text", 1048576, (1.5, 0.15, 7.5)),
    ("gemini-3.7-flash", "google-genai", VERTEX, "Text,Image,Video,Audio", "Text", 1048576, (1.5, 0.15, 7.5)),
    ("gemini-3.1-flash-image", "google-genai", VERTEX, "Text,Image", "Image", None, None),
    ("gemini-3.1-flash-tts-preview", "google-genai", VERTEX, "Text", "Audio", None, None),
    ("gemini-embedding-2", "google-genai", VERTEX, "Text", "Embed", None, (0.2, None, 0.0)),
    ("global.anthropic.claude-fable-5-1", "anthropic-official", BEDROCK, "Text,Image", "Text", 1000000, (10.0, 0.25, 50.0)),
    ("global.anthropic.claude-opus-5-5", "anthropic-official", BEDROCK, "Text,Image", "Text", 1000000, (4.0, 0.2, 20.0)),
    ("global.anthropic.claude-sonnet-5-5", "anthropic-official", BEDROCK, "Text,Image", "Text", 1000000, (2.0, 0.1, 10.0)),
    ("global.anthropic.claude-haiku-5-5", "anthropic-official", BEDROCK, "Text,Image", "Text", 1000000, (0.1, 0.01, 0.5)),
    ("global.anthropic.claude-fable-5", "anthropic-official", BEDROCK, "Text,Image", "Text", 1000000, (10.0, 1.0, 50.0)),
    ("global.anthropic.claude-opus-5", "anthropic-official", BEDROCK, "Text,Image", "Text", 1000000, (5.0, 0.5, 25.0)),
    ("global.anthropic.claude-sonnet-5", "anthropic-official", BEDROCK, "Text,Image", "Text", 1000000, (2.0, 0.2, 10.0)),
    ("global.anthropic.claude-opus-4-8", "anthropic-official", BEDROCK, "Text,Image", "Text", 1000000, (5.0, 0.5, 25.0)),
    ("global.anthropic.claude-sonnet-4-6", "anthropic-official", BEDROCK, "Text,Image", "Text", 1000000, (3.0, 0.3, 15.0)),
    ("deepseek-v4.1-flash-1017", "openai-chat", TOKENDANCE, "Text,Image", "Text", 1000000, (0.114286, 0.002286, 0.457143)),
    ("deepseek-v4.1-flash", "openai-chat", TOKENDANCE, "Text,Image", "Text", 1000000, (0.114286, 0.002286, 0.457143)),
    ("deepseek-v4-pro", "openai-chat", TOKENDANCE, "Text", "Text", 1048576, (1.157143, 0.038571, 3.471429)),
    ("minimax-m3", "minimax-official", TOKENDANCE, "Text,Image", "Text", 1000000, None),
    ("minimax-m3.1-flash", "ant-messages", TOKENDANCE_ANTHROPIC, "Text,Image", "Text", 1000000, (0.142857, 0.014286, 0.571429)),
    ("kimi-k3.1-pro", "moonshot-official", TOKENDANCE, "Text,Image", "Text", 1000000, (1.857143, 0.185714, 9.714286)),
    ("kimi-k3", "moonshot-official", TOKENDANCE, "Text,Image", "Text", 1048576, (2.857143, 0.285714, 14.285714)),
    ("kimi-k2.6", "moonshot-official", TOKENDANCE, "Text,Image", "Text", 262144, (0.742857, 0.148571, 3.085714)),
    ("glm-5.3", "zai-official", TOKENDANCE, "Text", "Text", 1000000, (1.028571, 0.257143, 3.6)),
    ("glm-5.3-flash", "zai-official", TOKENDANCE, "Text,Image", "Text", 1000000, (0.102857, 0.029571, 0.36)),
    ("glm-5.2", "zai-official", TOKENDANCE, "Text", "Text", 1000000, (0.914286, 0.228571, 3.2)),
    ("qwen3.8-flash", "openai-responses", TOKENDANCE, "Text,Image", "Text", 1000000, (0.114286, 0.014286, 0.385714)),
    ("qwen3.8-max", "openai-responses", TOKENDANCE, "Text,Image", "Text", 1000000, (1.542857, 0.192857, 4.628571)),
    ("mimo-v2.6-flash", "openai-responses", TOKENDANCE, "Text,Image", "Text", 1000000, (0.142857, 0.002857, 0.285714)),
    ("step-5-preview", "openai-responses", TOKENDANCE, "Text,Image", "Text", 1000000, (1.0, 0.05, 2.857143)),
    ("hy4-preview", "openai-responses", TOKENDANCE, "Text", "Text", 1024000, (0.857143, 0.042857, 2.571429)),
    ("qwen3.7-text-embedding", "openai-embedding", TOKENDANCE, "Text", "Embed", 128000, (0.071429, None, 0.0)),
)

CATALOG: Final[tuple[CatalogRow, ...]] = tuple(CatalogRow(*row) for row in _ROWS)
