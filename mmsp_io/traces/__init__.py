"""The trace page: a small web server that shows the traces of a directory (07 §7, 08 D70).

``python -m mmsp_io traces --dir DIR`` serves, by default on ``127.0.0.1:25750``, a page that
lists the trace files the tracer (``mmsp_io.tracer``) wrote under ``DIR`` and shows one
conversation readably. It runs on the server core of ``mmsp_io.httpserver`` (h11 and anyio),
under asyncio or trio, apart from the MMSP server: the gateway serves only the routes of 07
(08 D70). Like the server, it is an application beside the client library
(docs/architecture.md, "Applications beside the library"): the library never imports it.

Theory of operation
-------------------
The page itself is static: ``page.html``, ``page.css``, ``page.js`` and ``markdown.js`` beside
this module, with no build step. The script asks two JSON routes for what to show and builds
the view with DOM calls (``textContent``, never markup from a trace); a message's text is
rendered by ``markdown.js`` as a small markdown subset (paragraphs, code blocks, inline code,
emphasis, lists, links to http(s) addresses only) into elements and text nodes, never markup.
A trace's view shows its turn: the timeline (first event, duration, each attempt), a failed
turn's error in full and what arrived before it, and the system prompt:

- ``GET /``: the page, listing the traces;
- ``GET /trace/<id>``: the same page, showing the conversation of trace ``<id>`` (the file
  ``<id>.json``, 08 D14); for a trace that is outside or missing, under status 403 or 404;
- ``GET /api/traces[?q=WORDS]``: the list, ``{"traces": [{"id", "json", "txt", "size",
  "modified", "too_large", "summary"}, ...], "truncated", "skipped": [{"path", "reason"},
  ...], "skipped_count"}``, newest first, at most ``max_listed`` entries; ``too_large`` marks
  a trace over ``max_trace_bytes`` (shown only raw, without a summary), and ``skipped`` names
  what the walk could not list. ``summary`` is what the list shows of the turn
  (``_summary.summary``: model, time, duration, tokens, cost, outcome), ``null`` for a file
  that is no trace. With ``q``, only the traces holding every word of it (case-insensitive)
  in their id, model, error, system prompt or the text of their messages are listed
  (``_summary.matches``);
- ``GET /api/trace/<id>``: ``{"id", "raw", "transcript", "trace"}``, the trace document with
  its messages legacy-normalised (spec 01 §9) and the links of its two files;
- ``GET /raw/<file>``: a ``.json`` or ``.txt`` file of the directory as it is stored.

Other refusals are ``{"error": {"status", "message"}}`` with their status.

Mounting: ``TracePage(root, prefix="/tracer")`` serves the same routes under ``/tracer`` (the
playground, ``mmsp_io.playground``, mounts it so on its own server); the page learns the prefix
from the ``data-base`` attribute of its ``<body>``, and every link the answers hold carries it.

Containment: every ``<id>`` and ``<file>`` is percent-decoded, joined to the directory, and
the result ``Path.resolve()``-d (following every symbolic link) and kept only when it
``is_relative_to`` the resolved directory: an encoded ``..``, an absolute path, a link that
leads out and a sibling directory whose name merely starts with the directory's (``cache-old``
beside ``cache``) are all outside, answered 403. A path inside that names no regular file, a
hidden one (a name starting with ``.``, as the tracer's temporary files do) or one that is
neither ``.json`` nor ``.txt`` once resolved is answered 404; a path whose percent-decoding is
not UTF-8 or holds a NUL is answered 400, and every method but ``GET`` 405.
The file is opened without following a link in its last component and checked to be a regular
file on the open descriptor, so a FIFO or a swapped-in link between the check and the read is
refused, not waited on.

Bounds (08 D18): a trace shown through ``/api/trace`` is read whole, up to ``max_trace_bytes``
(16 MiB unless set: showing one costs about 16 times its size in memory); a larger one is
answered 422 from its size alone, without reading it, and stays readable through ``/raw``,
which streams it in pieces. The listing walks the directory without recursion, at most
``max_listed`` trace files, and only as deep as a ``trace_id`` can reach
(``mmsp_io.tracer.MAX_TRACE_ID_SEGMENTS``): what it cannot list (a directory deeper than that
or one that cannot be read, a file that cannot be read, a link that leads out, a name that is
not UTF-8) never fails it, but is counted in ``skipped_count`` and named, up to
``_SKIPPED_NAMED`` of them, in ``skipped``. A trace's summary is read once per version of its
file (its size and modification time) and kept while it is listed, so the cache holds at most
``max_listed`` small summaries; a search reads each listed trace again, one at a time, and a
query is at most ``_MAX_QUERY`` characters (longer: 400). The page and its answers carry
a strict content security policy (scripts and styles only from the page's own origin, images
also as ``data:`` URIs and from the web, as a trace may link them), and a server bound to a
loopback address answers only requests whose ``Host`` names a loopback host, so that a web
site cannot read the traces through a rebound DNS name.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, Final, TextIO, final
from urllib.parse import parse_qs, quote, unquote

import anyio
import anyio.to_thread

from adapters import BadField, loads_object
from mmsp_core.messages import normalize_legacy_messages

from .. import httpserver
from ..tracer import MAX_TRACE_ID_SEGMENTS
from . import _summary

__all__ = ["DEFAULT_HOST", "DEFAULT_MAX_TRACE_BYTES", "DEFAULT_PORT", "SECURITY_HEADERS",
           "TracePage", "run"]

#: Where ``python -m mmsp_io traces`` listens by default (07 §1, 08 D70).
DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 25750

_STATIC: Final = {
    "page.css": "text/css; charset=utf-8",
    "page.js": "text/javascript; charset=utf-8",
    "markdown.js": "text/javascript; charset=utf-8",
}
_RAW_TYPES: Final = {
    ".json": "application/json; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}
#: The headers of every answer: the page's content security policy (module docstring) and
#: no caching; the playground (``mmsp_io.playground``) answers with them too.
SECURITY_HEADERS: Final = (
    (
        "content-security-policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data: http: https:; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'",
    ),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-store"),
)
_READ_SIZE: Final = 65536
#: The largest trace shown whole by default (see "Bounds").
DEFAULT_MAX_TRACE_BYTES: Final = 16 * 1024 * 1024
#: How many of the entries the listing skipped it names.
_SKIPPED_NAMED: Final = 100
#: Requests are only ever ``GET``s: no body is accepted.
_LIMITS: Final = httpserver.Limits(max_body_bytes=0)
#: The longest search query, in characters.
_MAX_QUERY: Final = 200
#: A prefix the page may be mounted under: ``/name`` segments of letters, digits, ``_``, ``-``.
_PREFIX: Final = re.compile(r"(/[A-Za-z0-9_-]+)*")


@final
class _Refusal(Exception):
    """An answer other than 200, with the reason shown to the reader."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@final
