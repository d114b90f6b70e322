"""The trace page over HTTP on loopback: listing, one trace, containment (07 §7, 08 D70).

Requests that must reach the server exactly as written (``..`` segments, encoded dots, double
slashes) go over a raw socket, as an HTTP client would normalise them away.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import quote

import anyio
import httpx
import pytest
from tracesample import ANSWER, SAMPLE_ID, write_sample

from adapters import list_supported_models, price
from mmsp_core import TextDone, UniConfig, UniMessage, UsageMetadata
from mmsp_io import cli, traces
from mmsp_io.httpserver import HTTPServer
from mmsp_io.tracer import write_trace
from mmsp_io.traces import TracePage

pytestmark = pytest.mark.anyio

SECRET = "not for the page"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A trace directory ``cache`` with the sample trace, beside a sibling ``cache-old`` and an
    unrelated directory, and links inside it that lead out."""
    cache = tmp_path / "cache"
    write_sample(cache)
    for outside in ("cache-old", "elsewhere"):
        (tmp_path / outside).mkdir()
        (tmp_path / outside / "secret.json").write_text(json.dumps({"history": [SECRET]}))
        (tmp_path / outside / "secret.txt").write_text(SECRET)
    (cache / "link-out.json").symlink_to(tmp_path / "elsewhere" / "secret.json")
    (cache / "dir-out").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    return cache


@pytest.fixture
async def page(root: Path) -> AsyncIterator[HTTPServer]:
    async with TracePage(root).running() as server:
        yield server


async def raw_get(server: HTTPServer, target: str, host: str | None = None) -> tuple[int, bytes]:
    """``GET target`` sent byte for byte; the status and the body (a short body, not chunked)."""
    host_header = host if host is not None else f"127.0.0.1:{server.port}"
    request = f"GET {target} HTTP/1.1\r\nHost: {host_header}\r\nConnection: close\r\n\r\n"
    received = b""
    async with await anyio.connect_tcp(server.host, server.port) as stream:
        await stream.send(request.encode())
        with anyio.fail_after(5):
            while True:
                try:
                    received += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    break
    head, _, body = received.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def error_of(body: bytes) -> str:
    message = json.loads(body)["error"]["message"]
    assert isinstance(message, str)
    return message


# -- the list, one trace, the page ---------------------------------------------------------------


async def test_the_list_names_each_trace_with_links_to_its_files(
    page: HTTPServer, root: Path
) -> None:
    write_sample(root, "later")
    (root / ".later.json.123.tmp").write_text("{}")  # the tracer's temporary file: hidden
    (root / ".hidden").mkdir()
    write_sample(root / ".hidden", "x")
    os.utime(root / f"{SAMPLE_ID}.json", (1_700_000_000, 1_700_000_000))
    async with httpx.AsyncClient(base_url=page.url) as http:
        answer = await http.get("/api/traces")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json; charset=utf-8"
    listing = answer.json()
    # Newest first; the links that lead out and hidden files are not listed.
    assert [t["id"] for t in listing["traces"]] == ["later", SAMPLE_ID]
    assert listing["truncated"] is False
    sample = listing["traces"][1]
    assert sample["json"] == "/raw/agents/weather%20run.1.json"
    assert sample["txt"] == "/raw/agents/weather%20run.1.txt"
    assert sample["size"] == (root / f"{SAMPLE_ID}.json").stat().st_size
    assert sample["modified"].startswith("2023-11-14T22:13:20")


async def test_a_trace_without_its_transcript_is_listed_without_a_text_link(
    page: HTTPServer, root: Path
) -> None:
    (root / f"{SAMPLE_ID}.txt").unlink()
    async with httpx.AsyncClient(base_url=page.url) as http:
        listing = (await http.get("/api/traces")).json()
        shown = (await http.get(f"/api/trace/{quote(SAMPLE_ID)}")).json()
    assert listing["traces"][0]["txt"] is None
    assert shown["transcript"] is None


async def test_a_transcript_that_leads_out_is_not_linked(
    page: HTTPServer, root: Path, tmp_path: Path
) -> None:
    (root / f"{SAMPLE_ID}.txt").unlink()
    (root / f"{SAMPLE_ID}.txt").symlink_to(tmp_path / "elsewhere" / "secret.txt")
    async with httpx.AsyncClient(base_url=page.url) as http:
        listing = (await http.get("/api/traces")).json()
        shown = (await http.get(f"/api/trace/{quote(SAMPLE_ID)}")).json()
    assert listing["traces"][0]["txt"] is None
    assert shown["transcript"] is None


