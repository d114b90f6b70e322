"""The two-speaker script of a Google speech request (01 §3, 03 §2, 05 §1), for both Google
generation clients (``google-genai`` and ``google-interactions``).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from mmsp_core.errors import InvalidMessageError

__all__ = ["SCRIPT_SPLIT_TOKEN", "script_turns"]

#: The speech generation that takes a two-speaker script split into turns (05 §1).
SCRIPT_SPLIT_TOKEN: Final = "gemini-3.8"


def script_turns(
    client: str, index: int, script: str, speakers: Sequence[str]
) -> list[tuple[str, str]]:
    """The turns of a two-speaker script, ``(speaker, what they say)`` in order (01 §3: one
    ``Name: line`` per turn), for both Google clients.

    Every line that is not blank opens, after any indentation, with ``Name:`` for one of the
    configured ``speakers``; the turn is the rest of the line, stripped. A blank line carries
    nothing to speak and is passed over (scripts often separate turns so), and so is a turn
    with nothing after its label.

    Raises:
        InvalidMessageError: ``item_type="text"``, ``message_index=index`` (03 §2): a line
            that opens with no speaker's label (a label names the voice of its line), or a
            script with nothing to say.
    """
    labels = sorted(((f"{name}:", name) for name in speakers), key=lambda pair: -len(pair[0]))
    turns = []
    for number, line in enumerate(script.splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        found = next(((label, name) for label, name in labels if stripped.startswith(label)),
                     None)
        if found is None:
            raise InvalidMessageError(
                client, "text", index,
                detail=f"line {number} of the two-speaker script opens with none of the "
                f"labels {[f'{name}:' for name in speakers]}: every line is one speaker's turn",
            )
        label, name = found
        said = stripped[len(label):].strip()
        if said:
            turns.append((name, said))
    if not turns:
        raise InvalidMessageError(
            client, "text", index, detail="the two-speaker script has nothing to say"
        )
    return turns
