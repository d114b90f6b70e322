"""The sampling and structured-output keys of UniConfig (08 D74), shared by the builders.

``top_p``, ``stop_sequences``, ``seed`` and ``response_format`` are mapped explicitly per
client and per generation, or refused with ``UnsupportedParameterError`` before any request
(RFC-0003 §6): never dropped silently. A profile says which of them an endpoint takes with a
``Sampling`` record; ``check_sampling`` refuses the others, and each protocol writes the
accepted ones in its own body shape. Pure.
"""

from __future__ import annotations

import enum
from typing import Final, final

import attrs

from mmsp_core.errors import UnsupportedParameterError
from mmsp_core.model import UniConfig
from mmsp_core.wire import MAX_STOP_SEQUENCES, SEED_RANGE

__all__ = [
    "ALL_SAMPLING",
    "NO_SAMPLING",
    "SAMPLING_KEYS",
    "Sampling",
    "TopP",
    "check_sampling",
    "top_p_to_send",
]

#: The four keys of 08 D74, in the order their refusals are checked.
SAMPLING_KEYS: Final = ("top_p", "stop_sequences", "seed", "response_format")


class TopP(enum.Enum):
    """Which ``top_p`` an endpoint takes (08 D74)."""

    #: Any value, sent as given.
    SENT = "sent"
    #: Only 1.0, the default, which is not sent; any other value is refused: the rule of a
    #: generation that fixes its temperature, applied to ``top_p`` as 08 D74 says.
    ONLY_DEFAULT = "only-default"
    #: No value at all.
    REFUSED = "refused"


@final
@attrs.frozen
class Sampling:
    """Which keys of 08 D74 an endpoint (or one generation of its models) takes.

    ``stop_sequences`` is how many stop sequences it takes (0: none; a config holds at most
    ``MAX_STOP_SEQUENCES``); ``seed`` the seeds it takes (``None``: none; a config's seed is
    in ``SEED_RANGE``); ``formats`` are the ``response_format`` types it takes
    (``"json_schema"``, ``"json_object"``); ``detail`` is the reason of a refusal, with
    ``{client}`` and ``{key}`` filled in.
    """

    top_p: TopP = TopP.SENT
    stop_sequences: int = MAX_STOP_SEQUENCES
    seed: range | None = SEED_RANGE
    formats: tuple[str, ...] = ("json_schema", "json_object")
    detail: str = "{client} does not take {key}"


#: An endpoint that takes all four keys and both formats.
ALL_SAMPLING: Final = Sampling()
#: An endpoint that takes none of them.
NO_SAMPLING: Final = Sampling(TopP.REFUSED, 0, None, ())


def check_sampling(client: str, config: UniConfig, sampling: Sampling) -> None:
    """Refuse each key of 08 D74 that ``config`` sets and ``sampling`` does not take, in the
    order of ``SAMPLING_KEYS`` (RFC-0003 §6.2).

    Raises:
        UnsupportedParameterError: ``parameter`` the key: a key the endpoint does not take,
            a ``top_p`` other than 1.0 where only the default is taken, more stop sequences
            than it takes, a seed outside its range, a ``response_format`` type outside
            ``sampling.formats``.
    """

    def refused(key: str) -> UnsupportedParameterError:
        detail = sampling.detail.format(client=client, key=key)
        return UnsupportedParameterError(client, key, detail=detail)

    top_p, stops = config.top_p, config.stop_sequences
    if top_p is not None and sampling.top_p is TopP.REFUSED:
        raise refused("top_p")
    if top_p is not None and sampling.top_p is TopP.ONLY_DEFAULT and top_p != 1.0:
        detail = "only 1.0 is accepted, as for temperature"
        raise UnsupportedParameterError(client, "top_p", detail=detail)
    if stops is not None and not sampling.stop_sequences:
        raise refused("stop_sequences")
    if stops is not None and len(stops) > sampling.stop_sequences:
        detail = f"{client} takes at most {sampling.stop_sequences} stop sequences"
        raise UnsupportedParameterError(client, "stop_sequences", detail=detail)
    seeds, seed = sampling.seed, config.seed
    if seed is not None and seeds is None:
        raise refused("seed")
    if seed is not None and seeds is not None and seed not in seeds:
        detail = f"{client} takes a seed from {seeds.start} to {seeds.stop - 1}"
        raise UnsupportedParameterError(client, "seed", detail=detail)
    asked = config.response_format
    if asked is not None and not sampling.formats:
        raise refused("response_format")
    if asked is not None and asked.type not in sampling.formats:
        detail = f"{client} takes only {' or '.join(sampling.formats)}, not {asked.type}"
        raise UnsupportedParameterError(client, "response_format", detail=detail)


def top_p_to_send(config: UniConfig, sampling: Sampling) -> float | None:
    """The ``top_p`` to write into the body, ``None`` for none (after ``check_sampling``)."""
    return config.top_p if sampling.top_p is TopP.SENT else None