async def test_a_name_that_is_not_utf8_is_left_out_of_the_list(
    page: HTTPServer, root: Path
) -> None:
    (root / os.fsdecode(b"\xff.json")).write_text("{}")  # no URL can name it
    async with httpx.AsyncClient(base_url=page.url) as http:
        listing = (await http.get("/api/traces")).json()
    assert [t["id"] for t in listing["traces"]] == [SAMPLE_ID]


def test_a_time_past_what_a_date_holds_is_no_time() -> None:
    # tmpfs keeps such a modification time (ext4 clamps it), and the list must not fail on it.
    assert traces._modified(1e18) is None
    assert traces._modified(0) == "1970-01-01T00:00:00+00:00"


async def test_a_lone_surrogate_in_a_trace_is_served_as_the_escape_it_was(
    page: HTTPServer, root: Path
) -> None:
    (root / "odd.json").write_text('{"history": [], "note": "\\ud800 \u00e9"}')
    async with httpx.AsyncClient(base_url=page.url) as http:
        answer = await http.get("/api/trace/odd")
    assert answer.status_code == 200
    assert b'"note": "\\ud800 \\u00e9"' in answer.content


async def test_the_list_is_bounded(root: Path) -> None:
    for n in range(3):
        write_sample(root, f"more/{n}")
    async with TracePage(root, max_listed=2).running() as server, httpx.AsyncClient() as http:
        listing = (await http.get(server.url + "/api/traces")).json()
    assert len(listing["traces"]) == 2
    assert listing["truncated"] is True


async def test_an_empty_or_missing_directory_lists_nothing(tmp_path: Path) -> None:
    async with (
        TracePage(tmp_path / "not-yet").running() as server,
        httpx.AsyncClient() as http,
    ):
        listing = (await http.get(server.url + "/api/traces")).json()
    assert listing == {"traces": [], "truncated": False, "skipped": [], "skipped_count": 0}


@pytest.fixture
def deep_tree(root: Path) -> Iterator[Path]:
    """1000 directories ``a`` in one another under ``root`` (what a 1000-segment trace_id left
    before ids were bounded), a trace at the bottom; removed bottom up (``shutil.rmtree``
    recurses, so the temporary directory's cleanup could not)."""
    levels = [root / "a"]
    for _ in range(999):
        levels.append(levels[-1] / "a")
    for level in levels:
        level.mkdir()
    (levels[-1] / "x.json").write_text('{"history": []}')
    yield levels[0]
    (levels[-1] / "x.json").unlink()
    for level in reversed(levels):
        level.rmdir()


@pytest.mark.usefixtures("deep_tree")
async def test_a_tree_too_deep_for_a_trace_id_is_reported_and_the_rest_listed(
    root: Path,
) -> None:
    write_sample(root, "/".join(["b"] * 7 + ["last"]))  # the deepest id the tracer writes
    (root / "big.json").write_text('{"history": []}')
    os.truncate(root / "big.json", 64 << 20)  # sparse: over the cap, no disk written
    (root / "blocked").mkdir()
    (root / "blocked" / "t.json").write_text('{"history": []}')
    (root / "blocked").chmod(0)
    (root / "unreadable.json").symlink_to(root / "unreadable.json")  # a loop of links
    try:
        async with TracePage(root, max_trace_bytes=1 << 20).running() as server, \
                httpx.AsyncClient(base_url=server.url) as http:
            answer = await http.get("/api/traces")
    finally:
        (root / "blocked").chmod(0o755)
    assert answer.status_code == 200
    listing = answer.json()
    listed = {t["id"]: t for t in listing["traces"]}
    assert set(listed) >= {SAMPLE_ID, "big", "/".join(["b"] * 7 + ["last"])}
    assert listed["big"]["too_large"] is True
    assert listed[SAMPLE_ID]["too_large"] is False
    skipped = {entry["path"]: entry["reason"] for entry in listing["skipped"]}
    assert skipped["/".join(["a"] * 8)] == "deeper than a trace_id reaches"
    assert skipped["unreadable.json"] == "leads outside the trace directory or to no file"
    assert skipped["link-out.json"] == "leads outside the trace directory or to no file"
    if os.geteuid() != 0:  # root reads a directory whatever its mode
        assert skipped["blocked"].startswith("cannot be read")
    assert listing["skipped_count"] == len(listing["skipped"])