class TracePage:
    """The handler of the trace page for the trace directory ``root`` (module docstring).

    ``max_trace_bytes`` bounds a trace read whole to be shown; ``max_listed`` bounds the
    listing; ``prefix`` is the path the page is mounted under (``""``: the root).

    Raises:
        ValueError: ``prefix`` is not ``""`` or ``/name`` segments (letters, digits, ``_``,
            ``-``).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_trace_bytes: int = DEFAULT_MAX_TRACE_BYTES,
        max_listed: int = 10_000,
        prefix: str = "",
    ) -> None:
        if not _PREFIX.fullmatch(prefix):
            raise ValueError(f"a prefix is '' or /name segments, not {prefix!r}")
        self.root = Path(root).absolute()
        self.max_trace_bytes = max_trace_bytes
        self.max_listed = max_listed
        self.prefix = prefix
        #: The page's static files, read once; the page names its prefix.
        self._static = {name: _static(name) for name in ("page.html", *_STATIC)}
        self._static["page.html"] = self._static["page.html"].replace(b"__BASE__",
                                                                      prefix.encode())
        #: Summaries by relative path: ``(size, mtime_ns, summary)`` of the last listing.
        self._summaries: dict[str, tuple[int, int, dict[str, Any] | None]] = {}

    @contextlib.asynccontextmanager
    async def running(
        self, *, host: str = DEFAULT_HOST, port: int = 0, grace: float = 0.0
    ) -> AsyncIterator[httpserver.HTTPServer]:
        """Serve the page on ``host:port`` (``0``: a free port) for the ``async with`` block.

        Raises:
            OSError: the port cannot be bound.
        """
        loopback = httpserver.is_loopback_host(host)

        async def handle(request: httpserver.Request, response: httpserver.Response) -> None:
            if loopback and not httpserver.names_loopback_host(request.header("host")):
                refusal = _Refusal(403, "The Host header names no loopback host.")
                await _send_refusal(response, refusal)
                return
            await self.handle(request, response)

        async with httpserver.serve(handle, host=host, port=port, limits=_LIMITS,
                                    grace=grace) as server:
            yield server

    async def handle(self, request: httpserver.Request, response: httpserver.Response) -> None:
        """Answer one request (the routes of the module docstring); never raises a refusal."""
        try:
            if request.method != "GET":
                raise _Refusal(405, f"The trace page answers only GET, not {request.method}.")
            path = _decoded(request.path)
            if self.prefix:
                if not path.startswith(self.prefix + "/"):
                    raise _Refusal(404, f"No page at {path}.")
                path = path.removeprefix(self.prefix)
            if path == "/":
                await self._respond_page(response)
            elif path.startswith("/trace/"):
                trace_file = path.removeprefix("/trace/") + ".json"
                try:
                    await anyio.to_thread.run_sync(self._file, trace_file)
                except _Refusal as refusal:  # the page says why, under the refusal's status
                    await self._respond_page(response, refusal.status)
                else:
                    await self._respond_page(response)
            elif path == "/api/traces":
                listing = await anyio.to_thread.run_sync(self._listing, _query(request.query))
                await _respond_json(response, listing)
            elif path.startswith("/api/trace/"):
                shown = await anyio.to_thread.run_sync(self._trace,
                                                       path.removeprefix("/api/trace/"))
                await _respond_json(response, shown)
            elif path.startswith("/raw/"):
                await self._respond_raw(response, path.removeprefix("/raw/"))
            elif path.removeprefix("/") in _STATIC:
                name = path.removeprefix("/")
                await response.respond(200, [("content-type", _STATIC[name]),
                                             *SECURITY_HEADERS], self._static[name])
            else:
                raise _Refusal(404, f"No page at {path}.")
        except _Refusal as refusal:
            if not response.started:
                await _send_refusal(response, refusal)

    async def _respond_page(self, response: httpserver.Response, status: int = 200) -> None:
        await response.respond(status, [("content-type", "text/html; charset=utf-8"),
                                     *SECURITY_HEADERS], self._static["page.html"])

    async def _respond_raw(self, response: httpserver.Response, relative: str) -> None:
        """Stream the stored file ``relative`` in pieces (a ``.json`` or ``.txt`` file)."""
        fd, suffix = await anyio.to_thread.run_sync(self._open, relative)
        async with anyio.wrap_file(os.fdopen(fd, "rb")) as file:
            await response.start(200, [("content-type", _RAW_TYPES[suffix]),
                                       *SECURITY_HEADERS])
            while chunk := await file.read(_READ_SIZE):
                await response.send(chunk)
            await response.end()

    # -- the file system, in worker threads ---------------------------------------------------

    def _file(self, relative: str) -> Path:
        """The resolved path of ``relative`` in the directory (module docstring: containment).

        Only ``.json`` and ``.txt`` files are served, judged by the resolved name.

        Raises:
            _Refusal: 403 outside the directory; 404 for no regular file, a hidden one, or one
                of another kind.
        """
        root = self.root.resolve()
        try:
            path = (root / relative).resolve()
        except (OSError, RuntimeError):  # a loop of links (RuntimeError before Python 3.13)
            raise _Refusal(404, f"No trace file {relative}.") from None
        if not path.is_relative_to(root):
            raise _Refusal(403, f"{relative} is outside the trace directory.")
        inside = path.relative_to(root).parts
        try:
            regular = path.is_file()
        except OSError:
            regular = False
        hidden = any(part.startswith(".") for part in inside)
        if not inside or hidden or path.suffix not in _RAW_TYPES or not regular:
            raise _Refusal(404, f"No trace file {relative}.")
        return path

    def _open(self, relative: str) -> tuple[int, str]:
        """Open ``relative`` for reading after the containment check; return the descriptor
        and the suffix of the file opened.

        Raises:
            _Refusal: as ``_file``; 404 also when what is opened is no regular file.
        """
        path = self._file(relative)
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(path, flags)
        except OSError:
            raise _Refusal(404, f"No trace file {relative}.") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise _Refusal(404, f"No trace file {relative}.")
        return fd, path.suffix

    def _trace(self, trace_id: str) -> dict[str, Any]:
        """The answer of ``/api/trace/<trace_id>``: the document and links to its files.

        Raises:
            _Refusal: as ``_document``.
        """
        document = self._document(f"{trace_id}.json")
        return {
            "id": trace_id,
            "raw": self._link("/raw/", f"{trace_id}.json"),
            "transcript": self._transcript(trace_id),
            "trace": {**document, "history": normalize_legacy_messages(document["history"])},
        }

    def _document(self, json_name: str) -> dict[str, Any]:
        """The trace document of the file ``json_name``, read whole.

        Raises:
            _Refusal: as ``_open``; 422 for a file too large to show whole, not UTF-8 JSON, or
                no trace document (an object whose ``history`` is a list of messages).
        """
        too_large = _Refusal(422, f"{json_name} is larger than {self.max_trace_bytes} bytes; "
                             "open the raw file instead.")
        with os.fdopen(self._open(json_name)[0], "rb") as file:
            if os.fstat(file.fileno()).st_size > self.max_trace_bytes:
                raise too_large  # judged by its size, before a byte of it is read
            data = file.read(self.max_trace_bytes + 1)  # it may have grown since
        if len(data) > self.max_trace_bytes:
            raise too_large
        try:
            document = loads_object(data.decode("utf-8"))
        except (UnicodeDecodeError, BadField):
            raise _Refusal(422, f"{json_name} is not a JSON object.") from None
        if not isinstance(document.get("history"), list):
            raise _Refusal(422, f"{json_name} is not a trace: it has no history list.")
        return document

    def _transcript(self, trace_id: str) -> str | None:
        """The link of the ``.txt`` file of ``trace_id`` when ``/raw`` serves it, else ``None``."""
        try:
            self._file(f"{trace_id}.txt")
        except _Refusal:
            return None
        return self._link("/raw/", f"{trace_id}.txt")

    def _link(self, route: str, relative: str) -> str:
        """The URL path of ``relative`` under ``route`` of the page, with its prefix."""
        return _link(self.prefix + route, relative)

    def _listing(self, query: str) -> dict[str, Any]:
        """The answer of ``/api/traces``, only the traces matching ``query`` when it is not
        empty (module docstring)."""
        root = self.root.resolve()
        walk = _Walk(root)
        words = query.casefold().split()
        entries: list[tuple[float, dict[str, Any]]] = []
        summaries: dict[str, tuple[int, int, dict[str, Any] | None]] = {}
        truncated = False
        for path in walk.trace_files():
            if len(entries) == self.max_listed:
                truncated = True
                break
            relative = path.relative_to(root).as_posix()
            try:
                info = path.stat()
            except OSError as exc:
                walk.skip(relative, f"cannot be read: {exc.strerror or exc}")
                continue
            trace_id = relative.removesuffix(".json")
            too_large = info.st_size > self.max_trace_bytes
            cached = self._summaries.get(relative)
            document = None
            if cached is not None and cached[:2] == (info.st_size, info.st_mtime_ns):
                summary = cached[2]
            else:
                document = None if too_large else self._readable(relative)
                summary = None if document is None else _summary.summary(document)
            summaries[relative] = (info.st_size, info.st_mtime_ns, summary)
            if words:
                if document is None and summary is not None:
                    document = self._readable(relative)
                if not _summary.matches(trace_id, document, words):
                    continue
            entries.append((info.st_mtime, {
                "id": trace_id,
                "json": self._link("/raw/", relative),
                "txt": self._transcript(trace_id),
                "size": info.st_size,
                "modified": _modified(info.st_mtime),
                "too_large": too_large,
                "summary": summary,
            }))
        self._summaries = summaries
        entries.sort(key=lambda entry: entry[0], reverse=True)
        return {"traces": [entry for _, entry in entries], "truncated": truncated,
                "skipped": walk.skipped, "skipped_count": walk.skipped_count}

    def _readable(self, relative: str) -> dict[str, Any] | None:
        """The trace document of ``relative``, or ``None`` for a file that is none (or that
        went away or grew too large since it was listed)."""
        try:
            return self._document(relative)
        except _Refusal:
            return None


@final
class _Walk:
    """The walk of the listing over the trace directory ``root`` (resolved), and what it
    skipped: ``skipped_count`` entries, the first ``_SKIPPED_NAMED`` named in ``skipped``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.skipped: list[dict[str, str]] = []
        self.skipped_count = 0

    def skip(self, relative: str, reason: str) -> None:
        """Count an entry the listing leaves out, and name it while there is room."""
        self.skipped_count += 1
        if len(self.skipped) < _SKIPPED_NAMED:
            self.skipped.append({"path": relative, "reason": reason})

    def trace_files(self) -> Iterator[Path]:
        """The visible ``.json`` files under the root whose resolved path stays inside it,
        directory by directory in name order, without recursion and no deeper than a
        ``trace_id`` reaches; what is left out (but hidden names) is ``skip``-ped."""
        pending = [(self.root, 0)]
        while pending:
            directory, depth = pending.pop()
            relative = directory.relative_to(self.root).as_posix()
            try:
                with os.scandir(directory) as scan:
                    found = sorted(scan, key=lambda entry: entry.name)
            except OSError as exc:
                if depth or not isinstance(exc, FileNotFoundError):  # no root yet: no trace
                    self.skip(relative, f"cannot be read: {exc.strerror or exc}")
                continue
            subdirectories: list[tuple[Path, int]] = []
            for entry in found:
                if entry.name.startswith("."):
                    continue
                path = Path(entry.path)
                shown = path.relative_to(self.root).as_posix()
                if not _is_utf8(entry.name):
                    self.skip(shown.encode("utf-8", "replace").decode(), "its name is not UTF-8")
                    continue
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        if depth + 1 < MAX_TRACE_ID_SEGMENTS:
                            subdirectories.append((path, depth + 1))
                        else:
                            self.skip(shown, "deeper than a trace_id reaches")
                        continue
                if entry.name.endswith(".json"):
                    if _inside(path, self.root):
                        yield path
                    else:
                        self.skip(shown, "leads outside the trace directory or to no file")
            pending.extend(reversed(subdirectories))


