"""Per-client data of the Chat Completions protocol (08 D63): one profile per client type.

The machine and the builder read these fields; neither knows client names. The registry rows
in ``adapters.clients`` name the profile of each client type.
"""

from __future__ import annotations

from typing import Final, final

import attrs

__all__ = ["COMPATIBLE", "MOONSHOT", "VLLM", "ZAI", "ChatProfile"]


@final
@attrs.frozen
class ChatProfile:
    """What differs between the clients of the Chat Completions protocol."""


#: openai-chat: any Chat Completions endpoint.
COMPATIBLE: Final = ChatProfile()
#: openai-chat-vllm-adapter.
VLLM: Final = ChatProfile()
#: zai-official (GLM).
ZAI: Final = ChatProfile()
#: moonshot-official (Kimi).
MOONSHOT: Final = ChatProfile()
