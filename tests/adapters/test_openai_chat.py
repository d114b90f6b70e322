"""The Chat Completions machine and renderer (spec 06 §3, §7; 02; 08 D4, D6, D33, D36, D42,
D43, D45, D49).

Recorded bodies run through ``check_fixture``; hand-written bodies run whole, byte by byte and
in random chunkings (``outcome_every_way``), which must all agree.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import FIXTURES, check_fixture, fixture_cases

SOURCE = "openai-chat"


@pytest.mark.parametrize("sse_path", fixture_cases("openai-chat"), ids=lambda p: p.stem)
def test_recorded_fixture(sse_path: Path) -> None:
    check_fixture(SOURCE, sse_path)


def test_openrouter_usage_fix_is_chosen_by_base_url() -> None:
    # 10 completion tokens, 11 of them reasoning: OpenRouter left reasoning out (spec 06 §7).
    case = FIXTURES / "openai-chat" / "openrouter-comments-inline-error-length"
    check_fixture(
        SOURCE,
        case.with_suffix(".sse"),
        case.with_suffix(".via-openrouter.json"),
        base_url="https://openrouter.ai/api/v1",
    )
