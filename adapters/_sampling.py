"""The sampling and structured-output keys of UniConfig (08 D74), shared by the builders.

``top_p``, ``stop_sequences``, ``seed`` and ``response_format`` are mapped explicitly per
client and per generation, or refused with ``UnsupportedParameterError`` before any request
(RFC-0003 §6): never dropped silently. A profile says which of them an endpoint takes with a
``Sampling`` record; ``check_sampling`` refuses the others, and each protocol writes the
accepted ones in its own body shape. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, final

import attrs

from mmsp_core.errors import UnsupportedParameterError
from mmsp_core.model import UniConfig
from mmsp_core.wire import MAX_STOP_SEQUENCES

__all__ = ["ALL_SAMPLING", "NO_SAMPLING", "SAMPLING_KEYS", "Sampling", "check_sampling",
           "refuse_keys"]

#: The four keys of 08 D74, in the order their refusals are checked.
SAMPLING_KEYS: Final = ("top_p", "stop_sequences", "seed", "response_format")


@final
@attrs.frozen
class Sampling:
    """Which keys of 08 D74 an endpoint (or one generation of its models) takes.

    ``stop_sequences`` is how many stop sequences it takes (0: none; a config holds at most
    ``MAX_STOP_SEQUENCES``); ``formats`` are the ``response_format`` types it takes
    (``"json_schema"``, ``"json_object"``); ``detail`` is the reason of a refusal, with
    ``{client}`` and ``{key}`` filled in.
    """

    top_p: bool = True
    stop_sequences: int = MAX_STOP_SEQUENCES
    seed: bool = True
    formats: tuple[str, ...] = ("json_schema", "json_object")
    detail: str = "{client} does not take {key}"


#: An endpoint that takes all four keys and both formats.
ALL_SAMPLING: Final = Sampling()
#: An endpoint that takes none of them.
NO_SAMPLING: Final = Sampling(False, 0, False, ())


def refuse_keys(client: str, config: UniConfig, keys: Iterable[str], detail: str) -> None:
    """Refuse the first of ``keys`` that ``config`` sets (RFC-0003 §6.2).

    Raises:
        UnsupportedParameterError: ``parameter`` the key, ``detail`` saying why.
    """
    for key in keys:
        if getattr(config, key) is not None:
            raise UnsupportedParameterError(client, key, detail=detail)


def check_sampling(client: str, config: UniConfig, sampling: Sampling) -> None:
    """Refuse each key of 08 D74 that ``config`` sets and ``sampling`` does not take, in the
    order of ``SAMPLING_KEYS`` (RFC-0003 §6.2).

    Raises:
        UnsupportedParameterError: ``parameter`` the key; for ``stop_sequences``, more than
            the endpoint takes; for ``response_format``, a type outside ``sampling.formats``
            (the accepted ones named).
    """
    for key in SAMPLING_KEYS[:3]:
        if not getattr(sampling, key) and getattr(config, key) is not None:
            detail = sampling.detail.format(client=client, key=key)
            raise UnsupportedParameterError(client, key, detail=detail)
    stops = config.stop_sequences
    if stops is not None and len(stops) > sampling.stop_sequences:
        detail = f"{client} takes at most {sampling.stop_sequences} stop sequences"
        raise UnsupportedParameterError(client, "stop_sequences", detail=detail)
    asked = config.response_format
    if asked is not None and asked.type not in sampling.formats:
        accepted = " or ".join(sampling.formats) or "no response_format"
        raise UnsupportedParameterError(
            client, "response_format", detail=f"{client} takes {accepted}, not {asked.type}"
        )
