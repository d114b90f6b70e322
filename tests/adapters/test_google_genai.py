"""The generateContent machine and renderer (spec 06 §4; 02; 08 D4, D7, D51, D59, D66).

Recorded bodies run through ``adapters.testing.check_protocol`` (one test per check);
hand-written bodies run whole, byte by byte and in random chunkings (``decode_every_way``),
which must all agree.
"""

from __future__ import annotations

import pytest
from harness import FIXTURES

from adapters.testing import ProtocolCheck, protocol_checks

SOURCE = "google-genai"

CHECKS: list[ProtocolCheck] = protocol_checks(SOURCE, FIXTURES / "google-genai")


@pytest.mark.parametrize("check", CHECKS, ids=[check.id for check in CHECKS])
def test_protocol_check(check: ProtocolCheck) -> None:
    check.run()