def _query(query: str) -> str:
    """The search words of a request's query string (its ``q``; ``""`` without one).

    Raises:
        _Refusal: 400 for a query that is not UTF-8 or longer than ``_MAX_QUERY`` characters.
    """
    try:
        found = parse_qs(query, errors="strict").get("q", [""])[0]
    except UnicodeDecodeError:
        raise _Refusal(400, "The query is not UTF-8.") from None
    if len(found) > _MAX_QUERY:
        raise _Refusal(400, f"A search is at most {_MAX_QUERY} characters.")
    return found


def _inside(path: Path, root: Path) -> bool:
    """Whether ``path`` resolves to a regular file inside ``root``."""
    try:
        return path.resolve().is_relative_to(root) and path.is_file()
    except (OSError, RuntimeError):  # a loop of links (RuntimeError before Python 3.13)
        return False


def _is_utf8(name: str) -> bool:
    """Whether a file name is UTF-8 (holds no byte ``os.fsdecode`` escaped)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _modified(mtime: float) -> str | None:
    """A modification time as ISO 8601 in UTC, or ``None`` for one no date can hold."""
    try:
        return datetime.fromtimestamp(mtime, UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def _static(name: str) -> bytes:
    """The bytes of one of the page's static files."""
    return resources.files(__package__).joinpath(name).read_bytes()