async def test_the_skipped_entries_named_are_bounded(root: Path) -> None:
    for n in range(traces._SKIPPED_NAMED + 5):
        (root / f"out-{n:03}.json").symlink_to(root / "nowhere")
    async with TracePage(root).running() as server, httpx.AsyncClient() as http:
        listing = (await http.get(server.url + "/api/traces")).json()
    assert [t["id"] for t in listing["traces"]] == [SAMPLE_ID]
    assert len(listing["skipped"]) == traces._SKIPPED_NAMED
    assert listing["skipped_count"] == traces._SKIPPED_NAMED + 6  # with link-out.json


async def test_a_trace_over_the_cap_is_refused_from_its_size_without_being_read(
    root: Path,
) -> None:
    assert TracePage(root).max_trace_bytes == traces.DEFAULT_MAX_TRACE_BYTES == 16 << 20
    cap = 8 << 20
    (root / "big.json").write_text('{"history": []}')
    os.truncate(root / "big.json", 64 << 20)  # sparse: no disk written
    async with TracePage(root, max_trace_bytes=cap).running() as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        await http.get("/api/traces")  # everything the first request sets up, set up
        tracemalloc.start()
        try:
            answer = await http.get("/api/trace/big")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert answer.status_code == 422
    assert "open the raw file" in answer.json()["error"]["message"]
    assert peak < 1 << 20  # what the request costs, not the cap's 8 MiB


async def test_one_trace_as_json_is_the_document_with_links_to_its_files(
    page: HTTPServer, root: Path
) -> None:
    stored = json.loads((root / f"{SAMPLE_ID}.json").read_text(encoding="utf-8"))
    async with httpx.AsyncClient(base_url=page.url) as http:
        shown = (await http.get(f"/api/trace/{quote(SAMPLE_ID)}")).json()
        raw = await http.get(shown["raw"])
        transcript = await http.get(shown["transcript"])
    assert shown["id"] == SAMPLE_ID
    assert shown["trace"] == stored
    assert raw.status_code == 200
    assert raw.headers["content-type"] == "application/json; charset=utf-8"
    assert raw.content == (root / f"{SAMPLE_ID}.json").read_bytes()
    assert transcript.headers["content-type"] == "text/plain; charset=utf-8"
    assert f"Text: {ANSWER}" in transcript.text


@pytest.mark.filterwarnings("ignore:content item types without a .done suffix:FutureWarning")
async def test_a_trace_with_legacy_item_types_is_shown_normalised(
    page: HTTPServer, root: Path
) -> None:
    legacy = {"history": [{"role": "user", "content_items": [
        {"type": "text", "text": "old"}, {"type": "partial_tool_call", "name": "x"}]}]}
    (root / "old.json").write_text(json.dumps(legacy))
    async with httpx.AsyncClient(base_url=page.url) as http:
        shown = (await http.get("/api/trace/old")).json()
    assert shown["trace"]["history"][0]["content_items"] == [{"type": "text.done", "text": "old"}]


async def test_a_large_trace_is_shown_only_raw(root: Path) -> None:
    size = (root / f"{SAMPLE_ID}.json").stat().st_size
    async with (
        TracePage(root, max_trace_bytes=size - 1).running() as server,
        httpx.AsyncClient(base_url=server.url) as http,
    ):
        shown = await http.get(f"/api/trace/{quote(SAMPLE_ID)}")
        raw = await http.get(f"/raw/{quote(SAMPLE_ID)}.json")
    assert shown.status_code == 422
    assert "open the raw file" in shown.json()["error"]["message"]
    assert raw.content == (root / f"{SAMPLE_ID}.json").read_bytes()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "is not a JSON object"),
        (b"\xff\xfe", "is not a JSON object"),
        (b"[1, 2]", "is not a JSON object"),
        (b'{"history": "none"}', "has no history list"),
        (b"[" * 100_000 + b"]" * 100_000, "is not a JSON object"),
        (b'{"history": [], "config": {"temperature": NaN}}', "NaN"),
    ],
    ids=["not-json", "not-utf8", "array", "no-history", "deep", "nan"],
)
async def test_a_file_that_is_no_trace_is_answered_422(
    page: HTTPServer, root: Path, content: bytes, message: str
) -> None:
    (root / "bad.json").write_bytes(content)
    async with httpx.AsyncClient(base_url=page.url) as http:
        answer = await http.get("/api/trace/bad")
    assert answer.status_code == 422
    assert message in answer.json()["error"]["message"]


