"""``docs/configuration.md``'s thinking-level tables are what ``build_request`` sends (issue 8).

The page (RFC-0003 §6.5) gives, for every client type and model generation, the JSON of the body
fields each thinking level adds to the request. This test reads those tables from the page
itself (its markdown) and rebuilds every cell with ``adapters.build_request`` for every model id
the row lists: the fields whose value differs from the same request without a
``thinking_level``, with their whole value. So the page and the code cannot drift apart: a
changed mapping fails here until the page says the same, and a client marked "not built yet"
fails here the day it is built, until its table is checked too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NamedTuple

import attrs
import pytest

import adapters
from mmsp_core import ThinkingLevel, UniConfig, UnsupportedOperationError

PAGE = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
SECTION = "## Thinking levels by client and generation"
LEVELS = tuple(level.value for level in ThinkingLevel)
NOT_BUILT = "(not built yet)"
MESSAGES = [{"role": "user", "content_items": [{"type": "text.done", "text": "Hi"}]}]


class Row(NamedTuple):
    """One row of a thinking-level table."""

    client: str
    built: bool
    generation: str
    model_ids: tuple[str, ...]
    #: level -> the body fields the page says it adds.
    cells: dict[str, dict[str, Any]]


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _json_cell(cell: str, where: str) -> dict[str, Any]:
    match = re.fullmatch(r"`(\{.*\})`", cell)
    assert match, f"{where}: a cell must be one JSON object in backticks, got {cell!r}"
    value = json.loads(match.group(1))
    assert isinstance(value, dict), where
    return value


def read_page() -> tuple[dict[str, bool], list[Row]]:
    """The client sections of the thinking-level part (client -> built) and their rows."""
    text = PAGE.read_text(encoding="utf-8")
    assert SECTION in text, f"{PAGE.name} has no section {SECTION!r}"
    part = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    sections: dict[str, bool] = {}
    rows: list[Row] = []
    client, built = "", True
    header: list[str] | None = None
    for line in part.splitlines():
        if line.startswith("### "):
            heading = line[4:].strip()
            client, built = heading.split()[0].strip("`"), NOT_BUILT not in heading
            assert client not in sections, f"two sections for {client}"
            sections[client] = built
            header = None
        elif line.startswith("|"):
            cells = _cells(line)
            if header is None:
                header = cells
                assert header == ["Generation", "Model ids", *LEVELS], header
            elif set(line) <= set("|- "):
                continue
            else:
                where = f"{client}, {cells[0]}"
                assert client, f"a table before any client heading: {line}"
                assert len(cells) == len(header), where
                ids = tuple(re.findall(r"`([^`]+)`", cells[1]))
                assert ids, f"{where}: no model ids"
                rows.append(Row(client, built, cells[0], ids, {
                    level: _json_cell(cell, f"{where}, {level}")
                    for level, cell in zip(LEVELS, cells[2:], strict=True)
                }))
        else:
            header = None
    return sections, rows


SECTIONS, ROWS = read_page()
CASES = [(row, model) for row in ROWS for model in row.model_ids]


def _body(client: str, model: str, config: dict[str, Any]) -> dict[str, Any]:
    body = json.loads(adapters.build_request(client, model, MESSAGES, config).body)
    assert isinstance(body, dict)
    return body


def sent_for(client: str, model: str, level: str) -> dict[str, Any]:
    """The body fields ``level`` adds to this request: every field whose value differs."""
    without = _body(client, model, {})
    body = _body(client, model, {"thinking_level": level})
    assert set(without) <= set(body), f"{level} removed {set(without) - set(body)}"
    return {key: value for key, value in body.items() if without.get(key, KeyError) != value}


def test_the_page_has_a_thinking_section_for_every_client_type() -> None:
    assert set(SECTIONS) == set(adapters.CLIENTS)


def test_every_built_client_has_rows() -> None:
    for client, built in SECTIONS.items():
        if built:
            assert any(row.client == client for row in ROWS), f"{client} has no table"


def test_the_not_built_marks_are_right() -> None:
    for client, built in SECTIONS.items():
        if built:
            adapters.resolve(client)
        else:
            with pytest.raises(UnsupportedOperationError):
                adapters.resolve(client)


def test_the_client_type_table_says_which_are_built() -> None:
    text = PAGE.read_text(encoding="utf-8").split(SECTION, 1)[0]
    for client, built in SECTIONS.items():
        line = next((line for line in text.splitlines() if line.startswith(f"| `{client}` |")),
                    None)
        assert line is not None, f"the client-type table has no row for {client}"
        assert _cells(line)[-1] == ("yes" if built else "not built yet"), line


@pytest.mark.parametrize(
    ("row", "model"), CASES, ids=[f"{row.client}:{model}" for row, model in CASES]
)
def test_each_cell_is_what_build_request_sends(row: Row, model: str) -> None:
    if not row.built:
        with pytest.raises(UnsupportedOperationError):
            adapters.build_request(row.client, model, MESSAGES, {"thinking_level": "low"})
        return
    for level in LEVELS:
        assert sent_for(row.client, model, level) == row.cells[level], (
            f"docs/configuration.md, {row.client}, {row.generation}, {model}, {level}"
        )


def test_the_key_tables_name_every_config_key() -> None:
    """Every ``UniConfig`` field is named in each protocol's key table (or said common to all)."""
    text = PAGE.read_text(encoding="utf-8").split(SECTION, 1)[0]
    common = text.split("## Keys every client treats the same way", 1)[1].split("\n## ", 1)[0]
    tables = [part for part in text.split("\n## ")[1:] if part.startswith(("Anthropic", "OpenAI"))]
    assert len(tables) == 3, [part.splitlines()[0] for part in tables]
    keys = [field.name for field in attrs.fields(UniConfig) if field.name != "extra"]
    for table in tables:
        for key in keys:
            named = re.compile(rf"`{key}[`:]")
            assert named.search(table) or named.search(common), (table.splitlines()[0], key)