def _decoded(target: str) -> str:
    """The request path, percent-decoded.

    Raises:
        _Refusal: 400 when the decoded bytes are not UTF-8 or hold a NUL character.
    """
    try:
        path = unquote(target, errors="strict")
    except UnicodeDecodeError:
        raise _Refusal(400, "The request path is not UTF-8.") from None
    if "\0" in path:
        raise _Refusal(400, "The request path holds a NUL character.")
    return path


def _link(prefix: str, relative: str) -> str:
    """The URL path of ``relative`` under ``prefix``, every segment percent-encoded."""
    return prefix + quote(relative, safe="/")


async def _respond_json(response: httpserver.Response, value: Any) -> None:
    """Answer 200 with ``value`` as JSON; a value JSON cannot carry (NaN) is answered 422."""
    try:
        # ASCII: a lone surrogate a trace's JSON may escape stays an escape, as it came.
        body = json.dumps(value, allow_nan=False).encode()
    except ValueError:
        raise _Refusal(422, "The trace holds a number JSON cannot carry (NaN or infinity).") \
            from None
    await response.respond(200, [("content-type", "application/json; charset=utf-8"),
                                 *SECURITY_HEADERS], body)


async def _send_refusal(response: httpserver.Response, refusal: _Refusal) -> None:
    """Answer ``refusal`` as ``{"error": {"status", "message"}}``."""
    body = json.dumps({"error": {"status": refusal.status, "message": refusal.message}}).encode()
    headers = [("content-type", "application/json; charset=utf-8"), *SECURITY_HEADERS]
    if refusal.status == 405:
        headers.append(("allow", "GET"))
    await response.respond(refusal.status, headers, body)


async def run(root: str | os.PathLike[str], host: str, port: int, out: TextIO) -> int:
    """Serve the trace page until cancelled (Ctrl-C); write the address to ``out`` first.

    Raises:
        OSError: the port cannot be bound.
    """
    page = TracePage(root)
    async with page.running(host=host, port=port, grace=1.0) as server:
        out.write(f"Serving the traces of {page.root} at {server.url}/ (Ctrl-C to stop)\n")
        out.flush()
        await anyio.sleep_forever()
    return 0