async def test_the_page_and_its_files_are_served_with_a_strict_policy(page: HTTPServer) -> None:
    async with httpx.AsyncClient(base_url=page.url) as http:
        home = await http.get("/")
        one = await http.get(f"/trace/{quote(SAMPLE_ID)}")
        script = await http.get("/page.js")
        style = await http.get("/page.css")
    assert home.status_code == one.status_code == 200
    assert home.headers["content-type"] == "text/html; charset=utf-8"
    assert home.content == one.content
    assert b'<script src="/page.js"' in home.content
    assert script.headers["content-type"] == "text/javascript; charset=utf-8"
    assert style.headers["content-type"] == "text/css; charset=utf-8"
    policy = home.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "default-src 'none'" in policy
    assert home.headers["x-content-type-options"] == "nosniff"


async def test_the_cli_serves_the_page_until_interrupted(root: Path, anyio_backend: str) -> None:
    command = [sys.executable, "-m", "mmsp_io", "traces", "--dir", str(root), "--port", "0",
               "--backend", anyio_backend]
    # Started as a shell starts it: SIGINT at its default and unblocked, whatever the test
    # worker's own signal state.
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=_default_sigint)
    try:
        assert process.stdout is not None
        banner = await anyio.to_thread.run_sync(process.stdout.readline)
        assert banner.startswith(f"Serving the traces of {root} at http://127.0.0.1:")
        url = banner.split(" at ")[1].split()[0]
        async with httpx.AsyncClient() as http:
            listing = (await http.get(url + "api/traces")).json()
        assert [t["id"] for t in listing["traces"]] == [SAMPLE_ID]
        process.send_signal(signal.SIGINT)
        try:  # a hang guard: the page must stop on SIGINT
            code = await anyio.to_thread.run_sync(lambda: process.wait(timeout=30))
        except subprocess.TimeoutExpired:
            process.kill()
            pytest.fail(f"the page did not stop on SIGINT: {process.communicate()[1][-3000:]}")
        assert code == 130
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_the_cli_needs_a_directory(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["traces"])
    assert exited.value.code == 2
    assert "--dir" in capsys.readouterr().err


# -- containment: 403 outside, 404 missing --------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        "/raw/../cache-old/secret.json",
        "/raw/%2e%2e/cache-old/secret.json",
        "/raw/%2E%2E%2Fcache-old%2Fsecret.txt",
        "/raw/agents/../../elsewhere/secret.json",
        "/raw//etc/passwd",
        "/raw/%2Fetc%2Fpasswd",
        "/raw/link-out.json",
        "/raw/dir-out/secret.json",
        "/raw/dir-out/secret.txt",
        "/api/trace/../cache-old/secret",
        "/api/trace/%2e%2e%2fcache-old%2fsecret",
        "/api/trace/link-out",
        "/api/trace/dir-out/secret",
        "/trace/%2e%2e/cache-old/secret",
        "/trace/dir-out/secret",
    ],
)
async def test_a_path_outside_the_directory_is_refused_403(page: HTTPServer, target: str) -> None:
    status, body = await raw_get(page, target)
    assert status == 403
    assert SECRET.encode() not in body
    if target.startswith("/trace/"):  # the page, which asks /api/trace and says why
        assert b'<script src="/page.js"' in body
    else:
        assert "outside the trace directory" in error_of(body)


async def test_a_sibling_whose_name_starts_like_the_directory_is_outside(
    page: HTTPServer, root: Path
) -> None:
    # The reference compares the resolved path's text with the directory's: cache-old passes.
    assert str(root.parent / "cache-old" / "secret.json").startswith(str(root))
    for target in ("/raw/../cache-old/secret.json", "/api/trace/..%2Fcache-old/secret"):
        status, _ = await raw_get(page, target)
        assert status == 403, target


async def test_a_link_that_stays_inside_is_followed(page: HTTPServer, root: Path) -> None:
    (root / "alias.json").symlink_to(root / f"{SAMPLE_ID}.json")
    async with httpx.AsyncClient(base_url=page.url) as http:
        shown = await http.get("/api/trace/alias")
    assert shown.status_code == 200
    assert shown.json()["trace"]["config"]["model"] == "gpt-test"


