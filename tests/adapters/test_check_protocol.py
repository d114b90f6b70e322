"""``adapters.testing.check_protocol`` on the three built-in protocols and their recordings.

Each check is its own test (``protocol_checks``), so a failure names its case; the last tests
run ``check_protocol`` itself on a small directory, passing and failing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from harness import FIXTURES

from adapters.testing import ProtocolCheck, check_protocol, fixture_bodies, protocol_checks

#: Protocol name -> its recordings' folder.
BUILT_IN = {
    "ant-messages": "anthropic-messages",
    "openai-chat": "openai-chat",
    "openai-responses": "openai-responses",
}

CHECKS: list[tuple[str, ProtocolCheck]] = [
    (name, check)
    for name, folder in BUILT_IN.items()
    for check in protocol_checks(name, FIXTURES / folder)
]


@pytest.mark.parametrize(
    ("name", "check"), CHECKS, ids=[f"{name}: {check.id}" for name, check in CHECKS]
)
def test_protocol_check(name: str, check: ProtocolCheck) -> None:
    check.run()


def test_every_body_of_a_folder_is_checked() -> None:
    # The folder also holds ``<case>.expected.json`` files: more suffixes, so not bodies.
    bodies = fixture_bodies(FIXTURES / "openai-chat")
    assert all(b.suffix == ".sse" for b in bodies)
    assert len(bodies) == len(list((FIXTURES / "openai-chat").glob("*.sse")))


CASE = "text-include-usage"


def _copy_case(folder: Path) -> Path:
    for suffix in (".sse", ".expected.json"):
        shutil.copy(FIXTURES / "openai-chat" / f"{CASE}{suffix}", folder)
    return folder


def test_check_protocol_passes_a_good_recording(tmp_path: Path) -> None:
    check_protocol("openai-chat", [_copy_case(tmp_path) / f"{CASE}.sse"])


def test_check_protocol_fails_on_a_wrong_expected_file(tmp_path: Path) -> None:
    _copy_case(tmp_path)
    expected = tmp_path / f"{CASE}.expected.json"
    expected.write_text(expected.read_text().replace('"text.done"', '"thinking.done"'))
    with pytest.raises(AssertionError, match="done items differ") as info:
        check_protocol("openai-chat", tmp_path)
    assert f"check_protocol('openai-chat'): {CASE}" in info.value.__notes__


def test_a_body_without_its_expected_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "lonely.sse").write_bytes(b"data: {}\n\n")
    with pytest.raises(AssertionError, match="no expected file"):
        fixture_bodies(tmp_path)
