"""Per-client data of the Responses protocol (08 D63): one profile per client type.

The machine and the builder read these fields; neither knows client names. The registry rows
in ``adapters.clients`` name the profile of each client type.
"""

from __future__ import annotations

from typing import Final, final

import attrs

__all__ = ["COMPATIBLE", "DEEPSEEK", "MINIMAX", "OPENAI", "ResponsesProfile"]


@final
@attrs.frozen
class ResponsesProfile:
    """What differs between the clients of the Responses protocol."""


#: openai-official: OpenAI's own API.
OPENAI: Final = ResponsesProfile()
#: openai-responses: any Responses endpoint.
COMPATIBLE: Final = ResponsesProfile()
#: deepseek-official.
DEEPSEEK: Final = ResponsesProfile()
#: minimax-official.
MINIMAX: Final = ResponsesProfile()