@pytest.mark.parametrize(
    "target",
    [
        "/raw/missing.json",
        "/api/trace/missing",
        "/trace/missing",
        "/raw/agents",  # a directory
        "/raw/",
        "/api/trace/",
        "/raw/.later.json.1.tmp",  # hidden: the tracer's temporary files
        "/raw/notes.md",  # not a trace file
        "/raw/notes-link.json",  # a link to one
        "/raw/fifo.json",  # no regular file: refused, not waited on
        "/raw/loop.json",  # a loop of links
        "/elsewhere",
        "/api/tracesx",
    ],
)
async def test_what_is_no_trace_file_inside_is_404(
    page: HTTPServer, root: Path, target: str
) -> None:
    (root / ".later.json.1.tmp").write_text("{}")
    (root / "notes.md").write_text("# notes")
    (root / "notes-link.json").symlink_to(root / "notes.md")
    os.mkfifo(root / "fifo.json")
    (root / "loop.json").symlink_to(root / "loop.json")
    with anyio.fail_after(5):
        status, _ = await raw_get(page, target)
    assert status == 404


@pytest.mark.parametrize("target", ["/raw/%ff.json", "/raw/a%00.json"])
async def test_a_path_that_is_no_text_is_400(page: HTTPServer, target: str) -> None:
    status, _ = await raw_get(page, target)
    assert status == 400


async def test_only_get_is_answered(page: HTTPServer) -> None:
    async with httpx.AsyncClient(base_url=page.url) as http:
        answer = await http.post("/api/traces")
    assert answer.status_code == 405
    assert answer.headers["allow"] == "GET"


@pytest.mark.parametrize(
    ("host", "status"),
    [("localhost", 200), ("127.0.0.1:1", 200), ("[::1]:25750", 200),
     ("evil.example:25750", 403), ("127.0.0.1.evil.example", 403), ("", 403)],
)
async def test_a_loopback_server_answers_only_a_loopback_host(
    page: HTTPServer, host: str, status: int
) -> None:
    # A web page whose name was rebound to 127.0.0.1 sends its own name as Host.
    answer, _ = await raw_get(page, "/api/traces", host=host)
    assert answer == status


# -- the list's summary, the search, the mount ----------------------------------------------------


def write_failed(root: Path, trace_id: str = "failed/one") -> None:
    """A failed turn, as a traced call that failed writes it (``mmsp_io.tracer``)."""
    question = UniMessage("user", (TextDone("Summarise the quarterly report"),))
    error = {"type": "ProviderHTTPError", "message": "upstream said no: quota exceeded",
             "client": "openai-chat", "status": 429}
    write_trace(root, trace_id, "openai-chat", "gpt-failing", [question],
                UniConfig(system_prompt="You are terse."),
                turn={"outcome": "error", "error": error,
                      "partial": [{"type": "text.delta", "text": "The report"}],
                      "attempts": [{"started_s": 0.0, "error": error},
                                   {"started_s": 0.5, "error": error}],
                      "first_event_s": None, "duration_s": 1.25})


async def test_the_list_summarises_each_turn(page: HTTPServer, root: Path) -> None:
    write_failed(root)
    async with httpx.AsyncClient(base_url=page.url) as http:
        listing = (await http.get("/api/traces")).json()
    summaries = {trace["id"]: trace["summary"] for trace in listing["traces"]}
    sample = summaries[SAMPLE_ID]
    # A trace written before the turn's keys: a stop, so "ok"; its times unknown.
    assert sample == {"model": "gpt-test", "time": sample["time"], "duration_s": None,
                      "first_event_s": None, "attempts": None, "tokens": 63, "cost": None,
                      "outcome": "ok"}
    assert sample["time"] == json.loads((root / f"{SAMPLE_ID}.json").read_text())["timestamp"]
    assert summaries["failed/one"] == {
        "model": "gpt-failing", "time": summaries["failed/one"]["time"], "duration_s": 1.25,
        "first_event_s": None, "attempts": 2, "tokens": None, "cost": None,
        "outcome": "ProviderHTTPError"}


async def test_the_cost_is_the_catalogs_price_when_the_trace_names_model_and_endpoint(
    tmp_path: Path,
) -> None:
    catalog = next(entry for entry in list_supported_models() if entry.pricing is not None)
    usage = {"cached_tokens": 1000, "prompt_tokens": 20_000, "thoughts_tokens": 3000,
             "response_tokens": 500}
    answer = {"role": "assistant", "content_items": [{"type": "text.done", "text": "ok"}],
              "usage_metadata": usage, "finish_reason": "stop"}
    for name, base_url in (("priced", catalog.base_url), ("elsewhere", "http://127.0.0.1:9/v1")):
        document = {"history": [answer], "config": {"model": catalog.model},
                    "base_url": base_url, "timestamp": "2026-12-04T01:00:00+01:00"}
        (tmp_path / f"{name}.json").write_text(json.dumps(document))
    async with TracePage(tmp_path).running() as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        listing = (await http.get("/api/traces")).json()
    costs = {trace["id"]: trace["summary"]["cost"] for trace in listing["traces"]}
    assert catalog.pricing is not None
    expected = price(UsageMetadata(1000, 20_000, 3000, 500), catalog.pricing)
    assert costs == {"priced": pytest.approx(expected, abs=1e-6), "elsewhere": None}
    assert expected > 0


