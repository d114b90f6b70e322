"""Print the runtime dependencies of pyproject.toml pinned at their floors, as pip constraints.

``.ci/run`` installs the project with these constraints in a second environment (08 D80), so
the floors a user may get are versions the suite has passed on. A dependency without a floor
(``>=``) is an error: every runtime dependency declares one.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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


if __name__ == "__main__":
    sys.stdout.write("".join(f"{line}\n" for line in floors(ROOT / "pyproject.toml")))
