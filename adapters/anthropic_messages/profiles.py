"""Per-client data of the Anthropic Messages protocol (08 D63): one profile per client type.

The machine and the builder read these fields; neither knows client names. The registry rows
in ``adapters.clients`` name the profile of each client type.
"""

from __future__ import annotations

from typing import Final, final

import attrs

__all__ = ["COMPATIBLE", "OFFICIAL", "AnthropicProfile"]


@final
@attrs.frozen
class AnthropicProfile:
    """What differs between the clients of the Anthropic Messages protocol."""


#: anthropic-official: Anthropic's own API.
OFFICIAL: Final = AnthropicProfile()
#: ant-messages: any endpoint that speaks the Messages API.
COMPATIBLE: Final = AnthropicProfile()
