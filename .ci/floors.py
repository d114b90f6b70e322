"""Print pip constraints or requirements for the floors run of ``.ci/run`` (08 D80).

``python3 .ci/floors.py`` prints the runtime dependencies of pyproject.toml pinned at their
floors, as pip constraints: ``.ci/run`` installs the project with them in a second environment,
so the floors a user may get are versions the suite has passed on. A dependency without a floor
(``>=``) is an error: every runtime dependency declares one.

``python3 .ci/floors.py --test-tools`` prints the test extra's requirements but the official
SDKs (openai, anthropic): their current releases demand a newer anyio than the floor, and the
tests that use them skip where they are absent.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Test requirements the floors run leaves out: they cannot install beside the floors.
NOT_AT_FLOORS = frozenset({"openai", "anthropic"})
_NAME = re.compile(r"\s*([A-Za-z0-9_.\-]+)")


def floors(pyproject: Path) -> list[str]:
    """``name==floor`` for each of ``pyproject``'s ``[project] dependencies``.

    Raises:
        SystemExit: a dependency has no ``>=`` floor.
    """
    dependencies = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    pinned = []
    floor = re.compile(r"\s*([A-Za-z0-9_.\-]+)\s*(?:\[[^\]]*\])?\s*.*?>=\s*([^,;\s]+)")
    for requirement in dependencies:
        found = floor.match(requirement)
        if found is None:
            raise SystemExit(f"{requirement!r} declares no floor (>=)")
        pinned.append(f"{found.group(1)}=={found.group(2)}")
    return pinned


def test_tools(pyproject: Path) -> list[str]:
    """The ``test`` extra's requirements, less those in ``NOT_AT_FLOORS``."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    kept = []
    for requirement in project["optional-dependencies"]["test"]:
        found = _NAME.match(requirement)
        if found is None or found.group(1).lower() not in NOT_AT_FLOORS:
            kept.append(requirement)
    return kept


if __name__ == "__main__":
    lines = test_tools if sys.argv[1:] == ["--test-tools"] else floors
    sys.stdout.write("".join(f"{line}\n" for line in lines(ROOT / "pyproject.toml")))
