"""The test suite's side of ``adapters.testing``: where the recorded bodies live.

``check_fixture`` and ``decode_every_way`` are ``adapters.testing``'s ``check_recording`` and
``decode_every_way`` (the checks, and the expected-file format, are documented there).
"""

from __future__ import annotations

from pathlib import Path

from adapters.testing import check_recording as check_fixture
from adapters.testing import decode_every_way, fixture_bodies

__all__ = ["FIXTURES", "check_fixture", "decode_every_way", "fixture_cases"]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def fixture_cases(folder: str) -> list[Path]:
    """Every recorded body under ``tests/fixtures/<folder>``, sorted."""
    return fixture_bodies(FIXTURES / folder)
