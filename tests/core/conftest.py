"""The parser tests run once per JSON backend (``mmsp_core.jsonlib``): the results never
depend on it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mmsp_core import jsonlib


@pytest.fixture(autouse=True, params=jsonlib.available())
def json_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test with the standard library's parser, then with orjson when installed."""
    previous = jsonlib.backend()
    jsonlib.use_backend(request.param)
    try:
        yield str(request.param)
    finally:
        jsonlib.use_backend(previous)
