"""``docs/configuration.md``'s table of the sampling and structured-output keys (08 D74) is
what ``build_request`` sends (issue 24).

The section "Sampling and structured output by client" has one column per config (its JSON in
the header) and one row per client and group of model ids; a cell is the JSON of the body
fields the config adds, or ``refused``. This test reads the table from the page and rebuilds
every cell for every model id of its row, on Anthropic's API and Amazon Bedrock for
anthropic-official and on the Gemini API and Vertex AI for google-genai, so the page and the
code cannot drift apart and no key is ever dropped silently (RFC-0003 §6).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest

import adapters
from adapters.clients import on_vertex
from mmsp_core import UnsupportedParameterError

PAGE = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
SECTION = "## Sampling and structured output by client"
KEYS = ("top_p", "stop_sequences", "seed", "response_format")
MESSAGES = [{"role": "user", "content_items": [{"type": "text.done", "text": "Hi"}]}]
REFUSED = "refused"
#: Where else a client's request is built: its routes by base URL (08 D72).
Build = Callable[[str, str, dict[str, Any]], bytes]


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _json(cell: str, where: str) -> dict[str, Any]:
    match = re.fullmatch(r"`(\{.*\})`", cell)
    assert match, f"{where}: a cell is one JSON object in backticks or {REFUSED!r}, got {cell!r}"
    value = json.loads(match.group(1))
    assert isinstance(value, dict), where
    return value


class Row(NamedTuple):
    client: str
    model_ids: tuple[str, ...]
    #: config -> the body fields it adds, ``None`` for refused.
    cells: list[tuple[dict[str, Any], dict[str, Any] | None]]


def read_table() -> list[Row]:
    """The rows of the section's table."""
    text = PAGE.read_text(encoding="utf-8")
    assert SECTION in text, f"{PAGE.name} has no section {SECTION!r}"
    lines = [line for line in text.split(SECTION, 1)[1].split("\n## ", 1)[0].splitlines()
             if line.startswith("|")]
    header = _cells(lines[0])
    assert header[:2] == ["Client", "Model ids"], header
    configs = [_json(cell, "header") for cell in header[2:]]
    rows = []
    for line in lines[2:]:
        cells = _cells(line)
        assert len(cells) == len(header), line
        where = cells[0]
        rows.append(Row(
            cells[0].strip("`"),
            tuple(re.findall(r"`([^`]+)`", cells[1])),
            [(config, None if cell == REFUSED else _json(cell, where))
             for config, cell in zip(configs, cells[2:], strict=True)],
        ))
    return rows


ROWS = read_table()


def _direct(client: str, model: str, config: dict[str, Any]) -> bytes:
    return adapters.build_request(client, model, MESSAGES, config).body


def _bedrock(client: str, model: str, config: dict[str, Any]) -> bytes:
    plan = adapters.prepare(client, model, MESSAGES, config, base_url="bedrock://us-east-1")
    return plan.request({}).body


def _vertex(client: str, model: str, config: dict[str, Any]) -> bytes:
    return on_vertex(adapters.prepare(client, model, MESSAGES, config), "proj").request({}).body


#: client -> the ways its requests are built.
ROUTES: dict[str, tuple[Build, ...]] = {
    "anthropic-official": (_direct, _bedrock),
    "google-genai": (_direct, _vertex),
}
CASES = [(row, model, build) for row in ROWS for model in row.model_ids
         for build in ROUTES.get(row.client, (_direct,))]


def test_the_table_has_a_column_for_each_key_and_rows_for_every_client() -> None:
    assert {key for config, _ in ROWS[0].cells for key in config} == set(KEYS)
    assert {row.client for row in ROWS} == set(adapters.CLIENTS)


@pytest.mark.parametrize(
    ("row", "model", "build"), CASES,
    ids=[f"{row.client}:{model}:{build.__name__.strip('_')}" for row, model, build in CASES],
)
def test_each_cell_is_what_build_request_sends(row: Row, model: str, build: Build) -> None:
    """A key is sent as the page says, or refused naming the key: never dropped."""
    without = json.loads(build(row.client, model, {}))
    for config, sent in row.cells:
        where = f"docs/configuration.md, {row.client}, {model}, {config}"
        if sent is None:
            with pytest.raises(UnsupportedParameterError) as refused:
                build(row.client, model, config)
            assert refused.value.parameter in config, where
            continue
        body = json.loads(build(row.client, model, config))
        added = {key: value for key, value in body.items() if without.get(key, KeyError) != value}
        assert added == sent, where
