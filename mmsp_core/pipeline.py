"""PLACEHOLDER: replaced by the real pipeline within the hour."""
from __future__ import annotations
from typing import Protocol
from .model import UniEvent
from .sse import SSEEvent


class Machine(Protocol):
    def next_events(self, sse: SSEEvent) -> list[UniEvent]: ...
    def finish(self) -> list[UniEvent]: ...
