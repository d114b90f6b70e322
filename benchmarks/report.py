"""The markdown report of one benchmark run: the tables ``python -m benchmarks`` prints.

Every ratio is between two consumers of the same body, chunking and run (never across runs):
a consumer's median CPU time per content delta over the floor's.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .consumers import CONSUMERS

#: One measured cell: protocol, shape, n, chunking, consumer, and what the process printed.
Row = dict[str, Any]


def median(values: Iterable[float]) -> float:
    """The median of ``values``."""
    return float(statistics.median(list(values)))


def per_delta_us(row: Row) -> float:
    """Median CPU microseconds per content delta of a measured row."""
    return median(run["cpu"] for run in row["runs"]) / float(row["n"]) * 1e6


def _find(rows: Sequence[Row], **key: Any) -> Row | None:
    for row in rows:
        if all(row.get(name) == value for name, value in key.items()):
            return row
    return None


def _table(header: Sequence[str], lines: Iterable[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    out += ["| " + " | ".join(line) + " |" for line in lines]
    return out


def _failed(row: Row, notes: list[str]) -> str:
    notes.append(f"{row['consumer']} on {row['protocol']} {row['shape']} N={row['n']} "
                 f"({row['chunking']}): {row['error']}")
    return f"failed [{len(notes)}]"


def per_event_tables(rows: Sequence[Row], protocols: Sequence[str], consumers: Sequence[str],
                     matrix: Iterable[tuple[str, int, str]]) -> list[str]:
    """One table per (shape, N, chunking): consumers down, protocols across, each cell the
    median CPU µs per content delta and its ratio to the floor's in the same run."""
    out: list[str] = []
    chunk_names = {"event": "one HTTP chunk per SSE event", "packed": "64 KiB HTTP chunks"}
    for shape, n, chunking in matrix:
        notes: list[str] = []
        lines = []
        for name in consumers:
            cells = []
            for protocol in protocols:
                row = _find(rows, protocol=protocol, shape=shape, n=n, chunking=chunking,
                            consumer=name)
                floor = _find(rows, protocol=protocol, shape=shape, n=n, chunking=chunking,
                              consumer="floor")
                if row is None:
                    cells.append("—")
                elif row["error"]:
                    cells.append(_failed(row, notes))
                elif floor is None or floor["error"]:
                    cells.append(f"{per_delta_us(row):.1f} µs")
                else:
                    ratio = per_delta_us(row) / per_delta_us(floor)
                    cells.append(f"{per_delta_us(row):.1f} µs ({ratio:.1f}x)")
            if any(cell != "—" for cell in cells):
                lines.append([CONSUMERS[name].label, *cells])
        if not lines:
            continue
        what = "text deltas" if shape == "text" else "tool-call argument fragments"
        out += ["", f"### {what}, N = {n:,}, {chunk_names[chunking]}", ""]
        out += _table(["client CPU per content delta", *protocols], lines)
        out += [f"\n[{i}] {note}" for i, note in enumerate(notes, 1)]
    return out


def _first_ms(row: Row) -> float:
    """The median time to the first content: of the passes that only timed it (after a pause)
    where the row has them, else of its timed runs."""
    return median(row.get("first") or [run["first"] for run in row["runs"]]) * 1e3


def first_event_table(rows: Sequence[Row], protocols: Sequence[str], consumers: Sequence[str],
                      shape: str, n: int) -> list[str]:
    """Median time from the request to the first content (the floor's: to the bytes that
    carry it), and the difference to the floor's."""
    lines = []
    for name in consumers:
        cells = []
        for protocol in protocols:
            row = _find(rows, protocol=protocol, shape=shape, n=n, chunking="event",
                        consumer=name)
            floor = _find(rows, protocol=protocol, shape=shape, n=n, chunking="event",
                          consumer="floor")
            if row is None or row["error"]:
                cells.append("—" if row is None else "failed")
                continue
            ms = _first_ms(row)
            if floor is None or floor["error"] or name == "floor":
                cells.append(f"{ms:.2f} ms")
            else:
                delta = ms - _first_ms(floor)
                cells.append(f"{ms:.2f} ms ({delta:+.2f})")
        if any(cell != "—" for cell in cells):
            lines.append([CONSUMERS[name].label, *cells])
    if not lines:
        return []
    head = f"## First event ({shape}, N = {n:,}, one chunk per event; vs the floor's)"
    return ["", head, "", *_table(["consumer", *protocols], lines)]


