"""Failover within a group of rows (08 D77): which row of a group serves a request, and which
is tried next when one fails before its first public event.

Rows sharing a ``server_model_id`` form a group (``config``). A request's rows come one at a
time from ``Group.attempts``, each decided when it is asked for:

- the rows not cooling down and not yet tried for this request, in file order, or, when a row
  of the group has a ``weight``, by a weighted pick among them (a row without one weighs 1);
- when every row of the group is cooling down and none was tried yet, the one that failed
  longest ago; once one was tried, no cooling row is.

A row's own retries (08 D21, the client's ``max_retries``) run within its attempt. The gateway
moves to the next row only when the attempt raised, before its first public event, an error
for which ``fails_over`` holds (a retryable ``MMSPError``), and tells the group
(``Group.failed``): the row cools down for its ``cooldown_s``. After the first event nothing
is tried again. A row that gives a first event (``Group.served``) is no longer cooling down.

The module is pure: the clock (seconds, only differences are read) and the random draw
(uniform in [0, 1)) are arguments, so tests move them instead of sleeping. Its state is one
time per row of the group, bounded by the configuration.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import final

from mmsp_core.errors import MMSPError

from .config import ModelRow

__all__ = ["Group", "fails_over", "groups", "places"]

Clock = Callable[[], float]
Draw = Callable[[], float]


def fails_over(exc: BaseException) -> bool:
    """Whether ``exc``, raised by a row's call before its first public event, moves the
    request to the next row of its group: a retryable ``MMSPError`` (08 D77; ``retryable``, 08
    D48: an overload, a 429 or 5xx, a connection failure, a timeout, a cut stream)."""
    return isinstance(exc, MMSPError) and exc.retryable


@final
class Group:
    """The rows serving one ``server_model_id`` and when each last failed over (module doc).

    Args:
        rows: the group's rows, in file order; at least one.
        clock: seconds, read to start and check cooldowns.
        draw: a number uniform in [0, 1), read once per weighted pick.

    Raises:
        ValueError: ``rows`` is empty.
    """

    def __init__(
        self,
        rows: Sequence[ModelRow],
        *,
        clock: Clock = time.monotonic,
        draw: Draw = random.random,
    ) -> None:
        if not rows:
            raise ValueError("a group has at least one row")
        self.rows = tuple(rows)
        self._clock = clock
        self._draw = draw
        self._weighted = any(row.weight is not None for row in self.rows)
        #: When each row that is or was cooling down last failed over.
        self._failed_at: dict[ModelRow, float] = {}

    def attempts(self) -> Iterator[ModelRow]:
        """The rows to try for one request, in order, each chosen when asked for (module
        doc); the first one always comes."""
        tried: list[ModelRow] = []
        while (row := self._next(tried)) is not None:
            tried.append(row)
            yield row

    def failed(self, row: ModelRow) -> None:
        """Note that ``row`` failed over: it cools down for its ``cooldown_s`` from now."""
        self._failed_at[row] = self._clock()

    def served(self, row: ModelRow) -> None:
        """Note that ``row`` gave a first public event: it no longer cools down."""
        self._failed_at.pop(row, None)

    def cooling(self, row: ModelRow, now: float) -> bool:
        """Whether ``row`` cools down at ``now`` (a time of the group's clock)."""
        failed_at = self._failed_at.get(row)
        return failed_at is not None and now - failed_at < row.cooldown_s

    def _next(self, tried: Sequence[ModelRow]) -> ModelRow | None:
        """The row to try after ``tried``, ``None`` when there is none (module doc)."""
        now = self._clock()
        ready = [row for row in self.rows if row not in tried and not self.cooling(row, now)]
        if ready:
            return self._pick(ready)
        if tried:
            return None
        return min(self.rows, key=self._failed_at.__getitem__)  # every row cools down

    def _pick(self, ready: Sequence[ModelRow]) -> ModelRow:
        """The first of ``ready`` in file order, or a weighted pick among them."""
        if not self._weighted or len(ready) == 1:
            return ready[0]
        weights = [1.0 if row.weight is None else row.weight for row in ready]
        point = self._draw() * sum(weights)
        for row, weight in zip(ready, weights, strict=True):
            point -= weight
            if point < 0:
                return row
        return ready[-1]  # the draw's upper edge, reached through rounding


def places(rows: Iterable[ModelRow]) -> dict[ModelRow, str]:
    """What logs, metrics and spans call each of ``rows`` (the configuration's, in file
    order): its place in the file, ``models[<i>]``, as configuration errors name it."""
    return {row: f"models[{index}]" for index, row in enumerate(rows)}


def groups(
    rows: Iterable[ModelRow], *, clock: Clock = time.monotonic, draw: Draw = random.random
) -> dict[str, Group]:
    """The groups of ``rows`` by ``server_model_id``, in order of their first row, each
    group's rows in file order."""
    members: dict[str, list[ModelRow]] = {}
    for row in rows:
        members.setdefault(row.server_model_id, []).append(row)
    return {served: Group(group, clock=clock, draw=draw) for served, group in members.items()}