@pytest.mark.parametrize(("query", "found"), [
    ("", {SAMPLE_ID, "failed/one"}),
    ("gpt-failing", {"failed/one"}),  # the model
    ("QUOTA exceeded", {"failed/one"}),  # the error, case-insensitive, every word
    ("terse", {"failed/one"}),  # the system prompt
    ("the report", {"failed/one"}),  # what arrived before the error
    ("light rain", {SAMPLE_ID}),  # a tool's result
    ("paris celsius", {SAMPLE_ID}),  # text and a call's arguments
    ("weather run", {SAMPLE_ID}),  # the id
    ("paris quota", set()),
])
async def test_the_search_finds_model_text_and_error(
    page: HTTPServer, root: Path, query: str, found: set[str],
) -> None:
    write_failed(root)
    async with httpx.AsyncClient(base_url=page.url) as http:
        for _ in range(2):  # the second time from the summaries kept
            listing = (await http.get("/api/traces", params={"q": query})).json()
            assert {trace["id"] for trace in listing["traces"]} == found


async def test_a_search_too_long_is_refused(page: HTTPServer) -> None:
    async with httpx.AsyncClient(base_url=page.url) as http:
        answer = await http.get("/api/traces", params={"q": "x" * 201})
    assert answer.status_code == 400
    assert "at most 200" in error_of(answer.content)


async def test_a_file_that_is_no_trace_is_listed_without_a_summary(root: Path) -> None:
    (root / "notes.json").write_text('{"history": "not a list"}')
    async with TracePage(root).running() as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        listing = (await http.get("/api/traces")).json()
        searched = (await http.get("/api/traces", params={"q": "notes"})).json()
    assert {t["id"]: t["summary"] for t in listing["traces"]}["notes"] is None
    assert [t["id"] for t in searched["traces"]] == ["notes"]


async def test_a_page_mounted_under_a_prefix_serves_and_links_under_it(root: Path) -> None:
    async with TracePage(root, prefix="/tracer").running() as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        home = await http.get("/tracer/")
        listing = (await http.get("/tracer/api/traces")).json()
        one = (await http.get(f"/tracer/api/trace/{quote(SAMPLE_ID)}")).json()
        outside = await http.get("/api/traces")
    assert b'<body data-base="/tracer">' in home.content
    assert b'<script src="/tracer/page.js"' in home.content
    assert listing["traces"][0]["json"] == "/tracer/raw/agents/weather%20run.1.json"
    assert one["raw"] == "/tracer/raw/agents/weather%20run.1.json"
    assert outside.status_code == 404


@pytest.mark.parametrize("prefix", ["tracer", "/tracer/", "/../x", "/a b"])
def test_a_prefix_is_slash_separated_names(tmp_path: Path, prefix: str) -> None:
    with pytest.raises(ValueError, match="prefix"):
        TracePage(tmp_path, prefix=prefix)


async def test_numbers_json_or_a_float_cannot_carry_leave_the_summary_blank(
    tmp_path: Path,
) -> None:
    catalog = next(entry for entry in list_supported_models() if entry.pricing is not None)
    huge = "1" + "0" * 400  # an integer no float holds
    text = ('{"history": [{"role": "assistant", "content_items": [], "usage_metadata": '
            f'{{"prompt_tokens": {huge}}}}}], "config": {{"model": "{catalog.model}"}}, '
            f'"base_url": "{catalog.base_url}", "duration_s": NaN, '
            f'"first_event_s": {huge}, "attempts": [], "outcome": "stop"}}')
    (tmp_path / "odd.json").write_text(text)
    async with TracePage(tmp_path).running() as server, \
            httpx.AsyncClient(base_url=server.url) as http:
        answer = await http.get("/api/traces")
    assert answer.status_code == 200
    summary = answer.json()["traces"][0]["summary"]
    assert (summary["duration_s"], summary["first_event_s"], summary["cost"]) == (None,) * 3
    assert summary["tokens"] == int(huge)
