"""The request-builder skeleton every protocol fills in (spec 02 §8, 05 §5).

A builder does the same work on every protocol: map the config (its errors come first, 02 §8),
then walk the messages and their items in order, converting each item with the protocol's
converter for its kind and refusing the kinds the protocol cannot carry, then assemble the
body. ``walk_messages`` is that one walk; a protocol supplies a ``Converters`` table, so
what each protocol can carry is declared in one place, and only the assembly of converted
pieces into the protocol's own body shape stays in the protocol's package.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final, Generic, TypeVar, final

import attrs

from mmsp_core.errors import InvalidMessageError
from mmsp_core.model import InlineThinkingDone, Item, ThinkingDone, UniMessage

__all__ = ["Converters", "MessageContext", "WalkedMessage", "item_kind", "walk_messages"]

_Part = TypeVar("_Part")


@final
@attrs.frozen
class MessageContext:
    """Where the walk is: for converters that raise, or that depend on the message's role."""

    client: str
    index: int
    message: UniMessage


@final
@attrs.frozen
class WalkedMessage(Generic[_Part]):
    """One message and the converted pieces of its items, in item order."""

    index: int
    message: UniMessage
    parts: list[_Part]


#: item class -> converter. A converter returns the protocol's piece for the item, or ``None``
#: when the item is deliberately left out (thinking a protocol cannot replay, 08 D30).
Converters = Mapping[type, Callable[[MessageContext, Item], _Part | None]]

#: Item classes whose pieces are not content on their own: a message that sends nothing else
#: is refused, whether its thinking is signed, replayed or left out (08 D67).
_THINKING: Final = (ThinkingDone, InlineThinkingDone)
_NOTHING_SENDABLE: Final = "nothing to send: a message needs content besides thinking"


def item_kind(item: object) -> str:
    """The kind of an item as spec 03 names it: ``"inline_data"``, not ``"inline_data.done"``."""
    return str(getattr(item, "type", type(item).__name__)).partition(".")[0]


def walk_messages(
    client: str,
    messages: Sequence[UniMessage],
    converters: Converters[_Part],
    *,
    protocol_label: str,
) -> list[WalkedMessage[_Part]]:
    """Convert every item of every message with ``converters``, in order (05 §5).

    A message must send something besides thinking: thinking, signed or not, replayed or left
    out, does not count as content on its own (RFC-0003 §3.3, 08 D30, D67), so the rule holds
    on every protocol whatever its converters make of thinking.

    Raises:
        InvalidMessageError: an item kind without a converter (``item_type`` = its bare kind,
            ``protocol_label`` in the detail), or a message with nothing sendable but thinking,
            or nothing at all (``message_index``, ``item_type=None``); and whatever a
            converter raises.
    """
    walked: list[WalkedMessage[_Part]] = []
    for index, message in enumerate(messages):
        context = MessageContext(client, index, message)
        parts: list[_Part] = []
        content = False
        for item in message.content_items:
            converter = converters.get(type(item))
            if converter is None:
                raise InvalidMessageError(
                    client, item_kind(item), index, detail=f"{protocol_label} cannot take this item"
                )
            part = converter(context, item)
            if part is not None:
                parts.append(part)
                content = content or not isinstance(item, _THINKING)
        if not content:
            raise InvalidMessageError(client, None, index, detail=_NOTHING_SENDABLE)
        walked.append(WalkedMessage(index, message, parts))
    return walked