def rss_table(rows: Sequence[Row], protocols: Sequence[str], consumers: Sequence[str],
              shapes: Sequence[str], small: int, large: int) -> list[str]:
    """Peak RSS of each consumer's process at the smallest and the largest N."""
    columns = [(protocol, shape) for protocol in protocols for shape in shapes]
    lines = []
    for name in consumers:
        cells = []
        for protocol, shape in columns:
            low = _find(rows, protocol=protocol, shape=shape, n=small, chunking="event",
                        consumer=name)
            high = _find(rows, protocol=protocol, shape=shape, n=large, chunking="event",
                         consumer=name)
            if low is None or high is None or low["error"] or high["error"]:
                cells.append("—")
                continue
            a, b = low["peak_rss_kib"] / 1024, high["peak_rss_kib"] / 1024
            cells.append(f"{a:.0f} → {b:.0f} MiB ({b - a:+.1f})")
        if any(cell != "—" for cell in cells):
            lines.append([CONSUMERS[name].label, *cells])
    if not lines:
        return []
    head = f"## Peak RSS of the consumer's process, N = {small:,} → N = {large:,}"
    return ["", head, "", *_table(["consumer", *(f"{p} {s}" for p, s in columns)], lines)]


def memory_table(rows: Sequence[Row], n: int) -> list[str]:
    """The pure pipeline over in-memory bytes (64 KiB chunks) beside ``json.loads`` of the
    same data lines, CPU µs per content delta."""
    lines = []
    for row in rows:
        if row["n"] != n:
            continue
        if row["error"]:
            lines.append([row["protocol"], row["shape"], "failed", row["error"], ""])
            continue
        pipeline = per_delta_us(row)
        fast = row.get("runs_orjson") or []
        with_orjson = (f"{median(run['cpu'] for run in fast) / n * 1e6:.2f} µs" if fast
                       else "not installed")
        loads = median(run["cpu"] for run in row["loads"]) / n * 1e6
        lines.append([row["protocol"], row["shape"], f"{pipeline:.2f} µs", with_orjson,
                      f"{loads:.2f} µs", f"{pipeline / loads:.1f}x"])
    if not lines:
        return []
    head = f"## Pure pipeline over in-memory bytes, 64 KiB chunks, N = {n:,}"
    return ["", head, "", *_table(
        ["protocol", "body", "pipeline per delta, stdlib `json`", "with orjson",
         "`json.loads` of its lines", "stdlib ratio"], lines)]


def concurrent_table(rows: Sequence[Row]) -> list[str]:
    """Wall time, CPU and peak RSS of the concurrent streams through one client."""
    lines = []
    for row in rows:
        if row["error"]:
            lines.append([row["protocol"], row["consumer"].removeprefix("concurrent-"),
                          f"{row['streams']:,}", "failed",
                          row["error"], ""])
            continue
        run = row["runs"][0]
        peak = row["peak_rss_kib"] / 1024
        lines.append([row["protocol"], row["consumer"].removeprefix("concurrent-"),
                      f"{row['streams']:,}", f"{run['wall']:.2f} s", f"{run['cpu']:.2f} s",
                      f"{peak:.0f} MiB (+{peak - row['rss_before_kib'] / 1024:.0f})"])
    if not lines:
        return []
    n = rows[0]["n"]
    head = f"## Concurrent streams through one `AutoLLMClient` (its own pool; text, N = {n:,})"
    return ["", head, "", *_table(
        ["protocol", "loop", "streams", "wall", "CPU", "peak RSS (+ during the run)"], lines)]


def import_line(samples: Mapping[str, Sequence[float]]) -> list[str]:
    """The median time of each import statement in fresh interpreters."""
    if not any(samples.values()):
        return []
    lines = ["", "## `import mmsp_io`", ""]
    for statement, times in samples.items():
        shown = ", ".join(f"{s * 1e3:.0f}" for s in times)
        lines.append(f"- `{statement}`: {median(times) * 1e3:.0f} ms "
                     f"(median of {len(times)} fresh interpreters: {shown} ms)")
    return lines
